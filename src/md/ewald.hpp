#pragma once
// Ewald summation of point charges in an orthorhombic periodic box (Ewald 1921; the forms of
// Essmann et al., J. Chem. Phys. 103, 8577 (1995), eq. 2.1-2.3, and of OpenMM's NonbondedForce),
// in float64: the oracle that the particle-mesh Ewald of issue 18 (and the MD electrostatics
// built on it) is checked against, and the parameter rules OpenMM derives from an error
// tolerance, so that nbkit and OpenMM pick the same discrete method for the same system.
//
//   E = E_real + E_reciprocal + E_self + E_excluded + E_background, with Coulomb's k (and 1/eps):
//   E_real       = k sum_{i<j, not excluded, r_ij < cutoff} q_i q_j erfc(alpha r_ij) / r_ij
//                  (minimum image: the cutoff is at most half the shortest edge);
//   E_reciprocal = k (2 pi / V) sum_{m != 0, |m_a| < kmax_a} exp(-|g|^2 / 4 alpha^2) / |g|^2 |S(g)|^2,
//                  g = 2 pi (m_x / L_x, m_y / L_y, m_z / L_z), S(g) = sum_j q_j exp(i g . x_j);
//   E_self       = -k alpha / sqrt(pi) sum_i q_i^2;
//   E_excluded   = -k sum_{excluded i<j} q_i q_j erf(alpha r_ij) / r_ij (the reciprocal sum holds
//                  every pair: an excluded pair's nearest image is taken back out);
//   E_background = -k pi Q^2 / (2 V alpha^2) for a net charge Q (a neutralising plasma).
// Internal to the library.
#include <array>
#include <cstdint>
#include <utility>
#include <vector>

#include "nbkit/core/box.hpp"
#include "nbkit/core/vec3.hpp"

namespace nbkit::md {

struct EwaldParameters {
  double alpha = 0;               // 1/Angstrom
  std::array<int, 3> kmax{};      // reciprocal vectors with |m_a| < kmax_a
  std::array<int, 3> pme_grid{};  // the mesh particle-mesh Ewald would use at this tolerance
};

// OpenMM's rules (NonbondedForceImpl::calcEwaldParameters and calcPMEParameters): alpha =
// sqrt(-ln(2 tolerance)) / cutoff; kmax_a the smallest m with 0.05 sqrt(L_a alpha) m
// exp(-(pi m / (L_a alpha))^2) below the tolerance (searched from 10), made odd; the PME mesh
// ceil(2 alpha L_a / (3 tolerance^(1/5))), at least 6.
EwaldParameters ewald_parameters(const PeriodicBox& box, double cutoff, double tolerance);

struct EwaldEnergy {
  double real = 0, reciprocal = 0, self = 0, excluded = 0, background = 0;
  double total() const { return real + reciprocal + self + excluded + background; }
  std::vector<Vec3> force;             // -dE/dx (kcal/mol/A with k in kcal A/mol/e^2)
  std::vector<Vec3> reciprocal_force;  // the reciprocal sum's share of it
  double reciprocal_virial = 0;        // sum r . F of the reciprocal sum (-dE/dlambda for x, box scaled by lambda)
};

// The Ewald sum of charges `q` (e) at `x` (A) in `box`, Coulomb's constant `coulomb_k`; every
// pair by the minimum image within `cutoff`, `excluded` pairs (i != j, any order) taken out.
// Throws nbkit::Error for a cutoff beyond half the shortest edge or parameters that are not
// positive. O(N^2 + N K): for tests and small systems.
EwaldEnergy ewald_coulomb(const std::vector<Vec3>& x, const std::vector<double>& q, const PeriodicBox& box,
                          double coulomb_k, double cutoff, const EwaldParameters& p,
                          const std::vector<std::pair<std::int32_t, std::int32_t>>& excluded = {});

}  // namespace nbkit::md
