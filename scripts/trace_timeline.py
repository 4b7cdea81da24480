#!/usr/bin/env python3
"""Busy fractions over time from a Tessera Chrome trace (tessera_qr --trace FILE.json).

    scripts/trace_timeline.py FILE.json [--bins 20]

For each time bin: the GPU's busy fraction (some GPU stream has a task in flight), the mean
number of busy CPU workers, the copy engines' busy fractions, and the label that took most CPU
time. GPU-stream intervals run from launch to the completion event, so "GPU busy" is an upper
bound on the time kernels ran.
"""
import argparse
import json
from collections import defaultdict


def union_length(intervals, lo, hi):
    total, end = 0.0, lo
    for s, e in sorted(intervals):
        s, e = max(s, end), min(e, hi)
        if e > s:
            total += e - s
            end = e
    return total


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("trace")
    ap.add_argument("--bins", type=int, default=20)
    args = ap.parse_args()
    events = json.load(open(args.trace))["traceEvents"]
    names = {e["tid"]: e["args"]["name"] for e in events if e.get("ph") == "M" and e["name"] == "thread_name"}
    tasks = [e for e in events if e.get("ph") == "X"]
    t0 = min(e["ts"] for e in tasks)
    t1 = max(e["ts"] + e["dur"] for e in tasks)
    kind = {}
    for tid, name in names.items():
        kind[tid] = "gpu" if name.startswith("GPU stream") else "h2d" if "H2D" in name else \
                    "d2h" if "D2H" in name else "cpu"
    workers = sum(1 for k in kind.values() if k == "cpu")
    width = (t1 - t0) / args.bins
    print(f"span {(t1 - t0) / 1e3:.1f} ms in {args.bins} bins of {width / 1e3:.1f} ms; {workers} CPU workers")
    print(f"{'from [ms]':>10} {'GPU busy':>9} {'CPU busy':>9} {'H2D':>6} {'D2H':>6}  top CPU label")
    gpu_all, total_gpu = [], 0.0
    for e in tasks:
        if kind.get(e["tid"]) == "gpu":
            gpu_all.append((e["ts"], e["ts"] + e["dur"]))
    for b in range(args.bins):
        lo, hi = t0 + b * width, t0 + (b + 1) * width
        per = defaultdict(list)
        cpu_busy, labels = 0.0, defaultdict(float)
        for e in tasks:
            s, f = e["ts"], e["ts"] + e["dur"]
            if f <= lo or s >= hi:
                continue
            k = kind.get(e["tid"], "cpu")
            per[k].append((s, f))
            if k == "cpu":
                d = min(f, hi) - max(s, lo)
                cpu_busy += d
                labels[e["name"]] += d
        g = union_length(per["gpu"], lo, hi)
        total_gpu += g
        top = max(labels, key=labels.get) if labels else "-"
        print(f"{(lo - t0) / 1e3:10.1f} {100 * g / width:8.0f}% {cpu_busy / width:9.1f} "
              f"{100 * union_length(per['h2d'], lo, hi) / width:5.0f}% {100 * union_length(per['d2h'], lo, hi) / width:5.0f}%  {top}")
    print(f"GPU busy over the whole span: {100 * total_gpu / (t1 - t0):.1f}%")


if __name__ == "__main__":
    main()
