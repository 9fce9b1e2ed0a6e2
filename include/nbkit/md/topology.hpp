#pragma once
// Molecular dynamics, part 2: a biomolecular system as AMBER, CHARMM and LAMMPS files describe
// it (OpenMM's System: the particles with their masses and charges, then one list per force
// term), and its single-point energy and forces (molecular_forces.hpp). Units are nbkit's `real`
// ones: Angstrom, kcal/mol, e, g/mol, radians. Every harmonic constant is the AMBER/CHARMM one,
// the energy being k (x - x0)^2 with no factor 1/2 (OpenMM's k is twice it).
//
// The readers fill this (io/amber.hpp, io/charmm.hpp, io/lammps_data.hpp); the evaluators read it.
// Plain C++.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "nbkit/core/box.hpp"
#include "nbkit/core/vec3.hpp"

namespace nbkit::md {

// E = k (r - r0)^2: a bond, or CHARMM's Urey-Bradley 1-3 term.
struct HarmonicBond {
  std::int32_t i, j;
  double k, r0;
};

// E = k (theta - theta0)^2, theta the angle i-j-k at j.
struct HarmonicAngle {
  std::int32_t i, j, k;
  double k_theta, theta0;
};

// E = k (1 + cos(n phi - phase)), phi the IUPAC dihedral i-j-k-l (trans = pi): AMBER's and
// CHARMM's proper dihedrals (one entry per term of a multi-term dihedral) and AMBER's impropers.
struct PeriodicTorsion {
  std::int32_t i, j, k, l;
  int periodicity;
  double k_phi, phase;
};

// E = k (psi - psi0)^2, psi the dihedral i-j-k-l wrapped to (-pi, pi] about psi0: CHARMM's
// impropers.
struct HarmonicImproper {
  std::int32_t i, j, k, l;
  double k_psi, psi0;
};

// CMAP (MacKerell, Feig and Brooks, J. Comput. Chem. 25, 1400 (2004)): a correction E(phi, psi)
// tabulated on a grid, for two dihedrals (a protein's backbone phi C-N-CA-C and psi N-CA-C-N).
// The grid is CHARMM's and AMBER's: energy[a * size + b] (kcal/mol) at phi = -180 + a * 360/size
// degrees and psi = -180 + b * 360/size; between grid points, bicubic interpolation with the
// derivatives of periodic splines through the grid (md/cmap.hpp), as CHARMM and OpenMM do.
struct CmapGrid {
  std::int32_t size = 0;
  std::vector<double> energy;
};
struct CmapTorsion {
  std::int32_t phi[4], psi[4];
  std::int32_t map;  // index into Topology::cmap_grids
};

// A scaled 1-4 pair (the two ends of a dihedral), computed apart from the other nonbonded pairs
// and never cut off, as AMBER, CHARMM and OpenMM do: E = coulomb_scale k q_i q_j / r +
// c12 / r^12 - c6 / r^6 with the pair's own (already scaled) Lennard-Jones coefficients.
struct Pair14 {
  std::int32_t i, j;
  double coulomb_scale;
  double c12, c6;
};

struct Topology {
  // Per atom.
  std::vector<std::string> atom_name, residue_name;
  std::vector<std::int32_t> residue_number;  // 1-based, as the files count
  std::vector<double> mass, charge;          // g/mol, e
  std::vector<std::int32_t> lj_type;         // 0-based index into the pair table
  // 1 for a hydrogen (constraints' h-bonds, hydrogen mass repartitioning); empty: a hydrogen is
  // an atom lighter than 4.5 g/mol. Repartitioning fills it before it moves mass, so that a
  // methyl carbon left at 3 g/mol stays heavy.
  std::vector<std::uint8_t> hydrogen;
  // The Lennard-Jones pair table (lj_types x lj_types, symmetric): E = c12 / r^12 - c6 / r^6
  // for atoms of types a, b (AMBER's ACOEF and BCOEF; NBFIX pairs are entries of their own).
  std::int32_t lj_types = 0;
  std::vector<double> c12, c6;

  std::vector<HarmonicBond> bonds, urey_bradley;
  std::vector<HarmonicAngle> angles;
  std::vector<PeriodicTorsion> dihedrals, periodic_impropers;
  std::vector<HarmonicImproper> harmonic_impropers;
  std::vector<CmapGrid> cmap_grids;
  std::vector<CmapTorsion> cmaps;
  std::vector<Pair14> pairs14;
  // Atom pairs (i < j) without the ordinary nonbonded term: 1-2, 1-3 and 1-4 neighbours (the
  // 1-4 pairs get theirs from pairs14).
  std::vector<std::pair<std::int32_t, std::int32_t>> exclusions;

  std::optional<PeriodicBox> box;  // the topology's box (AMBER's BOX_DIMENSIONS), if any
  std::string source;               // "AMBER prmtop fkbp.prmtop", for messages and reports

  std::size_t size() const { return charge.size(); }
  // Throws nbkit::Error naming `source` for an index out of range, a non-finite parameter, a
  // table of the wrong size: what a reader or a caller building one by hand got wrong.
  void check() const;
};

// Coordinates of a topology's atoms (AMBER inpcrd/rst7, PDB, CHARMM crd).
struct Coordinates {
  std::vector<Vec3> positions;   // Angstrom
  std::vector<Vec3> velocities;  // Angstrom/fs (LAMMPS real units, as md::System), empty when the file has none
  std::optional<PeriodicBox> box;
};

// The periodic system repeated copies[0] x copies[1] x copies[2] times along the box's edges
// (LAMMPS's `replicate`): every atom and term of copy (a, b, c) is the original's, its atoms
// numbered after the copies before it (x fastest) and moved by (a, b, c) times the edges; residue
// numbers run on; the box grows to match. For weak-scaling benchmarks and larger test systems
// from one equilibrated box. Throws nbkit::Error without a box (the coordinates' or the
// topology's), for a count below 1, or past 2^31 atoms.
struct Replicated {
  Topology topology;
  Coordinates coordinates;
};
Replicated replicate(const Topology& topology, const Coordinates& coordinates, std::array<int, 3> copies);

}  // namespace nbkit::md
