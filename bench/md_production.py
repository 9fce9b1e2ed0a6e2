#!/usr/bin/env python3
"""Production settings on a solvated protein: the issue-19 benchmark's protocol with `nbkit md`.

Usage: md_production.py NBKIT --system DIR [--steps N] [--backend cuda] [--threads T] [--sizes]
                         [--dhfr-system DIR] [--openmm-cpu] [--mesh-sizes fft|reference] [--json FILE]

DIR holds protein.prmtop and protein.inpcrd (bench/md_protein_bench.py --write-system makes them:
FKBP12 in TIP3P, 30,683 atoms). Three runs, each minimised first:
  nvt-4fs  Langevin middle 300 K, 1/ps, 4 fs, h-bonds + rigid water, hydrogen mass 1.5 amu, PME
           5e-4 with a 9 A cutoff: OpenMM's benchmark settings (openmm.org/benchmarks);
  nve-2fs  velocity Verlet at 2 fs with the same constraints: the energy drift per ns per degree
           of freedom (kT units);
  npt-4fs  nvt-4fs with the Monte Carlo barostat at 1 bar every 25 steps: the density.
Prints ns/day and atom-steps/s per run beside OpenMM 8.4's published H100 figure for DHFR
(23,558 atoms, 1,704.5 ns/day; the nearest size), the phases of a step (`nbkit md --time-phases`
in a second run of at most 500 steps, since its synchronisations slow a GPU step:
integration, constraints, forces with the GPU's upload, bonded, list, pairs, mesh, sums, download,
and the barostat), the largest constraint deviation, the drift and the density.
--sizes adds nvt-4fs at four sizes beside OpenMM's four published H100 systems: the protein box
repeated ([system] replicate) 1x1x1, 3x1x1, 3x2x2 and 5x7x1 (30,683, 92,049, 368,196 and
1,073,905 atoms against DHFR 23,558, ApoA1 92,224, cellulose 408,609 and STMV 1,067,095), and
with --dhfr-system DIR (`md_protein_bench.py --write-system DIR --atoms 23558`: the protein in a
cube of water of DHFR's size, 23,534 atoms in 62.7 A against DHFR's 23,558 in 62.2 A) a row of
that system, so that the smallest size is compared with DHFR at the same size.
--openmm-cpu runs nvt-4fs's settings on OpenMM's CPU platform (Debian's OpenMM 7.7, its own
single precision, the same --threads, the same prmtop; not minimised: the rate only) after
nbkit's runs, and prints the ratio (run it with --backend cpu and Debian's /usr/bin/python3).
--mesh-sizes: PME's mesh from the tolerance rounded up to products of 2, 3, 5 and 7 ("fft", the
default: what OpenMM's CUDA and CPU platforms run, so the runs compared with theirs) or as
OpenMM's Reference platform leaves it ("reference", nbkit's default; before session 31 these runs
used it: primes such as 61 make slow FFTs).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

OPENMM_H100_DHFR_NS_PER_DAY = 1704.5  # OpenMM 8.4, one H100, 23,558 atoms, LangevinMiddle 4 fs
# OpenMM 8.4's published H100 figures (openmm.org/benchmarks; the issue's settings): name, atoms, ns/day.
OPENMM_H100 = [("DHFR", 23558, 1704.5), ("ApoA1", 92224, 742.1), ("cellulose", 408609, 217.0),
               ("STMV", 1067095, 70.2)]
SIZES = [(1, 1, 1), (3, 1, 1), (3, 2, 2), (5, 7, 1)]


def run(nbkit, system, name, body, steps, backend, tmp, timed=False):
    toml = os.path.join(tmp, name + ".toml")
    with open(toml, "w") as f:
        f.write(f'[system]\nprmtop = "{system}/protein.prmtop"\ncoordinates = "{system}/protein.inpcrd"\n'
                f'temperature = 300\n{body}'
                '[nonbonded]\nelectrostatics = "pme"\ncutoff = 9.0\newald_tolerance = 5e-4\n'
                f'pme_mesh_sizes = "{run.mesh_sizes}"\n'
                f'[minimize]\ntolerance = 2.39\nmax_iterations = 500\n'
                f'[run]\nsteps = {steps}\nthermo = {max(steps // 20, 1)}\n')
        f.write(run.tail[name])
    out, report = os.path.join(tmp, name), os.path.join(tmp, name + ".json")
    threads = ["--threads", str(run.threads)] if run.threads else []
    done = subprocess.run([nbkit, "md", toml, "-q", "-o", out, "--backend", backend, "--report", report]
                          + (["--time-phases"] if timed else []) + threads,
                          capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"{name}: nbkit md failed\n{done.stdout}{done.stderr}")
    rows = [line.split(",") for line in open(os.path.join(out, "thermo.csv")) if line[0].isdigit()]
    return json.load(open(report)), rows


def phases(nbkit, system, name, body, steps, backend, tmp):
    """Where a step goes: a second, shorter run with --time-phases. Its synchronisation after
    every phase slows the step on a GPU (by 10-15% at 30,000 atoms: session 24), so the rates
    come from the untimed run and only the phases from this one."""
    report, _ = run(nbkit, system, name, body, min(steps, 500), backend, tmp, timed=True)
    return report.get("phases_ms_per_step", {})


def openmm_cpu_nvt(system, threads, steps):
    """OpenMM's CPU platform with nvt-4fs's settings: (ns/day, atom-steps/s)."""
    import time
    import openmm
    import openmm.app as app
    import openmm.unit as unit
    amber = app.AmberPrmtopFile(os.path.join(system, "protein.prmtop"))
    coordinates = app.AmberInpcrdFile(os.path.join(system, "protein.inpcrd"))
    omm = amber.createSystem(nonbondedMethod=app.PME, nonbondedCutoff=0.9 * unit.nanometer, ewaldErrorTolerance=5e-4,
                             constraints=app.HBonds, rigidWater=True, hydrogenMass=1.5 * unit.amu)
    omm.setDefaultPeriodicBoxVectors(*coordinates.boxVectors)
    integrator = openmm.LangevinMiddleIntegrator(300 * unit.kelvin, 1 / unit.picosecond, 4 * unit.femtosecond)
    context = openmm.Context(omm, integrator, openmm.Platform.getPlatformByName("CPU"), {"Threads": str(threads)})
    context.setPositions(coordinates.positions)
    openmm.LocalEnergyMinimizer.minimize(context, 10, 50)  # a start the 4 fs step survives
    context.setVelocitiesToTemperature(300 * unit.kelvin)
    integrator.step(5)  # warm up
    start = time.perf_counter()
    integrator.step(steps)
    context.getState(getEnergy=True)  # waits for the steps
    seconds = time.perf_counter() - start
    return steps * 4e-6 / seconds * 86400, omm.getNumParticles() * steps / seconds


def main():
    p = argparse.ArgumentParser()
    p.add_argument("nbkit")
    p.add_argument("--system", required=True)
    p.add_argument("--steps", type=int, default=2000)
    p.add_argument("--backend", default="cuda")
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--sizes", action="store_true")
    p.add_argument("--dhfr-system", help="with --sizes: a system of DHFR's size (a row of its own)")
    p.add_argument("--openmm-cpu", action="store_true")
    p.add_argument("--mesh-sizes", choices=("fft", "reference"), default="fft")
    p.add_argument("--json")
    a = p.parse_args()
    system = os.path.abspath(a.system)
    run.threads = a.threads
    run.mesh_sizes = a.mesh_sizes
    constraints = '[constraints]\nbonds = "h-bonds"\nrigid_water = true\n'
    run.tail = {
        "nvt-4fs": 'timestep = 4.0\nensemble = "nvt"\ntemperature = 300\nfriction = 1.0\n',
        "nve-2fs": 'timestep = 2.0\n',
        "npt-4fs": 'timestep = 4.0\nensemble = "npt"\ntemperature = 300\nfriction = 1.0\n'
                   '[barostat]\npressure = 1.0\nfrequency = 25\n',
    }
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name in ("nvt-4fs", "nve-2fs", "npt-4fs"):
            hmr = 'hydrogen_mass = 1.5\n' if name.endswith("4fs") else ''
            report, rows = run(a.nbkit, system, name, hmr + constraints, a.steps, a.backend, tmp)
            atoms = report["input"]["atoms"]
            rate = report["rates"]["atom_steps_per_second"]
            ns_day = report["rates"]["ns_per_day"]
            r = {"atoms": atoms, "ns_per_day": ns_day, "atom_steps_per_second": rate,
                 "largest_constraint_deviation": report["constraints"]["largest_deviation"],
                 "device": report.get("device", report.get("backend"))}
            temps = [float(row[1]) for row in rows[len(rows) // 2:]]
            r["mean_temperature_second_half"] = sum(temps) / len(temps)
            if name == "nve-2fs":
                dof = 3 * atoms - 3 - report["constraints"]["count"]
                kt = 0.0019872067 * 300
                # From 0.1 ps on: after minimisation Verlet's reported energy steps once by its
                # O(dt^2) offset while the kinetic energy halves into the potential (~20 fs).
                settled = [row for row in rows if int(row[0]) * 2.0 >= 100] or rows[-2:]
                span_ns = (int(settled[-1][0]) - int(settled[0][0])) * 2.0 * 1e-6
                drift = (float(settled[-1][4]) - float(settled[0][4])) / span_ns / dof / kt
                r["drift_kT_per_dof_per_ns"] = drift
            if name == "npt-4fs":
                dens = [float(row[7]) for row in rows[len(rows) // 2:]]
                r["mean_density_second_half"] = sum(dens) / len(dens)
                r["barostat"] = report["barostat"]
            r["phases_ms_per_step"] = phases(a.nbkit, system, name, hmr + constraints, a.steps, a.backend, tmp)
            results[name] = r
            extra = ""
            if "drift_kT_per_dof_per_ns" in r:
                extra = f", drift {r['drift_kT_per_dof_per_ns']:+.3g} kT/dof/ns"
            if "mean_density_second_half" in r:
                extra = f", density {r['mean_density_second_half']:.4f} g/cm3"
            print(f"{name}: {atoms} atoms, {ns_day:.1f} ns/day, {rate:.3g} atom-steps/s, "
                  f"T {r['mean_temperature_second_half']:.1f} K, largest constraint deviation "
                  f"{r['largest_constraint_deviation']:.2g}{extra}")
            ph = r["phases_ms_per_step"]
            if ph:
                print("    ms/step: " + ", ".join(f"{k} {v:.3f}" for k, v in ph.items() if k not in ("steps", "evaluations")))
    nvt = results["nvt-4fs"]["ns_per_day"]
    if a.backend == "cuda":
        print(f"OpenMM 8.4 published (H100, DHFR 23,558 atoms, same settings): {OPENMM_H100_DHFR_NS_PER_DAY} ns/day; "
              f"nbkit nvt-4fs at {results['nvt-4fs']['atoms']} atoms: {nvt:.1f} ns/day, ratio "
              f"{nvt / OPENMM_H100_DHFR_NS_PER_DAY:.3f} (sizes differ by "
              f"{results['nvt-4fs']['atoms'] / 23558:.2f}x)")
    if a.openmm_cpu:
        threads = a.threads or os.cpu_count()
        ns_day, rate = openmm_cpu_nvt(system, threads, max(a.steps // 4, 20))
        ours = results["nvt-4fs"]
        results["openmm-cpu-nvt-4fs"] = {"ns_per_day": ns_day, "atom_steps_per_second": rate, "threads": threads}
        print(f"OpenMM {__import__('openmm').__version__} CPU platform, {threads} threads, nvt-4fs settings: "
              f"{ns_day:.2f} ns/day ({rate:.3g} atom-steps/s); nbkit {a.backend}: {ours['ns_per_day']:.2f} ns/day, "
              f"ratio {ours['ns_per_day'] / ns_day:.2f}")
    if a.sizes:
        print(f"{'system':>10} {'atoms':>9} {'ns/day':>8} {'atom-steps/s':>13} {'OpenMM 8.4 H100':>22} {'ratio':>6}"
              "   ms/step: integrate constraints forces (list pairs mesh)")
        rows = [(openmm, copies, system) for openmm, copies in zip(OPENMM_H100, SIZES)]
        if a.dhfr_system:  # DHFR's size itself first, beside DHFR
            rows.insert(0, (OPENMM_H100[0], (1, 1, 1), os.path.abspath(a.dhfr_system)))
        with tempfile.TemporaryDirectory() as tmp:
            for (name, openmm_atoms, openmm_rate), copies, where in rows:
                label = "x".join(map(str, copies)) if where == system else "dhfr-size"
                key = "nvt-4fs-" + label
                run.tail[key] = run.tail["nvt-4fs"]
                body = f'hydrogen_mass = 1.5\nreplicate = [{copies[0]}, {copies[1]}, {copies[2]}]\n' + constraints
                steps = max(200, a.steps // (copies[0] * copies[1] * copies[2]))
                report, _ = run(a.nbkit, where, key, body, steps, a.backend, tmp)
                atoms, ns_day = report["input"]["atoms"], report["rates"]["ns_per_day"]
                rate = report["rates"]["atom_steps_per_second"]
                ph = phases(a.nbkit, where, key, body, steps, a.backend, tmp)
                results[key] = {"atoms": atoms, "ns_per_day": ns_day, "atom_steps_per_second": rate,
                                "openmm_system": name, "openmm_atoms": openmm_atoms,
                                "openmm_ns_per_day": openmm_rate, "phases_ms_per_step": ph}
                print(f"{label:>10} {atoms:>9} {ns_day:>8.1f} {rate:>13.3g} {name:>10} {openmm_atoms:>7} "
                      f"{openmm_rate:>6.1f} {ns_day / openmm_rate:>6.3f}   " +
                      " ".join(f"{ph.get(k, 0):.3f}" for k in ("integrate", "constraints", "forces", "gpu_list",
                                                                "gpu_pairs", "gpu_mesh")))
    results["pme_mesh_sizes"] = a.mesh_sizes
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=2)


if __name__ == "__main__":
    main()
