#!/usr/bin/env python3
"""Maps the electrostatic potential of a protein and plots the slice through its centre.

    PYTHONPATH=build/default/python /usr/bin/python3 examples/python/map_slice.py data/1a63.pqr 1a63-slice.png
"""
import sys

import matplotlib

matplotlib.use("Agg")  # files, no window
import matplotlib.pyplot as plt
import numpy as np

import nbkit

pqr = sys.argv[1] if len(sys.argv) > 1 else "data/1a63.pqr"
out = sys.argv[2] if len(sys.argv) > 2 else "map-slice.png"
structure = nbkit.read_structure(pqr)
m = nbkit.map(structure, method="mdh", spacing=0.5, ionic_strength=0.15)
print(f"{len(structure)} atoms -> {m}, {m.stats['seconds']:.3f} s on {m.stats['backend']} ({m.stats['detail']})")

k = m.shape[2] // 2  # the z plane through the centre
plane = m.values[:, :, k].T  # rows y, columns x
x0, y0, z0 = m.origin
extent = [x0, x0 + (m.shape[0] - 1) * m.spacing, y0, y0 + (m.shape[1] - 1) * m.spacing]
limit = np.percentile(np.abs(plane), 99)  # colours saturate at the 99th percentile of |V|, as nbkit's PNGs
fig, ax = plt.subplots(figsize=(6, 5))
image = ax.imshow(plane, origin="lower", extent=extent, cmap="RdBu", vmin=-limit, vmax=limit)
ax.set_xlabel("x (Angstrom)")
ax.set_ylabel("y (Angstrom)")
ax.set_title(f"Debye-Hueckel potential, z = {z0 + k * m.spacing:.1f} A")
fig.colorbar(image, label=f"potential ({m.units}), saturated beyond +/-{limit:.3g}")
fig.savefig(out, dpi=120, bbox_inches="tight")
print(f"wrote {out}")
