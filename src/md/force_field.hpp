#pragma once
// A force field as the force loops use it, shared by the CPU loops (forces.cpp) and the GPU
// engine (engine_cuda.cu): the checks, each type pair's Lennard-Jones coefficients and energy
// offset, and the Coulomb self term. Internal to the library.
#include <vector>

#include "md/pair_law.hpp"
#include "nbkit/md.hpp"

namespace nbkit::md {

// Throws nbkit::Error for a cutoff, dielectric, type count or box that cannot be used.
void check_force_field(const System& system, const ForceField& field);

// Each type pair's coefficients and energy offset (index type_i * types + type_j).
struct PairTable {
  std::vector<LennardJonesCoefficients<double>> coefficients;
};
PairTable pair_table(const ForceField& field);

// The shifted-force Coulomb's self term, -k/eps sum q_i^2 / rc (LAMMPS's e_self, alpha 0);
// zero without charges or Coulomb.
double coulomb_self_energy(const System& system, const ForceField& field);

}  // namespace nbkit::md
