"""Electrostatic potential maps from Python: the library's ``compute_map``, trajectory maps and
ion placement, with the ``nbkit map`` and ``nbkit ionize`` commands' options as keywords."""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Callable, Optional, Sequence, Union

import numpy as np

from . import _nbkit
from ._gpu import framework_of
from ._nbkit import Map

Progress = Union[bool, None, Callable[[float], None]]
GPUs = Union[str, int, Sequence[int]]


@dataclass
class Structure:
    """Atoms with charges (e) and radii (Angstrom) as float64 numpy arrays, positions (n, 3) in
    Angstrom; ``box``: the file's periodic cell edges (a, b, c) or None. Pass it to
    :func:`map` as the positions argument."""

    positions: np.ndarray
    charges: np.ndarray
    radii: np.ndarray
    box: Optional[tuple] = None
    path: str = ""

    def __len__(self) -> int:
        return len(self.charges)


def read_structure(path: Union[str, os.PathLike], *, charges: Optional[str] = None,
                   allow_missing: bool = False) -> Structure:
    """Reads atoms with charges and radii from a PQR file, or from a PDB/mmCIF file by running
    pdb2pqr with the force field ``charges`` ("amber", "charmm", "parse", ...), as ``nbkit map
    --charges``. ``allow_missing``: leave out residues pdb2pqr cannot charge instead of failing."""
    d = _nbkit._read_structure(os.fspath(path), charges or "", allow_missing)
    box = tuple(d["box"]) if d["box"] is not None else None
    return Structure(d["positions"], d["charges"], d["radii"], box, os.fspath(path))


def _has_charges(obj: Any) -> bool:
    """Whether an input object carries charges of its own (a density map needs none)."""
    if isinstance(obj, Structure):
        return True
    module = type(obj).__module__ or ""
    if module.startswith("MDAnalysis"):
        return hasattr(obj.atoms, "charges")
    return module.startswith("parmed")


def _atoms(positions: Any, charges: Any, radii: Any) -> tuple:
    """(positions, charges, radii) from arrays, a Structure, an MDAnalysis AtomGroup or Universe,
    or a ParmEd Structure; charges and radii given explicitly win over the object's."""
    obj = positions
    if isinstance(obj, Structure):
        return obj.positions, obj.charges if charges is None else charges, obj.radii if radii is None else radii
    module = type(obj).__module__ or ""
    if module.startswith("MDAnalysis"):
        group = obj.atoms  # a Universe's atoms, or the AtomGroup itself
        if charges is None:
            if not hasattr(group, "charges"):
                raise ValueError("the AtomGroup has no charges (its topology carries none: read a PQR, PSF or prmtop, "
                                 "or pass charges=)")
            charges = group.charges
        if radii is None and hasattr(group, "radii"):
            radii = group.radii
        return group.positions, charges, radii
    if module.startswith("parmed"):
        atoms = obj.atoms
        if charges is None:
            charges = np.array([a.charge for a in atoms], dtype=np.float64)
        if radii is None:
            radii = np.array([a.solvent_radius for a in atoms], dtype=np.float64)
        return np.asarray(obj.coordinates, dtype=np.float64), charges, radii
    if charges is None:
        raise TypeError("map(): charges are needed with an array of positions")
    return positions, charges, radii


def map(positions: Any, charges: Any = None, radii: Any = None, *, method: str = "direct", spacing: float = 0.5,
        padding: float = 10.0, origin: Optional[Sequence[float]] = None, shape: Optional[Sequence[int]] = None,
        units: str = "kT/e", dielectric: Optional[float] = None, temperature: float = 298.15,
        ionic_strength: float = 0.15, cutoff: float = 12.0, smoothing: str = "cutcp", bin_size: float = 0.0,
        msm_spacing: float = 0.0, msm_interpolation: str = "cubic", msm_splitting: Optional[str] = None,
        periodic_box: Optional[Sequence[float]] = None, weight: str = "number", radius_scale: float = 1.0,
        sigma: float = 0.0, points: bool = False, backend: str = "auto", precision: str = "single",
        threads: int = 0, gpus: GPUs = "all", progress: Progress = True) -> Map:
    """The electrostatic potential of point charges on a 3-D lattice (``nbkit map``).

    positions: (n, 3) float32/float64 array in Angstrom; or an MDAnalysis ``AtomGroup`` or
        ``Universe`` (positions, charges and, for PQR input, radii from its attributes), a ParmEd
        ``Structure``, or a :class:`Structure` from :func:`read_structure`.
    charges: (n,) partial charges, e.  radii: (n,) ion-exclusion radii, Angstrom (mdh only).
    method: "direct" (Coulomb), "mdh" (Debye-Hueckel with radii, APBS's mdh), "cutoff"
        (short-range, linear time, ``smoothing`` none/cutcp/taylor1..3) or "msm" (multilevel
        summation: full Coulomb in linear time; ``msm_spacing``, ``msm_interpolation`` cubic or
        quintic, ``msm_splitting`` taylor1..3). Not potentials (VMD's volmap): "density" (each atom
        a normalised Gaussian of sigma = radius x ``radius_scale``, or ``sigma`` for all, weighted by
        ``weight`` "number" or "charge", cut at 5 sigma: atoms or e per A^3) and "occupancy" (1
        within radius x ``radius_scale`` of an atom, or with ``points`` where an atom's centre is in
        the point's voxel; averaged over a trajectory, the fraction of frames occupied).
    Lattice: points ``spacing`` apart over the atoms' bounding box plus ``padding``; or
        ``origin`` (x, y, z) with ``shape`` (nx, ny, nz); or, with ``periodic_box`` (a, b, c: the
        cell from the origin; cutoff and msm only), the cell itself.
    units: "kT/e" (at ``temperature`` K), "kcal/mol/e" or "V". dielectric: 1 (78.54 for mdh).
    ionic_strength: mol/L of 1:1 salt (mdh). cutoff: Angstrom (cutoff; msm's splitting distance).
    backend: "auto" (the GPU when usable), "cuda", "cpu" or "reference" (float64, one thread);
        precision "single" or "double"; threads: CPU threads (0: all); gpus: "all", an index, or
        a list of indices.
    progress: True for a bar on a terminal's stderr, a callable taking the fraction done, or
        False.

    Returns a :class:`nbkit.Map`: ``values`` (a numpy view of shape (nx, ny, nz), x slowest, no
    copy), ``origin``, ``spacing``, ``shape``, ``units``, ``stats``, and ``to_dx``, ``to_mrc``,
    ``to_png``. The values are those of ``nbkit map`` for the same input, backend and precision.
    With CuPy arrays or PyTorch CUDA tensors as inputs (backend "cuda" or "auto"; direct, mdh or
    cutoff, periodic or not), a :class:`DeviceMap` whose values stay on the GPU, an array of the
    same kind: the atoms are checked, prepared and binned on their GPU and never pass through
    the host (only the first refused atom's values do, for the error message). The values equal
    those of numpy inputs on the GPU bit for bit.
    """
    if method in ("density", "occupancy") and charges is None and not _has_charges(positions):
        charges = np.zeros(len(np.asarray(getattr(getattr(positions, "atoms", positions), "positions", positions))))
    pos, q, r = _atoms(positions, charges, radii)
    options = dict(
        method=method, spacing=spacing, padding=padding, origin=origin, shape=shape, units=units,
        dielectric=dielectric, temperature=temperature, ionic_strength=ionic_strength, cutoff=cutoff,
        smoothing=smoothing, bin_size=bin_size, msm_spacing=msm_spacing, msm_interpolation=msm_interpolation,
        msm_splitting=msm_splitting, periodic_box=periodic_box, weight=weight, radius_scale=radius_scale,
        sigma=sigma, points=points, backend=backend, precision=precision,
        threads=threads, gpus=gpus, progress=progress)
    gpu = framework_of(pos, q, r)
    if gpu is None:
        return _nbkit._map(pos, q, r, options)
    # GPU arrays in: the atoms are read, checked, prepared and binned on their GPU, and the map
    # is written by the GPUs straight into an array of the same kind on the same device; inputs
    # given as host arrays beside them are moved there first.
    def on_gpu(a: Any) -> Any:
        if a is None or framework_of(a):
            return None if a is None else gpu.prepare(a)  # tensors detached, moved to the positions' GPU
        a = np.asarray(a)  # float64 unless float32 already, as the host path reads it
        return gpu.prepare(a if a.dtype in (np.float32, np.float64) else a.astype(np.float64))

    pos, q, r = on_gpu(pos), on_gpu(q), on_gpu(r)
    gpu.synchronize()
    d = _nbkit._map_on_device(pos, q, r, options, gpu.allocate)
    return DeviceMap(d["values"], tuple(d["origin"]), d["spacing"], d["units"], d["stats"], d["comments"])


class DeviceMap:
    """A map whose values stay on the GPU (:func:`map` of CuPy or PyTorch inputs): ``values`` is
    an array of the inputs' kind, shape (nx, ny, nz), float64, on their device; ``origin``,
    ``spacing``, ``shape``, ``units``, ``stats`` as :class:`nbkit.Map`'s. ``to_host()`` makes the
    :class:`nbkit.Map` (for ``to_dx``, ``to_mrc``, ``to_png``)."""

    def __init__(self, values: Any, origin: tuple, spacing: float, units: str, stats: dict, comments: list) -> None:
        self.values, self.origin, self.spacing, self.units, self.stats = values, origin, spacing, units, stats
        self._comments = comments

    @property
    def shape(self) -> tuple:
        return tuple(int(n) for n in self.values.shape)

    def to_host(self) -> Map:
        """The map copied to the host as an :class:`nbkit.Map`."""
        return _nbkit._map_from_array(framework_of(self.values).to_host(self.values), list(self.origin), self.spacing,
                                      self.units, self._comments)

    def __repr__(self) -> str:
        nx, ny, nz = self.shape
        return f"<nbkit.DeviceMap {nx}x{ny}x{nz} points on {type(self.values).__module__.split('.')[0]}, " \
               f"spacing {self.spacing} A, {self.units}>"


def trajectory_map(atoms: Any, *, charges: Any = None, radii: Any = None, combine: str = "avg", first: int = 0,
                   last: Optional[int] = None, stride: int = 1, **options: Any) -> Map:
    """The maps of a trajectory's frames combined ("avg", "min", "max" or "stdev", the population
    standard deviation), as ``nbkit map --trajectory``: VMD's ``volmap -allframes -combine``.

    atoms: an MDAnalysis ``Universe`` or ``AtomGroup`` (any trajectory format MDAnalysis reads)
        whose frames ``first`` to ``last`` (0-based, inclusive; None: the end) on ``stride`` are
        mapped; charges and radii as in :func:`map`.
    options: :func:`map`'s keywords. The lattice is chosen from the first frame's atoms. Memory:
        one frame's map and the accumulators; on a GPU the frames are combined there.
    """
    if first < 0 or stride < 1 or (last is not None and last < first):
        raise ValueError("first, last, stride: expected 0 <= first <= last (or last None for the end) and stride >= 1")
    module = type(atoms).__module__ or ""
    if not module.startswith("MDAnalysis"):
        raise TypeError("trajectory_map(): expected an MDAnalysis Universe or AtomGroup (for one structure, use map())")
    group = atoms.atoms
    frames = group.universe.trajectory[first:(None if last is None else last + 1):stride]
    count = len(frames)
    if count == 0:
        raise ValueError(f"no frame at first={first} (the trajectory has {len(group.universe.trajectory)})")
    iterator = iter(frames)
    next(iterator)
    pos, q, r = _atoms(group, charges, radii)
    pos = np.array(pos, copy=True)

    def next_frame() -> Optional[np.ndarray]:
        try:
            next(iterator)
        except StopIteration:
            return None
        return group.positions

    options = dict(options)
    options["frames"] = count
    return _nbkit._trajectory_map(pos, q, r, next_frame, combine, options)


@dataclass
class Ionized:
    """What :func:`ionize` placed: ``ions`` (dicts of name, residue, charge, radius, position,
    potential and energy, in placement order), their ``positions`` (k, 3), the ``map`` of the
    structure with every ion, and the ``seconds`` it took."""

    ions: list
    map: Map
    seconds: float

    @property
    def positions(self) -> np.ndarray:
        return np.array([ion["position"] for ion in self.ions], dtype=np.float64).reshape(-1, 3)


def ionize(positions: Any, charges: Any = None, radii: Any = None, *, cations: Optional[int] = None,
           anions: Optional[int] = None, neutralize: bool = False, ionic_strength: float = 0.0,
           cation: str = "Na+", anion: str = "Cl-", min_distance_solute: float = 5.0, min_distance_ion: float = 5.0,
           method: str = "direct", cutoff: float = 12.0, dielectric: float = 78.54, spacing: float = 1.0,
           padding: float = 12.0, backend: str = "auto", precision: str = "single", threads: int = 0,
           gpus: GPUs = "all", progress: Progress = True) -> Ionized:
    """Places ions as VMD's cionize (``nbkit ionize``): each at the lattice point of lowest energy
    q V at least ``min_distance_solute`` from every atom and ``min_distance_ion`` from every ion
    placed before, the map updated with each ion's own potential.

    Counts: ``cations``/``anions``, or ``neutralize`` (counter-ions for the net charge) and/or
    ``ionic_strength`` (mol/L of salt in the lattice's box, as autoionize counts it). Species:
    Na+, K+, Li+, Cs+, Mg2+, Ca2+, Zn2+ and Cl-, Br-. The potential: ``method``, ``cutoff``,
    ``dielectric`` on a lattice ``spacing`` apart with ``padding``; run options as in :func:`map`.
    """
    pos, q, r = _atoms(positions, charges, radii)
    d = _nbkit._ionize(pos, q, r, dict(
        cations=cations, anions=anions, neutralize=neutralize, ionic_strength=ionic_strength, cation=cation,
        anion=anion, min_distance_solute=min_distance_solute, min_distance_ion=min_distance_ion, method=method,
        cutoff=cutoff, dielectric=dielectric, spacing=spacing, padding=padding, backend=backend,
        precision=precision, threads=threads, gpus=gpus, progress=progress))
    return Ionized(d["ions"], d["map"], d["seconds"])
