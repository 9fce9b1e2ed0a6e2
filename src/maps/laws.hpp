#pragma once
// The interaction laws of potential maps, written once (HOOMD-blue's evaluator habit).
// Each law splits into a per-atom coefficient (computed once, in float64) and a term that
// depends on the distance, evaluated in the inner loop of every backend:
//     contribution = law_term(law, math, coefficient, r^2, 1/r)
// `potential` is the plain textbook formula, used only by the float64 reference.
#include <cmath>

#include "core/host_device.hpp"

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
  NBKIT_HOST_DEVICE double coefficient(double charge, double radius) const {
    return charge * std::exp(kappa * radius) / (1 + kappa * radius);
  }
  double potential(double charge, double radius, double distance) const {
    return charge * std::exp(-kappa * (distance - radius)) / ((1 + kappa * radius) * distance);
  }
};

// A scalar math policy for law_term: host float/double, and CUDA device code.
template <class Real>
struct ScalarMath {
  NBKIT_HOST_DEVICE Real set(double v) const { return static_cast<Real>(v); }
  NBKIT_HOST_DEVICE Real exp(Real v) const { return std::exp(v); }
};

#include "maps/law_terms-inl.hpp"

}  // namespace nbkit::maps
