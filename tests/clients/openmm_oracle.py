"""What the OpenMM comparisons of `nbkit energy` share (check_energy_openmm.py for AMBER files,
check_energy_charmm.py for CHARMM's): the test protein, one OpenMM System per reported term,
running `nbkit energy`, and the comparison with the issue's tolerances.

Imported by those scripts (their directory is on sys.path); they skip (exit 77) when OpenMM,
ParmEd or numpy is missing, before importing this.
"""
import json
import os
import re
import subprocess

import numpy as np
import openmm
import openmm.unit as unit

PQR = "/usr/share/apbs/examples/FKBP/1d7h-min.pqr"
KCAL = unit.kilocalorie_per_mole
NONBONDED_TERMS = ["lennard_jones", "coulomb", "lennard_jones_14", "coulomb_14", "dispersion_correction"]


def heavy_atom_pdb(path):
    """FKBP's heavy atoms (APBS's examples) as a PDB file OpenMM's Modeller can add hydrogens to."""
    lines = []
    for line in open(PQR):
        if not line.startswith("ATOM"):
            continue
        f = line.split()
        name = f[2]
        if name.lstrip("0123456789").startswith("H"):
            continue
        lines.append("ATOM  %5d %-4s %3s A%4d    %8.3f%8.3f%8.3f  1.00  0.00\n" % (
            int(f[1]), name if len(name) == 4 else " " + name, f[3], int(f[4]), float(f[5]), float(f[6]), float(f[7])))
    with open(path, "w") as out:
        out.write("".join(lines) + "END\n")


def copy(force):
    return openmm.XmlSerializer.deserialize(openmm.XmlSerializer.serialize(force))


def copy_system(system):
    """A copy of `system` (its forces as they are, the dispersion correction included)."""
    return copy(system)


_bare_systems = {}


def system_with(system, *forces):
    """A System with `system`'s particles and box and only `forces`."""
    # The particles (and box) from a copy of `system` without its forces, serialized once per
    # system: adding them one getParticleMass a particle took ~15 s of each comparison.
    if id(system) not in _bare_systems:
        bare = copy(system)
        while bare.getNumForces():
            bare.removeForce(bare.getNumForces() - 1)
        _bare_systems[id(system)] = (system, openmm.XmlSerializer.serialize(bare))  # system kept: its id stays its
    s = openmm.XmlSerializer.deserialize(_bare_systems[id(system)][1])
    for f in forces:
        s.addForce(f)
    return s


def elements(text, element):
    """The attributes (a dict of strings) of every <element .../> of a serialized force."""
    return [dict(re.findall(r'(\w+)="([^"]*)"', m.group(1))) for m in re.finditer(rf"<{element}\b([^>]*)/>", text)]


def zeroed(text, element, attribute):
    """A serialized force with `attribute` set to 0 in every <element .../> (e.g. each Particle's q)."""
    return re.sub(rf'(<{element}\b[^>]*?\b{attribute}=")[^"]*(")', r"\g<1>0\2", text)


def nonbonded_parts(system, nonbonded, custom_lj=None):
    """Systems whose energies give the four nonbonded terms: copies of the NonbondedForce with
    the exceptions zeroed (ordinary pairs), the particles zeroed (1-4 pairs), the charges
    zeroed in each (Lennard-Jones alone), and the Lennard-Jones copy with the long-range dispersion
    correction as `nonbonded` has it ("lennard_jones_tail"; energies() takes the difference).
    `custom_lj`: a CustomNonbondedForce that carries the ordinary pairs' Lennard-Jones (CHARMM's
    NBFIX tables), added to the ordinary pairs' parts."""

    serialized = openmm.XmlSerializer.serialize(nonbonded)

    def variant(particles, exceptions, charges, exception_charges, tail=False):
        # Edited in the serialized form (as copy() makes a copy): the values kept are the same
        # bits, the zeros exact. Through the Python API's unit-carrying getters and setters, one
        # call an atom or pair, this took ~40 s of the two OpenMM comparisons (CI's 30 minutes).
        text = re.sub(r'\bdispersionCorrection="\d"',
                      f'dispersionCorrection="{int(tail and nonbonded.getUseDispersionCorrection())}"', serialized, 1)
        if not (particles and charges):
            text = zeroed(text, "Particle", "q")
        if not particles:
            text = zeroed(text, "Particle", "eps")
        if not (exceptions and exception_charges):
            text = zeroed(text, "Exception", "q")
        if not exceptions:
            text = zeroed(text, "Exception", "eps")
        return openmm.XmlSerializer.deserialize(text)

    extra = [copy(custom_lj)] if custom_lj is not None else []
    extra2 = [copy(custom_lj)] if custom_lj is not None else []
    extra3 = [copy(custom_lj)] if custom_lj is not None else []
    return {"pairs": system_with(system, variant(True, False, True, True), *extra),
            "lennard_jones": system_with(system, variant(True, False, False, True), *extra2),
            "lennard_jones_tail": system_with(system, variant(True, False, False, True, tail=True), *extra3),
            "pairs14": system_with(system, variant(False, True, True, True)),
            "lennard_jones_14": system_with(system, variant(False, True, True, False))}


def energies(parts, positions, total_system):
    """Each part's energy (kcal/mol) on the Reference platform, and the total's forces
    (kcal/mol/A); "pairs" and "pairs14" become coulomb and coulomb_14."""
    platform = openmm.Platform.getPlatformByName("Reference")
    parts = dict(parts, total=total_system)
    # The positions once as an array in nm (what setPositions converts a list of Vec3 to, each time).
    if unit.is_quantity(positions):
        positions = np.array(positions.value_in_unit(unit.nanometer))
    values, forces = {}, None
    for name, part in parts.items():
        context = openmm.Context(part, openmm.VerletIntegrator(0.001), platform)
        context.setPositions(positions)
        state = context.getState(getEnergy=True, getForces=(name == "total"))
        values[name] = state.getPotentialEnergy().value_in_unit(KCAL)
        if name == "total":
            forces = state.getForces(asNumpy=True).value_in_unit(KCAL / unit.angstrom)
    values["coulomb"] = values.pop("pairs") - values["lennard_jones"]
    values["coulomb_14"] = values.pop("pairs14") - values["lennard_jones_14"]
    values["dispersion_correction"] = values.pop("lennard_jones_tail") - values["lennard_jones"]
    return values, np.asarray(forces)


def nbkit_terms(nbkit, tmp, inputs, backend, options):
    """`nbkit energy INPUTS... --backend BACKEND OPTIONS`: its terms (kcal/mol) and forces."""
    report, forces = os.path.join(tmp, "report.json"), os.path.join(tmp, "forces.txt")
    subprocess.run([nbkit, "energy"] + inputs + ["--backend", backend, "-q", "--report", report,
                                                "--forces", forces] + options, check=True)
    with open(report) as f:
        energy = json.load(f)["energy_kcal_per_mol"]
    return energy, np.loadtxt(forces)[:, 1:]


def compare(label, ours, ours_forces, theirs, their_forces, terms, absent):
    """The issue's tolerances: every term to 1e-6 relative in float64 (of the term, or of
    1 kcal/mol for terms near zero), forces to 1e-6 relative RMS; the `absent` terms zero."""
    failures = []
    for term in terms:
        scale = max(abs(theirs[term]), 1.0)
        error = abs(ours[term] - theirs[term]) / scale
        print(f"  {label:<38} {term:<17} nbkit {ours[term]:>20.10f}  OpenMM {theirs[term]:>20.10f}  rel {error:.1e}")
        if not error <= 1e-6:
            failures.append(f"{label}: {term} {ours[term]} against OpenMM's {theirs[term]} (relative {error:.2e})")
    for term in absent:
        if ours[term] != 0:
            failures.append(f"{label}: {term} is {ours[term]}, the force field has none")
    total = sum(theirs[t] for t in terms)
    if abs(ours["total"] - total) > 1e-6 * max(abs(total), 1.0):
        failures.append(f"{label}: total {ours['total']} against {total}")
    rms = np.sqrt(((ours_forces - their_forces) ** 2).sum() / (their_forces ** 2).sum())
    print(f"  {label:<38} forces: relative RMS {rms:.1e} over {len(their_forces)} atoms")
    if not rms <= 1e-6:
        failures.append(f"{label}: forces differ from OpenMM's by {rms:.2e} relative RMS")
    return failures
