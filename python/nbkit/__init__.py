"""nbkit: fast sums of pairwise particle interactions, from Python.

The same library as the ``nbkit`` command, its backends and its numbers, with numpy arrays
in and out and no files in between:

* :func:`nbkit.map` -- electrostatic potential maps (direct Coulomb, Debye-Hueckel, cutoff,
  multilevel summation), from arrays, an MDAnalysis ``AtomGroup`` or a ParmEd ``Structure``;
  :func:`nbkit.trajectory_map` over any trajectory MDAnalysis reads; :func:`nbkit.ionize`.
* :mod:`nbkit.nbody` -- all-pairs softened gravity and leapfrog simulations.
* :mod:`nbkit.md` -- molecular dynamics runs described by the command's TOML.
* :func:`nbkit.rdf` -- radial distribution functions over any trajectory MDAnalysis reads.

Units are the command's: Angstrom, e, kT/e (or kcal/mol/e, V) for maps; N-body units; LAMMPS's
``lj`` or ``real`` units for MD. Errors are :class:`nbkit.Error` (a ``ValueError``) with the
library's one-line message, ``MemoryError`` when a request cannot fit, ``FileNotFoundError``
for a missing file, ``KeyboardInterrupt`` on Ctrl-C. Computation runs with the GIL released.
Importing changes no process-wide state.
"""
from . import md, nbody
from ._nbkit import Error, Map, read_map
from ._nbkit import info as _info
from .analysis import RDF, rdf
from .maps import DeviceMap, Ionized, Structure, ionize, map, read_structure, trajectory_map

__all__ = ["DeviceMap", "Error", "Ionized", "Map", "RDF", "Structure", "info", "ionize", "map", "md", "nbody", "rdf",
           "read_map", "read_structure", "trajectory_map"]
__version__: str = _info()["version"]


def info() -> dict:
    """What this build and machine offer: version, compiler, build type, SIMD target, CPU
    threads, available memory, whether CUDA was compiled, and the usable GPUs (with the reason
    when there is none), as a dict -- the facts of ``nbkit info --json``."""
    return _info()
