#!/usr/bin/env python3
"""How often the GPU's pair sums run the law, with and without each lane's queue of pairs
(cuda/pair_list_compacted.cuh; docs/performance.md, session 46).

Usage: compacted_pairs_model.py [--system DIR] [--warps N] [--drift A] [--lanes L]

The atoms sorted and the rows listed as the GPU's list does (cells of at least cutoff + skin, x
fastest, 4 x 4 x 4 sub-cells in Morton order; a row's entries in the order of the 27 cells, z,
then y, then x from the lowest neighbour, and of the atoms within each), for a sample of warps of
32 / L rows with L lanes a row, lane l taking entries l, l + L, ... Each entry's pair lies within
the cutoff at the step evaluated if its distance at the build, moved by a normal drift of --drift
A (the pairs' relative motion since the build; 0.1 A by default), is below 9 A.

listed_pairs: a lane's u-th entry of a round goes through the law where any lane of the warp has
a pair within the cutoff there (the warp runs the law's instructions for all its lanes).
compacted_pairs: each lane queues its pairs within the cutoff, kCompactAhead entries a round; the
warp evaluates one pair a lane while at least kQueueLanes lanes hold one or a queue could not take
another round, then drains. Printed: the law's warp-wide runs an entry (the issue slots it takes)
and the share of lanes with a pair in them, for several queue depths.

numpy only; a few seconds for bench-input's 30,680 atoms.
"""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cluster_tiles import morton, read_inpcrd  # noqa: E402

CUTOFF, SKIN = 9.0, 2.0
AHEAD, QUEUE_LANES = 4, 24  # pair_list_compacted.cuh's kCompactAhead, kQueueLanes


def sorted_cells(x, edges, reach):
    count = np.maximum((edges // reach).astype(int), 1)
    width = edges / count
    cell_of = np.minimum((x / width).astype(int), count - 1)
    sub = np.minimum(((x / width - cell_of) * 4).astype(int), 3)
    cell = (cell_of[:, 2] * count[1] + cell_of[:, 1]) * count[0] + cell_of[:, 0]
    order = np.argsort(cell * 64 + morton(sub, 2), kind="stable")
    starts = np.searchsorted(cell[order], np.arange(count.prod() + 1))
    return x[order], cell_of[order], count, starts


def row(t, xs, cell_of, count, starts, edges, reach):
    """Sorted atom t's entries' distances, in the list's order."""
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


def compacted_runs(lane_hits, depth):
    """The law's warp-wide runs with each lane's queue of `depth` pairs."""
    position = np.zeros(32, int)
    held = np.zeros(32, int)
    length = np.array([len(h) for h in lane_hits])
    runs = 0
    while (position < length).any():
        for lane in np.nonzero(position < length)[0]:
            held[lane] += lane_hits[lane][position[lane]:position[lane] + AHEAD].sum()
            position[lane] += AHEAD
        while (held > 0).sum() >= QUEUE_LANES or (held > depth - AHEAD).any():
            runs += 1
            held = np.maximum(held - 1, 0)
    return runs + held.max()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--system", default="bench-input", help="a directory with protein.inpcrd")
    parser.add_argument("--warps", type=int, default=150)
    parser.add_argument("--drift", type=float, default=0.1)
    parser.add_argument("--lanes", type=int, default=4, choices=(2, 4, 8))
    args = parser.parse_args()
    x, edges = read_inpcrd(os.path.join(args.system, "protein.inpcrd"))
    reach = CUTOFF + SKIN
    xs, cell_of, count, starts = sorted_cells(x, edges, reach)
    if (count < 3).any():
        sys.exit(f"{args.system}: fewer than 3 cells along an axis ({count}): not the 27-cell order")
    rng = np.random.default_rng(46)
    rows_a_warp = 32 // args.lanes
    firsts = rng.choice(len(xs) // rows_a_warp, min(args.warps, len(xs) // rows_a_warp), replace=False) * rows_a_warp
    depths = (6, 8, 12, 16)
    entries = pairs = listed_runs = 0
    runs = dict.fromkeys(depths, 0)
    for first in firsts:
        hits = [row(t, xs, cell_of, count, starts, edges, reach) for t in range(first, first + rows_a_warp)]
        hits = [r + rng.normal(0, args.drift, len(r)) < CUTOFF for r in hits]
        lane_hits = [hits[lane // args.lanes][lane % args.lanes::args.lanes] for lane in range(32)]
        longest = max(len(h) for h in lane_hits)
        listed_runs += sum(any(h[s] for h in lane_hits if s < len(h)) for s in range(longest))
        entries += sum(len(h) for h in hits)
        pairs += sum(int(h.sum()) for h in hits)
        for depth in depths:
            runs[depth] += compacted_runs(lane_hits, depth)
    print(f"{len(xs)} atoms, {count} cells, {len(firsts)} warps of {rows_a_warp} rows x {args.lanes} lanes: "
          f"{entries / (len(firsts) * rows_a_warp):.0f} entries a row, {pairs / entries:.3f} of them within {CUTOFF} A")
    print(f"listed_pairs:           the law {listed_runs * 32 / entries:.3f} warp-wide runs an entry, "
          f"{pairs / (listed_runs * 32):.3f} of its lanes busy")
    for depth in depths:
        print(f"compacted, queue of {depth:>2}: the law {runs[depth] * 32 / entries:.3f} warp-wide runs an entry, "
              f"{pairs / (runs[depth] * 32):.3f} of its lanes busy")


if __name__ == "__main__":
    main()
