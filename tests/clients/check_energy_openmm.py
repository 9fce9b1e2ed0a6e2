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
cutoff-periodic with a reaction field (solvated), and particle-mesh Ewald (solvated, tolerance
5e-4, order 5: OpenMM's alpha and 61^3 mesh, which nbkit derives the same way; Lennard-Jones
switched from 7.5 A). The periodic cases carry the long-range dispersion correction, on by
default in both programs for AMBER files (a term of its own: OpenMM's energy with it on minus
with it off; with the switch, the integral over the switched shell too). Each on nbkit's
reference and cpu backends.

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

Then constrained dynamics from the same state as OpenMM (constrained_trajectories): velocity
Verlet with RATTLE/SETTLE and hydrogen mass repartitioning, and the Langevin-middle integrator
at 0 K, positions to 3e-5 A after 6 steps of 2 fs (1e-7 A typically).

Exit 77 (CTest's skip) when OpenMM, ParmEd, numpy or apbs-data are missing.
"""
import json
import os
import re
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

from openmm_oracle import (NONBONDED_TERMS, PQR, compare, copy, copy_system, elements, energies,
                           heavy_atom_pdb, nbkit_terms, nonbonded_parts, system_with)

TERMS = ["bond", "angle", "dihedral", "improper"] + NONBONDED_TERMS


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
    forces = {type(f).__name__: f for f in system.getForces()}
    bonds = forces["HarmonicBondForce"]
    # The bonds and torsions read from the serialized forces, not one unit-carrying Python call
    # each (seconds of CI's time at 20,000 atoms).
    bonded = set()
    for a in elements(openmm.XmlSerializer.serialize(bonds), "Bond"):
        i, j = int(a["p1"]), int(a["p2"])
        bonded.add((min(i, j), max(i, j)))

    def chain(i, j, k, l):
        return all((min(a, b), max(a, b)) in bonded for a, b in ((i, j), (j, k), (k, l)))

    parts = {"bond": system_with(system, copy(bonds)), "angle": system_with(system, copy(forces["HarmonicAngleForce"]))}
    torsions = openmm.XmlSerializer.serialize(forces["PeriodicTorsionForce"])
    for term, proper in (("dihedral", True), ("improper", False)):
        def kept(match):  # the torsion's element where its atoms are (not) a bonded chain, else nothing
            a = elements(match.group(0), "Torsion")[0]
            return match.group(0) if chain(*(int(a[f"p{n}"]) for n in range(1, 5))) == proper else ""
        parts[term] = system_with(system, openmm.XmlSerializer.deserialize(re.sub(r"<Torsion\b([^>]*)/>", kept, torsions)))
    parts.update(nonbonded_parts(system, forces["NonbondedForce"]))
    return parts


def openmm_terms(prmtop, inpcrd, method, cutoff, switch):
    amber = app.AmberPrmtopFile(prmtop)
    coordinates = app.AmberInpcrdFile(inpcrd)
    kwargs = dict(nonbondedMethod=method, constraints=None, rigidWater=False)
    if method != app.NoCutoff:
        kwargs["nonbondedCutoff"] = cutoff * unit.angstrom
        if switch:
            kwargs["switchDistance"] = switch * unit.angstrom
    if method == app.PME:
        kwargs["ewaldErrorTolerance"] = 5e-4
    system = amber.createSystem(**kwargs)
    if coordinates.boxVectors is not None:
        system.setDefaultPeriodicBoxVectors(*coordinates.boxVectors)
    total = copy_system(system)
    return energies(split_system(system), coordinates.positions, total)


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


def make_water_rigid(system, prmtop):
    """The H-H constraint of each water, from its H-O-H angle, where OpenMM left it out.

    ParmEd writes TIP3P without AMBER's H-H "bond"; OpenMM 7.7's AmberPrmtopFile with
    rigidWater=True then constrains only the two O-H bonds and leaves the angle flexible (measured:
    H-H 1.5056 A after one step). nbkit's rigid water takes H-H from the angle, as AMBER's SETTLE
    does; with the third constraint OpenMM runs SETTLE on the same triangle.
    """
    structure = parmed.load_file(prmtop)
    have = set()
    for k in range(system.getNumConstraints()):
        i, j, _ = system.getConstraintParameters(k)
        have.add((min(i, j), max(i, j)))
    for residue in structure.residues:
        if len(residue.atoms) != 3 or residue.name not in ("HOH", "WAT"):
            continue
        o, h1, h2 = sorted(residue.atoms, key=lambda a: a.element != 8)
        if (min(h1.idx, h2.idx), max(h1.idx, h2.idx)) in have:
            continue
        oh = next(b.type.req for b in o.bonds if h1 in (b.atom1, b.atom2))
        theta = next(a.type.theteq for a in o.angles if a.atom2 is o)
        system.addConstraint(h1.idx, h2.idx, 2 * oh * np.sin(np.radians(theta) / 2) * unit.angstrom)


def constrained_md(nbkit, tmp, prmtop, coordinates, name, body, steps, extra=""):
    """`nbkit md` of the solvated protein with h-bonds and rigid water constrained to 1e-10, PME 9 A
    (tolerance 5e-4), 2 fs steps; its last state's rst7 (positions and velocities)."""
    path = os.path.join(tmp, name + ".toml")
    with open(path, "w") as f:
        f.write(f'[system]\nprmtop = "{prmtop}"\ncoordinates = "{coordinates}"\n{extra}'
                '[constraints]\nbonds = "h-bonds"\nrigid_water = true\ntolerance = 1e-10\n'
                '[nonbonded]\nelectrostatics = "pme"\ncutoff = 9.0\newald_tolerance = 5e-4\n'
                f'[run]\ntimestep = 2.0\nsteps = {steps}\nthermo = 1\n{body}'
                f'[output]\ndata = "{name}.rst7"\n')
    out = os.path.join(tmp, name)
    subprocess.run([nbkit, "md", path, "--backend", "cpu", "-q", "-o", out], check=True)
    return os.path.join(out, name + ".rst7")


def minimised_start(nbkit, tmp, prmtop, inpcrd):
    """The start of the dynamics below: minimised (40 iterations only: CI time), velocities drawn
    at 300 K, on the constraints; an rst7 both programs read."""
    return constrained_md(nbkit, tmp, prmtop, inpcrd, "start", "[minimize]\ntolerance = 5.0\nmax_iterations = 40\n",
                          0, "temperature = 300\nseed = 5\n")


def constrained_trajectories(nbkit, tmp, prmtop, start, steps=6):
    """Constrained dynamics against OpenMM's Reference platform from the same state.

    Both programs read the start (minimised_start), put it on the constraints again at tolerance
    1e-10, and take `steps` steps of 2 fs with h-bonds and rigid water (SHAKE/SETTLE in nbkit,
    CCMA/SETTLE in OpenMM), PME 9 A:
      verlet:   velocity Verlet with RATTLE (OpenMM: a CustomIntegrator with the same steps),
                hydrogens at 1.5 g/mol (hydrogen mass repartitioning, water left alone);
      middle:   the Langevin-middle integrator at 0 K with friction 5/ps (no noise, so both are
                deterministic: OpenMM's LangevinMiddleIntegrator).
    Positions must agree to 3e-5 A: the file keeps 1e-7 A; both compute in float64 with forces
    agreeing to ~1e-10 (above), and constraints solved to 1e-10 differ by less. The start is
    minimised 40 iterations only (CI time), and the solvated system OpenMM's Modeller builds
    differs a little from run to run, so now and then an atom sits in a stiff contact that grows the
    rounding by ~100 times over the steps (measured: 1.1e-7 A in most runs, 6.3e-6 A once). A wrong
    constraint force, a missing velocity constraint, a flexible water angle or a different
    splitting moved atoms by 6e-3 to 5e-2 A in the same test while it was being written.
    """
    failures = []
    for label, body, hmr in (("verlet", "", 1.5),
                             ("middle", 'ensemble = "nvt"\ntemperature = 0.0\nfriction = 5.0\n', None)):
        extra = f"hydrogen_mass = {hmr}\n" if hmr else ""
        ours = app.AmberInpcrdFile(constrained_md(nbkit, tmp, prmtop, start, label, body, steps, extra))
        state = app.AmberInpcrdFile(start, loadVelocities=True)
        system = app.AmberPrmtopFile(prmtop).createSystem(
            nonbondedMethod=app.PME, nonbondedCutoff=9 * unit.angstrom, ewaldErrorTolerance=5e-4,
            constraints=app.HBonds, rigidWater=True, removeCMMotion=False,
            hydrogenMass=hmr * unit.amu if hmr else None)
        system.setDefaultPeriodicBoxVectors(*state.boxVectors)
        make_water_rigid(system, prmtop)
        dt = 2 * unit.femtosecond
        if label == "verlet":
            integrator = openmm.CustomIntegrator(dt)
            integrator.addPerDofVariable("x1", 0)
            integrator.addUpdateContextState()
            integrator.addComputePerDof("v", "v+0.5*dt*f/m")
            integrator.addComputePerDof("x", "x+dt*v")
            integrator.addComputePerDof("x1", "x")
            integrator.addConstrainPositions()
            integrator.addComputePerDof("v", "v+(x-x1)/dt")
            integrator.addComputePerDof("v", "v+0.5*dt*f/m")
            integrator.addConstrainVelocities()
        else:
            integrator = openmm.LangevinMiddleIntegrator(0 * unit.kelvin, 5 / unit.picosecond, dt)
        integrator.setConstraintTolerance(1e-10)
        context = openmm.Context(system, integrator, openmm.Platform.getPlatformByName("Reference"))
        context.setPeriodicBoxVectors(*state.boxVectors)
        context.setPositions(state.positions)
        context.setVelocities(state.velocities)
        context.applyConstraints(1e-10)
        context.applyVelocityConstraints(1e-10)
        integrator.step(steps)
        theirs = context.getState(getPositions=True).getPositions(asNumpy=True).value_in_unit(unit.angstrom)
        mine = np.array(ours.positions.value_in_unit(unit.angstrom))
        box = np.array([state.boxVectors[a][a].value_in_unit(unit.angstrom) for a in range(3)])
        d = mine - theirs
        d -= box * np.round(d / box)
        start_positions = np.array(state.positions.value_in_unit(unit.angstrom))
        moved = start_positions - theirs
        moved -= box * np.round(moved / box)
        worst, motion = np.abs(d).max(), np.abs(moved).max()
        print(f"  {label}, {steps} steps of 2 fs with constraints{' and HMR 1.5' if hmr else ''}: positions agree with "
              f"OpenMM's to {worst:.2e} A (atoms moved up to {motion:.3f} A)")
        if not worst < 3e-5:
            failures.append(f"{label}: positions differ from OpenMM's by {worst:.3g} A after {steps} steps (bound 3e-5)")
    return failures


def constrained_nve_drift(nbkit, tmp, prmtop, start, steps=400):
    """NVE of the solvated protein with constraints at 2 fs, as production runs it: the drift.

    h-bonds (SHAKE/RATTLE) and rigid water (SETTLE) at the default tolerance 1e-5, PME 5e-4 with a
    9 A cutoff, from minimised_start (300 K; a minimisation of its own, 200 iterations, took 29 of
    this script's 210 s on CI's 2 cores). The drift is the least-squares slope of the total energy
    after the first 0.1 ps, per nanosecond per degree of freedom, in kT (the unit OpenMM's and
    NAMD's users quote). The first 0.1 ps is left out: after minimisation half the kinetic energy
    goes into the potential within ~20 fs, and velocity Verlet's O(dt^2) offset between the reported
    energy and the one it conserves settles from ~0 at the minimum (no forces) to its thermal
    value, a one-time step of ~60 kcal/mol here (then flat to +-3). Over 1.2 ps (600 steps) its
    estimate had a statistical error of ~0.1 kT/dof/ns (the total energy's ~1 kcal/mol
    fluctuation on ~20,000 degrees of freedom); the 0.7 ps fitted of 400 steps (CI time: the
    run took 97 of this script's 175 s on a 2-core machine at 600) give ~0.2, as the slope's
    error grows as the window^-1.5. nbkit's measured drift here is 0.05-0.15, and 0.04 on the
    30,683-atom benchmark over 8 ps (docs/performance.md). Bound 1 (5 of those errors): a missing
    velocity constraint, a constraint force left out of the step or a tolerance 100 times too
    loose drift by tens to hundreds.
    """
    path = os.path.join(tmp, "drift.toml")
    with open(path, "w") as f:
        f.write(f'[system]\nprmtop = "{prmtop}"\ncoordinates = "{start}"\n'
                '[constraints]\nbonds = "h-bonds"\nrigid_water = true\n'
                '[nonbonded]\nelectrostatics = "pme"\ncutoff = 9.0\newald_tolerance = 5e-4\n'
                f'[run]\ntimestep = 2.0\nsteps = {steps}\nthermo = 10\n')
    out = os.path.join(tmp, "drift")
    report = os.path.join(tmp, "drift.json")
    subprocess.run([nbkit, "md", path, "--backend", "cpu", "-q", "-o", out, "--report", report], check=True)
    rows = [line.split(",") for line in open(os.path.join(out, "thermo.csv")) if line[0].isdigit()]
    rows = [r for r in rows if int(r[0]) >= 50]
    step = np.array([float(r[0]) for r in rows])
    total = np.array([float(r[4]) for r in rows])
    r = json.load(open(report))
    dof = 3 * r["input"]["atoms"] - 3 - r["constraints"]["count"]
    kt = 0.0019872067 * 300
    slope = np.polyfit(step * 2e-6, total, 1)[0]  # kcal/mol per ns
    drift = slope / dof / kt
    deviation = r["constraints"]["largest_deviation"]
    print(f"  NVE with constraints at 2 fs, {r['input']['atoms']} atoms, {steps} steps: drift {drift:+.3f} kT/dof/ns "
          f"(energy swing after 0.1 ps {np.ptp(total):.2f} kcal/mol), largest constraint deviation {deviation:.2g}")
    failures = []
    if not abs(drift) < 1.0:
        failures.append(f"NVE with constraints: drift {drift:.3g} kT/dof/ns (bound 1)")
    if not deviation <= 1.0001e-5:
        failures.append(f"NVE with constraints: a constraint off by {deviation:.3g} (tolerance 1e-5)")
    return failures


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
                  ["--nonbonded", "cutoff-periodic", "--cutoff", "9"]),
                 ("PME 9 A, tolerance 5e-4, solvated", water, app.PME, 9.0, 7.5,
                  ["--nonbonded", "pme", "--cutoff", "9", "--switch-distance", "7.5", "--ewald-tolerance", "5e-4"])]
        for label, (prmtop, inpcrd), method, cutoff, switch, options in cases:
            theirs, their_forces = openmm_terms(prmtop, inpcrd, method, cutoff, switch)
            for backend in ("reference", "cpu"):
                ours, our_forces = nbkit_terms(nbkit, tmp, [prmtop, inpcrd], backend, options)
                # With PME, OpenMM's Coulomb (pairs, mesh, self, excluded pairs) is one number:
                # nbkit's coulomb and coulomb_reciprocal together.
                ours = dict(ours, coulomb=ours["coulomb"] + ours["coulomb_reciprocal"])
                failures += compare(f"{label} ({backend})", ours, our_forces, theirs, their_forces, TERMS,
                                    ("urey_bradley", "cmap"))
        start = minimised_start(nbkit, tmp, *water)
        failures += constrained_trajectories(nbkit, tmp, water[0], start)
        failures += constrained_nve_drift(nbkit, tmp, water[0], start)
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
