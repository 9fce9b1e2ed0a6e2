#!/usr/bin/env python3
"""`nbkit energy` against OpenMM's Reference platform on the same CHARMM files, term by term.

Usage: check_energy_charmm.py NBKIT_BINARY

At test time OpenMM (Debian python3-simtk) builds FKBP12 (APBS's examples, Debian apbs-data:
its heavy atoms, hydrogens added) with CHARMM36 (charmm36.xml, CHARMM's July 2015 toppar
converted), and this script writes it as CHARMM's own files, every parameter taken from the
System OpenMM built and keyed by the atoms' CHARMM types:
  protein.psf      XPLOR psf (type names) with bonds, angles, dihedrals, impropers, cross-terms;
  numbered.psf     the same in the standard format, types as numbers (named by MASS lines);
  protein.prm      ATOMS (MASS), BONDS, ANGLES (Urey-Bradley columns), DIHEDRALS (every term
                   of a multi-term dihedral), IMPROPERS, CMAP (CHARMM's layout, -180 first),
                   NONBONDED (the special 1-4 columns) with e14fac 1.0 and nbxmod 5;
  ions.str         a stream file ("read rtf card append" and "read para card flex append"
                   blocks) with an NBFIX entry of our own for sodium and water's oxygen (the
                   prm already has charmm36's sodium-carboxylate NBFIX; this one meets
                   hundreds of pairs within the cutoff);
  protein.crd      CHARMM coordinates (EXT).
Then OpenMM reads the files back (CharmmPsfFile, CharmmParameterSet, CharmmCrdFile), and that
System's force groups give the terms: bond, angle, Urey-Bradley, dihedral, improper, CMAP, and
the nonbonded terms split as openmm_oracle.nonbonded_parts says (with NBFIX, OpenMM puts the
ordinary pairs' Lennard-Jones in a CustomNonbondedForce). Cases: FKBP in vacuum with no cutoff
(standard and XPLOR psf), and FKBP solvated in TIP3P with 0.15 M NaCl (NBFIX in play) with a
9 A reaction-field cutoff, on nbkit's reference and cpu backends. The files are also checked
against the charmm36.xml System they came from (the same total energy), so that they are a
faithful CHARMM36 system and not only self-consistent.

Tolerances (the issue's): every term to 1e-6 relative in float64, forces to 1e-6 relative RMS.
Both compute in float64; CHARMM's CMAP splines and bicubic cells are built by each program its own
way, so agreement is ~1e-10.

Exit 77 (CTest's skip) when OpenMM, numpy or apbs-data are missing.
"""
import math
import os
import sys
import tempfile

try:
    import openmm
    import openmm.app as app
    import openmm.unit as unit
    from openmm_oracle import (KCAL, NONBONDED_TERMS, PQR, compare, copy, copy_system, energies, heavy_atom_pdb,
                               nbkit_terms, nonbonded_parts, system_with)
except ImportError as error:
    print(f"{error.name} not installed: skipped (scripts/setup installs python3-simtk and python3-numpy)")
    sys.exit(77)

TERMS = ["bond", "angle", "urey_bradley", "dihedral", "improper", "cmap"] + NONBONDED_TERMS
KJ_PER_KCAL = 4.184
NM = 10.0  # Angstrom per nm


def charmm36_lennard_jones():
    """charmm36.xml's and charmm36/water.xml's Lennard-Jones per type (sigma, epsilon, and the
    1-4 pair's, nm and kJ/mol) and their NBFIX pairs."""
    import xml.etree.ElementTree as ET
    per_type, nbfix = {}, {}
    data = os.path.join(os.path.dirname(app.__file__), "data")
    for name in ("charmm36.xml", os.path.join("charmm36", "water.xml")):
        lj = ET.parse(os.path.join(data, name)).getroot().find("LennardJonesForce")
        for atom in lj.findall("Atom"):
            sigma, epsilon = float(atom.get("sigma")), float(atom.get("epsilon"))
            per_type[atom.get("type")] = (sigma, epsilon, float(atom.get("sigma14", sigma)),
                                          float(atom.get("epsilon14", epsilon)))
        for p in lj.findall("NBFixPair"):
            nbfix[(p.get("type1"), p.get("type2"))] = (float(p.get("sigma")), float(p.get("epsilon")))
    return per_type, nbfix


def rmin_half(sigma_nm):
    return sigma_nm * NM * 2 ** (1 / 6) / 2


def build(tmp):
    """FKBP with CHARMM36 in vacuum, and solvated (TIP3P and 0.15 M NaCl): for each, its topology,
    positions, System and each atom's CHARMM type.

    Hydrogens are added once and the types matched once (the solvated topology starts with the
    protein's atoms in their order): each matching of charmm36.xml's templates, patches included,
    takes OpenMM 7.7 ~7 s, and building each system from scratch took 7 of them. The water and ions
    are placed with amber14-all.xml's radii and charges (Modeller.addSolvent and its ions each match
    the whole topology once; amber14's templates need no patches): only where the waters sit
    depends on it, and the systems compared are charmm36.xml's."""
    pdb_path = os.path.join(tmp, "fkbp-heavy.pdb")
    heavy_atom_pdb(pdb_path)
    pdb = app.PDBFile(pdb_path)
    forcefield = app.ForceField("charmm36.xml", "charmm36/water.xml")
    protein = app.Modeller(pdb.topology, pdb.positions)
    protein.addHydrogens(forcefield)
    solvated = app.Modeller(protein.topology, protein.positions)
    placement = app.ForceField("amber14-all.xml", "amber14/tip3p.xml")
    solvated.addSolvent(placement, model="tip3p", padding=0.6 * unit.nanometer, ionicStrength=0.15 * unit.molar)
    # The types OpenMM matched (charmm36.xml's type names are CHARMM's types).
    data = app.ForceField._SystemData(solvated.topology)
    matched = forcefield._matchAllResiduesToTemplates(data, solvated.topology, {}, False)
    # Those templates (patched ones included) named for createSystem's residueTemplates, so that
    # the two systems below are built without matching again.
    names = {}
    for template in matched:
        names.setdefault(id(template), f"nbkit-matched-{len(names)}")
        forcefield._templates.setdefault(names[id(template)], template)
    chosen = [names[id(template)] for template in matched]
    atoms = list(solvated.topology.atoms())
    types = [data.atomType[atom] for atom in atoms]
    n = protein.topology.getNumAtoms()
    if [(a.name, a.residue.name) for a in atoms[:n]] != [(a.name, a.residue.name) for a in protein.topology.atoms()]:
        raise RuntimeError("the solvated topology does not start with the protein's atoms")
    built = []
    for modeller, atom_types in ((protein, types[:n]), (solvated, types)):
        templates = {residue: chosen[residue.index] for residue in modeller.topology.residues()}
        system = forcefield.createSystem(modeller.topology, nonbondedMethod=app.NoCutoff, constraints=None,
                                         rigidWater=False, residueTemplates=templates)
        built.append((modeller.topology, modeller.positions, system, atom_types))
    return built


def forces_by_name(system):
    out = {}
    for f in system.getForces():
        out.setdefault(type(f).__name__, []).append(f)
    return out


def canonical(key):
    return min(tuple(key), tuple(reversed(key)))


def write_charmm_files(tmp, name, topology, positions, system, types, nbfix_extra):
    """The psf (XPLOR and standard), prm, str and crd of a System; returns their paths."""
    n = system.getNumParticles()
    f = forces_by_name(system)
    bond_set = {canonical((b.atom1.index, b.atom2.index)) for b in topology.bonds()}
    bonds, ub, angles, propers, impropers, cmaps = {}, {}, {}, {}, {}, []
    psf_bonds, psf_angles, psf_dihedrals, psf_impropers = [], [], [], []
    conflicts = []

    def put(table, key, value):
        if key in table and table[key] != value:
            conflicts.append((key, table[key], value))
        table[key] = value

    for force in f["HarmonicBondForce"]:
        for b in range(force.getNumBonds()):
            i, j, r0, k = force.getBondParameters(b)
            value = (k.value_in_unit(unit.kilojoule_per_mole / unit.nanometer ** 2) / 2 / KJ_PER_KCAL / NM ** 2,
                     r0.value_in_unit(unit.nanometer) * NM)
            if canonical((i, j)) in bond_set:
                psf_bonds.append((i, j))
                put(bonds, canonical((types[i], types[j])), value)
            else:  # a Urey-Bradley term between an angle's ends
                ub[canonical((i, j))] = value
    for a in range(f["HarmonicAngleForce"][0].getNumAngles()):
        i, j, k, theta0, k_theta = f["HarmonicAngleForce"][0].getAngleParameters(a)
        psf_angles.append((i, j, k))
        key = canonical((types[i], types[j], types[k]))
        put(angles, key, (k_theta.value_in_unit(unit.kilojoule_per_mole / unit.radian ** 2) / 2 / KJ_PER_KCAL,
                          math.degrees(theta0.value_in_unit(unit.radian))) + ub.pop(canonical((i, k)), (0.0, 0.0)))
    if ub:
        raise RuntimeError(f"Urey-Bradley terms between atoms that end no angle: {list(ub)[:3]}")
    by_quadruple = {}
    for force in f["PeriodicTorsionForce"]:
        for t in range(force.getNumTorsions()):
            i, j, k, l, periodicity, phase, k_phi = force.getTorsionParameters(t)
            by_quadruple.setdefault((i, j, k, l), []).append(
                (k_phi.value_in_unit(unit.kilojoule_per_mole) / KJ_PER_KCAL, periodicity,
                 math.degrees(phase.value_in_unit(unit.radian))))
    for (i, j, k, l), terms in by_quadruple.items():
        psf_dihedrals.append((i, j, k, l))
        put(propers, canonical((types[i], types[j], types[k], types[l])), sorted(terms, key=lambda t: t[1]))
    for force in f.get("CustomTorsionForce", []):
        for t in range(force.getNumTorsions()):
            i, j, k, l, (k_psi, psi0) = force.getTorsionParameters(t)
            psf_impropers.append((i, j, k, l))
            put(impropers, canonical((types[i], types[j], types[k], types[l])), (k_psi / KJ_PER_KCAL, math.degrees(psi0)))
    maps = {}
    cmap_force = f.get("CMAPTorsionForce", [None])[0]
    if cmap_force is not None:
        for t in range(cmap_force.getNumTorsions()):
            m, *atoms = cmap_force.getTorsionParameters(t)
            cmaps.append(atoms)
            key = canonical([types[a] for a in atoms[:4]]) + canonical([types[a] for a in atoms[4:]])
            put(maps, key, m)
    if conflicts:
        raise RuntimeError(f"one type key, two parameter sets (not a type-based force field?): {conflicts[:3]}")
    nonbonded = f["NonbondedForce"][0]
    charges = [nonbonded.getParticleParameters(i)[0].value_in_unit(unit.elementary_charge) for i in range(n)]
    masses = [system.getParticleMass(i).value_in_unit(unit.dalton) for i in range(n)]
    per_type, nbfix = charmm36_lennard_jones()
    used = sorted(set(types))
    number = {t: k + 1 for k, t in enumerate(used)}

    def psf(path, numbered):
        atoms = list(topology.atoms())
        with open(path, "w") as out:
            out.write("PSF CMAP%s\n\n       1 !NTITLE\n REMARKS FKBP12, CHARMM36, written for nbkit's tests\n\n" %
                      ("" if numbered else " XPLOR"))
            out.write(f"{n:8d} !NATOM\n")
            for a in atoms:
                kind = str(number[types[a.index]]) if numbered else types[a.index]
                out.write(f"{a.index + 1:8d} {a.residue.chain.id or 'A':<4} {a.residue.id:<4} {a.residue.name:<4} "
                          f"{a.name:<4} {kind:<6} {charges[a.index]:14.10f} {masses[a.index]:14.6f}           0\n")

            def section(label, items, width, per_line):
                out.write(f"\n{len(items):8d} !{label}\n")
                flat = [x + 1 for item in items for x in item]
                for s in range(0, len(flat), per_line * width):
                    out.write("".join(f"{x:8d}" for x in flat[s:s + per_line * width]) + "\n")
                if not flat:
                    out.write("\n")

            section("NBOND: bonds", psf_bonds, 2, 4)
            section("NTHETA: angles", psf_angles, 3, 3)
            section("NPHI: dihedrals", psf_dihedrals, 4, 2)
            section("NIMPHI: impropers", psf_impropers, 4, 2)
            out.write(f"\n{0:8d} !NDON: donors\n\n\n{0:8d} !NACC: acceptors\n\n\n{0:8d} !NNB\n\n")
            out.write("".join(f"{0:8d}" for _ in range(n)) + "\n\n")
            out.write(f"{1:8d}{0:8d} !NGRP NST2\n{0:8d}{0:8d}{0:8d}\n\n")
            section("NCRTERM: cross-terms", cmaps, 8, 1)

    xplor, standard = os.path.join(tmp, name + ".psf"), os.path.join(tmp, name + "-numbered.psf")
    psf(xplor, False)
    psf(standard, True)
    prm = os.path.join(tmp, name + ".prm")
    with open(prm, "w") as out:
        out.write("* CHARMM36 parameters of the types FKBP12 uses (from OpenMM's charmm36.xml)\n*\n\nATOMS\n")
        for t in used:
            mass = next(masses[i] for i in range(n) if types[i] == t)
            out.write(f"MASS {number[t]:5d} {t:<6} {mass:10.5f}\n")
        out.write("\nBONDS\n")
        for (a, b), (k, r0) in sorted(bonds.items()):
            out.write(f"{a:<6} {b:<6} {k:12.6f} {r0:10.6f} ! from the System\n")
        out.write("\nANGLES\n")
        for (a, b, c), (k, theta0, kub, s0) in sorted(angles.items()):
            extra = f" {kub:12.6f} {s0:10.6f}" if kub else ""
            out.write(f"{a:<6} {b:<6} {c:<6} {k:12.6f} {theta0:12.6f}{extra}\n")
        out.write("\nDIHEDRALS\n")
        for key, terms in sorted(propers.items()):
            for k, periodicity, phase in terms:
                out.write(f"{key[0]:<6} {key[1]:<6} {key[2]:<6} {key[3]:<6} {k:12.6f} {periodicity:2d} {phase:12.6f}\n")
        out.write("\nIMPROPER\n")
        for key, (k, psi0) in sorted(impropers.items()):
            out.write(f"{key[0]:<6} {key[1]:<6} {key[2]:<6} {key[3]:<6} {k:12.6f}  0 {psi0:12.6f}\n")
        out.write("\nCMAP\n")
        for key, m in sorted(maps.items()):
            size, energy = cmap_force.getMapParameters(m)
            energy = [e.value_in_unit(unit.kilojoule_per_mole) / KJ_PER_KCAL for e in energy] \
                if hasattr(energy[0], "value_in_unit") else [e / KJ_PER_KCAL for e in energy]
            half = size // 2
            out.write(" ".join(key) + f" {size}\n\n")
            for a in range(size):  # phi = -180 + a * 360 / size: OpenMM's grid starts at 0
                out.write(f"! phi = {-180 + a * 360 / size:.1f}\n")
                row = [energy[(a + half) % size + size * ((b + half) % size)] for b in range(size)]
                for s in range(0, size, 5):
                    out.write(" ".join(f"{e:.10f}" for e in row[s:s + 5]) + "\n")
                out.write("\n")
        out.write("\nNONBONDED nbxmod  5 atom cdiel fshift vatom vdistance vfswitch -\n"
                  "cutnb 14.0 ctofnb 12.0 ctonnb 10.0 eps 1.0 e14fac 1.0 wmin 1.5\n")
        for t in used:
            sigma, epsilon, sigma14, epsilon14 = per_type[t]
            special = ""
            if (sigma14, epsilon14) != (sigma, epsilon):
                special = f" 0.0 {-epsilon14 / KJ_PER_KCAL:.10f} {rmin_half(sigma14):.10f}"
            out.write(f"{t:<6} 0.0 {-epsilon / KJ_PER_KCAL:.10f} {rmin_half(sigma):.10f}{special}\n")
        out.write("\nNBFIX\n")
        for (a, b), (sigma, epsilon) in sorted(nbfix.items()):
            if a in number and b in number:
                out.write(f"{a:<6} {b:<6} {-epsilon / KJ_PER_KCAL:.10f} {2 * rmin_half(sigma):.10f}\n")
        out.write("\nHBOND CUTHB 0.5\n\nEND\n")
    stream = os.path.join(tmp, name + "-ions.str")
    with open(stream, "w") as out:
        out.write("* NBFIX entries, as a stream file\n*\n\n"
                  "read rtf card append\n* no residues\n*\n36 1\n\nEND\n\n"
                  "read para card flex append\n* parameters\n*\n\nNBFIX\n")
        for a, b, emin, rmin in nbfix_extra:
            out.write(f"{a:<6} {b:<6} {emin:10.5f} {rmin:10.5f}\n")
        out.write("\nEND\nRETURN\n")
    crd = os.path.join(tmp, name + ".crd")
    with open(crd, "w") as out:
        out.write("* FKBP12\n*\n")
        out.write(f"{n:10d}  EXT\n")
        xyz = positions.value_in_unit(unit.angstrom)
        for a in topology.atoms():
            x, y, z = xyz[a.index]
            out.write(f"{a.index + 1:10d}{a.residue.index + 1:10d}  {a.residue.name:<8}  {a.name:<8}"
                      f"{x:20.10f}{y:20.10f}{z:20.10f}  {'A':<8}  {a.residue.id:<8}{0.0:20.10f}\n")
    return xplor, standard, prm, stream, crd


def openmm_terms(psf_path, parameter_paths, crd_path, box, method, cutoff):
    """Per-term energies and the forces of OpenMM's own reading of the CHARMM files."""
    psf = app.CharmmPsfFile(psf_path)
    params = app.CharmmParameterSet(*parameter_paths)
    if box is not None:
        psf.setBox(*[b * unit.angstrom for b in box])
    kwargs = dict(nonbondedMethod=method, constraints=None, rigidWater=False)
    if method != app.NoCutoff:
        kwargs["nonbondedCutoff"] = cutoff * unit.angstrom
    system = psf.createSystem(params, **kwargs)
    positions = app.CharmmCrdFile(crd_path).positions
    groups = {"bond": psf.BOND_FORCE_GROUP, "angle": psf.ANGLE_FORCE_GROUP, "urey_bradley": psf.UREY_BRADLEY_FORCE_GROUP,
              "dihedral": psf.DIHEDRAL_FORCE_GROUP, "improper": psf.IMPROPER_FORCE_GROUP, "cmap": psf.CMAP_FORCE_GROUP}
    parts = {term: system_with(system, *[copy(f) for f in system.getForces() if f.getForceGroup() == group])
             for term, group in groups.items()}
    nonbonded = next(f for f in system.getForces() if isinstance(f, openmm.NonbondedForce))
    custom = [f for f in system.getForces() if isinstance(f, openmm.CustomNonbondedForce)]
    parts.update(nonbonded_parts(system, nonbonded, custom[0] if custom else None))
    return energies(parts, positions, copy_system(system))


def xml_total(system, positions):
    """The total energy (kcal/mol) of the System charmm36.xml made, on the Reference platform."""
    context = openmm.Context(copy_system(system), openmm.VerletIntegrator(0.001),
                             openmm.Platform.getPlatformByName("Reference"))
    context.setPositions(positions)
    return context.getState(getEnergy=True).getPotentialEnergy().value_in_unit(KCAL)


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
        vacuum, water = build(tmp)
        topology, positions, system, types = vacuum
        psf, numbered, prm, stream, crd = write_charmm_files(tmp, "fkbp", topology, positions, system, types, [])
        theirs, their_forces = openmm_terms(psf, [prm], crd, None, app.NoCutoff, None)
        reference = xml_total(system, positions)
        drift = abs(sum(theirs[t] for t in TERMS) - reference) / abs(reference)
        print(f"  the CHARMM files against the charmm36.xml System they came from: totals differ by {drift:.1e} relative")
        if not drift < 1e-6:
            failures.append(f"the files written are not the System they came from (total differs by {drift:.1e})")
        for label, path in (("no-cutoff, XPLOR psf", psf), ("no-cutoff, numbered types", numbered)):
            for backend in ("reference", "cpu"):
                ours, our_forces = nbkit_terms(nbkit, tmp, [path, crd, "-p", prm], backend, ["--nonbonded", "no-cutoff"])
                failures += compare(f"{label} ({backend})", ours, our_forces, theirs, their_forces, TERMS, ())

        topology, positions, system, types = water
        sodium_water = [("SOD", "OT", -0.09, 3.05)]  # a test entry, not a published one
        psf, numbered, prm, stream, crd = write_charmm_files(tmp, "fkbp-water", topology, positions, system, types,
                                                             sodium_water)
        vectors = system.getDefaultPeriodicBoxVectors()
        box = [vectors[a][a].value_in_unit(unit.angstrom) for a in range(3)]
        theirs, their_forces = openmm_terms(psf, [prm, stream], crd, box, app.CutoffPeriodic, 9.0)
        options = ["--nonbonded", "cutoff-periodic", "--cutoff", "9", "--box", ",".join(f"{b:.10f}" for b in box)]
        for backend in ("reference", "cpu"):
            ours, our_forces = nbkit_terms(nbkit, tmp, [psf, crd, "-p", prm, "-p", stream], backend, options)
            failures += compare(f"solvated, NaCl, cutoff-periodic ({backend})", ours, our_forces, theirs,
                                their_forces, TERMS, ())
        # The stream file's NBFIX must matter here, or the case above tests nothing of it.
        without, _ = nbkit_terms(nbkit, tmp, [psf, crd, "-p", prm], "cpu", options)
        change = abs(without["lennard_jones"] - theirs["lennard_jones"])
        print(f"  without the stream file's NBFIX, the Lennard-Jones energy moves by {change:.4f} kcal/mol")
        if not change > 1e-3:
            failures.append("the NBFIX of the stream file changes nothing: the solvated case does not test it")
    for failure in failures:
        print("FAIL:", failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
