#!/usr/bin/env python3
"""Runs a Plummer sphere for one crossing time and plots the relative energy error.

    PYTHONPATH=build/default/python /usr/bin/python3 examples/python/nbody_energy.py 4096 energy-error.png
"""
import math
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

import nbkit

n = int(sys.argv[1]) if len(sys.argv) > 1 else 4096
out = sys.argv[2] if len(sys.argv) > 2 else "energy-error.png"
bodies = nbkit.nbody.plummer(n, seed=1)
sim = nbkit.nbody.Simulation(bodies["positions"], bodies["velocities"], bodies["masses"], dt=1 / 128)
steps = math.ceil(2 * math.sqrt(2) * 128)  # one crossing time, 2 sqrt(2) in Henon units
d = sim.run(steps, diagnostics_every=4)
error = d["total"] / sim.initial_energy - 1
print(f"{n} bodies, {steps} steps on {sim.description}: {d['interactions_per_second']:.3g} interactions/s, "
      f"largest |dE/E| {np.abs(error).max():.2e}, final virial ratio {d['virial_ratio'][-1]:.3f}")
fig, ax = plt.subplots(figsize=(6, 3.5))
ax.plot(d["time"], error)
ax.set_xlabel("time (N-body units)")
ax.set_ylabel("relative energy error E/E0 - 1")
ax.set_title(f"Plummer sphere, {n} bodies, leapfrog dt = 1/128")
fig.savefig(out, dpi=120, bbox_inches="tight")
print(f"wrote {out}")
