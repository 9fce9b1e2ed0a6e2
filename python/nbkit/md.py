"""Molecular dynamics from Python (``nbkit md``): a run described by the command's TOML (a
file, or the same tables as a dict), the library's Simulation with its backends, positions,
velocities, forces and box as numpy arrays, per-term energies, and reporters as callables."""
from __future__ import annotations

import os
from typing import Any, Callable, Optional, Sequence, Union

import numpy as np

from . import _nbkit
from ._options import toml_text

Progress = Union[bool, None, Callable[[float], None]]
GPUs = Union[str, int, Sequence[int]]


class Simulation:
    """An MD run (OpenMM's Simulation: the system, its force field and the integrator).

    config: the path of an ``nbkit md`` TOML file (README, "Molecular dynamics": a LAMMPS data
        file or fcc lattice with Lennard-Jones, an AMBER prmtop/inpcrd, a CHARMM psf with
        parameters, [nonbonded], [constraints], [run], ...), or a dict of the same tables, e.g.
        ``{"system": {"prmtop": "x.prmtop", "coordinates": "x.inpcrd"}, "nonbonded":
        {"electrostatics": "pme", "cutoff": 9.0}, "run": {"timestep": 2.0, "steps": 1000}}``,
        whose relative paths start from ``base`` (default: the working directory).
    backend: "auto" (the GPU when usable), "cuda", "cpu" or "reference"; precision: None (the
        engine's default: mixed on the GPU, double on the CPU), "single" or "double"; threads (0:
        all); gpus: the GPU ("all": the first; MD runs on one); time_phases: time the step's phases
        (:attr:`phases`).
    """

    def __init__(self, config: Union[str, os.PathLike, dict], *, base: Union[str, os.PathLike, None] = None,
                 backend: str = "auto", precision: Optional[str] = None, threads: int = 0, gpus: GPUs = "all",
                 time_phases: bool = False) -> None:
        options = dict(backend=backend, precision=precision, threads=threads, gpus=gpus, time_phases=time_phases)
        if isinstance(config, dict):
            text, source = toml_text(config), "<config dict>"
            folder = os.fspath(base) if base is not None else os.getcwd()
        else:
            path = os.fspath(config)
            if not os.path.exists(path):
                raise FileNotFoundError(2, "No such file", path)
            with open(path, encoding="utf-8") as f:
                text = f.read()
            source = path
            folder = os.fspath(base) if base is not None else os.path.dirname(os.path.abspath(path))
        self._simulation = _nbkit._MdSimulation(text, source, folder, options)

    def step(self, steps: int, *, thermo: Optional[Callable[[dict], None]] = None, thermo_every: int = 0,
             frame: Optional[Callable[[int, np.ndarray, tuple], None]] = None, frame_every: int = 0,
             progress: Progress = True) -> dict:
        """Takes ``steps`` steps. ``thermo(row)`` hears a dict (step, temperature, potential,
        kinetic, total, pressure, and each force term's energy for biomolecular runs) every
        ``thermo_every`` steps (0: the config's thermo interval) and at the first and last step;
        ``frame(step, positions, box)`` every ``frame_every`` steps. Returns the run's atoms,
        steps, seconds and atom_steps_per_second (and ns_per_day for fs steps)."""
        s = self._simulation.step(steps, thermo_every, thermo, frame_every, frame, progress)
        out = dict(atoms=s.atoms, steps=s.steps, seconds=s.seconds, atom_steps_per_second=s.atom_steps_per_second)
        if self.energies is not None and s.seconds > 0:
            out["ns_per_day"] = s.steps * self.timestep * 1e-6 / s.seconds * 86400.0
        return out

    def run(self, **reporters: Any) -> dict:
        """The config's own number of steps ([run] steps), with :meth:`step`'s reporters."""
        return self.step(self.steps, **reporters)

    def minimize(self, *, tolerance: Optional[float] = None, max_iterations: int = 0,
                 progress: Progress = True) -> dict:
        """L-BFGS energy minimisation until the largest force is at most ``tolerance``
        (kcal/mol/A; default OpenMM's 10 kJ/mol/nm) or ``max_iterations`` (0: no limit), before
        the first step (biomolecular runs). Returns energies, largest forces, iterations,
        evaluations, converged, seconds."""
        return self._simulation.minimize(tolerance or 0.0, max_iterations, progress)

    def checkpoint(self, path: Union[str, os.PathLike]) -> None:
        """Writes the state a restart continues from bit for bit (biomolecular runs)."""
        self._simulation.checkpoint(os.fspath(path))

    def restore(self, path: Union[str, os.PathLike]) -> None:
        """Goes on from a checkpoint written by :meth:`checkpoint` or ``nbkit md``."""
        path = os.fspath(path)
        if not os.path.exists(path):
            raise FileNotFoundError(2, "No such file", path)
        self._simulation.restore(path)

    @property
    def positions(self) -> np.ndarray:
        """(n, 3) positions now (a copy), the units' length."""
        return self._simulation.positions

    @property
    def velocities(self) -> np.ndarray:
        """(n, 3) velocities now (a copy), the units' length per time."""
        return self._simulation.velocities

    @property
    def forces(self) -> np.ndarray:
        """(n, 3) forces of the last evaluation (a copy), the units' energy per length."""
        return self._simulation.forces

    @property
    def box(self) -> tuple:
        """The periodic box's edges (a, b, c)."""
        return self._simulation.box

    @property
    def masses(self) -> np.ndarray:
        return self._simulation.masses

    @property
    def thermo(self) -> dict:
        """The thermo row of the last evaluation with energies (the first and last step's)."""
        return self._simulation.thermo

    @property
    def energies(self) -> Optional[dict]:
        """Each force term's energy (kcal/mol) and their total (biomolecular runs; else None)."""
        return self._simulation.energies

    @property
    def phases(self) -> Optional[dict]:
        """Seconds per phase of the steps so far (with time_phases=True)."""
        return self._simulation.phases

    @property
    def step_count(self) -> int:
        return self._simulation.step_count

    @property
    def steps(self) -> int:
        """The config's [run] steps."""
        return self._simulation.steps

    @property
    def timestep(self) -> float:
        return self._simulation.timestep

    @property
    def backend(self) -> str:
        return self._simulation.backend

    @property
    def description(self) -> str:
        """Where and how it runs, e.g. "GPU: NVIDIA H100 80GB HBM3, float32"."""
        return self._simulation.description

    @property
    def notice(self) -> str:
        return self._simulation.notice

    @property
    def list_builds(self) -> int:
        return self._simulation.list_builds

    @property
    def constraint_count(self) -> int:
        return self._simulation.constraint_count

    @property
    def largest_constraint_deviation(self) -> float:
        return self._simulation.largest_constraint_deviation
