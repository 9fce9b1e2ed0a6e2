#!/usr/bin/env python3
"""`nbkit rdf` against MDAnalysis's InterRDF on the same files.

Usage: check_rdf_mdanalysis.py NBKIT_BINARY

At test time OpenMM (Debian python3-simtk) makes the trajectories: a box of TIP3P water
(amber14/tip3p.xml, about 500 molecules) run at 300 K and 1 bar with a Monte Carlo barostat, so
that every frame has its own box, written as DCD with the cells; and FKBP12 (APBS's example,
hydrogens added for amber14-all.xml) for a few steps in a periodic cell. ParmEd writes each
topology as AMBER prmtop and CHARMM psf; OpenMM writes a PDB.

Compared with InterRDF (MDAnalysis 2.4, Debian python3-mdanalysis) on the same frames:
  water O-O (prmtop; InterRDF exclusion_block (1, 1), which is nbkit's rule of never pairing an
    atom with itself), and its first peak near 2.75 A (TIP3P's, Jorgensen et al. 1983);
  water O-H leaving out each molecule's own hydrogens (psf, --exclude residue; InterRDF's
    exclusion_block (1, 2));
  the same O-O frames in a triclinic cell (MDAnalysis writes the DCD with angles 70, 80, 65);
  the same frames as XTC (MDAnalysis writes it, nbkit reads it through libgromacs);
  the protein's backbone N against O leaving out each residue's own pair (--exclude residue;
    exclusion_block (1, 1) lines up with residues since each has one N and one O), and a frame
    range (--first, --stride against InterRDF's start, step).
Counts must be equal bin for bin, except that a pair whose distance is within 1e-6 A of a bin
edge may land on either side: InterRDF's grid search (capped_distance) computes distances in
float32, whose rounding at 10 A is 6e-7 A, where nbkit uses float64 (each such pair moves two
bins by one; the script counts them with MDAnalysis's float64 distance_array and allows exactly
those: about 2e-5 of the pairs for 0.1 A bins). Where the counts agree, g(r) agrees to 1e-6
relative: the same integers over the same normalisation, but MDAnalysis keeps each frame's cell
in float32, so its mean volume differs from the DCD's float64 cell by ~1e-7 relative. The psf, prmtop and
PDB topologies must give the same counts.

Exit 77 (CTest's skip) when OpenMM, ParmEd, MDAnalysis, numpy or apbs-data are missing.
"""
import os
import subprocess
import sys
import tempfile
import warnings

try:
    import numpy as np
    import openmm
    import openmm.app as app
    import openmm.unit as unit
    import parmed
    warnings.filterwarnings("ignore")
    import MDAnalysis as mda
    from MDAnalysis.analysis.rdf import InterRDF
    from MDAnalysis.lib.distances import distance_array
except ImportError as error:
    print(f"{error.name} not installed: skipped (scripts/setup installs python3-simtk, python3-parmed, python3-mdanalysis)")
    sys.exit(77)

from openmm_oracle import heavy_atom_pdb

NBKIT = sys.argv[1]
failures = []


def save_topologies(tmp, name, forcefield, topology, positions, method):
    # ParmEd writes bonds from the bond force: a system without constraints for it.
    system = forcefield.createSystem(topology, nonbondedMethod=method, constraints=None, rigidWater=False)
    structure = parmed.openmm.load_topology(topology, system, positions)
    paths = {}
    for extension in ("prmtop", "psf"):
        paths[extension] = os.path.join(tmp, f"{name}.{extension}")
        structure.save(paths[extension], overwrite=True)
    paths["pdb"] = os.path.join(tmp, f"{name}.pdb")
    with open(paths["pdb"], "w") as f:
        app.PDBFile.writeFile(topology, positions, f)
    return paths


def run_md(topology, system, positions, dcd, frames, interval, minimize):
    integrator = openmm.LangevinMiddleIntegrator(300 * unit.kelvin, 5 / unit.picosecond, 2 * unit.femtosecond)
    integrator.setRandomNumberSeed(7)
    platform = openmm.Platform.getPlatformByName("CPU")
    simulation = app.Simulation(topology, system, integrator, platform, {"Threads": "2"})
    simulation.context.setPositions(positions)
    if minimize:
        simulation.minimizeEnergy(maxIterations=100)
    simulation.context.setVelocitiesToTemperature(300 * unit.kelvin, 7)
    simulation.reporters.append(app.DCDReporter(dcd, interval))
    simulation.step(frames * interval)


def water_box(tmp):
    forcefield = app.ForceField("amber14-all.xml", "amber14/tip3p.xml")
    modeller = app.Modeller(app.Topology(), [])
    modeller.addSolvent(forcefield, model="tip3p", boxSize=openmm.Vec3(2.5, 2.5, 2.5) * unit.nanometer)
    system = forcefield.createSystem(modeller.topology, nonbondedMethod=app.PME, nonbondedCutoff=0.9 * unit.nanometer,
                                     constraints=app.HBonds, rigidWater=True)
    system.addForce(openmm.MonteCarloBarostat(1 * unit.bar, 300 * unit.kelvin, 2))
    paths = save_topologies(tmp, "water", forcefield, modeller.topology, modeller.positions, app.PME)
    paths["dcd"] = os.path.join(tmp, "water.dcd")
    run_md(modeller.topology, system, modeller.positions, paths["dcd"], frames=12, interval=10, minimize=True)
    return paths


def protein(tmp):
    pdb_path = os.path.join(tmp, "fkbp-heavy.pdb")
    heavy_atom_pdb(pdb_path)
    pdb = app.PDBFile(pdb_path)
    forcefield = app.ForceField("amber14-all.xml")
    modeller = app.Modeller(pdb.topology, pdb.positions)
    modeller.addHydrogens(forcefield)
    box = [openmm.Vec3(6.0, 0, 0), openmm.Vec3(0, 6.2, 0), openmm.Vec3(0, 0, 6.4)] * unit.nanometer
    modeller.topology.setPeriodicBoxVectors(box)
    system = forcefield.createSystem(modeller.topology, nonbondedMethod=app.CutoffPeriodic,
                                     nonbondedCutoff=1.0 * unit.nanometer, constraints=app.HBonds)
    paths = save_topologies(tmp, "fkbp", forcefield, modeller.topology, modeller.positions, app.CutoffPeriodic)
    paths["dcd"] = os.path.join(tmp, "fkbp.dcd")
    run_md(modeller.topology, system, modeller.positions, paths["dcd"], frames=6, interval=5, minimize=False)
    return paths


def nbkit_rdf(tmp, topology, trajectory, args):
    out = os.path.join(tmp, "rdf.csv")
    subprocess.run([NBKIT, "rdf", topology, trajectory, "-o", out, "-q"] + args, check=True)
    data = np.loadtxt(out, delimiter=",", skiprows=4, ndmin=2)
    return data[:, 3].astype(np.int64), data[:, 4]


def edge_pairs(universe, a, b, rmax, bins, exclude_blocks, start, step):
    """Pairs within 1e-6 A of a bin edge, in MDAnalysis's float64 distances."""
    near = 0
    for ts in universe.trajectory[start::step]:
        d = distance_array(a.positions, b.positions, box=ts.dimensions)
        if exclude_blocks:
            ia = np.arange(len(a))[:, None] // exclude_blocks[0]
            ib = np.arange(len(b))[None, :] // exclude_blocks[1]
            d = np.where(ia == ib, np.inf, d)
        scaled = d[d <= rmax] * bins / rmax
        near += int(np.sum(np.abs(scaled - np.round(scaled)) * rmax / bins < 1e-6))
    return near


def compare(label, tmp, topology, trajectory, sel_a, sel_b, rmax, bins, exclude, blocks, start=0, step=1):
    args = ["--select-a", sel_a, "--select-b", sel_b, "--rmax", str(rmax), "--bins", str(bins), "--exclude", exclude]
    if start or step != 1:
        args += ["--first", str(start), "--stride", str(step)]
    counts, g = nbkit_rdf(tmp, topology, trajectory, args)
    u = mda.Universe(topology, trajectory)
    a, b = u.select_atoms(sel_a.replace("resid", "resid")), u.select_atoms(sel_b)
    theirs = InterRDF(a, b, nbins=bins, range=(0.0, rmax), exclusion_block=blocks).run(start=start, step=step)
    their_counts = theirs.results.count.astype(np.int64)
    off = int(np.abs(counts - their_counts).sum())
    allowed = 2 * edge_pairs(u, a, b, rmax, bins, blocks, start, step) if off else 0
    scale = float(np.max(theirs.results.rdf))
    worst = float(np.max(np.abs(g - theirs.results.rdf))) / scale
    ok = off <= allowed and (off > 0 or worst <= 1e-6) and their_counts.sum() > 1000
    print(f"{label:<44} {len(a):>5} x {len(b):<5} pairs counted {int(their_counts.sum()):>9}  "
          f"bins off by {off} (allowed {allowed})  g rel diff {worst:.1e}  {'ok' if ok else 'FAIL'}")
    if not ok:
        failures.append(label)
    return counts, g, theirs


def main():
    with tempfile.TemporaryDirectory() as tmp:
        water = water_box(tmp)
        u = mda.Universe(water["prmtop"], water["dcd"])
        volumes = {round(float(ts.volume), 3) for ts in u.trajectory}
        print(f"water: {u.atoms.n_residues} molecules, {len(u.trajectory)} frames, {len(volumes)} distinct volumes")
        if len(volumes) < 3:
            failures.append("the barostat's frames should have several boxes")

        counts, g, theirs = compare("water O-O (prmtop)", tmp, water["prmtop"], water["dcd"], "name O", "name O",
                                    10.0, 100, "none", (1, 1))
        peak = float(theirs.results.bins[int(np.argmax(g))])
        print(f"  first peak of g_OO at {peak:.2f} A, height {np.max(g):.2f} (TIP3P: 2.75 A, about 2.8)")
        if not (2.6 <= peak <= 2.95 and 2.0 <= np.max(g) <= 4.0):
            failures.append("water O-O first peak")
        for kind in ("psf", "pdb"):
            other, _ = nbkit_rdf(tmp, water[kind], water["dcd"], ["--select-a", "name O", "--rmax", "10", "--bins", "100"])
            if not np.array_equal(other, counts):
                failures.append(f"water O-O counts from the {kind} differ from the prmtop's")
        compare("water O-H, own hydrogens left out (psf)", tmp, water["psf"], water["dcd"], "name O", "name H1 H2",
                8.0, 80, "residue", (1, 2))

        triclinic = os.path.join(tmp, "water-triclinic.dcd")
        with mda.Writer(triclinic, u.atoms.n_atoms) as w:
            for ts in u.trajectory:
                ts.dimensions = [ts.dimensions[0], ts.dimensions[1] * 1.05, ts.dimensions[2] * 1.1, 70, 80, 65]
                w.write(u.atoms)
        compare("water O-O, triclinic cell (70, 80, 65 deg)", tmp, water["prmtop"], triclinic, "name O", "name O",
                9.0, 90, "none", (1, 1))

        # The same frames as XTC (GROMACS's compressed format, 0.001 nm precision), written by
        # MDAnalysis and read by nbkit through libgromacs: against InterRDF on the same XTC.
        xtc = os.path.join(tmp, "water.xtc")
        v = mda.Universe(water["prmtop"], water["dcd"])
        with mda.Writer(xtc, v.atoms.n_atoms) as w:
            for _ in v.trajectory:
                w.write(v.atoms)
        probe = subprocess.run([NBKIT, "rdf", water["prmtop"], xtc, "--select-a", "name O", "--rmax", "5", "-q",
                                "-o", os.path.join(tmp, "probe.csv")], capture_output=True, text=True)
        if "reads no XTC" in probe.stderr:
            print("water O-O from XTC: skipped (this nbkit was built without libgromacs)")
        else:
            compare("water O-O from XTC (prmtop)", tmp, water["prmtop"], xtc, "name O", "name O", 10.0, 100, "none",
                    (1, 1))

        fkbp = protein(tmp)
        compare("FKBP N-O, own residue left out (prmtop)", tmp, fkbp["prmtop"], fkbp["dcd"], "name N", "name O",
                15.0, 60, "residue", (1, 1))
        compare("FKBP N-O, frames 1, 3, 5 (psf)", tmp, fkbp["psf"], fkbp["dcd"], "name N", "name O",
                15.0, 60, "residue", (1, 1), start=1, step=2)
    if failures:
        print("FAILED: " + "; ".join(failures))
        return 1
    print("nbkit rdf agrees with MDAnalysis's InterRDF")
    return 0


if __name__ == "__main__":
    sys.exit(main())
