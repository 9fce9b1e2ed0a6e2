#pragma once
// The SIMD row of the CPU force loop (forces_simd.cpp): Lennard-Jones over one row of the half
// neighbour list. Internal to the library.
#include <cstdint>

#include "md/pair_law.hpp"

namespace nbkit::md {

struct LennardJonesRows {
  const double* positions;  // x, y, z interleaved, rows' order
  const int* types;
  int type_count;
  const LennardJonesCoefficients<double>* coefficients;  // per type pair
  const std::int64_t* first;
  const std::int32_t* neighbors;
  double length[3];
  double cutoff2;
  double* force;  // the thread's force array, x, y, z interleaved: row j gets +f
};

struct RowSums {
  double fx, fy, fz, energy, virial;  // the row's own force (-sum f), pair energies and virials
};

RowSums lennard_jones_row(const LennardJonesRows& job, std::int64_t row);

}  // namespace nbkit::md
