#pragma once
// The SIMD row of the biomolecular CPU pair loop (molecular_simd.cpp): Lennard-Jones and
// Coulomb (reaction field, switched as the settings say) over one row of the cell list's half
// neighbour list. Internal to the library.
#include <cstdint>

#include "md/pair_law.hpp"

namespace nbkit::md {

struct MolecularRows {
  const double* positions;     // x, y, z interleaved, in the list's row order
  const double* charge;        // charges times sqrt(k / eps), the list's order
  const std::int32_t* types;   // Lennard-Jones types, the list's order
  std::int32_t type_count;
  const double *c12, *c6;      // the type pair table
  const std::int64_t* first;
  const std::int32_t* neighbors;
  bool periodic;               // the minimum image (the list holds each pair's nearest image)
  double length[3];
  double cutoff2;
  PairSwitch switched;
  PairCoulomb coulomb;
  MolecularPairConstants<double> k;
  double* force;               // the thread's force array, x, y, z interleaved: row j gets +f
};

struct MolecularRowSums {
  double fx, fy, fz, lennard_jones, coulomb, virial;  // the row's own force, its pairs' energies and r . f
};

MolecularRowSums molecular_row(const MolecularRows& job, std::int64_t row);

}  // namespace nbkit::md
