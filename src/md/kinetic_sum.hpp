#pragma once
// The sum of m v^2 over a biomolecular engine's atoms in one fixed order, the same bits on the
// host and on a GPU, for its thermo rows: each atom's term and its accumulation written with
// explicit fused multiply-adds (nothing left for either compiler to fuse or not), summed over
// slices of kKineticSlice consecutive atoms, those slices' sums over slices of kKineticSlice
// again, and those in order. The GPU's rows reduce the device's velocities this way
// (MolecularGpuDynamics::sums) and the same engine's rows made from the host's copy sum it the
// same way (kinetic_mass_velocity2), so a row is the same whichever side made it: a restart's
// first row repeats the uninterrupted run's. Internal.
#include <algorithm>
#include <cmath>
#include <cstddef>

#include "core/host_device.hpp"

namespace nbkit::md {

constexpr int kKineticSlice = 64;

// acc + m (vx^2 + vy^2 + vz^2), rounded as fma(m, fma(vz, vz, fma(vy, vy, vx vx)), acc).
NBKIT_HOST_DEVICE double add_mass_velocity2(double acc, double m, double vx, double vy, double vz) {
#if defined(__CUDA_ARCH__)
  return __fma_rn(m, __fma_rn(vz, vz, __fma_rn(vy, vy, __dmul_rn(vx, vx))), acc);
#else
  return std::fma(m, std::fma(vz, vz, std::fma(vy, vy, vx * vx)), acc);
#endif
}

// The host's sum in that order; mass(i) and velocity(i, v[3]) give atom i's.
template <class Mass, class Velocity>
double kinetic_mass_velocity2(std::size_t n, const Mass& mass, const Velocity& velocity) {
  constexpr std::size_t slice = kKineticSlice;
  double total = 0;
  for (std::size_t outer = 0; outer < n; outer += slice * slice) {
    double middle = 0;
    for (std::size_t inner = outer; inner < std::min(n, outer + slice * slice); inner += slice) {
      double sum = 0;
      for (std::size_t i = inner; i < std::min(n, inner + slice); ++i) {
        double v[3];
        velocity(i, v);
        sum = add_mass_velocity2(sum, mass(i), v[0], v[1], v[2]);
      }
      middle += sum;
    }
    total += middle;
  }
  return total;
}

}  // namespace nbkit::md
