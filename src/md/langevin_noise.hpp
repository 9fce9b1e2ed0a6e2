#pragma once
// The Langevin thermostat's force on one atom, written once for the CPU (forces.cpp) and the
// GPU (engine_cuda.cu).
//
// The random numbers come from Philox4x32-10 (Salmon, Moraes, Dror, Shaw, "Parallel random
// numbers: as easy as 1, 2, 3", SC'11; the Random123 generator), a counter-based generator:
// the three numbers of atom `atom` at thermostat call `call` are a pure function of (seed,
// call, atom), so any thread visiting the atoms in any order, on either backend, draws the
// same numbers (HOOMD-blue seeds its thermostats the same way). One 128-bit block per atom
// and call; each uniform takes 32 bits, ample for a thermostat's noise.
#include <cmath>
#include <cstdint>

#include "core/host_device.hpp"

namespace nbkit::md {

using std::cos;
using std::log;
using std::sin;
using std::sqrt;

// Philox4x32 with 10 rounds: out = the block of `counter` under `key`.
NBKIT_HOST_DEVICE void philox4x32_10(const std::uint32_t counter[4], const std::uint32_t key[2], std::uint32_t out[4]) {
  constexpr std::uint32_t kMultiplier0 = 0xD2511F53u, kMultiplier1 = 0xCD9E8D57u;
  constexpr std::uint32_t kWeyl0 = 0x9E3779B9u, kWeyl1 = 0xBB67AE85u;
  std::uint32_t c0 = counter[0], c1 = counter[1], c2 = counter[2], c3 = counter[3];
  std::uint32_t k0 = key[0], k1 = key[1];
  for (int round = 0; round < 10; ++round) {
    if (round > 0) k0 += kWeyl0, k1 += kWeyl1;
    const std::uint64_t product0 = static_cast<std::uint64_t>(kMultiplier0) * c0;
    const std::uint64_t product1 = static_cast<std::uint64_t>(kMultiplier1) * c2;
    const std::uint32_t hi0 = static_cast<std::uint32_t>(product0 >> 32), lo0 = static_cast<std::uint32_t>(product0);
    const std::uint32_t hi1 = static_cast<std::uint32_t>(product1 >> 32), lo1 = static_cast<std::uint32_t>(product1);
    c0 = hi1 ^ c1 ^ k0;
    c1 = lo1;
    c2 = hi0 ^ c3 ^ k1;
    c3 = lo0;
  }
  out[0] = c0, out[1] = c1, out[2] = c2, out[3] = c3;
}

// What one thermostat call needs besides the atoms (md::Langevin::next_draw).
struct LangevinDraw {
  std::uint64_t seed = 0, call = 0;
  double damping = 1;            // time units
  double kick_per_sqrt_mass = 0; // sqrt(24 k T / (damping dt mv2e)) / ftm2v
  double force_to_acceleration = 1;
};

// The thermostat's force on one atom (LAMMPS's fix langevin): a drag -m v / damping and a
// random force sqrt(24 k T m / (damping dt)) (u - 1/2) per component, u uniform on (0, 1),
// in force units (hence the divisions by ftm2v). Added to `force`.
NBKIT_HOST_DEVICE void add_langevin_force(const LangevinDraw& draw, std::uint32_t atom, double mass, const double velocity[3],
                                          double force[3]) {
  // The counter: the call (64 bits), the atom, and a constant word; the key: the seed.
  const std::uint32_t counter[4] = {static_cast<std::uint32_t>(draw.call), static_cast<std::uint32_t>(draw.call >> 32),
                                    atom, 0x4C414E47u};
  const std::uint32_t key[2] = {static_cast<std::uint32_t>(draw.seed), static_cast<std::uint32_t>(draw.seed >> 32)};
  std::uint32_t bits[4];
  philox4x32_10(counter, key, bits);
  const double drag = -mass / draw.damping / draw.force_to_acceleration;
  const double kick = sqrt(mass) * draw.kick_per_sqrt_mass;
  for (int a = 0; a < 3; ++a) {
    const double uniform = (static_cast<double>(bits[a]) + 0.5) * 0x1p-32;  // in (0, 1)
    force[a] += drag * velocity[a] + kick * (uniform - 0.5);
  }
}

// Three standard normal numbers for atom `atom` at draw `call` of a stream keyed by `seed` and
// `tag` (one Philox block, two Box-Muller pairs, the fourth number unused): the noise of the
// Langevin-middle integrator, the same on any thread count and backend.
NBKIT_HOST_DEVICE void normal_triplet(std::uint64_t seed, std::uint64_t call, std::uint32_t atom, std::uint32_t tag,
                                      double out[3]) {
  const std::uint32_t counter[4] = {static_cast<std::uint32_t>(call), static_cast<std::uint32_t>(call >> 32), atom, tag};
  const std::uint32_t key[2] = {static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32)};
  std::uint32_t bits[4];
  philox4x32_10(counter, key, bits);
  constexpr double kTwoPi = 6.283185307179586476925;
  double u[4];
  for (int k = 0; k < 4; ++k) u[k] = (static_cast<double>(bits[k]) + 0.5) * 0x1p-32;  // in (0, 1)
  const double r0 = sqrt(-2 * log(u[0])), r1 = sqrt(-2 * log(u[2]));
  out[0] = r0 * cos(kTwoPi * u[1]);
  out[1] = r0 * sin(kTwoPi * u[1]);
  out[2] = r1 * cos(kTwoPi * u[3]);
}

// The stream tags: Langevin-middle's velocities, the Monte Carlo barostat's draws.
constexpr std::uint32_t kLangevinMiddleTag = 0x4C4D4944u;  // "LMID"
constexpr std::uint32_t kBarostatTag = 0x42415253u;        // "BARS"

}  // namespace nbkit::md
