#pragma once
// The Lennard-Jones pair law, written once for every backend (HOOMD-blue's evaluator habit),
// in LAMMPS's lj/cut form: with c12 = 4 eps sigma^12 and c6 = 4 eps sigma^6 for the type pair
// and u = 1/r^2, a pair within the cutoff has
//     energy          u^3 (c12 u^3 - c6)                  = 4 eps ((sigma/r)^12 - (sigma/r)^6)
//     force_over_r    u^3 (12 c12 u^3 - 6 c6) u
// so the force on atom i from atom j is force_over_r (r_i - r_j), and the pair's virial
// r_ij . f_ij is force_over_r r^2.
#include "core/host_device.hpp"

namespace nbkit::md {

struct LennardJonesPair {
  double c12 = 0, c6 = 0;  // 4 eps sigma^12, 4 eps sigma^6
};

template <class Real>
NBKIT_HOST_DEVICE void lennard_jones(Real inverse_r2, Real c12, Real c6, Real& energy, Real& force_over_r) {
  const Real inverse_r6 = inverse_r2 * inverse_r2 * inverse_r2;
  energy = inverse_r6 * (c12 * inverse_r6 - c6);
  force_over_r = inverse_r6 * (Real(12) * c12 * inverse_r6 - Real(6) * c6) * inverse_r2;
}

}  // namespace nbkit::md
