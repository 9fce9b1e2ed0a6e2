#!/usr/bin/env python3
"""The cost of calling nbkit from Python: a map through nbkit.map against the library's own
time for the same call (MapStats.seconds, measured inside compute_map), for a small map and a
map of about 1e7 lattice points. What the Python layer adds: reading the arrays, building the
options, releasing the GIL, wrapping the result as a numpy view (no copy of the values).

Usage: PYTHONPATH=build/default/python python3 bench/python_overhead.py [--backend cpu|cuda]
       [--repeats N] [--pqr data/1a63.pqr]
Prints, per size: lattice points, the library's seconds, the Python call's seconds, the overhead
in ms and as a fraction of the call (target: under 1% for 1e7 points), best of N repeats.
"""
import argparse
import time

import nbkit

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--backend", default="auto")
parser.add_argument("--repeats", type=int, default=5)
parser.add_argument("--pqr", default="data/1a63.pqr")
args = parser.parse_args()

structure = nbkit.read_structure(args.pqr)
print(f"nbkit {nbkit.__version__}, {len(structure)} atoms of {args.pqr}, backend {args.backend}")
print(f"{'lattice points':>15} {'library s':>11} {'Python s':>11} {'overhead ms':>12} {'overhead':>9}")
for label, shape in [("small", (24, 24, 24)), ("1e7", (216, 216, 216))]:
    best, m = None, None
    for _ in range(args.repeats):
        del m  # the last map is freed here, not within the timed call
        start = time.perf_counter()
        m = nbkit.map(structure, origin=(-54.0, -54.0, -54.0), shape=shape, spacing=0.5, backend=args.backend,
                      progress=False)
        wall = time.perf_counter() - start
        inner = m.stats["seconds"]
        if best is None or wall - inner < best[1] - best[0]:
            best = (inner, wall, m.stats["detail"])
    inner, wall, detail = best
    points = shape[0] * shape[1] * shape[2]
    print(f"{points:>15,} {inner:>11.5f} {wall:>11.5f} {1e3 * (wall - inner):>12.3f} {(wall - inner) / wall:>9.2%}"
          f"  ({label}; {detail})")
