#!/usr/bin/env python3
"""`nbkit energy` against OpenMM's Reference platform on the same AMBER files, term by term.

Usage: check_energy_openmm.py NBKIT_BINARY

At test time, OpenMM (Debian python3-simtk) and ParmEd (python3-parmed) build the systems:
FKBP12 from APBS's examples (Debian apbs-data: 1d7h-min.pqr, its heavy atoms), hydrogens
added for amber14-all.xml (ff14SB), written to prmtop and inpcrd by ParmEd; then the same
protein solvated in TIP3P (a periodic box). OpenMM reads those files back (AmberPrmtopFile),
so both programs start from the same bytes, and each force term gets its own force group:
  bond, angle: HarmonicBondForce, HarmonicAngleForce;
  dihedral, improper: PeriodicTorsionForce split by topology (a torsion whose atoms are a
    bonded chain i-j-k-l is proper, AMBER's impropers are not);
  lennard_jones, coulomb, lennard_jones_14, coulomb_14: NonbondedForce copies with the
    exceptions zeroed (ordinary pairs), the particles zeroed (1-4 pairs), and the charges
    zeroed in each (Lennard-Jones alone).
Cases: no-cutoff (vacuum), cutoff with a reaction field and Lennard-Jones switching (vacuum),
cutoff-periodic with a reaction field (solvated; OpenMM's long-range dispersion correction off,
as nbkit has none before issue 18). Each on nbkit's reference and cpu backends.

Tolerances (the issue's): every term to 1e-6 relative in float64 (of the term, or of 1 kcal/mol
for terms near zero), forces to 1e-6 relative RMS. Both programs compute in float64; they differ
by summation order and by OpenMM's Coulomb constant (138.935456 kJ/mol nm, 3e-9 from CODATA's),
so agreement is ~1e-10 and a real error (a missed pair, a wrong sign, a factor 1/2) is >1e-4.

Then dynamics: `nbkit md` runs the solvated protein NVE (no constraints) for 50 fs, cutoff-
periodic 9 A with Lennard-Jones switched from 7.5 A, at 1 fs and at 0.5 fs. Velocity Verlet's
energy error is bounded and O(dt^2): with O-H bonds vibrating at ~9 fs, the total energy swings
by ~2% of the kinetic energy at 1 fs (measured 1.9%; bound 3%), and halving the step must cut
the swing about four times (bound: 2.5 to 6). A force that is not the energy's gradient, or a
wrong mass or unit, breaks the ratio or the bound.

Exit 77 (CTest's skip) when OpenMM, ParmEd, numpy or apbs-data are missing.
"""
import json
import os
import subprocess
import sys
import tempfile

try:
    import numpy as np
    import openmm
    import openmm.app as app
    import openmm.unit as unit
    import parmed
except ImportError as error:
    print(f"{error.name} not installed: skipped (scripts/setup installs python3-simtk and python3-parmed)")
    sys.exit(77)

PQR = "/usr/share/apbs/examples/FKBP/1d7h-min.pqr"
KCAL = unit.kilocalorie_per_mole
TERMS = ["bond", "angle", "dihedral", "improper", "lennard_jones", "coulomb", "lennard_jones_14", "coulomb_14"]


def heavy_atom_pdb(path):
    """FKBP's heavy atoms as a PDB file OpenMM's Modeller can add hydrogens to."""
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


def build(tmp, solvated):
    """prmtop and inpcrd of FKBP (in water when `solvated`), written by ParmEd."""
    pdb_path = os.path.join(tmp, "fkbp-heavy.pdb")
    heavy_atom_pdb(pdb_path)
    pdb = app.PDBFile(pdb_path)
    forcefield = app.ForceField("amber14-all.xml", "amber14/tip3p.xml")
    modeller = app.Modeller(pdb.topology, pdb.positions)
    modeller.addHydrogens(forcefield)
    if solvated:
        modeller.addSolvent(forcefield, model="tip3p", padding=0.6 * unit.nanometer)
    method = app.CutoffPeriodic if solvated else app.NoCutoff
    system = forcefield.createSystem(modeller.topology, nonbondedMethod=method, constraints=None, rigidWater=False)
    structure = parmed.openmm.load_topology(modeller.topology, system, modeller.positions)
    name = "fkbp-water" if solvated else "fkbp"
    prmtop, inpcrd = os.path.join(tmp, name + ".prmtop"), os.path.join(tmp, name + ".inpcrd")
    structure.save(prmtop, overwrite=True)
    structure.save(inpcrd, overwrite=True)
    return prmtop, inpcrd


def split_system(system):
    """One System per reported term, built from copies of `system`'s forces."""
    serialize = openmm.XmlSerializer.serialize
    forces = {type(f).__name__: f for f in system.getForces()}
    bonds = forces["HarmonicBondForce"]
    bonded = set()
    for b in range(bonds.getNumBonds()):
        i, j = bonds.getBondParameters(b)[:2]
        bonded.add((min(i, j), max(i, j)))

    def chain(i, j, k, l):
        return all((min(a, b), max(a, b)) in bonded for a, b in ((i, j), (j, k), (k, l)))

    def system_with(force):
        s = openmm.System()
        for i in range(system.getNumParticles()):
            s.addParticle(system.getParticleMass(i))
        s.setDefaultPeriodicBoxVectors(*system.getDefaultPeriodicBoxVectors())
        s.addForce(force)
        return s

    parts = {"bond": system_with(openmm.XmlSerializer.deserialize(serialize(bonds))),
             "angle": system_with(openmm.XmlSerializer.deserialize(serialize(forces["HarmonicAngleForce"])))}
    torsions = forces["PeriodicTorsionForce"]
    for term, proper in (("dihedral", True), ("improper", False)):
        t = openmm.PeriodicTorsionForce()
        for n in range(torsions.getNumTorsions()):
            i, j, k, l, periodicity, phase, k_phi = torsions.getTorsionParameters(n)
            if chain(i, j, k, l) == proper:
                t.addTorsion(i, j, k, l, periodicity, phase, k_phi)
        parts[term] = system_with(t)
    nonbonded = forces["NonbondedForce"]

    def nonbonded_copy(particles, exceptions, charges, exception_charges):
        f = openmm.XmlSerializer.deserialize(serialize(nonbonded))
        f.setUseDispersionCorrection(False)
        for i in range(f.getNumParticles()):
            q, sigma, epsilon = f.getParticleParameters(i)
            f.setParticleParameters(i, q if (particles and charges) else 0 * q, sigma, epsilon if particles else 0 * epsilon)
        for n in range(f.getNumExceptions()):
            i, j, qq, sigma, epsilon = f.getExceptionParameters(n)
            f.setExceptionParameters(n, i, j, qq if (exceptions and exception_charges) else 0 * qq, sigma,
                                     epsilon if exceptions else 0 * epsilon)
        return system_with(f)

    parts["pairs"] = nonbonded_copy(True, False, True, True)
    parts["lennard_jones"] = nonbonded_copy(True, False, False, True)
    parts["pairs14"] = nonbonded_copy(False, True, True, True)
    parts["lennard_jones_14"] = nonbonded_copy(False, True, True, False)
    total = openmm.XmlSerializer.deserialize(serialize(system))
    for f in total.getForces():
        if isinstance(f, openmm.NonbondedForce):
            f.setUseDispersionCorrection(False)
    parts["total"] = total
    return parts


def openmm_terms(prmtop, inpcrd, method, cutoff, switch):
    amber = app.AmberPrmtopFile(prmtop)
    coordinates = app.AmberInpcrdFile(inpcrd)
    kwargs = dict(nonbondedMethod=method, constraints=None, rigidWater=False)
    if method != app.NoCutoff:
        kwargs["nonbondedCutoff"] = cutoff * unit.angstrom
        if switch:
            kwargs["switchDistance"] = switch * unit.angstrom
    system = amber.createSystem(**kwargs)
    if coordinates.boxVectors is not None:
        system.setDefaultPeriodicBoxVectors(*coordinates.boxVectors)
    platform = openmm.Platform.getPlatformByName("Reference")
    values, forces = {}, None
    for name, part in split_system(system).items():
        context = openmm.Context(part, openmm.VerletIntegrator(0.001), platform)
        context.setPositions(coordinates.positions)
        state = context.getState(getEnergy=True, getForces=(name == "total"))
        values[name] = state.getPotentialEnergy().value_in_unit(KCAL)
        if name == "total":
            forces = state.getForces(asNumpy=True).value_in_unit(KCAL / unit.angstrom)
    values["coulomb"] = values.pop("pairs") - values["lennard_jones"]
    values["coulomb_14"] = values.pop("pairs14") - values["lennard_jones_14"]
    return values, np.asarray(forces)


def nbkit_terms(nbkit, tmp, prmtop, inpcrd, backend, options):
    report, forces = os.path.join(tmp, "report.json"), os.path.join(tmp, "forces.txt")
    subprocess.run([nbkit, "energy", prmtop, inpcrd, "--backend", backend, "-q", "--report", report,
                    "--forces", forces] + options, check=True)
    with open(report) as f:
        energy = json.load(f)["energy_kcal_per_mol"]
    return energy, np.loadtxt(forces)[:, 1:]


def compare(label, ours, ours_forces, theirs, their_forces):
    failures = []
    for term in TERMS:
        scale = max(abs(theirs[term]), 1.0)
        error = abs(ours[term] - theirs[term]) / scale
        print(f"  {label:<34} {term:<17} nbkit {ours[term]:>20.10f}  OpenMM {theirs[term]:>20.10f}  rel {error:.1e}")
        if not error <= 1e-6:
            failures.append(f"{label}: {term} {ours[term]} against OpenMM's {theirs[term]} (relative {error:.2e})")
    for term in ("urey_bradley", "cmap"):
        if ours[term] != 0:
            failures.append(f"{label}: {term} is {ours[term]}, an AMBER ff14SB system has none")
    total = sum(theirs[t] for t in TERMS)
    if abs(ours["total"] - total) > 1e-6 * max(abs(total), 1.0):
        failures.append(f"{label}: total {ours['total']} against {total}")
    rms = np.sqrt(((ours_forces - their_forces) ** 2).sum() / (their_forces ** 2).sum())
    print(f"  {label:<34} forces: relative RMS {rms:.1e} over {len(their_forces)} atoms")
    if not rms <= 1e-6:
        failures.append(f"{label}: forces differ from OpenMM's by {rms:.2e} relative RMS")
    return failures


def nve_run(nbkit, tmp, prmtop, inpcrd, timestep, steps):
    """NVE of the solvated protein: the worst |E(t) - E(0)| over the kinetic energy at the start."""
    toml = os.path.join(tmp, "nve.toml")
    with open(toml, "w") as f:
        f.write(f"""[system]
prmtop = "{prmtop}"
coordinates = "{inpcrd}"
temperature = 300
[nonbonded]
method = "cutoff-periodic"
cutoff = 9.0
switch_distance = 7.5
[run]
timestep = {timestep}
steps = {steps}
thermo = {steps // 10}
""")
    out = os.path.join(tmp, "nve")
    subprocess.run([nbkit, "md", toml, "--backend", "cpu", "-q", "-o", out], check=True)
    rows = [line.split(",") for line in open(os.path.join(out, "thermo.csv")) if line[0].isdigit()]
    total = np.array([float(r[4]) for r in rows])
    kinetic = float(rows[0][3])
    worst = np.abs(total - total[0]).max() / kinetic
    print(f"  NVE at {timestep} fs, {steps} steps: the total energy within {worst:.2%} of the starting kinetic energy "
          f"({kinetic:.1f} kcal/mol)")
    return worst


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    if not os.path.exists(PQR):
        print(f"{PQR} missing (Debian apbs-data): skipped")
        return 77
    nbkit = sys.argv[1]
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        vacuum = build(tmp, solvated=False)
        water = build(tmp, solvated=True)
        cases = [("no-cutoff", vacuum, app.NoCutoff, None, None, ["--nonbonded", "no-cutoff"]),
                 ("cutoff 9 A, switch 7.5 A", vacuum, app.CutoffNonPeriodic, 9.0, 7.5,
                  ["--nonbonded", "cutoff", "--cutoff", "9", "--switch-distance", "7.5"]),
                 ("cutoff-periodic 9 A, solvated", water, app.CutoffPeriodic, 9.0, None,
                  ["--nonbonded", "cutoff-periodic", "--cutoff", "9"])]
        for label, (prmtop, inpcrd), method, cutoff, switch, options in cases:
            theirs, their_forces = openmm_terms(prmtop, inpcrd, method, cutoff, switch)
            for backend in ("reference", "cpu"):
                ours, our_forces = nbkit_terms(nbkit, tmp, prmtop, inpcrd, backend, options)
                failures += compare(f"{label} ({backend})", ours, our_forces, theirs, their_forces)
        worst = nve_run(nbkit, tmp, *water, 1.0, 50)
        half = nve_run(nbkit, tmp, *water, 0.5, 100)
        print(f"  NVE: halving the step cut the energy's swing {worst / half:.2f} times (O(dt^2): ~4)")
        if not worst < 3e-2:
            failures.append(f"NVE: the total energy moved by {worst:.2%} of the kinetic energy at 1 fs (bound 3%)")
        if not 2.5 < worst / half < 6:
            failures.append(f"NVE: halving the step cut the energy's swing {worst / half:.2f} times, not ~4")
    for failure in failures:
        print("FAIL:", failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
