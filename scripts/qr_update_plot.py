#!/usr/bin/env python3
"""Speed-up plots of tessera_qr_update_bench (like the seed's Figures 10-17): one panel per update
type, the GPU update's speed-up over cuSOLVER recomputation against k, n or p, one line per series.

    scripts/qr_update_plot.py bench.log [more.log ...] -o plot.svg

Lines of later logs fill in cases the earlier ones lack. Plain SVG, no plotting library."""
import argparse
import re

LINE = re.compile(r'(delete cols|add cols|add rows|delete rows|rank-k)\s+(\w) n=(\d+)\s+m=(\d+)\s+k=(\d+)\s+'
                  r'p=(\d+)\s+Q=(\w+) gpu ([\d.]+) s, cuSOLVER ([\d.]+) s')

# panel: (title, x field, series fields)
PANELS = [
    ('delete cols', 'Delete p columns of 6000 x 3000 at k', 'k', ('p', 'q')),
    ('add cols', 'Add 200 columns to n x 3000 before k', 'k', ('n',)),
    ('add rows', 'Add p rows to n x 3000', 'n', ('p', 'q')),
    ('delete rows', 'Delete p rows of 12000 x m', 'p', ('m',)),
    ('rank-k', 'Rank-p update of 8000 x 3000', 'p', ()),
]
COLORS = ['#1f77b4', '#d62728', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b', '#e377c2']


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('logs', nargs='+')
    ap.add_argument('-o', '--output', required=True)
    args = ap.parse_args()
    rows = {}
    for path in args.logs:
        for line in open(path):
            m = LINE.search(line)
            if not m:
                continue
            op, prec, n, mm, k, p, q, g, c = m.groups()
            key = (op, prec, int(n), int(mm), int(k), int(p), q)
            rows.setdefault(key, float(c) / float(g))
    W, H, cols = 420, 300, 2
    nrows = (len(PANELS) * 2 + cols - 1) // cols
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W * cols}" height="{H * nrows}" '
           f'font-family="sans-serif" font-size="11">', '<rect width="100%" height="100%" fill="white"/>']
    idx = 0
    for prec in ('d', 's'):
        for op, title, xf, sf in PANELS:
            x0, y0 = (idx % cols) * W, (idx // cols) * H
            idx += 1
            pts = [(dict(zip(('op', 'prec', 'n', 'm', 'k', 'p', 'q'), key)), v)
                   for key, v in rows.items() if key[0] == op and key[1] == prec]
            if not pts:
                continue
            series = {}
            for d, v in pts:
                series.setdefault(tuple(d[f] for f in sf), []).append((d[xf], v))
            xs = [d[xf] for d, _ in pts]
            ymax = max(12.0, max(v for _, v in pts if v < 20) * 1.1)
            xmin, xmax = min(xs), max(xs) if max(xs) > min(xs) else min(xs) + 1
            L, R, T, B = 50, 20, 30, 40
            px = lambda x: x0 + L + (x - xmin) / (xmax - xmin) * (W - L - R)
            py = lambda y: y0 + H - B - min(y, ymax) / ymax * (H - T - B)
            out.append(f'<text x="{x0 + W / 2}" y="{y0 + 18}" text-anchor="middle" font-weight="bold">'
                       f'{title} ({"double" if prec == "d" else "single"})</text>')
            out.append(f'<line x1="{px(xmin)}" y1="{py(0)}" x2="{px(xmax)}" y2="{py(0)}" stroke="black"/>')
            out.append(f'<line x1="{px(xmin)}" y1="{py(0)}" x2="{px(xmin)}" y2="{py(ymax)}" stroke="black"/>')
            for yt in (1, 5, 10):
                out.append(f'<line x1="{px(xmin)}" y1="{py(yt)}" x2="{px(xmax)}" y2="{py(yt)}" stroke="#ccc" '
                           f'stroke-dasharray="{"" if yt == 1 else "3,3"}"/>')
                out.append(f'<text x="{px(xmin) - 4}" y="{py(yt) + 4}" text-anchor="end">{yt}x</text>')
            for x in sorted(set(xs)):
                out.append(f'<text x="{px(x)}" y="{py(0) + 14}" text-anchor="middle">{x}</text>')
            out.append(f'<text x="{x0 + W / 2}" y="{y0 + H - 8}" text-anchor="middle">{xf}</text>')
            for i, (s, p) in enumerate(sorted(series.items())):
                p.sort()
                col = COLORS[i % len(COLORS)]
                poly = ' '.join(f'{px(x):.1f},{py(v):.1f}' for x, v in p)
                out.append(f'<polyline points="{poly}" fill="none" stroke="{col}" stroke-width="2"/>')
                for x, v in p:
                    out.append(f'<circle cx="{px(x):.1f}" cy="{py(v):.1f}" r="2.5" fill="{col}">'
                               f'<title>{v:.1f}x</title></circle>')
                label = ', '.join(f'{f}={val}' for f, val in zip(sf, s)) or 'speed-up'
                out.append(f'<text x="{x0 + L + 8}" y="{y0 + T + 12 + 13 * i}" fill="{col}">{label}</text>')
    out.append('</svg>')
    open(args.output, 'w').write('\n'.join(out) + '\n')


if __name__ == '__main__':
    main()
