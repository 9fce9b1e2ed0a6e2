#!/usr/bin/env python3
"""Energy conservation of biomolecular NVE: the solvated protein of md_protein_bench.py over
10 ps at 1 fs (issue 18's measurement), with PME or a reaction field.

Usage: md_nve_drift.py NBKIT --system DIR [--backend cuda|cpu] [--threads N] [--steps N]
                       [--electrostatics pme|msm|reaction-field] [--precision single|double]
                       [--json FILE]

The run: `nbkit md` from DIR/protein.prmtop and DIR/protein.inpcrd (md_protein_bench.py
--write-system makes them), velocities at 300 K, NVE velocity Verlet at 1 fs, no constraints
(flexible TIP3P: O-H bonds vibrate with a ~9 fs period, so 1 fs is near Verlet's useful limit),
Lennard-Jones switched from 7.5 to 9 A, PME at tolerance 5e-4 (or MSM at its defaults, or the reaction field), the
dispersion correction on, thermo every 100 steps; on the GPU in its default mixed precision, or
as --precision says. Reported, as papers report NVE quality:
  drift        the slope of a least-squares line through the total energy, in kcal/mol/ns and in
               kT per degree of freedom per ns (kT at 300 K, 3N - 3 degrees of freedom);
  fluctuation  the RMS of the total energy about that line, in kcal/mol and over the RMS of the
               kinetic energy's fluctuation (Verlet's shadow-energy noise; < 0.05 is good).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

KT_300 = 0.0019872043 * 300  # kcal/mol


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("nbkit")
    parser.add_argument("--system", required=True)
    parser.add_argument("--backend", default="cuda", choices=["cpu", "cuda"])
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--steps", type=int, default=10000)
    parser.add_argument("--electrostatics", default="pme", choices=["pme", "msm", "reaction-field"])
    parser.add_argument("--precision", choices=["single", "double"], help="the GPU's arithmetic (default: mixed)")
    parser.add_argument("--json")
    args = parser.parse_args()
    prmtop, inpcrd = (os.path.abspath(os.path.join(args.system, n)) for n in ("protein.prmtop", "protein.inpcrd"))
    with tempfile.TemporaryDirectory() as tmp:
        toml = os.path.join(tmp, "nve.toml")
        with open(toml, "w") as f:
            f.write(f'[system]\nprmtop = "{prmtop}"\ncoordinates = "{inpcrd}"\ntemperature = 300\nseed = 3\n'
                    f'[nonbonded]\nelectrostatics = "{args.electrostatics}"\ncutoff = 9.0\nswitch_distance = 7.5\n'
                    f'[run]\ntimestep = 1.0\nsteps = {args.steps}\nthermo = {max(1, min(100, args.steps // 10))}\n')
        command = [args.nbkit, "md", toml, "--backend", args.backend, "-q", "-o", os.path.join(tmp, "out"),
                   "--report", os.path.join(tmp, "report.json")]
        if args.backend == "cpu":
            command += ["--threads", str(args.threads)]
        if args.precision:
            command += ["--precision", args.precision]
        subprocess.run(command, check=True)
        rows = [line.split(",") for line in open(os.path.join(tmp, "out", "thermo.csv")) if line[0].isdigit()]
        with open(os.path.join(tmp, "report.json")) as f:
            report = json.load(f)
    step = [float(r[0]) for r in rows]
    kinetic = [float(r[3]) for r in rows]
    total = [float(r[4]) for r in rows]
    atoms = report["input"]["atoms"]
    t = [s * 1e-6 for s in step]  # ns at 1 fs
    n = len(t)
    mt, me = sum(t) / n, sum(total) / n
    slope = sum((a - mt) * (b - me) for a, b in zip(t, total)) / sum((a - mt) ** 2 for a in t)
    residual = [b - (me + slope * (a - mt)) for a, b in zip(t, total)]
    rms = (sum(r * r for r in residual) / n) ** 0.5
    mk = sum(kinetic) / n
    kinetic_rms = (sum((k - mk) ** 2 for k in kinetic) / n) ** 0.5
    dof = 3 * atoms - 3
    result = {"atoms": atoms, "steps": args.steps, "timestep_fs": 1.0, "electrostatics": args.electrostatics,
              "backend": report["backend"]["detail"], "drift_kcal_per_mol_per_ns": slope,
              "drift_kt_per_dof_per_ns": slope / (KT_300 * dof), "fluctuation_kcal_per_mol": rms,
              "fluctuation_over_kinetic_fluctuation": rms / kinetic_rms,
              "rate_atom_steps_per_second": report["rates"]["atom_steps_per_second"]}
    print(f"NVE, solvated FKBP12 ({atoms} atoms), {args.electrostatics}, {args.steps} steps of 1 fs, "
          f"{report['backend']['detail']}:")
    print(f"  drift {slope:.3g} kcal/mol/ns = {slope / (KT_300 * dof):.2e} kT per degree of freedom per ns")
    print(f"  fluctuation about the line {rms:.3g} kcal/mol = {rms / kinetic_rms:.3f} of the kinetic energy's")
    print(f"  {result['rate_atom_steps_per_second']:.3g} atom-steps/s")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
