"""Trajectory analysis: radial distribution functions over any trajectory MDAnalysis reads."""
from dataclasses import dataclass
from typing import Any, Optional, Union

import numpy as np

from . import _nbkit

GPUs = Union[str, int, list, tuple]


@dataclass
class RDF:
    """What :func:`rdf` counted: ``edges`` (bins + 1, Angstrom), ``bins`` (their centres),
    ``counts`` (pairs per bin, summed over the frames: exact integers), ``rdf`` (normalised as
    ``norm`` says), ``coordination`` (B atoms within each bin's upper edge of an A atom, on
    average), ``frames``, ``pairs`` (the pairs g(r) is normalised by), ``mean_volume``
    (Angstrom^3), ``backend`` and ``detail`` (what counted them)."""

    edges: np.ndarray
    bins: np.ndarray
    counts: np.ndarray
    rdf: np.ndarray
    coordination: np.ndarray
    frames: int
    pairs: float
    mean_volume: float
    backend: str
    detail: str


def rdf(group_a: Any, group_b: Any = None, *, rmin: float = 0.0, rmax: float = 15.0, bins: int = 75,
        exclude: str = "none", norm: str = "rdf", volume: Optional[float] = None, first: int = 0,
        last: Optional[int] = None, stride: int = 1, backend: str = "auto", gpus: GPUs = "all",
        threads: int = 0) -> RDF:
    """The radial distribution function g(r) between two MDAnalysis ``AtomGroup``\\ s of one
    universe over its trajectory (any format MDAnalysis reads: DCD, XTC, TRR, NetCDF, ...), as
    ``nbkit rdf`` and normalised as MDAnalysis's ``InterRDF``.

    group_a, group_b: the groups (group_b None: group_a against itself). An atom is never paired
        with itself, so a group against itself equals ``InterRDF(..., exclusion_block=(1, 1))``.
    rmin, rmax, bins: the histogram (InterRDF's ``range`` and ``nbins``); rmax at most half the
        narrowest width of every frame's cell (minimum images in each frame's own cell,
        orthorhombic or triclinic, from ``ts.dimensions``).
    exclude: "none", "residue" (pairs within a residue left out, as InterRDF's exclusion_block
        for blocks that are residues) or "molecule" (the universe's fragments: needs bonds).
    norm: "rdf", "density" or "none", as InterRDF's; "vmd": as VMD's ``measure gofr`` (each frame
        normalised by its own volume, then averaged: differs from "rdf" only when the volume
        changes). volume: Angstrom^3 for frames without a cell ("vmd": 30 A^3 a group-A atom by
        default, VMD's rule).
    first, last, stride: the frames (0-based, last inclusive; None: the end).
    backend, gpus, threads: as everywhere in nbkit; the counts are the same on every backend.

    Counts are exact integers from float64 distances binned by numpy.histogram's rule.
    """
    module = type(group_a).__module__ or ""
    if not module.startswith("MDAnalysis"):
        raise TypeError("rdf(): expected MDAnalysis AtomGroups (the universe's trajectory supplies the frames)")
    group_b = group_a if group_b is None else group_b
    universe = group_a.universe
    if group_b.universe is not universe:
        raise ValueError("rdf(): group_a and group_b belong to different universes")
    if first < 0 or stride < 1 or (last is not None and last < first):
        raise ValueError("first, last, stride: expected 0 <= first <= last (or last None for the end) and stride >= 1")
    atoms = universe.atoms
    residues = atoms.resindices if exclude == "residue" else None
    molecules = None
    if exclude == "molecule":
        try:
            molecules = atoms.fragindices
        except Exception as error:  # MDAnalysis's NoDataError: a topology without bonds
            raise ValueError(f"exclude='molecule' needs the universe's bonds: {error}") from None
    a = np.unique(group_a.indices)
    b = np.unique(group_b.indices)
    if len(a) != len(group_a) or len(b) != len(group_b):
        raise ValueError("rdf(): a group lists an atom twice")
    options = {"rmin": rmin, "rmax": rmax, "bins": bins, "exclude": exclude, "norm": norm, "volume": volume,
               "backend": backend, "gpus": gpus, "threads": threads}
    engine = _nbkit._Rdf(len(atoms), a, b, residues, molecules, options)
    frames = universe.trajectory[first:(None if last is None else last + 1):stride]
    if len(frames) == 0:
        raise ValueError(f"no frame at first={first} (the trajectory has {len(universe.trajectory)})")
    for ts in frames:
        engine.add_frame(atoms.positions, ts.dimensions)
    r = engine.result()
    edges = r["edges"]
    return RDF(edges=edges, bins=0.5 * (edges[:-1] + edges[1:]), counts=r["counts"], rdf=r["rdf"],
               coordination=r["coordination"], frames=r["frames"], pairs=r["pairs"], mean_volume=r["mean_volume"],
               backend=r["backend"], detail=r["detail"])
