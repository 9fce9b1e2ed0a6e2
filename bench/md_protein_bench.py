#!/usr/bin/env python3
"""Benchmark of biomolecular MD: a solvated protein with a 9 A cutoff, reaction field or PME.

Usage: md_protein_bench.py NBKIT [--backend cpu|cuda] [--threads N] [--steps N] [--system DIR]
                           [--electrostatics reaction-field|pme] [--replicate A,B,C]
                           [--write-system DIR [--atoms N]] [--json FILE]

The system: FKBP12 (APBS's examples, Debian apbs-data) with hydrogens for amber14-all.xml, in a
TIP3P box with 1 nm of padding (~31,000 atoms), built by OpenMM 7.7 and written by ParmEd to
prmtop and inpcrd (or read from --system DIR, where --write-system left them: the GPU machine has
neither OpenMM nor ParmEd). The method: OpenMM's CutoffPeriodic, 9 A, reaction field (eps 78.3),
or with --electrostatics pme its PME at tolerance 5e-4 (order 5, the same alpha and mesh in both
programs); no switching, no dispersion correction, no constraints, 1 fs, NVE. --replicate
repeats the periodic box A x B x C times in both programs (nbkit's [system] replicate; OpenMM's
System copied force by force here) for the larger sizes: 2,2,1 gives 122,732 atoms.

Measured in the same run on the same cores:
  nbkit md        atom-steps/s of `--steps` steps (one force evaluation each: evaluations/s is
                  the rate over the atoms), on --backend (cpu: --threads threads; cuda: one GPU);
  OpenMM 7.7 CPU  its CPU platform with the same thread count: the same steps (VerletIntegrator)
                  and force evaluations (Context.getState(getForces=True)), when OpenMM is here.
Prints the rates and nbkit's ratio to OpenMM; --json writes them.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def build_system(directory, atoms=None):
    """The solvated protein's prmtop and inpcrd in `directory` (OpenMM and ParmEd): 1 nm of water
    around it, or with `atoms` a cube of water holding about that many atoms in all, for a system
    of a published benchmark's size."""
    sys.path.insert(0, os.path.join(HERE, "..", "tests", "clients"))
    import openmm.app as app
    import openmm.unit as unit
    import parmed
    from check_energy_openmm import heavy_atom_pdb

    pdb_path = os.path.join(directory, "fkbp-heavy.pdb")
    heavy_atom_pdb(pdb_path)
    pdb = app.PDBFile(pdb_path)
    forcefield = app.ForceField("amber14-all.xml", "amber14/tip3p.xml")
    modeller = app.Modeller(pdb.topology, pdb.positions)
    modeller.addHydrogens(forcefield)
    if atoms is None:
        modeller.addSolvent(forcefield, model="tip3p", padding=1.0 * unit.nanometer)
    else:
        # A cube sized for `atoms` at the water density Modeller packs (~0.096 atoms/A^3, as in the
        # 1 nm padded box), then resized once by the count it gave: within ~0.1% of `atoms` at
        # the same density, not OpenMM's numAdded, whose box comes out ~5% less dense.
        import openmm
        edge = (atoms / 0.096) ** (1 / 3) / 10
        protein = (modeller.topology, modeller.positions)
        for _ in range(2):
            modeller = app.Modeller(*protein)
            modeller.addSolvent(forcefield, model="tip3p", boxSize=openmm.Vec3(edge, edge, edge) * unit.nanometer)
            edge *= (atoms / modeller.topology.getNumAtoms()) ** (1 / 3)
    system = forcefield.createSystem(modeller.topology, nonbondedMethod=app.CutoffPeriodic, constraints=None,
                                     rigidWater=False)
    structure = parmed.openmm.load_topology(modeller.topology, system, modeller.positions)
    prmtop, inpcrd = os.path.join(directory, "protein.prmtop"), os.path.join(directory, "protein.inpcrd")
    structure.save(prmtop, overwrite=True)
    structure.save(inpcrd, overwrite=True)
    return prmtop, inpcrd


def nbkit_rate(nbkit, prmtop, inpcrd, backend, threads, steps, electrostatics, tmp, copies=(1, 1, 1)):
    toml = os.path.join(tmp, "bench.toml")
    with open(toml, "w") as f:
        f.write(f'[system]\nprmtop = "{prmtop}"\ncoordinates = "{inpcrd}"\ntemperature = 300\n'
                f'replicate = [{copies[0]}, {copies[1]}, {copies[2]}]\n'
                f'[nonbonded]\nelectrostatics = "{electrostatics}"\ncutoff = 9.0\ndispersion_correction = false\n'
                f'[run]\ntimestep = 1.0\nsteps = {steps}\nthermo = {steps}\n')
    report = os.path.join(tmp, "report.json")
    command = [nbkit, "md", toml, "--backend", backend, "-q", "-o", os.path.join(tmp, "out"), "--report", report]
    if backend == "cpu":
        command += ["--threads", str(threads)]
    subprocess.run(command, check=True)
    with open(report) as f:
        r = json.load(f)
    return r["rates"]["atom_steps_per_second"], r["input"]["atoms"], r["backend"]["detail"]


def replicated(openmm, system, positions, box, copies):
    """The System, positions (nm) and box repeated copies[0] x copies[1] x copies[2] times along
    the box's edges (x fastest, as nbkit's replicate), force by force."""
    n = system.getNumParticles()
    shifts = [(a, b, c) for c in range(copies[2]) for b in range(copies[1]) for a in range(copies[0])]
    edges = [box[k][k] for k in range(3)]
    out = openmm.System()
    for _ in shifts:
        for i in range(n):
            out.addParticle(system.getParticleMass(i))
    for force in system.getForces():
        if isinstance(force, openmm.CMMotionRemover):
            continue
        if isinstance(force, openmm.NonbondedForce):
            copy = openmm.NonbondedForce()
            copy.setNonbondedMethod(force.getNonbondedMethod())
            copy.setCutoffDistance(force.getCutoffDistance())
            copy.setEwaldErrorTolerance(force.getEwaldErrorTolerance())
            copy.setUseDispersionCorrection(force.getUseDispersionCorrection())
            copy.setReactionFieldDielectric(force.getReactionFieldDielectric())
            for s in range(len(shifts)):
                for i in range(n):
                    copy.addParticle(*force.getParticleParameters(i))
            for s in range(len(shifts)):
                for k in range(force.getNumExceptions()):
                    i, j, q, sigma, epsilon = force.getExceptionParameters(k)
                    copy.addException(i + s * n, j + s * n, q, sigma, epsilon)
        elif isinstance(force, openmm.HarmonicBondForce):
            copy = openmm.HarmonicBondForce()
            for s in range(len(shifts)):
                for k in range(force.getNumBonds()):
                    i, j, length, k_bond = force.getBondParameters(k)
                    copy.addBond(i + s * n, j + s * n, length, k_bond)
        elif isinstance(force, openmm.HarmonicAngleForce):
            copy = openmm.HarmonicAngleForce()
            for s in range(len(shifts)):
                for k in range(force.getNumAngles()):
                    i, j, l, angle, k_angle = force.getAngleParameters(k)
                    copy.addAngle(i + s * n, j + s * n, l + s * n, angle, k_angle)
        elif isinstance(force, openmm.PeriodicTorsionForce):
            copy = openmm.PeriodicTorsionForce()
            for s in range(len(shifts)):
                for k in range(force.getNumTorsions()):
                    i, j, l, m, periodicity, phase, k_phi = force.getTorsionParameters(k)
                    copy.addTorsion(i + s * n, j + s * n, l + s * n, m + s * n, periodicity, phase, k_phi)
        else:
            raise SystemExit(f"replicate: {type(force).__name__} is not copied by this benchmark")
        out.addForce(copy)
    xyz = [(p[0], p[1], p[2]) for p in positions]
    moved = [(x + a * edges[0], y + b * edges[1], z + c * edges[2]) for (a, b, c) in shifts for (x, y, z) in xyz]
    grown = [[copies[k] * edges[k] if m == k else 0.0 for m in range(3)] for k in range(3)]
    out.setDefaultPeriodicBoxVectors(*grown)
    return out, moved


def openmm_rates(prmtop, inpcrd, threads, steps, electrostatics, copies=(1, 1, 1)):
    """OpenMM's CPU platform: (atom-steps/s, evaluations/s), or None without OpenMM."""
    try:
        import openmm
        import openmm.app as app
        import openmm.unit as unit
    except ImportError:
        return None
    amber = app.AmberPrmtopFile(prmtop)
    coordinates = app.AmberInpcrdFile(inpcrd)
    method = app.PME if electrostatics == "pme" else app.CutoffPeriodic
    extra = {"ewaldErrorTolerance": 5e-4} if electrostatics == "pme" else {}
    system = amber.createSystem(nonbondedMethod=method, nonbondedCutoff=0.9 * unit.nanometer,
                                constraints=None, rigidWater=False, **extra)
    for force in system.getForces():
        if isinstance(force, openmm.NonbondedForce):
            force.setUseDispersionCorrection(False)
    system.setDefaultPeriodicBoxVectors(*coordinates.boxVectors)
    positions = coordinates.positions
    if tuple(copies) != (1, 1, 1):
        box = [[v.value_in_unit(unit.nanometer) for v in vector] for vector in coordinates.boxVectors]
        plain = [p.value_in_unit(unit.nanometer) for p in positions]
        system, positions = replicated(openmm, system, plain, box, copies)
    platform = openmm.Platform.getPlatformByName("CPU")
    context = openmm.Context(system, openmm.VerletIntegrator(0.001), platform, {"Threads": str(threads)})
    context.setPositions(positions)
    context.setVelocitiesToTemperature(300)
    integrator = context.getIntegrator()
    integrator.step(2)  # warm up
    start = time.perf_counter()
    integrator.step(steps)
    context.getState(getEnergy=True)  # waits for the steps
    step_seconds = time.perf_counter() - start
    start = time.perf_counter()
    for _ in range(steps):
        context.getState(getForces=True)
    evaluation_seconds = time.perf_counter() - start
    atoms = system.getNumParticles()
    return atoms * steps / step_seconds, steps / evaluation_seconds


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("nbkit")
    parser.add_argument("--backend", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--electrostatics", default="reaction-field", choices=["reaction-field", "pme"])
    parser.add_argument("--system", help="a folder with protein.prmtop and protein.inpcrd")
    parser.add_argument("--replicate", default="1,1,1", help="copies of the box along x,y,z (e.g. 2,2,1)")
    parser.add_argument("--write-system", help="build the system into this folder and stop")
    parser.add_argument("--atoms", type=int,
                        help="with --write-system: about this many atoms (23558: DHFR's, the benchmark's) "
                             "instead of 1 nm of water around the protein")
    parser.add_argument("--json")
    args = parser.parse_args()
    copies = tuple(int(v) for v in args.replicate.split(","))
    if len(copies) != 3 or min(copies) < 1:
        parser.error("--replicate: three whole counts, e.g. 2,2,1")
    if args.write_system:
        os.makedirs(args.write_system, exist_ok=True)
        print("written:", *build_system(args.write_system, args.atoms))
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        if args.system:
            prmtop, inpcrd = (os.path.abspath(os.path.join(args.system, name))
                              for name in ("protein.prmtop", "protein.inpcrd"))
        else:
            prmtop, inpcrd = build_system(tmp)
        rate, atoms, detail = nbkit_rate(args.nbkit, prmtop, inpcrd, args.backend, args.threads, args.steps,
                                         args.electrostatics, tmp, copies)
        peer = openmm_rates(prmtop, inpcrd, args.threads, args.steps, args.electrostatics, copies)
    result = {"atoms": atoms, "copies": copies, "steps": args.steps, "electrostatics": args.electrostatics, "nbkit": {"backend": args.backend, "detail": detail,
                                                            "atom_steps_per_second": rate,
                                                            "evaluations_per_second": rate / atoms}}
    what = "PME (tolerance 5e-4)" if args.electrostatics == "pme" else "reaction field"
    copied = "" if copies == (1, 1, 1) else f" in {copies[0]}x{copies[1]}x{copies[2]} copies"
    print(f"solvated FKBP12{copied}, {atoms} atoms, {what}, 9 A cutoff, {args.steps} steps of 1 fs (NVE)")
    print(f"  nbkit md ({detail}): {rate:.3g} atom-steps/s = {rate / atoms:.3g} force evaluations/s")
    if peer:
        steps_rate, evaluations = peer
        result["openmm_cpu"] = {"threads": args.threads, "atom_steps_per_second": steps_rate,
                                "evaluations_per_second": evaluations}
        print(f"  OpenMM 7.7 CPU platform ({args.threads} threads): {steps_rate:.3g} atom-steps/s, "
              f"{evaluations:.3g} force evaluations/s")
        print(f"  nbkit / OpenMM CPU: {rate / steps_rate:.2f} (steps)")
    else:
        print("  OpenMM not installed here: no peer measured in this run")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
