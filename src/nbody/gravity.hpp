#pragma once
// The softened gravitational law (Plummer softening), written once for every backend
// (HOOMD-blue's evaluator habit). For a pair at squared distance r^2 + eps^2 with reciprocal
// distance u = (r^2 + eps^2)^(-1/2), a body of mass m contributes
//     acceleration  m u^3 (r_j - r_i)        gravity_acceleration_factor(m, u) times the separation
//     potential    -m u                       -gravity_potential_term(m, u), negated once per body
// The terms live in gravity_terms-inl.hpp, included here for scalar and CUDA code and into
// each Highway target's namespace by the SIMD loop (as the maps' laws are).
#include "core/host_device.hpp"

namespace nbkit::nbody {

#include "nbody/gravity_terms-inl.hpp"

}  // namespace nbkit::nbody
