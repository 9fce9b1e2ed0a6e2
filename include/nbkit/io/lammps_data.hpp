#pragma once
// LAMMPS data files (read_data / write_data): the header counts and box, Masses, Pair Coeffs
// (lj/cut: epsilon sigma per type), Atoms in the `atomic` (id type x y z) or `charge` (id type
// q x y z) style with optional image flags, and Velocities. Files with bonds, angles and the
// like are refused with an error naming the line (part 1 has no bonded terms).
#include <string>
#include <vector>

#include "nbkit/md.hpp"

namespace nbkit::io {

struct LammpsData {
  md::System system;                              // atoms sorted by ID
  std::vector<double> pair_epsilon, pair_sigma;   // per type from Pair Coeffs; empty when absent
};

LammpsData read_lammps_data(const std::string& path, md::Units units);

// Writes a data file LAMMPS reads back (`read_data`), atomically; Pair Coeffs when given
// (one epsilon and sigma per type).
// `pair_style` labels the Pair Coeffs section (lj/cut or lj/cut/coul/dsf: the same epsilon,
// sigma per type), so that LAMMPS reads it under that pair style without a warning.
void write_lammps_data(const std::string& path, const md::System& system, const std::vector<double>& pair_epsilon = {},
                       const std::vector<double>& pair_sigma = {}, const std::string& title = "written by nbkit",
                       const std::string& pair_style = "lj/cut");

}  // namespace nbkit::io
