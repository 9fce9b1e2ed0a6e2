#!/usr/bin/env python3
"""How many candidate atoms the GPU list's build by group tests a warp, by the size of the boxes
it tests first (docs/performance.md, session 41; cuda/pair_list_build.cuh's build_rows_by_group).

Usage: group_build_candidates.py [--system DIR] [--reach A] [--samples N]

The atoms sorted as the GPU's list sorts them (bench/cluster_tiles.py's `clusters`: cells of at
least the reach, 4 x 4 x 4 sub-cells in Morton order), groups of 8 consecutive atoms of a cell,
each group's rows split between two warps of 4. For a sample of groups, printed a warp: the
atoms of the neighbour units whose boxes come within the reach of the warp's box (minimum image
between centres) with 8-atom boxes on both sides (the build up to session 41), with the warp's
own 4-atom box against 8-atom boxes, and with 4-atom boxes on both sides
(NBKIT_PAIR_LIST_UNIT=4); and the rows' pairs within the reach (the list's entries), so that the
share of tests that hit shows. A round tests 32 candidates, so the rounds scale alike.

numpy only; ~1 minute for DHFR's 23,534 atoms on one core.
"""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cluster_tiles import clusters, read_inpcrd  # noqa: E402


def boxes(xs, members):
    lo = np.array([xs[m].min(0) for m in members])
    hi = np.array([xs[m].max(0) for m in members])
    return (lo + hi) / 2, (hi - lo) / 2, np.array([len(m) for m in members])


def candidates(centre, half, sizes, lo, hi, edges, reach):
    """Atoms of the units whose boxes come within `reach` of the box [lo, hi]."""
    d = centre - (lo + hi) / 2
    d -= edges * np.round(d / edges)
    gap = np.maximum(np.abs(d) - half - (hi - lo) / 2, 0)
    return sizes[(gap ** 2).sum(1) < reach ** 2].sum()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--system", default="bench-input-dhfr", help="DIR with protein.inpcrd")
    parser.add_argument("--reach", type=float, default=11.0, help="cutoff + skin, A (default 9 + 2)")
    parser.add_argument("--samples", type=int, default=400, help="groups sampled (default 400)")
    args = parser.parse_args()
    x, edges = read_inpcrd(os.path.join(args.system, "protein.inpcrd"))
    xs, groups = clusters(x, edges, args.reach, 8)
    halves = [p for m in groups for p in (m[:4], m[4:]) if len(p)]
    c8, h8, s8 = boxes(xs, groups)
    c4, h4, s4 = boxes(xs, halves)
    pick = np.random.default_rng(1).choice(len(groups), min(args.samples, len(groups)), replace=False)
    totals = np.zeros(4)
    warps = 0
    for g in pick:
        m = groups[g]
        group_box = (xs[m].min(0), xs[m].max(0))
        with_group_box = candidates(c8, h8, s8, *group_box, edges, args.reach)
        for part in (m[:4], m[4:]):
            if not len(part):
                continue
            own = (xs[part].min(0), xs[part].max(0))
            d = xs[None, :, :] - xs[part][:, None, :]
            d -= edges * np.round(d / edges)
            hits = ((d ** 2).sum(2) < args.reach ** 2).sum() - len(part)
            totals += [with_group_box, candidates(c8, h8, s8, *own, edges, args.reach),
                       candidates(c4, h4, s4, *own, edges, args.reach), hits]
            warps += 1
    a, b, c, hits = totals / warps
    print(f"{len(x)} atoms, reach {args.reach} A, {warps} warps of 4 rows sampled; candidates a warp:")
    print(f"  8-atom boxes both sides      {a:8.0f}  (1.000; {hits / 4 / a:.1%} of a row's tests hit)")
    print(f"  own 4-atom box, 8-atom boxes {b:8.0f}  ({b / a:.3f})")
    print(f"  4-atom boxes both sides      {c:8.0f}  ({c / a:.3f}; {hits / 4 / c:.1%} hit)")
    print(f"  the rows' entries            {hits:8.0f}")


if __name__ == "__main__":
    main()
