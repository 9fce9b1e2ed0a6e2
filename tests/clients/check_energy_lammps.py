#!/usr/bin/env python3
"""`nbkit energy` against LAMMPS on its own peptide example, term by term and atom by atom.

Usage: check_energy_lammps.py NBKIT_BINARY

LAMMPS's examples/peptide/data.peptide (Debian lammps-examples: a CHARMM 5-mer peptide in
TIP3P water, 2004 atoms) with the styles of its in.peptide, but pair_style
lj/charmm/coul/charmm 8 10 (no kspace: PPPM is issue 18's), `run 0`, LAMMPS's thermo terms
(ebond, eangle, edihed, eimp, evdwl, ecoul) and forces (dump, 17 digits). A second LAMMPS run
with the data file changed (Urey-Bradley constants and the dihedrals' 1-4 weights set to zero)
splits eangle into angle and Urey-Bradley and evdwl, ecoul into the ordinary and the 1-4
pairs, which nbkit reports apart.

Forces are compared on the peptide with its charges zeroed (a third data file, run by both
programs): LAMMPS's lj/charmm/coul/charmm multiplies the Coulomb force by the switch S alone
(pair_lj_charmm_coul_charmm.cpp: `forcecoul *= switch1`), so between the inner and outer
cutoffs its Coulomb force is not the gradient of its switched Coulomb energy, while nbkit's is
(tests/md/molecular_test.cpp checks it by finite differences); with the charges at zero every
remaining LAMMPS force is its energy's gradient, and the two programs must agree.

Tolerances (the issue's): 1e-6 relative per term (of 1 kcal/mol for terms near zero), forces to
1e-6 relative RMS. Both programs compute in float64 with LAMMPS's constants (nbkit takes
LAMMPS's qqr2e for LAMMPS files); LAMMPS's thermo output carries 12 decimals here.

Exit 77 (CTest's skip) without lmp, numpy or the example.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

try:
    import numpy as np
except ImportError:
    print("numpy not installed: skipped")
    sys.exit(77)

EXAMPLE = "/usr/share/lammps/examples/peptide/data.peptide"
INPUT = """units real
atom_style full
{special}
pair_style lj/charmm/coul/charmm 8.0 10.0
bond_style harmonic
angle_style charmm
dihedral_style charmm
improper_style harmonic
read_data {data}
thermo_style custom step pe ebond eangle edihed eimp evdwl ecoul
thermo_modify format float %.12f
dump forces all custom 1 forces.dump id fx fy fz
dump_modify forces format float %.17g sort id
run 0
"""


def run_lammps(tmp, data, special="special_bonds charmm"):
    with open(os.path.join(tmp, "in.test"), "w") as f:
        f.write(INPUT.format(data=data, special=special))
    subprocess.run(["lmp", "-in", "in.test", "-log", "log.lammps", "-screen", "none", "-nocite"], cwd=tmp, check=True)
    log = open(os.path.join(tmp, "log.lammps")).read().splitlines()
    header = next(i for i, line in enumerate(log) if line.split()[:2] == ["Step", "PotEng"])
    names = log[header].split()
    values = [float(v) for v in log[header + 1].split()]
    terms = dict(zip(names, values))
    dump = open(os.path.join(tmp, "forces.dump")).read().splitlines()
    first = next(i for i, line in enumerate(dump) if line.startswith("ITEM: ATOMS")) + 1
    forces = np.array([[float(v) for v in line.split()[1:]] for line in dump[first:]])
    return terms, forces


def without_charges(text):
    """The data file with every charge zero (Atoms, style full: id mol type q x y z ...)."""
    out, section = [], None
    for line in text.splitlines():
        stripped = line.strip()
        if stripped and not stripped[0].isdigit() and not stripped[0] == "-":
            section = stripped.split("#")[0].strip()
        fields = line.split()
        if section == "Atoms" and len(fields) in (7, 10):
            line = " ".join(fields[:3] + ["0.0"] + fields[4:])
        out.append(line)
    return "\n".join(out) + "\n"


def without_ub_and_14(text):
    """The data file with every Urey-Bradley constant and every dihedral 1-4 weight zero."""
    out, section = [], None
    for line in text.splitlines():
        stripped = line.strip()
        if stripped and not stripped[0].isdigit() and not stripped[0] == "-":
            section = stripped.split("#")[0].strip()
        fields = line.split()
        if section == "Angle Coeffs" and len(fields) == 5:
            line = " ".join(fields[:3] + ["0.0", "0.0"])
        elif section == "Dihedral Coeffs" and len(fields) == 5:
            line = " ".join(fields[:4] + ["0.0"])
        out.append(line)
    return "\n".join(out) + "\n"


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    if shutil.which("lmp") is None or not os.path.exists(EXAMPLE):
        print("LAMMPS (lmp) or its peptide example missing: skipped (scripts/setup installs lammps, lammps-examples)")
        return 77
    nbkit = sys.argv[1]
    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "data.peptide")
        shutil.copy(EXAMPLE, data)
        split = os.path.join(tmp, "data.split")
        with open(split, "w") as f:
            f.write(without_ub_and_14(open(EXAMPLE).read()))
        neutral = os.path.join(tmp, "data.neutral")
        with open(neutral, "w") as f:
            f.write(without_charges(open(EXAMPLE).read()))
        full, _ = run_lammps(tmp, data)
        parts, _ = run_lammps(tmp, split)
        _, lammps_forces = run_lammps(tmp, neutral)
        theirs = {"bond": full["E_bond"], "angle": parts["E_angle"], "urey_bradley": full["E_angle"] - parts["E_angle"],
                  "dihedral": full["E_dihed"], "improper": full["E_impro"], "lennard_jones": parts["E_vdwl"],
                  "coulomb": parts["E_coul"], "lennard_jones_14": full["E_vdwl"] - parts["E_vdwl"],
                  "coulomb_14": full["E_coul"] - parts["E_coul"]}
        failures = []
        for backend in ("reference", "cpu"):
            report, forces = os.path.join(tmp, "report.json"), os.path.join(tmp, "forces.txt")
            options = ["--nonbonded", "cutoff-periodic", "--cutoff", "10", "--switch-distance", "8", "--cutoff-style",
                       "charmm", "--backend", backend, "-q"]
            subprocess.run([nbkit, "energy", data, "--report", report] + options, check=True)
            subprocess.run([nbkit, "energy", neutral, "--forces", forces] + options, check=True)
            ours = json.load(open(report))["energy_kcal_per_mol"]
            for term, value in theirs.items():
                error = abs(ours[term] - value) / max(abs(value), 1.0)
                print(f"  {backend:<9} {term:<17} nbkit {ours[term]:>20.10f}  LAMMPS {value:>20.10f}  rel {error:.1e}")
                if not error <= 1e-6:
                    failures.append(f"{backend}: {term} {ours[term]} against LAMMPS's {value} (relative {error:.2e})")
            if abs(ours["total"] - full["PotEng"]) > 1e-6 * abs(full["PotEng"]):
                failures.append(f"{backend}: total {ours['total']} against LAMMPS's {full['PotEng']}")
            mine = np.loadtxt(forces)[:, 1:]
            rms = np.sqrt(((mine - lammps_forces) ** 2).sum() / (lammps_forces ** 2).sum())
            print(f"  {backend:<9} forces (charges zeroed): relative RMS {rms:.1e} over {len(mine)} atoms")
            if not rms <= 1e-6:
                failures.append(f"{backend}: forces differ from LAMMPS's by {rms:.2e} relative RMS")
        # AMBER's special_bonds (1-4 Lennard-Jones halved, Coulomb by 5/6) on the file whose
        # dihedral 1-4 weights are zero (LAMMPS refuses both at once): the pair terms' sums.
        amber, _ = run_lammps(tmp, split, "special_bonds lj 0.0 0.0 0.5 coul 0.0 0.0 0.833333333333333")
        for backend in ("reference", "cpu"):
            report = os.path.join(tmp, "amber.json")
            subprocess.run([nbkit, "energy", split, "--report", report, "--special-bonds", "amber", "--nonbonded",
                            "cutoff-periodic", "--cutoff", "10", "--switch-distance", "8", "--cutoff-style", "charmm",
                            "--backend", backend, "-q"], check=True)
            ours = json.load(open(report))["energy_kcal_per_mol"]
            for label, value, theirs_value in (
                    ("van der Waals", ours["lennard_jones"] + ours["lennard_jones_14"], amber["E_vdwl"]),
                    ("Coulomb", ours["coulomb"] + ours["coulomb_14"], amber["E_coul"]),
                    ("total", ours["total"], amber["PotEng"])):
                error = abs(value - theirs_value) / max(abs(theirs_value), 1.0)
                print(f"  {backend:<9} special_bonds amber: {label:<13} nbkit {value:>20.10f}  LAMMPS "
                      f"{theirs_value:>20.10f}  rel {error:.1e}")
                if not error <= 1e-6:
                    failures.append(f"{backend}: special_bonds amber: {label} {value} against LAMMPS's {theirs_value}")
            if abs(amber["E_vdwl"] - parts["E_vdwl"]) < 1e-3:
                failures.append("special_bonds amber changed nothing in LAMMPS: the case tests nothing")
    for failure in failures:
        print("FAIL:", failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
