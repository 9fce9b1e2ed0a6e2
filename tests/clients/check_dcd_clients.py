#!/usr/bin/env python3
"""A real DCD library and nbkit read each other's trajectories.

Usage: check_dcd_clients.py NBKIT_BINARY

mdtraj (Debian python3-mdtraj) reads and writes DCD through VMD's molfile dcdplugin, the
code VMD itself uses:
  1. mdtraj writes a 4-frame DCD with unit cells of a few charges; `nbkit map --trajectory
     --combine avg` must give the average of the frames' Coulomb maps summed by numpy from
     the coordinates mdtraj reads back (1e-7 of the largest value: the OpenDX file holds
     8 significant digits, as check_dx_clients.py);
  2. `nbkit md` writes the trajectory of a LAMMPS data file's atoms; mdtraj must read the
     atom and frame counts, the box in every frame and, in frame 0, the data file's
     coordinates (exact in float32).
Exit 77 (CTest's skip) without mdtraj or numpy.
"""
import os
import subprocess
import sys
import tempfile

try:
    import numpy as np
    from mdtraj.formats import DCDTrajectoryFile
except ImportError as error:
    print(f"{error.name} not installed: skipped")
    sys.exit(77)

COULOMB_KCAL = 332.0637133  # CODATA 2018, as include/nbkit/core/units.hpp
KT_KCAL = 1.380649e-23 * 298.15 * 6.02214076e23 / 4184.0

CHARGES = np.array([0.8, -0.5, 0.35, -0.65])


def map_read_from_vmd_plugin_dcd(nbkit, tmp):
    rng = np.random.RandomState(4)
    base = rng.uniform(-4, 4, (len(CHARGES), 3))
    frames = (base[None] + rng.normal(0, 0.4, (4, len(CHARGES), 3))).astype(np.float32)
    dcd = os.path.join(tmp, "vmd.dcd")
    with DCDTrajectoryFile(dcd, "w") as f:
        f.write(frames, cell_lengths=np.full((4, 3), 30.0, np.float32), cell_angles=np.full((4, 3), 90.0, np.float32))
    with DCDTrajectoryFile(dcd) as f:
        xyz = f.read()[0].astype(np.float64)
    pqr = os.path.join(tmp, "top.pqr")
    with open(pqr, "w") as f:
        for n, (position, q) in enumerate(zip(base, CHARGES)):
            f.write("ATOM  %5d  C   DUM A   1    %8.3f%8.3f%8.3f %7.4f %6.4f\n" % (n + 1, *position, q, 1.5))
    origin, spacing, dims = (-9.0, -8.5, -7.75), 1.25, (15, 14, 13)
    dx = os.path.join(tmp, "avg.dx")
    subprocess.run([nbkit, "map", pqr, "--trajectory", dcd, "--combine", "avg", "--backend", "cpu",
                    "--precision", "double", "-q", "-o", dx, "--origin", ",".join(map(str, origin)),
                    "--dims", ",".join(map(str, dims)), "--spacing", str(spacing)], check=True)
    axes = [origin[a] + spacing * np.arange(dims[a]) for a in range(3)]
    points = np.stack([g.ravel() for g in np.meshgrid(*axes, indexing="ij")], axis=1)
    expected = np.zeros(len(points))
    for frame in xyz:
        d = np.linalg.norm(points[:, None, :] - frame[None, :, :], axis=2)
        expected += (COULOMB_KCAL / KT_KCAL) * (CHARGES[None, :] / d).sum(axis=1)
    expected /= len(xyz)
    values = read_dx_values(dx)
    assert values.size == expected.size, (values.size, expected.size)
    err = np.abs(values - expected).max() / np.abs(expected).max()
    assert err < 1e-7, f"average map of the VMD-plugin DCD differs: {err}"
    return f"nbkit read mdtraj's DCD ({err:.1e})"


def read_dx_values(path):
    numbers, reading = [], False
    for line in open(path):
        if line.startswith("object 3"):
            reading = True
            continue
        if reading:
            if line.startswith(("attribute", "object", "component")):
                break
            numbers.extend(float(v) for v in line.split())
    return np.array(numbers)


DATA = """LAMMPS data file for a DCD check

4 atoms
1 atom types

0.0 12.0 xlo xhi
0.0 13.0 ylo yhi
0.0 14.0 zlo zhi

Masses

1 1.0

Pair Coeffs # lj/cut

1 1.0 1.0

Atoms # atomic

1 1 1.5 2.25 3.125
2 1 6.0 7.5 8.0
3 1 10.5 1.0 12.75
4 1 3.0 11.0 6.5
"""


def md_trajectory_read_by_vmd_plugin(nbkit, tmp):
    with open(os.path.join(tmp, "x.data"), "w") as f:
        f.write(DATA)
    with open(os.path.join(tmp, "run.toml"), "w") as f:
        f.write('[system]\ndata = "x.data"\n[run]\nsteps = 6\nthermo = 3\n[output]\ndcd_every = 2\n')
    subprocess.run([nbkit, "md", os.path.join(tmp, "run.toml"), "--backend", "cpu", "-q", "-o",
                    os.path.join(tmp, "md")], check=True, cwd=tmp)
    with DCDTrajectoryFile(os.path.join(tmp, "md", "trajectory.dcd")) as f:
        xyz, lengths, angles = f.read()
    assert xyz.shape == (4, 4, 3), xyz.shape  # steps 0, 2, 4, 6
    assert np.all(lengths == [12.0, 13.0, 14.0]), lengths
    assert np.all(angles == 90.0), angles
    start = np.array([[1.5, 2.25, 3.125], [6.0, 7.5, 8.0], [10.5, 1.0, 12.75], [3.0, 11.0, 6.5]], np.float32)
    assert np.array_equal(xyz[0], start), xyz[0]
    return "mdtraj read nbkit md's DCD"


def main():
    nbkit = os.path.abspath(sys.argv[1])
    with tempfile.TemporaryDirectory() as tmp:
        checked = [map_read_from_vmd_plugin_dcd(nbkit, tmp), md_trajectory_read_by_vmd_plugin(nbkit, tmp)]
    print("; ".join(checked))


if __name__ == "__main__":
    main()
