#pragma once
// LAMMPS data files (read_data / write_data): the header counts and box, Masses, Pair Coeffs
// (lj/cut: epsilon sigma per type; lj/charmm: epsilon sigma epsilon14 sigma14) or PairIJ Coeffs
// (i j epsilon sigma per pair), Atoms in the `atomic` (id type x y z), `charge` (id type q x y
// z), `molecular` (id mol type x y z) or `full` (id mol type q x y z) style with optional image
// flags, Velocities, and the molecular sections: Bonds, Angles, Dihedrals, Impropers and their
// Coeffs (kept as numbers here; io/lammps_topology.hpp reads them by style). Anything else is
// refused with an error naming the line.
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "nbkit/md.hpp"
#include "nbkit/md/topology.hpp"

namespace nbkit::io {

// Lennard-Jones coefficients of one type pair (1-based types, i <= j), as PairIJ Coeffs give them.
struct PairCoefficient {
  int i = 0, j = 0;
  double epsilon = 0, sigma = 0;
  double cutoff = 0;  // the pair's own cutoff when the file gives one (LAMMPS's write_data does); 0: none
};

// A bonded term of a data file's Bonds, Angles, Dihedrals or Impropers section: its type
// (0-based) and its atoms (indices into LammpsData::system, which is sorted by ID; 2 to 4 used).
struct LammpsTerm {
  int type = 0;
  std::array<std::int32_t, 4> atoms{};
};

// The molecular part of a data file (atom styles `molecular`: id mol type x y z, and `full`: id
// mol type q x y z), as the file gives it; io/lammps_topology.hpp turns it into an md::Topology.
struct LammpsMolecular {
  std::string atom_style;              // "molecular" or "full"; empty for atomic and charge files
  std::vector<std::int64_t> molecule;  // per atom (system order)
  std::vector<LammpsTerm> bonds, angles, dihedrals, impropers;
  // Each type's coefficients (the numbers after the type), and the sections' "# style"
  // comments (empty when the file has none, as LAMMPS's own examples).
  std::vector<std::vector<double>> bond_coeffs, angle_coeffs, dihedral_coeffs, improper_coeffs;
  std::string bond_style, angle_style, dihedral_style, improper_style;
  // lj/charmm Pair Coeffs' third and fourth columns (the 1-4 epsilon and sigma); empty otherwise.
  std::vector<double> pair_epsilon14, pair_sigma14;
};

struct LammpsData {
  md::System system;                              // atoms sorted by ID
  LammpsMolecular molecular;
  std::vector<double> pair_epsilon, pair_sigma;   // per type from Pair Coeffs (or PairIJ's i = j); empty when absent
  // Every pair i <= j from PairIJ Coeffs (what LAMMPS's write_data emits when pairs were set
  // apart from mixing); empty when the file has Pair Coeffs or none.
  std::vector<PairCoefficient> pair_ij;
};

LammpsData read_lammps_data(const std::string& path, md::Units units);

// The biomolecular system of a `full` or `molecular` data file in `real` units, as LAMMPS
// computes it with the styles of its peptide example: bond_style harmonic (K r0), angle_style
// harmonic (K theta0) or charmm (K theta0 K_ub r_ub), dihedral_style charmm (K n d w: the 1-4
// pair weighted by w, with the lj/charmm Pair Coeffs' epsilon14 and sigma14 and plain Coulomb),
// improper_style harmonic (K chi0, chi0 0 or 180: LAMMPS's angle is unsigned), and pair
// coefficients mixed as LAMMPS mixes them (arithmetic for lj/charmm, geometric for lj/cut).
// Styles come from the Coeffs sections' "# style" comments, else from the coefficient counts.
// special_bonds (an input script's, not the data file's): the pairs 1, 2 and 3 bonds apart
// (LAMMPS's special list: each pair at its shortest distance in bonds) are left out of the
// ordinary pairs; where a factor is nonzero the pair comes back scaled (Lennard-Jones by the lj
// factor with the ordinary coefficients, Coulomb by the coul factor) and, as 1-4 pairs are, never
// cut off (the pairs are shorter than any cutoff or inner switch radius in use). Throws
// nbkit::Error naming the file for any other style.
struct SpecialBonds {
  double lj[3] = {0, 0, 0}, coul[3] = {0, 0, 0};  // 1-2, 1-3, 1-4: LAMMPS's default (and charmm)
};
// LAMMPS's special_bonds arguments: "charmm", "amber" (lj 0 0 0.5, coul 0 0 5/6), "dreiding"
// (0 0 1), "fene" (0 1 1), or keyword triples "lj/coul a b c", "lj a b c", "coul a b c" (either
// or both). Throws nbkit::Error saying what is wrong.
SpecialBonds parse_special_bonds(const std::string& text);
md::Topology molecular_topology(const LammpsData& data, const std::string& source, const SpecialBonds& special = {});
// The same for a text; `source` names it in error messages ("file:line: ...").
LammpsData parse_lammps_data(std::string_view text, const std::string& source, md::Units units);

// Writes a data file LAMMPS reads back (`read_data`), atomically; Pair Coeffs when given
// (one epsilon and sigma per type).
// `pair_style` labels the Pair Coeffs section (lj/cut or lj/cut/coul/dsf: the same epsilon,
// sigma per type), so that LAMMPS reads it under that pair style without a warning.
// With `pair_ij` (every pair i <= j), a PairIJ Coeffs section instead of Pair Coeffs: what
// keeps pairs that LAMMPS's default (geometric) mixing of Pair Coeffs would not reproduce.
void write_lammps_data(const std::string& path, const md::System& system, const std::vector<double>& pair_epsilon = {},
                       const std::vector<double>& pair_sigma = {}, const std::string& title = "written by nbkit",
                       const std::string& pair_style = "lj/cut", const std::vector<PairCoefficient>& pair_ij = {});

// The pair coefficients of `field` as a data file keeps them: empty when every pair is the
// geometric mixture of its types' own (Pair Coeffs then suffice, as LAMMPS mixes them so),
// else every pair i <= j (PairIJ Coeffs).
std::vector<PairCoefficient> pairs_beyond_geometric_mixing(const md::ForceField& field);

// Bytes of the data file write_lammps_data makes for `atoms` atoms (for the disk check).
std::uint64_t lammps_data_file_bytes(std::size_t atoms);

}  // namespace nbkit::io
