"""nbkit.map, trajectory_map, ionize and the map object against a numpy float64 sum and against
the nbkit command on the bundled data (same values for the same backend and precision)."""
import math
import re

import numpy as np
import pytest

import nbkit
from conftest import dx_values_text

# e / (4 pi eps0 1 Angstrom) in volts, from the SI constants nbkit uses (core/units.hpp).
COULOMB_VOLT = 1.602176634e-19 / (4 * math.pi * 8.8541878128e-12 * 1e-10)


def numpy_potential(positions, charges, lattice_points):
    d = np.linalg.norm(lattice_points[:, None, :] - positions[None, :, :], axis=2)
    return COULOMB_VOLT * (charges[None, :] / d).sum(axis=1), COULOMB_VOLT * (np.abs(charges)[None, :] / d).sum(axis=1)


def lattice_points(m):
    nx, ny, nz = m.shape
    i, j, k = np.meshgrid(np.arange(nx), np.arange(ny), np.arange(nz), indexing="ij")
    return np.stack([i, j, k], axis=-1).reshape(-1, 3) * m.spacing + np.array(m.origin)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_random_atoms_match_a_numpy_float64_sum(dtype):
    rng = np.random.default_rng(7)
    n = 301  # awkward: not a multiple of any SIMD width
    positions = rng.uniform(-8, 8, (n, 3)).astype(dtype)
    charges = rng.uniform(-1, 1, n)
    exact, scale = None, None
    for backend, precision, tolerance in [("reference", "double", 1e-12), ("cpu", "double", 1e-12),
                                          ("cpu", "single", 2e-6)]:
        m = nbkit.map(positions, charges, spacing=1.3, padding=3.0, units="V", backend=backend, precision=precision,
                      progress=False)
        if exact is None:
            exact, scale = numpy_potential(positions.astype(np.float64), charges, lattice_points(m))
        # Tolerance relative to the sum of |terms| at each point: float64 rounds each term to
        # ~1e-16 of itself; float32 terms (positions relative to the lattice, in float32) to ~1e-7,
        # summed in float64, so 2e-6 leaves a margin of ~20 over float32's rounding.
        error = np.abs(m.values.reshape(-1) - exact) / scale
        assert error.max() < tolerance, (backend, precision, error.max())
        assert m.units == "V" and m.stats["backend"] == backend


def test_values_are_a_view_of_the_map_not_a_copy():
    m = nbkit.map(np.zeros((1, 3)), np.ones(1), spacing=1.0, padding=2.0, progress=False)
    a, b = m.values, m.values
    assert not a.flags.owndata and np.shares_memory(a, b)
    assert a.shape == m.shape == (5, 5, 5) and a.dtype == np.float64
    a[0, 0, 0] = 42.0
    assert m.values[0, 0, 0] == 42.0
    del m  # the array keeps the map alive
    assert a[0, 0, 0] == 42.0


@pytest.mark.parametrize("method", ["direct", "cutoff", "mdh"])
def test_map_equals_the_command_on_the_bundled_protein(tmp_path, cli, data_dir, method):
    pqr = data_dir / "1a63.pqr"
    cli("map", pqr, "-o", tmp_path / "cli.dx", "--method", method, "--spacing", "1.0", "--backend", "cpu", "-q")
    m = nbkit.map(nbkit.read_structure(pqr), method=method, spacing=1.0, backend="cpu", progress=False)
    m.to_dx(tmp_path / "py.dx")
    assert dx_values_text(tmp_path / "py.dx") == dx_values_text(tmp_path / "cli.dx")


def test_periodic_cutoff_map_spans_the_cell(tmp_path, cli, data_dir):
    pqr = data_dir / "1a63.pqr"
    box = (60.0, 50.0, 55.0)
    cli("map", pqr, "-o", tmp_path / "cli.dx", "--method", "cutoff", "--periodic", "--box", "60,50,55", "--spacing",
        "1.0", "--backend", "cpu", "-q")
    m = nbkit.map(nbkit.read_structure(pqr), method="cutoff", periodic_box=box, spacing=1.0, backend="cpu",
                  progress=False)
    assert m.shape == (60, 50, 55) and m.origin == (0.0, 0.0, 0.0)
    m.to_dx(tmp_path / "py.dx")
    assert dx_values_text(tmp_path / "py.dx") == dx_values_text(tmp_path / "cli.dx")


def test_an_mdanalysis_atomgroup_maps_like_the_pqr(data_dir):
    mda = pytest.importorskip("MDAnalysis")
    u = mda.Universe(str(data_dir / "1a63.pqr"))
    s = nbkit.read_structure(data_dir / "1a63.pqr")
    # MDAnalysis's PQR reader holds charges and radii in float32: equal to ~1e-7 of themselves.
    np.testing.assert_allclose(u.atoms.charges, s.charges, rtol=1e-7)
    np.testing.assert_allclose(u.atoms.radii, s.radii, rtol=1e-7)
    kw = dict(method="mdh", spacing=1.5, backend="cpu", precision="double", progress=False)
    from_group, from_file = nbkit.map(u.atoms, **kw), nbkit.map(s, **kw)
    assert from_group.shape == from_file.shape
    # MDAnalysis holds positions in float32: ~2e-6 A apart from the file's decimals.
    np.testing.assert_allclose(from_group.values, from_file.values, atol=1e-4 * np.abs(from_file.values).max())
    np.testing.assert_array_equal(nbkit.map(u, **kw).values, from_group.values)


def test_trajectory_map_from_a_universe_equals_the_command(tmp_path, cli, data_dir):
    mda = pytest.importorskip("MDAnalysis")
    pqr, dcd = data_dir / "1a63.pqr", data_dir / "1a63-wobble.dcd"
    for combine in ("avg", "stdev"):
        cli("map", pqr, "--trajectory", dcd, "--combine", combine, "--stride", "2", "-o", tmp_path / f"cli-{combine}.dx",
            "--spacing", "1.0", "--backend", "cpu", "-q")
        u = mda.Universe(str(pqr), str(dcd))
        # The frames' positions are the DCD's float32 either way; the charges are passed from
        # nbkit's reading of the PQR, since MDAnalysis rounds them to float32.
        s = nbkit.read_structure(pqr)
        m = nbkit.trajectory_map(u, charges=s.charges, radii=s.radii, combine=combine, stride=2, spacing=1.0,
                                 backend="cpu", progress=False)
        assert m.stats["frames"] == len(u.trajectory[::2])
        m.to_dx(tmp_path / f"py-{combine}.dx")
        assert dx_values_text(tmp_path / f"py-{combine}.dx") == dx_values_text(tmp_path / f"cli-{combine}.dx")


def test_ionize_places_the_ions_the_command_places(tmp_path, cli, data_dir):
    pqr = data_dir / "1a63.pqr"
    cli("ionize", pqr, "--neutralize", "-o", tmp_path / "cli.pqr", "--backend", "cpu", "-q")
    placed = [line for line in open(tmp_path / "cli.pqr") if line.startswith("HETATM")]
    result = nbkit.ionize(nbkit.read_structure(pqr), neutralize=True, backend="cpu", progress=False)
    assert len(result.ions) == len(placed) > 0
    for ion, line in zip(result.ions, placed):
        xyz = [float(v) for v in re.findall(r"-?\d+\.\d+", line[30:54])]
        np.testing.assert_allclose(ion["position"], xyz, atol=6e-4)  # PQR's 3 decimals
    assert result.positions.shape == (len(placed), 3)


def test_map_files_and_picture(tmp_path):
    rng = np.random.default_rng(3)
    m = nbkit.map(rng.uniform(0, 5, (20, 3)), rng.uniform(-1, 1, 20), spacing=1.0, progress=False)
    m.to_dx(tmp_path / "m.dx")
    m.to_mrc(tmp_path / "m.mrc")
    drawn = m.to_png(tmp_path / "m.png", slice="z")
    assert (tmp_path / "m.mrc").stat().st_size > 1024 and (tmp_path / "m.png").read_bytes()[:4] == b"\x89PNG"
    assert drawn["axis"] == "z"
    back = nbkit.read_map(tmp_path / "m.dx")
    assert back.shape == m.shape and back.spacing == m.spacing
    np.testing.assert_allclose(back.values, m.values, rtol=1e-7)  # DX's 7 significant digits


def test_a_parmed_structure_maps_like_the_pqr(data_dir):
    parmed = pytest.importorskip("parmed")
    s = nbkit.read_structure(data_dir / "1a63.pqr")
    p = parmed.load_file(str(data_dir / "1a63.pqr"))  # charges, radii (solvent_radius), coordinates in float64
    kw = dict(method="mdh", spacing=1.5, backend="cpu", precision="double", progress=False)
    np.testing.assert_array_equal(nbkit.map(p, **kw).values, nbkit.map(s, **kw).values)


def test_density_and_occupancy_match_numpy(tmp_path):
    """VMD's volmap density and occupancy: each atom a normalised Gaussian (sigma = radius x
    scale, cut at 5 sigma) or a sphere, against numpy's float64 formula at every point."""
    rng = np.random.default_rng(4)
    pos = rng.uniform(0, 12, size=(60, 3))
    radii = rng.uniform(0.9, 2.0, size=60)
    charges = rng.uniform(-1, 1, size=60)
    common = dict(spacing=0.8, padding=4.0, backend="cpu", progress=False)
    d = nbkit.map(pos, charges, radii, method="density", weight="charge", radius_scale=0.9, **common)
    assert d.units == "e/A^3"
    o = nbkit.map(pos, None, radii, method="occupancy", **common)
    assert o.units == "fraction"
    nx, ny, nz = d.values.shape
    grid = np.stack(np.meshgrid(*(d.origin[a] + d.spacing * np.arange(n) for a, n in enumerate((nx, ny, nz))),
                                indexing="ij"), axis=-1).reshape(-1, 3)
    r2 = ((grid[:, None, :] - pos[None, :, :]) ** 2).sum(-1)
    sigma = 0.9 * radii
    gauss = charges / (2 * np.pi * sigma ** 2) ** 1.5 * np.exp(-r2 / (2 * sigma ** 2))
    want = np.where(r2 <= (5 * sigma) ** 2, gauss, 0).sum(1).reshape(nx, ny, nz)
    np.testing.assert_allclose(d.values, want, rtol=0, atol=1e-13 * np.abs(want).max())
    occupied = (r2 <= radii ** 2).any(1).reshape(nx, ny, nz).astype(float)
    np.testing.assert_array_equal(o.values, occupied)


def test_occupancy_of_a_trajectory_equals_the_command(tmp_path, cli, data_dir):
    mda = pytest.importorskip("MDAnalysis")
    pqr, dcd = data_dir / "1a63.pqr", data_dir / "1a63-wobble.dcd"
    cli("map", pqr, "--trajectory", dcd, "--method", "occupancy", "--select", "name CA", "--spacing", "1.0",
        "--backend", "cpu", "-o", tmp_path / "cli.dx", "-q")
    u = mda.Universe(str(pqr), str(dcd))
    s = nbkit.read_structure(pqr)
    ca = u.select_atoms("name CA")
    m = nbkit.trajectory_map(ca, charges=s.charges[ca.indices], radii=s.radii[ca.indices], method="occupancy",
                             spacing=1.0, backend="cpu", progress=False)
    m.to_dx(tmp_path / "py.dx")
    assert dx_values_text(tmp_path / "py.dx") == dx_values_text(tmp_path / "cli.dx")
    # The fraction of the 20 frames in which each point lies within a C-alpha's sphere.
    assert np.all(np.isclose(m.values * 20, np.round(m.values * 20)))
    assert 0 < m.values.max() <= 1
