#pragma once
// The interaction laws of potential maps, written once (HOOMD-blue's evaluator habit).
// Each law splits into a per-atom coefficient (computed once, in float64) and a term that
// depends on the distance, evaluated in the inner loop of every backend:
//     contribution = law_term(law, math, coefficient, r^2, 1/r)
// `potential` is the plain textbook formula, used only by the float64 reference.
#include <cmath>

#include "core/host_device.hpp"
#include "nbkit/maps.hpp"  // Smoothing

namespace nbkit::maps {

// Coulomb: q / r.
struct CoulombLaw {
  NBKIT_HOST_DEVICE double coefficient(double charge, double /*radius*/) const { return charge; }
  double potential(double charge, double /*radius*/, double distance) const {
    return charge / distance;
  }
};

// Debye-Hueckel with an ion-exclusion radius a (APBS, bcfl mdh; seed 000, "Multiple
// Debye-Hueckel Electrostatics"):  q exp(-kappa (d - a)) / ((1 + kappa a) d).
// Coefficient q exp(kappa a) / (1 + kappa a), term coefficient * exp(-kappa d) / d.
// kappa = 0 gives the Coulomb law exactly.
struct DebyeHuckelLaw {
  double kappa = 0;  // 1/Angstrom
  // mul_rn: never fused into 1 + kappa a, on the host (CPU maps) or the GPU (GPU maps' atoms).
  NBKIT_HOST_DEVICE double coefficient(double charge, double radius) const {
    const double ka = mul_rn(kappa, radius);
    return charge * exp(ka) / (1 + ka);
  }
  double potential(double charge, double radius, double distance) const {
    return charge * std::exp(-kappa * (distance - radius)) / ((1 + kappa * radius) * distance);
  }
};

// Short-range laws of cutoff summation (seed 000, "Short-Range Cutoff Summation";
// Rodrigues, Hardy, Stone, Schulten, Hwu, Computing Frontiers 2008), zero at and beyond
// the cutoff c:
//   none     q / r                                    plain truncation
//   cutcp    q / r (1 - r^2/c^2)^2                    Parboil's cutcp benchmark
//   taylorN  q (1/r - gamma_N(r/c) / c)               the short-range part of the
//            multilevel summation method's splitting 1/r = (1/r - g_c(r)) + g_c(r), where
//            gamma_N(rho) is 1/rho below rho = 1 replaced by its Taylor polynomial in rho^2
//            about rho = 1, C^N continuous there (Skeel, Tezcan, Hardy, J Comp Chem 23:673,
//            2002; Hardy's thesis):
//            gamma_1 = 3/2 - rho^2/2
//            gamma_2 = 15/8 - 5/4 rho^2 + 3/8 rho^4
//            gamma_3 = 35/16 - 35/16 rho^2 + 21/16 rho^4 - 5/16 rho^6

template <Smoothing S>
struct CutoffLaw {
  double cutoff = 12;  // Angstrom (or the length unit the loop works in)
  NBKIT_HOST_DEVICE double coefficient(double charge, double /*radius*/) const { return charge; }
  double potential(double charge, double /*radius*/, double distance) const {
    if (distance >= cutoff) return 0;
    const double rho2 = (distance / cutoff) * (distance / cutoff);
    if constexpr (S == Smoothing::none) {
      return charge / distance;
    } else if constexpr (S == Smoothing::cutcp) {
      return charge / distance * (1 - rho2) * (1 - rho2);
    } else {  // written out here, apart from law_terms-inl.hpp's Horner form: a cross-check
      const double rho4 = rho2 * rho2, rho6 = rho4 * rho2;
      double gamma = 0;
      if constexpr (S == Smoothing::taylor1) gamma = 1.5 - 0.5 * rho2;
      if constexpr (S == Smoothing::taylor2) gamma = 15.0 / 8 - 5.0 / 4 * rho2 + 3.0 / 8 * rho4;
      if constexpr (S == Smoothing::taylor3) gamma = 35.0 / 16 - 35.0 / 16 * rho2 + 21.0 / 16 * rho4 - 5.0 / 16 * rho6;
      return charge * (1 / distance - gamma / cutoff);
    }
  }
};

// A scalar math policy for law_term: host float/double, and CUDA device code.
template <class Real>
struct ScalarMath {
  NBKIT_HOST_DEVICE Real set(double v) const { return static_cast<Real>(v); }
  // exp(k v) for k v <= 0
  NBKIT_HOST_DEVICE Real exp_scaled(double k, Real v) const { return std::exp(static_cast<Real>(k) * v); }
  // value where r2 < limit, else 0
  NBKIT_HOST_DEVICE Real below(Real r2, double limit, Real value) const {
    return r2 < static_cast<Real>(limit) ? value : Real(0);
  }
  // max(v, 0) for v <= 1
  NBKIT_HOST_DEVICE Real unit_ramp(Real v) const { return v > Real(0) ? v : Real(0); }
};

#include "maps/law_terms-inl.hpp"

}  // namespace nbkit::maps
