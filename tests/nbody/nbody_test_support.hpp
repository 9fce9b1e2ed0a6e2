#pragma once
// What the N-body tests share (nbody_test.cpp, simulation_test.cpp, forces_cuda_test.cpp).
#include <random>

#include "nbkit/nbody.hpp"

namespace nbkit::test {

// n bodies at rest, uniform in [-1, 1]^3, masses uniform in [0.1, 1] / n. Deterministic.
inline nbody::Bodies random_bodies(std::size_t n, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0), mass(0.1, 1.0);
  nbody::Bodies b;
  b.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    b.x[i] = u(rng), b.y[i] = u(rng), b.z[i] = u(rng);
    b.vx[i] = b.vy[i] = b.vz[i] = 0;
    b.mass[i] = mass(rng) / static_cast<double>(n);
  }
  return b;
}

}  // namespace nbkit::test
