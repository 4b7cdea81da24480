#!/usr/bin/env python3
"""plot.py BENCH.csv OUT_PREFIX: from tessera_batched_bench's CSV, one SVG per precision (like the
seed's Figures 8 and 9): GB/s against n for Tessera's LU and inverse, cuBLAS getrfBatched and
getrfBatched + getriBatched (the same bytes over their time), and the device-to-device copy. No
plotting library needed."""
import csv, sys

def load(path, count):
    rows = [r for r in csv.DictReader(l for l in open(path) if not l.startswith('#'))]
    return [r for r in rows if int(r['count']) == count]

def svg(rows, prec, title, out):
    rows = sorted((r for r in rows if r['precision'] == prec), key=lambda r: int(r['n']))
    if not rows:
        return
    def gbs(r, ms_key, bytes_key):
        ms = float(r[ms_key])
        return float(r[bytes_key]) / ms * 1e-6 if ms > 0 else None
    for r in rows:  # bytes of each side, recomputed from n and count as the bench does
        n, c, es = int(r['n']), int(r['count']), 4 if prec == 's' else 8
        r['lu_b'] = 2 * n * n * es * c + c * (n + 1) * 4
        r['inv_b'] = 2 * n * n * es * c + c * 4
        r['copy_b'] = 2 * n * n * es * c
        r['cu_inv_ms'] = float(r['cublas_getrf_ms']) + float(r['cublas_getri_ms'])
    series = [
        ('copy (device to device)', '#888888', lambda r: gbs(r, 'copy_ms', 'copy_b')),
        ('Tessera LU', '#1f77b4', lambda r: gbs(r, 'lu_ms', 'lu_b')),
        ('Tessera inverse', '#d62728', lambda r: gbs(r, 'inv_ms', 'inv_b')),
        ('cuBLAS getrfBatched', '#2ca02c', lambda r: gbs(r, 'cublas_getrf_ms', 'lu_b')),
        ('cuBLAS getrf+getri', '#ff7f0e', lambda r: gbs(r, 'cu_inv_ms', 'inv_b')),
        ('cuBLAS matinvBatched', '#9467bd', lambda r: gbs(r, 'cublas_matinv_ms', 'inv_b')),
    ]
    W, H, L, B = 720, 420, 60, 40
    ymax = max(v for _, _, f in series for r in rows for v in [f(r)] if v) * 1.1
    nmax = max(int(r['n']) for r in rows)
    X = lambda n: L + (W - L - 20) * (n - 1) / max(1, nmax - 1)
    Y = lambda v: H - B - (H - B - 30) * v / ymax
    o = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="11">',
         f'<text x="{W/2}" y="16" text-anchor="middle" font-size="13">{title}</text>',
         f'<line x1="{L}" y1="{H-B}" x2="{W-20}" y2="{H-B}" stroke="black"/><line x1="{L}" y1="30" x2="{L}" y2="{H-B}" stroke="black"/>',
         f'<text x="{W/2}" y="{H-8}" text-anchor="middle">n</text>',
         f'<text x="14" y="{H/2}" transform="rotate(-90 14 {H/2})" text-anchor="middle">GB/s (bytes read + written)</text>']
    step = 500 if ymax > 2000 else 250
    for v in range(0, int(ymax) + 1, step):
        o.append(f'<line x1="{L-4}" y1="{Y(v):.1f}" x2="{L}" y2="{Y(v):.1f}" stroke="black"/><text x="{L-6}" y="{Y(v)+4:.1f}" text-anchor="end">{v}</text>')
    for n in range(1, nmax + 1, 1 if nmax <= 8 else 4 if nmax > 16 else 2):
        o.append(f'<text x="{X(n):.1f}" y="{H-B+14}" text-anchor="middle">{n}</text>')
    for i, (name, color, f) in enumerate(series):
        pts = [(X(int(r['n'])), Y(v)) for r in rows for v in [f(r)] if v]
        if pts:
            o.append(f'<polyline fill="none" stroke="{color}" stroke-width="2" points="' + ' '.join(f'{x:.1f},{y:.1f}' for x, y in pts) + '"/>')
        o.append(f'<rect x="{L+12}" y="{34+i*15}" width="12" height="3" fill="{color}"/><text x="{L+30}" y="{38+i*15}">{name}</text>')
    o.append('</svg>')
    open(out, 'w').write('\n'.join(o) + '\n')

if __name__ == '__main__':
    rows = load(sys.argv[1], 1 << 20)
    for p, name in (('d', 'double'), ('s', 'single')):
        svg(rows, p, f'Batched LU and inverse, 2^20 matrices, {name}, H100', f'{sys.argv[2]}_{p}.svg')
