"""N-body from Python against numpy and against `nbkit nbody` on the same Plummer sphere."""
import csv

import numpy as np
import pytest

import nbkit


def numpy_accelerations(x, m, eps):
    d = x[None, :, :] - x[:, None, :]  # r_j - r_i
    r2 = (d ** 2).sum(axis=2) + eps * eps
    np.fill_diagonal(r2, np.inf)
    inv = r2 ** -0.5
    return (m[None, :, None] * d * (inv ** 3)[:, :, None]).sum(axis=1), -(m[None, :] * inv).sum(axis=1)


@pytest.mark.parametrize("backend,precision,tolerance", [("reference", "double", 1e-12), ("cpu", "double", 1e-12),
                                                         ("cpu", "single", 1e-5)])
def test_accelerations_match_numpy(backend, precision, tolerance):
    rng = np.random.default_rng(11)
    n = 517  # awkward size: a partial block of bodies
    x, m = rng.normal(size=(n, 3)), rng.uniform(0.5, 1.5, n) / n
    exact_a, exact_phi = numpy_accelerations(x, m, 0.01)
    engine = nbkit.nbody.ForceEngine(softening=0.01, backend=backend, precision=precision)
    a, phi = engine.accelerations(x, m)
    # Relative to the sum of |terms| per body: float32 pair terms carry ~1e-7 of themselves each,
    # summed in float64, so 1e-5 is loose by two orders; float64 to ~1e-15.
    scale_a = (m[None, :] / ((x[None] - x[:, None]) ** 2 + 1e-4).sum(axis=2)).sum(axis=1)
    assert (np.linalg.norm(a - exact_a, axis=1) / scale_a).max() < tolerance
    assert (np.abs(phi - exact_phi) / np.abs(exact_phi)).max() < tolerance
    assert engine.backend == backend
    a2, none = engine.accelerations(x.astype(np.float32), m, potential=False)
    assert none is None and a2.shape == (n, 3)


def test_simulation_equals_the_command(tmp_path, cli):
    cli("nbody", "--plummer", "300", "--seed", "5", "--steps", "20", "--every", "5", "--backend", "cpu", "-q", "-o",
        tmp_path)
    rows = [r for r in csv.reader(line for line in open(tmp_path / "diagnostics.csv") if not line.startswith("#"))]
    header, rows = rows[0], rows[1:]
    bodies = nbkit.nbody.plummer(300, seed=5)
    sim = nbkit.nbody.Simulation(bodies["positions"], bodies["velocities"], bodies["masses"], backend="cpu")
    d = sim.run(20, diagnostics_every=5, progress=False)
    assert list(d["step"]) == [0, 5, 10, 15, 20] and len(rows) == 5
    for column in ("kinetic", "potential", "total"):
        np.testing.assert_array_equal(d[column], [float(r[header.index(column)]) for r in rows])
    assert d["momentum"].shape == (5, 3) and sim.step == 20
    assert sim.largest_energy_error < 1e-3 and sim.positions.shape == (300, 3)


def test_tree_matches_numpy_and_the_command(tmp_path, cli):
    # The Barnes-Hut tree at theta 0.5 with quadrupoles: 99% of bodies within 1e-3 of the exact
    # sum (measured ~4e-4 on Plummer spheres), theta 0 the exact sum in the tree's order.
    bodies = nbkit.nbody.plummer(3000, seed=3)
    x, m = bodies["positions"], bodies["masses"]
    exact_a, _ = numpy_accelerations(x, m, 0.01)
    tree = nbkit.nbody.ForceEngine(softening=0.01, backend="cpu", method="tree", theta=0.5)
    a, phi = tree.accelerations(x, m)
    error = np.linalg.norm(a - exact_a, axis=1) / np.linalg.norm(exact_a, axis=1)
    assert np.quantile(error, 0.99) < 1e-3 and "tree" in tree.description
    exact_tree = nbkit.nbody.ForceEngine(softening=0.01, backend="cpu", precision="double", method="tree", theta=0)
    a0, _ = exact_tree.accelerations(x, m)
    assert (np.linalg.norm(a0 - exact_a, axis=1) / np.linalg.norm(exact_a, axis=1)).max() < 1e-12
    with pytest.raises(nbkit.Error):
        nbkit.nbody.ForceEngine(method="tree", theta=2.0, backend="cpu")
    with pytest.raises(ValueError):
        nbkit.nbody.ForceEngine(method="tree", multipole="octupole", backend="cpu")
    # The same run as `nbkit nbody --method tree`.
    cli("nbody", "--plummer", "300", "--seed", "5", "--steps", "10", "--every", "5", "--backend", "cpu",
        "--method", "tree", "--theta", "0.6", "-q", "-o", tmp_path)
    rows = [r for r in csv.reader(line for line in open(tmp_path / "diagnostics.csv") if not line.startswith("#"))]
    header, rows = rows[0], rows[1:]
    start = nbkit.nbody.plummer(300, seed=5)
    sim = nbkit.nbody.Simulation(start["positions"], start["velocities"], start["masses"], backend="cpu",
                                 method="tree", theta=0.6)
    d = sim.run(10, diagnostics_every=5, progress=False)
    np.testing.assert_array_equal(d["total"], [float(r[header.index("total")]) for r in rows])
    assert d["bodies_per_second"] > 0
