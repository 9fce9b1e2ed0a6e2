"""MD from Python: the same run as `nbkit md` on the same TOML, numpy state, callbacks."""
import csv

import numpy as np
import pytest

import nbkit

LJ = {"system": {"lattice": "fcc", "density": 0.8442, "cells": [4, 4, 3], "temperature": 1.44},
      "pair": {"cutoff": 2.5}, "run": {"steps": 40, "thermo": 10}}


def thermo_rows(path):
    lines = [line for line in open(path) if not line.startswith("#")]
    rows = list(csv.DictReader(lines))
    return rows


def test_lennard_jones_run_equals_the_command(tmp_path, cli):
    text = 'units = "lj"\n' + nbkit._options.toml_text(LJ)
    (tmp_path / "run.toml").write_text(text)
    cli("md", tmp_path / "run.toml", "--backend", "cpu", "-q", "-o", tmp_path / "out")
    rows = thermo_rows(tmp_path / "out" / "thermo.csv")
    sim = nbkit.md.Simulation(tmp_path / "run.toml", backend="cpu")
    seen = []
    frames = []
    summary = sim.step(40, thermo=seen.append, thermo_every=10, frame=lambda s, x, box: frames.append((s, x.copy())),
                       frame_every=20, progress=False)
    assert [r["step"] for r in seen] == [0, 10, 20, 30, 40] == [int(r["step"]) for r in rows]
    for mine, theirs in zip(seen, rows):
        for key in ("temperature", "potential", "total", "pressure"):
            assert float(f"{mine[key]:.12g}") == float(theirs[key]), key
    assert [s for s, _ in frames] == [0, 20, 40] and frames[-1][1].shape == (192, 3)
    np.testing.assert_array_equal(frames[-1][1], sim.positions)
    assert summary["steps"] == 40 and summary["atoms"] == 192 and sim.step_count == 40
    assert sim.velocities.shape == sim.forces.shape == (192, 3) and len(sim.box) == 3


def test_a_biomolecular_run_from_a_dict(tmp_path, test_data_dir):
    config = {"system": {"psf": test_data_dir / "butane.psf", "parameters": [test_data_dir / "butane.prm"],
                         "coordinates": test_data_dir / "butane.crd", "box": [20.0, 20.0, 20.0]},
              "nonbonded": {"electrostatics": "pme", "cutoff": 8.0},
              "run": {"timestep": 0.5, "steps": 20, "thermo": 10}}
    sim = nbkit.md.Simulation(config, backend="cpu")
    e0 = sim.energies
    assert set(e0) >= {"bond", "angle", "dihedral", "total"} and np.isfinite(e0["total"])
    minimized = sim.minimize(progress=False)
    assert minimized["final_energy"] <= minimized["initial_energy"]
    sim.run(progress=False)
    assert sim.step_count == 20 and np.isfinite(sim.thermo["total"])
    sim.checkpoint(tmp_path / "c.chk")
    after = sim.positions
    sim.step(5, progress=False)
    sim.restore(tmp_path / "c.chk")
    np.testing.assert_array_equal(sim.positions, after)


def test_md_errors():
    with pytest.raises(nbkit.Error, match="unknown key"):
        nbkit.md.Simulation({"run": {"step": 20}})
    with pytest.raises(TypeError, match="not a TOML value"):
        nbkit.md.Simulation({"run": {"steps": object()}})
