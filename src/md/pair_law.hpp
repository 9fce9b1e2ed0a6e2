#pragma once
// The nonbonded pair law of nbkit's force fields, written once for every backend (HOOMD-blue's
// EvaluatorPair habit: a type pair's parameters and r^2 in, the energy and force / r out),
// generic over the arithmetic type V (float, double, a Highway vector) and a math policy M
// (set: a constant as V; below: the value where r2 < limit, else 0; sqrt; round: to the nearest
// integer), as the maps' law_terms-inl.hpp. The functions are in pair_terms-inl.hpp; this
// header holds the types, the scalar policy and the formulas. The float64 reference, the CPU
// list loop, the SIMD rows (forces_simd.cpp) and the CUDA kernels (engine_cuda.cu) all call
// nonbonded_pair and minimum_image; a new pair potential is one more function there.
//
// Lennard-Jones in LAMMPS's lj/cut form: with c12 = 4 eps sigma^12 and c6 = 4 eps sigma^6 for
// the type pair and u = 1/r^2, a pair within the cutoff has
//     energy          u^3 (c12 u^3 - c6) - offset             = 4 eps ((sigma/r)^12 - (sigma/r)^6) - offset
//     force_over_r    u^3 (12 c12 u^3 - 6 c6) u
// (offset: the energy at the cutoff when the field shifts energies, else 0), so the force on
// atom i from atom j is force_over_r (r_i - r_j), and the pair's virial r_ij . f_ij is
// force_over_r r^2.
//
// Shifted-force Coulomb within a cutoff rc (Levitt et al. 1995; Fennell & Gezelter, J. Chem.
// Phys. 124, 234104 (2006), with damping alpha = 0; LAMMPS's lj/cut/coul/dsf with alpha 0):
// for charges q_i q_j times the units' Coulomb constant over the dielectric (qq),
//     energy          qq (1/r - 2/rc + r/rc^2)             zero at rc, as is the force
//     force_over_r    qq (1/r^3 - 1/(r rc^2))
// plus, per atom, the self term -qq_ii / rc in the energy (LAMMPS's e_self; force_field.hpp).
#include <cmath>

#include "core/host_device.hpp"

namespace nbkit::md {

// A type pair's coefficients as the force loops hold them.
template <class Real>
struct LennardJonesCoefficients {
  Real c12, c6;  // 4 eps sigma^12, 4 eps sigma^6
  Real offset;   // the energy at the cutoff when shifted, else 0
};

// The cutoffs as the force loops hold them (squares; the inverse Coulomb cutoff).
template <class V>
struct PairCutoffs {
  V lennard_jones2, coulomb2, inverse_coulomb;
};

// The biomolecular nonbonded law's constants (md/molecular_forces.hpp): the reaction field's
// k_rf and c_rf (both 0: plain Coulomb) and the switching from switch_distance to the cutoff
// (OpenMM's polynomial in r: inverse_switch_width = 1 / (rc - rs); CHARMM's in r^2:
// charmm_inverse_denominator = 1 / (rc^2 - rs^2)^3).
// With PME, ewald_alpha and ewald_gauss = 2 alpha / sqrt(pi) for the real-space Coulomb.
template <class V>
struct MolecularPairConstants {
  V k_rf, c_rf;
  V switch_distance, switch_distance2, inverse_switch_width;
  V cutoff2, charmm_inverse_denominator;
  V ewald_alpha, ewald_gauss;
  V inverse_cutoff;  // shifted-force Coulomb's 1 / rc
};

// Which Coulomb molecular_pair computes: with a reaction field (k_rf = c_rf = 0: plain), or
// Ewald's real-space part (PME).
enum class PairCoulomb { reaction_field, ewald, shifted_force, msm };

// Which switching molecular_pair applies: none; OpenMM's, to Lennard-Jones; CHARMM's, to
// Lennard-Jones and Coulomb both (LAMMPS's lj/charmm/coul/charmm), or to Lennard-Jones alone.
enum class PairSwitch { none, openmm, charmm, charmm_lennard_jones };

// Host and CUDA scalar arithmetic (float or double).
template <class Real>
struct ScalarPairMath {
  NBKIT_HOST_DEVICE Real set(double v) const { return static_cast<Real>(v); }
  NBKIT_HOST_DEVICE Real below(Real r2, Real limit, Real value) const { return r2 < limit ? value : Real(0); }
  NBKIT_HOST_DEVICE Real sqrt(Real v) const {
    using std::sqrt;
    return sqrt(v);
  }
  NBKIT_HOST_DEVICE Real erfc(Real v) const {
    using std::erfc;
    return erfc(v);
  }
  NBKIT_HOST_DEVICE Real exp(Real v) const {
    using std::exp;
    return exp(v);
  }
  NBKIT_HOST_DEVICE Real divide(Real a, Real b) const { return a / b; }
  // erfc(x) and exp(minus_x2) (minus_x2 = -x^2 as the caller rounds it): PME's real-space pair
  // needs both; a policy may share one exponential between them (fast_pair_math.hpp).
  NBKIT_HOST_DEVICE void erfc_and_gaussian(Real x, Real minus_x2, Real& erfc_x, Real& gaussian) const {
    erfc_x = erfc(x), gaussian = exp(minus_x2);
  }
  NBKIT_HOST_DEVICE Real erf(Real v) const {  // scalar only: PME's excluded pairs (ewald_excluded_pair)
    using std::erf;
    return erf(v);
  }
  // Round half to even (the GPU's rint, the CPU's nearbyint in the default rounding mode,
  // Highway's Round): one rule for the minimum image everywhere.
  NBKIT_HOST_DEVICE Real round(Real v) const {
#ifdef __CUDA_ARCH__
    return rint(v);
#else
    return std::nearbyint(v);
#endif
  }
};

#include "md/pair_terms-inl.hpp"

}  // namespace nbkit::md
