#pragma once
// Gravitational N-body simulation: all-pairs softened gravity, leapfrog, Plummer spheres
// (seed 002; Nyland, Harris, Prins, GPU Gems 3 ch. 31).
//
// Units: Henon's N-body units (Heggie & Mathieu 1986): G = 1, total mass M = 1, total energy
// E = -1/4, so the virial radius is 1 and the crossing time 2 sqrt(2). Plain C++: the same
// header for CPU-only and CUDA builds.
#include <array>
#include <cstdint>
#include <vector>

#include "nbkit/core/backend.hpp"

namespace nbkit::nbody {

// Bodies as structure of arrays (positions, velocities, masses).
struct Bodies {
  std::vector<double> x, y, z, vx, vy, vz, mass;
  std::size_t size() const { return x.size(); }
  void resize(std::size_t n);
};

// A Plummer sphere of n equal masses in Henon units, centre of mass at rest at the origin
// (Aarseth, Henon & Wielen, A&A 37:183, 1974). Deterministic for a given seed.
Bodies plummer(std::size_t n, std::uint64_t seed);

struct ForceOptions {
  double softening = 0.01;  // epsilon, length units: the Plummer-softened law below
  Backend backend = Backend::cpu;
  Precision precision = Precision::single;
  int threads = 0;          // 0: all hardware threads
};

// Per body: acceleration a_i = sum_{j != i} m_j (r_j - r_i) / (|r_j - r_i|^2 + eps^2)^(3/2) and
// potential phi_i = -sum_{j != i} m_j / (|r_j - r_i|^2 + eps^2)^(1/2).
struct Accelerations {
  std::vector<double> ax, ay, az, potential;
  void resize(std::size_t n);
};

void accelerations(const Bodies& bodies, const ForceOptions& options, Accelerations& out);

// The SIMD target the CPU force loop runs on here (e.g. "AVX3").
const char* nbody_cpu_target_name();

// What an astrophysicist checks before trusting a run.
struct Diagnostics {
  double time = 0;
  double kinetic = 0, potential = 0, total = 0;
  std::array<double, 3> momentum{}, angular_momentum{};
  double virial_ratio = 0;  // K / |W|: 1/2 in virial equilibrium
};
// `acc` must hold the accelerations (and potentials) at the bodies' current positions.
Diagnostics diagnose(const Bodies& bodies, const Accelerations& acc, double time);

// One kick-drift-kick leapfrog step (symplectic, second order): v += a dt/2, x += v dt,
// a = a(x), v += a dt/2. `acc` holds the accelerations at the current positions on entry
// and at the new positions on return.
void leapfrog_step(Bodies& bodies, Accelerations& acc, double dt, const ForceOptions& options);

}  // namespace nbkit::nbody
