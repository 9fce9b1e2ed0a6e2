#!/usr/bin/env python3
"""How many pair evaluations a cluster-tile nonbonded kernel would make on a periodic system,
against the atom list the GPU uses (docs/performance.md, session 35).

Usage: cluster_tiles.py [--system DIR] [--cutoff A] [--skins 2,1,0.5,0] [--clusters 8,16,32]

The system: DIR/protein.inpcrd (AMBER restart: the atom count, coordinates, box), as
`bench/md_protein_bench.py --write-system DIR` leaves it (bench-input/ by default). As the GPU's
pair list sorts them (cuda/pair_list_build.cuh): cells of at least cutoff + skin, each cell's
atoms by 4 x 4 x 4 sub-cells in Morton order; a cluster is `size` consecutive sorted atoms of
one cell. A tile is a cluster pair J >= I whose bounding boxes (minimum image between centres)
come within cutoff + skin; it evaluates |I| |J| pairs, each pair once (OpenMM's and GROMACS's
layouts). Printed per cluster size and skin: the clusters, the tiles, the evaluations, the share
of them within the cutoff, and the entries a full atom list (each pair in both rows, as the GPU's
list) holds at that reach, by volume from the pairs within the cutoff.

numpy only; a few minutes for the 30,677-atom benchmark system on one core.
"""
import argparse
import sys

import numpy as np


def read_inpcrd(path):
    """Coordinates (n x 3, A) and the box's edges from an AMBER inpcrd (12-character fields)."""
    with open(path) as f:
        lines = f.read().split("\n")
    n = int(lines[1].split()[0])
    values = []
    for number, line in enumerate(lines[2:], start=3):
        for k in range(0, len(line), 12):
            field = line[k:k + 12].strip()
            if not field:
                continue
            try:
                values.append(float(field))
            except ValueError:
                sys.exit(f"{path}:{number}: not a number: {field!r}")
    if len(values) < 3 * n + 3:
        sys.exit(f"{path}: {len(values)} numbers for {n} atoms and a box (expected {3 * n + 3} or more)")
    x = np.array(values[:3 * n]).reshape(n, 3)
    edges = np.array(values[3 * n:3 * n + 3])
    if not np.all(edges > 0):
        sys.exit(f"{path}: no periodic box after the coordinates")
    return x % edges, edges


def morton(sub, bits):
    m = np.zeros(len(sub), dtype=np.int64)
    for b in range(bits):
        for a in range(3):
            m |= ((sub[:, a] >> b) & 1) << (3 * b + a)
    return m


def sorted_cells(x, edges, reach):
    """As the GPU's list sorts the atoms (cells of at least `reach`, x fastest; each cell's atoms by
    4 x 4 x 4 sub-cells in Morton order): the sorted positions, their cells' coordinates, the cells
    an axis, and each cell's first sorted atom (and the end)."""
    count = np.maximum((edges // reach).astype(int), 1)
    width = edges / count
    cell_of = np.minimum((x / width).astype(int), count - 1)
    within = x / width - cell_of
    sub = np.minimum((within * 4).astype(int), 3)
    cell = (cell_of[:, 2] * count[1] + cell_of[:, 1]) * count[0] + cell_of[:, 0]
    order = np.argsort(cell * 64 + morton(sub, 2), kind="stable")
    starts = np.searchsorted(cell[order], np.arange(count.prod() + 1))
    return x[order], cell_of[order], count, starts


def clusters(x, edges, reach, size):
    """The sorted positions and each cluster's member indices, as the GPU's list sorts them."""
    xs, _, count, starts = sorted_cells(x, edges, reach)
    members = [np.arange(g, min(g + size, starts[c + 1]))
               for c in range(count.prod()) for g in range(starts[c], starts[c + 1], size)]
    return xs, members


def study(x, edges, cutoff, skin, size):
    reach = cutoff + skin
    xs, members = clusters(x, edges, reach, size)
    lo = np.array([xs[m].min(0) for m in members])
    hi = np.array([xs[m].max(0) for m in members])
    centre, half = (lo + hi) / 2, (hi - lo) / 2
    sizes = np.array([len(m) for m in members])
    tiles = evaluations = inside = 0
    for i in range(len(members)):
        d = centre - centre[i]
        d -= edges * np.round(d / edges)
        gap = np.maximum(np.abs(d) - half - half[i], 0)
        near = np.where((gap ** 2).sum(1) < reach ** 2)[0]
        near = near[near >= i]
        tiles += len(near)
        evaluations += int((sizes[i] * sizes[near]).sum())
        pi = xs[members[i]]
        for j in near:
            dd = pi[:, None, :] - xs[members[j]][None, :, :]
            dd -= edges * np.round(dd / edges)
            r2 = (dd ** 2).sum(2)
            if j == i:
                r2 = r2[np.triu_indices(len(pi), 1)]
            inside += int((r2 < cutoff * cutoff).sum())
    return len(members), tiles, evaluations, inside


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--system", default="bench-input", help="a directory with protein.inpcrd")
    p.add_argument("--cutoff", type=float, default=9.0)
    p.add_argument("--skins", default="2,1,0.5,0", help="list skins, A")
    p.add_argument("--clusters", default="8,16,32", help="cluster sizes (atoms)")
    a = p.parse_args()
    x, edges = read_inpcrd(f"{a.system}/protein.inpcrd")
    print(f"{len(x)} atoms, box {edges[0]:.2f} x {edges[1]:.2f} x {edges[2]:.2f} A, cutoff {a.cutoff} A")
    print(f"{'cluster':>7} {'skin':>5} {'clusters':>9} {'tiles':>9} {'evaluations':>12} {'within':>7} "
          f"{'full list':>10}")
    for size in (int(s) for s in a.clusters.split(",")):
        for skin in (float(s) for s in a.skins.split(",")):
            count, tiles, evaluations, inside = study(x, edges, a.cutoff, skin, size)
            full = 2 * inside * ((a.cutoff + skin) / a.cutoff) ** 3
            print(f"{size:7d} {skin:5.1f} {count:9d} {tiles:9d} {evaluations / 1e6:11.2f}M "
                  f"{inside / evaluations:7.1%} {full / 1e6:9.1f}M", flush=True)


if __name__ == "__main__":
    main()
