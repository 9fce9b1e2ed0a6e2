#pragma once
// LAMMPS data files (read_data / write_data): the header counts and box, Masses, Pair Coeffs
// (lj/cut: epsilon sigma per type) or PairIJ Coeffs (i j epsilon sigma per pair), Atoms in the `atomic` (id type x y z) or `charge` (id type
// q x y z) style with optional image flags, and Velocities. Files with bonds, angles and the
// like are refused with an error naming the line (part 1 has no bonded terms).
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "nbkit/md.hpp"

namespace nbkit::io {

// Lennard-Jones coefficients of one type pair (1-based types, i <= j), as PairIJ Coeffs give them.
struct PairCoefficient {
  int i = 0, j = 0;
  double epsilon = 0, sigma = 0;
  double cutoff = 0;  // the pair's own cutoff when the file gives one (LAMMPS's write_data does); 0: none
};

struct LammpsData {
  md::System system;                              // atoms sorted by ID
  std::vector<double> pair_epsilon, pair_sigma;   // per type from Pair Coeffs (or PairIJ's i = j); empty when absent
  // Every pair i <= j from PairIJ Coeffs (what LAMMPS's write_data emits when pairs were set
  // apart from mixing); empty when the file has Pair Coeffs or none.
  std::vector<PairCoefficient> pair_ij;
};

LammpsData read_lammps_data(const std::string& path, md::Units units);
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
