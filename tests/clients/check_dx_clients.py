#!/usr/bin/env python3
"""Real clients read nbkit's OpenDX (and its other map formats) back with the same values.

Usage: check_dx_clients.py NBKIT_BINARY PQR_FILE

Computes a small map of a real protein with nbkit, then
  1. GridDataFormats (Debian python3-griddataformats, used by MDAnalysis) reads it:
     shape, origin, spacing and every value must match an independent float64 numpy sum;
  2. APBS's own `multivalue` tool (Debian apbs) interpolates it at lattice points, which
     must return the lattice values.
Exit 77 (CTest's skip) when neither client is installed.
"""
import os
import subprocess
import sys
import tempfile

try:
    import numpy as np
except ImportError:  # the independent sum needs numpy (Debian python3-numpy)
    print("numpy not installed: skipped")
    sys.exit(77)

COULOMB_KCAL = 332.0637133  # CODATA 2018, as include/nbkit/core/units.hpp
KT_KCAL = 1.380649e-23 * 298.15 * 6.02214076e23 / 4184.0
MULTIVALUE = "/usr/lib/apbs/tools/bin/multivalue"


def read_pqr(path):
    atoms = []
    for line in open(path):
        if line.startswith(("ATOM", "HETATM")):
            f = line.split()
            atoms.append([float(v) for v in f[-5:]])
    return np.array(atoms)


def main():
    nbkit, pqr = sys.argv[1], sys.argv[2]
    checked = []
    with tempfile.TemporaryDirectory() as tmp:
        dx = os.path.join(tmp, "map.dx")
        origin, spacing, dims = (-12.0, -9.5, -7.25), 1.5, (9, 8, 7)
        subprocess.run([nbkit, "map", pqr, "-o", dx, "--precision", "double", "-q",
                        "--origin", ",".join(map(str, origin)), "--dims", ",".join(map(str, dims)),
                        "--spacing", str(spacing)], check=True)
        atoms = read_pqr(pqr)
        axes = [origin[a] + spacing * np.arange(dims[a]) for a in range(3)]
        gx, gy, gz = np.meshgrid(*axes, indexing="ij")
        points = np.stack([gx.ravel(), gy.ravel(), gz.ravel()], axis=1)
        d = np.linalg.norm(points[:, None, :] - atoms[None, :, :3], axis=2)
        expected = (COULOMB_KCAL / KT_KCAL) * (atoms[None, :, 3] / d).sum(axis=1)
        expected = expected.reshape(dims)

        try:
            from gridData import Grid
        except ImportError:
            print("GridDataFormats not installed: skipped")
        else:
            g = Grid(dx)
            assert g.grid.shape == dims, g.grid.shape
            assert np.allclose(g.origin, origin), g.origin
            assert np.allclose(g.delta, spacing), g.delta
            err = np.abs(g.grid - expected).max() / np.abs(expected).max()
            assert err < 1e-7, f"GridDataFormats values differ: {err}"
            checked.append(f"GridDataFormats {err:.1e}")

        if os.access(MULTIVALUE, os.X_OK):
            csv = os.path.join(tmp, "points.csv")
            out = os.path.join(tmp, "values.csv")
            sample = [(1, 2, 3), (0, 0, 0), (8, 7, 6), (4, 0, 5), (2, 6, 1)]
            with open(csv, "w") as f:
                for i, j, k in sample:
                    f.write(f"{axes[0][i]},{axes[1][j]},{axes[2][k]}\n")
            subprocess.run([MULTIVALUE, csv, dx, out], check=True, stdout=subprocess.DEVNULL)
            rows = [line.strip().split(",") for line in open(out) if line.strip()]
            assert len(rows) == len(sample), rows
            for (i, j, k), row in zip(sample, rows):
                got = float(row[3])
                assert abs(got - expected[i, j, k]) <= 1e-6 * abs(expected).max(), (i, j, k, got, expected[i, j, k])
            checked.append("APBS multivalue")
        else:
            print("APBS multivalue not installed: skipped")

        # The large-map formats (issue 21): gzip-compressed OpenDX through GridDataFormats, CCP4/MRC
        # (z, y, x axis order) through mrcfile and GridDataFormats, APBS's binary OpenDX through
        # its documented layout (header text, "binary data follows", little-endian doubles).
        common = [nbkit, "map", pqr, "--precision", "double", "-q", "--origin", ",".join(map(str, origin)),
                  "--dims", ",".join(map(str, dims)), "--spacing", str(spacing)]
        scale = abs(expected).max()
        try:
            from gridData import Grid
        except ImportError:
            pass
        else:
            gz = os.path.join(tmp, "map.dx.gz")
            subprocess.run(common + ["-o", gz], check=True)
            g = Grid(gz)
            assert g.grid.shape == dims and np.allclose(g.origin, origin) and np.allclose(g.delta, spacing)
            err = np.abs(g.grid - expected).max() / scale
            assert err < 1e-7, f"GridDataFormats .dx.gz values differ: {err}"
            checked.append(f"GridDataFormats .dx.gz {err:.1e}")
        mrc = os.path.join(tmp, "map.mrc")
        subprocess.run(common + ["-o", mrc], check=True)
        try:
            import mrcfile
        except ImportError:
            print("mrcfile not installed: skipped")
        else:
            with mrcfile.open(mrc, permissive=False) as m:
                h = m.header
                assert (int(h.mapc), int(h.mapr), int(h.maps)) == (3, 2, 1), (h.mapc, h.mapr, h.maps)
                assert np.allclose([h.origin.x, h.origin.y, h.origin.z], origin)
                assert np.allclose(m.voxel_size.x, spacing)
                data = m.data  # sections (x), rows (y), columns (z): the map's own order
                assert data.shape == dims, data.shape
                err = np.abs(data - expected).max() / scale
                assert err < 1e-6, f"mrcfile values differ: {err}"  # float32
                assert np.isclose(h.dmin, data.min()) and np.isclose(h.dmax, data.max())
                checked.append(f"mrcfile {err:.1e}")
            try:
                from gridData import Grid
            except ImportError:
                pass
            else:
                g = Grid(mrc)
                assert g.grid.shape == dims, g.grid.shape
                err = np.abs(g.grid - expected).max() / scale
                assert err < 1e-6, f"GridDataFormats .mrc values differ: {err}"
                checked.append(f"GridDataFormats .mrc {err:.1e}")
        dxbin = os.path.join(tmp, "map.dxbin")
        subprocess.run(common + ["-o", dxbin], check=True)
        raw = open(dxbin, "rb").read()
        marker = b"binary data follows\n"
        start = raw.index(marker) + len(marker)
        n = dims[0] * dims[1] * dims[2]
        values = np.frombuffer(raw[start:start + 8 * n], dtype="<f8").reshape(dims)
        assert raw[start + 8 * n:].startswith(b"\nattribute"), raw[start + 8 * n:][:40]
        err = np.abs(values - expected).max() / scale
        assert err < 1e-10, f"binary OpenDX values differ: {err}"  # float64 sums in another order: ~1e-12
        checked.append(f"binary OpenDX by its layout {err:.1e}")

    if not checked:
        sys.exit(77)
    print("read back by: " + ", ".join(checked))


if __name__ == "__main__":
    main()
