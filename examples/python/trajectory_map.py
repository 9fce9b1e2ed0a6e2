#!/usr/bin/env python3
"""Averages the potential map of a protein over a trajectory read by MDAnalysis (any format it
reads: DCD, XTC, TRR, NetCDF, ...), and writes the average and its standard deviation.

    PYTHONPATH=build/default/python /usr/bin/python3 examples/python/trajectory_map.py data/1a63.pqr data/1a63-wobble.dcd
"""
import sys

import MDAnalysis as mda

import nbkit

topology = sys.argv[1] if len(sys.argv) > 1 else "data/1a63.pqr"
trajectory = sys.argv[2] if len(sys.argv) > 2 else "data/1a63-wobble.dcd"
u = mda.Universe(topology, trajectory)
protein = u.select_atoms("protein")
for combine in ("avg", "stdev"):
    m = nbkit.trajectory_map(protein, combine=combine, spacing=1.0)
    m.to_dx(f"traj-{combine}.dx")
    m.to_png(f"traj-{combine}.png")
    print(f"{combine} over {m.stats['frames']} frames: {m}, {m.values.min():.4g} to {m.values.max():.4g} {m.units}, "
          f"{m.stats['seconds']:.2f} s -> traj-{combine}.dx, traj-{combine}.png")
