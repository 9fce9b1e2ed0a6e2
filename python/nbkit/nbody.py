"""Gravitational N-body from Python (``nbkit nbody``): Plummer-softened gravity by all pairs or
a Barnes-Hut tree on the CPU (SIMD, all cores) or GPUs, Plummer spheres, and leapfrog runs whose
diagnostics come back as numpy arrays. Henon's N-body units: G = 1 (Heggie & Mathieu 1986)."""
from __future__ import annotations

from typing import Any, Callable, Optional, Sequence, Union

import numpy as np

from . import _nbkit
from ._gpu import framework_of

Progress = Union[bool, None, Callable[[float], None]]
GPUs = Union[str, int, Sequence[int]]


class ForceEngine:
    """Accelerations a_i = sum_j m_j (r_j - r_i) / (|r_j - r_i|^2 + eps^2)^(3/2) and potentials
    phi_i = -sum_j m_j / (|r_j - r_i|^2 + eps^2)^(1/2) of bodies given as numpy arrays.

    softening: eps (length units). backend: "auto", "cuda", "cpu" or "reference"; precision:
    "single" (float32 pairs, float64 sums) or "double"; threads (0: all); gpus: "all", an index
    or a list of indices. The engine keeps its GPU buffers from call to call.

    method: "all-pairs" (exact to the arithmetic) or "tree" (Barnes-Hut: far cells through their
    multipoles, O(N log N)); for the tree, theta is the opening angle in [0, 1] (0.5: 99% of
    bodies within 4e-4 of all pairs on Plummer spheres) and multipole "quadrupole" or
    "monopole". The tree runs on the "cpu" or "cuda" backend (one GPU), from host arrays or
    from CuPy/PyTorch arrays on that GPU.
    """

    def __init__(self, *, softening: float = 0.01, backend: str = "auto", precision: str = "single",
                 threads: int = 0, gpus: GPUs = "all", method: str = "all-pairs", theta: float = 0.5,
                 multipole: str = "quadrupole") -> None:
        self._engine = _nbkit._ForceEngine(dict(softening=softening, backend=backend, precision=precision,
                                                threads=threads, gpus=gpus, method=method, theta=theta,
                                                multipole=multipole))

    def accelerations(self, positions: Any, masses: Any, *, potential: bool = True
                      ) -> tuple[np.ndarray, Optional[np.ndarray]]:
        """(accelerations (n, 3), potentials (n,) or None when ``potential`` is False) for
        positions (n, 3) and masses (n,), float32 or float64. With CuPy arrays or PyTorch CUDA
        tensors (backend "cuda", the arrays' GPU), the results are float64 arrays of the same
        kind on that GPU and nothing passes through the host."""
        gpu = framework_of(positions, masses)
        if gpu is None:
            return self._engine.compute(positions, masses, potential)
        positions, masses = gpu.prepare(positions), gpu.prepare(masses)
        gpu.synchronize()
        return self._engine.compute_on_device(positions, masses, potential, gpu.allocate)

    @property
    def backend(self) -> str:
        """The backend that runs ("cpu", "cuda", "reference"; never "auto")."""
        return self._engine.backend

    @property
    def description(self) -> str:
        """What runs, e.g. "CPU AVX3, float32 with float64 sums"."""
        return self._engine.description

    @property
    def notice(self) -> str:
        """Why backend "auto" chose the CPU ('' otherwise)."""
        return self._engine.notice


def plummer(n: int, seed: int = 1) -> dict:
    """A Plummer sphere of n equal masses in Henon units, centre of mass at rest at the origin
    (Aarseth, Henon & Wielen 1974), as ``nbkit nbody --plummer N --seed S``: a dict of
    positions (n, 3), velocities (n, 3) and masses (n,)."""
    return _nbkit._plummer(n, seed)


class Simulation:
    """A leapfrog (kick-drift-kick) run of the bodies (``nbkit nbody``).

    positions, velocities: (n, 3); masses: (n,); dt: the time step (the command's default
    1/128); force options as :class:`ForceEngine`'s.
    """

    def __init__(self, positions: Any, velocities: Any, masses: Any, *, dt: float = 1.0 / 128,
                 softening: float = 0.01, backend: str = "auto", precision: str = "single", threads: int = 0,
                 gpus: GPUs = "all", method: str = "all-pairs", theta: float = 0.5,
                 multipole: str = "quadrupole") -> None:
        self._simulation = _nbkit._NbodySimulation(positions, velocities, masses, dt, dict(
            softening=softening, backend=backend, precision=precision, threads=threads, gpus=gpus,
            method=method, theta=theta, multipole=multipole))

    def run(self, steps: int, *, diagnostics_every: int = 1, progress: Progress = True) -> dict:
        """Takes ``steps`` more steps; returns the diagnostics rows (every ``diagnostics_every``
        steps and at the first and last) as numpy arrays: step, time, kinetic, potential, total,
        virial_ratio (K/|W|), momentum (k, 3), angular_momentum (k, 3); with the run's seconds and
        interactions_per_second (all-pairs equivalent) and bodies_per_second. ``pandas.DataFrame({k: v for k, v in d.items() if np.ndim(v) == 1})``
        makes a table of it."""
        return self._simulation.run(steps, diagnostics_every, progress)

    @property
    def positions(self) -> np.ndarray:
        return self._simulation.bodies["positions"]

    @property
    def velocities(self) -> np.ndarray:
        return self._simulation.bodies["velocities"]

    @property
    def masses(self) -> np.ndarray:
        return self._simulation.bodies["masses"]

    @property
    def step(self) -> int:
        return self._simulation.step

    @property
    def dt(self) -> float:
        return self._simulation.dt

    @property
    def initial_energy(self) -> float:
        """The energy the errors are measured against (the first evaluation's)."""
        return self._simulation.initial_energy

    @property
    def largest_energy_error(self) -> float:
        """max |E/E0 - 1| over every diagnostics row so far."""
        return self._simulation.largest_energy_error

    @property
    def description(self) -> str:
        return self._simulation.description
