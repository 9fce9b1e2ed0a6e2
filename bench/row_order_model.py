#!/usr/bin/env python3
"""How often the GPU's pair sums run the law, by the order of each row's entries (docs/performance.md,
session 46: the next lever for issue 19's pairs).

Usage: row_order_model.py [--system DIR] [--warps N] [--lanes L] [--drifts 0.1,0.3]

`listed_pairs` gives each row L lanes (lane l takes entries l, l + L, ...) and a warp 32 / L rows
of consecutive sorted atoms; a lane whose entry lies beyond the cutoff idles while its warp runs
the law for the others, so the warp pays for the law at a step of its lanes wherever any lane has
a pair within the cutoff. In the list's order (the 27 cells z, y, x from the lowest neighbour and
the atoms within each) that is nearly every step: the lanes' entries at one step lie all over the
reach. Ordered by the distance at the build (near entries first), the lanes of a warp reach the
far entries together, and there the law is skipped by the whole warp.

The atoms sorted and each row listed as the GPU does (cells of at least cutoff + skin, x fastest,
4 x 4 x 4 sub-cells in Morton order); each entry's pair within the cutoff at the step evaluated if
its distance at the build plus a normal drift (--drifts, A: the pairs' relative motion since the
build over a list's life of ~4 steps at 4 fs) is below the cutoff. For each order: the law's
warp-wide runs an entry (its issue slots) and the share of their lanes with a pair. numpy only;
a few seconds for bench-input's 30,680 atoms.
"""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cluster_tiles import read_inpcrd, sorted_cells  # noqa: E402

CUTOFF, SKIN = 9.0, 2.0


def row(t, xs, cell_of, count, starts, edges, reach):
    """Sorted atom t's entries' distances at the build, in the list's order."""
    out = []
    for dz in (-1, 0, 1):
        for dy in (-1, 0, 1):
            for dx in (-1, 0, 1):
                c = (cell_of[t] + (dx, dy, dz)) % count
                k = (c[2] * count[1] + c[1]) * count[0] + c[0]
                j = np.arange(starts[k], starts[k + 1])
                d = xs[j] - xs[t]
                d -= edges * np.round(d / edges)
                r = np.sqrt((d * d).sum(1))
                out.append(r[(r < reach) & (j != t)])
    return np.concatenate(out)


# Each order: a function of a row's build distances giving the entries' new order.
ORDERS = {
    "the list's (today)": lambda r: np.arange(len(r)),
    "2 bins, 9.5 A": lambda r: np.argsort(r >= 9.5, kind="stable"),
    "2 bins, 9.3 A": lambda r: np.argsort(r >= 9.3, kind="stable"),
    "3 bins, 8.7 and 9.5 A": lambda r: np.argsort(np.digitize(r, [8.7, 9.5]), kind="stable"),
    "sorted by distance": lambda r: np.argsort(r, kind="stable"),
}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--system", default="bench-input", help="a directory with protein.inpcrd")
    parser.add_argument("--warps", type=int, default=200)
    parser.add_argument("--lanes", type=int, default=4, choices=(2, 4, 8))
    parser.add_argument("--drifts", default="0.1,0.3")
    args = parser.parse_args()
    x, edges = read_inpcrd(os.path.join(args.system, "protein.inpcrd"))
    reach = CUTOFF + SKIN
    xs, cell_of, count, starts = sorted_cells(x, edges, reach)
    if (count < 3).any():
        sys.exit(f"{args.system}: fewer than 3 cells along an axis ({count}): not the 27-cell order")
    rows_a_warp = 32 // args.lanes
    rng = np.random.default_rng(46)
    firsts = rng.choice(len(xs) // rows_a_warp, min(args.warps, len(xs) // rows_a_warp), replace=False) * rows_a_warp
    rows = [[row(t, xs, cell_of, count, starts, edges, reach) for t in range(f, f + rows_a_warp)] for f in firsts]
    print(f"{len(xs)} atoms, {count} cells, {len(firsts)} warps of {rows_a_warp} rows x {args.lanes} lanes")
    for drift in (float(d) for d in args.drifts.split(",")):
        runs = dict.fromkeys(ORDERS, 0)
        entries = pairs = 0
        for warp in rows:
            later = [r + rng.normal(0, drift, len(r)) for r in warp]
            entries += sum(len(r) for r in warp)
            pairs += sum(int((r < CUTOFF).sum()) for r in later)
            for name, order in ORDERS.items():
                hits = [l[order(r)] < CUTOFF for r, l in zip(warp, later)]
                lane_hits = [hits[lane // args.lanes][lane % args.lanes::args.lanes] for lane in range(32)]
                longest = max(len(h) for h in lane_hits)
                runs[name] += sum(any(h[s] for h in lane_hits if s < len(h)) for s in range(longest))
        print(f"drift {drift} A: {entries / (len(firsts) * rows_a_warp):.0f} entries a row, "
              f"{pairs / entries:.3f} of them within {CUTOFF} A")
        for name in ORDERS:
            print(f"  {name:<22} the law {runs[name] * 32 / entries:.3f} warp-wide runs an entry, "
                  f"{pairs / (runs[name] * 32):.3f} of its lanes busy")


if __name__ == "__main__":
    main()
