#pragma once
// The Lennard-Jones pair law, written once for every backend (HOOMD-blue's evaluator habit),
// in LAMMPS's lj/cut form: with c12 = 4 eps sigma^12 and c6 = 4 eps sigma^6 for the type pair
// and u = 1/r^2, a pair within the cutoff has
//     energy          u^3 (c12 u^3 - c6)                  = 4 eps ((sigma/r)^12 - (sigma/r)^6)
//     force_over_r    u^3 (12 c12 u^3 - 6 c6) u
// so the force on atom i from atom j is force_over_r (r_i - r_j), and the pair's virial
// r_ij . f_ij is force_over_r r^2.
#include <cmath>

#include "core/host_device.hpp"

namespace nbkit::md {

using std::sqrt;

struct LennardJonesPair {
  double c12 = 0, c6 = 0;  // 4 eps sigma^12, 4 eps sigma^6
};

template <class Real>
NBKIT_HOST_DEVICE void lennard_jones(Real inverse_r2, Real c12, Real c6, Real& energy, Real& force_over_r) {
  const Real inverse_r6 = inverse_r2 * inverse_r2 * inverse_r2;
  energy = inverse_r6 * (c12 * inverse_r6 - c6);
  force_over_r = inverse_r6 * (Real(12) * c12 * inverse_r6 - Real(6) * c6) * inverse_r2;
}

// Shifted-force Coulomb within a cutoff rc (Levitt et al. 1995; Fennell & Gezelter, J. Chem.
// Phys. 124, 234104 (2006), with damping alpha = 0; LAMMPS's lj/cut/coul/dsf with alpha 0):
// for charges q_i q_j times the units' Coulomb constant over the dielectric (qq),
//     energy          qq (1/r - 2/rc + r/rc^2)             zero at rc, as is the force
//     force_over_r    qq (1/r^3 - 1/(r rc^2))
// plus, per atom, the self term -qq_ii / rc in the energy (LAMMPS's e_self).
template <class Real>
NBKIT_HOST_DEVICE void shifted_force_coulomb(Real r2, Real qq, Real inverse_cutoff, Real& energy,
                                             Real& force_over_r) {
  const Real inverse_r = Real(1) / sqrt(r2);
  const Real inverse_cutoff2 = inverse_cutoff * inverse_cutoff;
  energy = qq * (inverse_r - Real(2) * inverse_cutoff + r2 * inverse_r * inverse_cutoff2);
  force_over_r = qq * inverse_r * (inverse_r * inverse_r - inverse_cutoff2);
}

}  // namespace nbkit::md
