#!/usr/bin/env python3
"""g(r) of a water box: nbkit rdf beside MDAnalysis's InterRDF on the same frames and CPU cores.

Usage: /usr/bin/python3 bench/rdf_mdanalysis.py NBKIT_BINARY [MOLECULES] [FRAMES] [THREADS]

THREADS (default 0: every core) is nbkit's --threads; with 1, nbkit and InterRDF (serial) each
use one core, the ratio that carries to another machine's cores (bench_rdf's whole job times
nbkit on one core of the GPU machine, where MDAnalysis is not installed).

The box is bench_rdf's (bench/rdf_bench.cpp): MOLECULES waters (default 33,334: 100,002 atoms) at
0.0334 per A^3, oxygens on a jittered lattice, FRAMES frames (default 3). O-O, rmax 15 A, 150
bins, each atom's pair with itself left out (InterRDF exclusion_block (1, 1)). Written as a psf
(by hand: a few lines) and a DCD (MDAnalysis's writer); nbkit reads those files (its time
includes reading them), InterRDF runs on the same DCD. Prints both rates in all-pairs-equivalent
pairs per second (nA (nA - 1) per frame), the ratio, and the largest difference in bin counts
(pairs within float32 rounding of an edge may differ: see tests/clients/check_rdf_mdanalysis.py).
Needs Debian's python3-mdanalysis and numpy.
"""
import os
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as np

warnings.filterwarnings("ignore")
import MDAnalysis as mda  # noqa: E402
from MDAnalysis.analysis.rdf import InterRDF  # noqa: E402


def water_box(molecules, frames, seed=2011):
    edge = (molecules / 0.0334) ** (1 / 3)
    n = int(np.ceil(molecules ** (1 / 3)))
    spacing = edge / n
    rng = np.random.default_rng(seed)
    sites = rng.permutation(n ** 3)[:molecules]
    grid = np.stack([sites // (n * n), sites // n % n, sites % n], axis=1)
    h = np.array([[0.9572, 0, 0], [-0.2400, 0.9266, 0]])
    coordinates = np.empty((frames, 3 * molecules, 3), dtype=np.float32)
    for f in range(frames):
        o = (grid + 0.5) * spacing + rng.normal(0, 0.25, size=(molecules, 3))
        coordinates[f, 0::3] = o
        coordinates[f, 1::3] = o + h[0]
        coordinates[f, 2::3] = o + h[1]
    return edge, coordinates


def write_psf(path, molecules):
    with open(path, "w") as f:
        f.write("PSF\n\n       1 !NTITLE\n REMARKS water box for bench/rdf_mdanalysis.py\n\n")
        f.write(f"{3 * molecules:8d} !NATOM\n")
        for m in range(molecules):
            for k, (name, charge, mass) in enumerate((("OW", -0.834, 15.9994), ("HW1", 0.417, 1.008),
                                                      ("HW2", 0.417, 1.008))):
                f.write(f"{3 * m + k + 1:8d} W    {m + 1:<4d} WAT  {name:<4s} {name:<4s} {charge:10.6f} {mass:13.4f}"
                        "           0\n")
        f.write(f"\n{2 * molecules:8d} !NBOND: bonds\n")
        pairs = [(3 * m + 1, 3 * m + k) for m in range(molecules) for k in (2, 3)]
        for i in range(0, len(pairs), 4):
            f.write("".join(f"{a:8d}{b:8d}" for a, b in pairs[i:i + 4]) + "\n")


def main():
    nbkit = sys.argv[1]
    molecules = int(sys.argv[2]) if len(sys.argv) > 2 else 33334
    frames = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    threads = sys.argv[4] if len(sys.argv) > 4 else "0"
    edge, coordinates = water_box(molecules, frames)
    with tempfile.TemporaryDirectory() as tmp:
        psf, dcd, csv = (os.path.join(tmp, name) for name in ("water.psf", "water.dcd", "rdf.csv"))
        write_psf(psf, molecules)
        u = mda.Universe(psf, coordinates, format=mda.coordinates.memory.MemoryReader,
                         dimensions=[edge, edge, edge, 90, 90, 90])
        with mda.Writer(dcd, u.atoms.n_atoms) as w:
            for _ in u.trajectory:
                w.write(u.atoms)
        start = time.perf_counter()
        subprocess.run([nbkit, "rdf", psf, dcd, "--select-a", "name OW", "--rmax", "15", "--bins", "150",
                        "--backend", "cpu", "--threads", threads, "-o", csv, "-q"], check=True)
        ours_seconds = time.perf_counter() - start
        ours = np.loadtxt(csv, delimiter=",", skiprows=4)[:, 3]
        u = mda.Universe(psf, dcd)
        oxygens = u.select_atoms("name OW")
        start = time.perf_counter()
        theirs = InterRDF(oxygens, oxygens, nbins=150, range=(0.0, 15.0), exclusion_block=(1, 1)).run()
        their_seconds = time.perf_counter() - start
    pairs = molecules * (molecules - 1) * frames
    cores = os.cpu_count()
    print(f"g(r) O-O of {molecules} waters ({3 * molecules} atoms), {frames} frames, rmax 15 A, 150 bins, {cores} cores")
    print(f"{'':<28} {'seconds':>9} {'all-pairs eq./s':>16}")
    label = f"nbkit rdf --backend cpu{' --threads ' + threads if threads != '0' else ''}"
    print(f"{label:<28} {ours_seconds:>9.2f} {pairs / ours_seconds:>16.3e}")
    print(f"{'MDAnalysis InterRDF':<28} {their_seconds:>9.2f} {pairs / their_seconds:>16.3e}")
    print(f"nbkit / MDAnalysis: {their_seconds / ours_seconds:.1f}x; largest bin count difference "
          f"{int(np.max(np.abs(ours - theirs.results.count)))} of {int(theirs.results.count.sum())} pairs")


if __name__ == "__main__":
    main()
