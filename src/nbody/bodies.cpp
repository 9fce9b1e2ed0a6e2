// Bodies, Plummer initial conditions and diagnostics (the integrator: leapfrog.cpp).
#include <fmt/format.h>

#include <cmath>
#include <random>

#include "nbkit/core/error.hpp"
#include "nbkit/core/memory.hpp"
#include "nbkit/nbody.hpp"

namespace nbkit::nbody {

void Bodies::resize(std::size_t n) {
  for (auto* v : {&x, &y, &z, &vx, &vy, &vz, &mass}) v->resize(n);
}

void Accelerations::resize(std::size_t n) {
  for (auto* v : {&ax, &ay, &az, &potential}) v->resize(n);
}

namespace {

// A uniformly random direction times `length`.
std::array<double, 3> isotropic(std::mt19937_64& rng, double length) {
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  const double cos_theta = 2 * uniform(rng) - 1, phi = 2 * M_PI * uniform(rng);
  const double sin_theta = std::sqrt(std::max(0.0, 1 - cos_theta * cos_theta));
  return {length * sin_theta * std::cos(phi), length * sin_theta * std::sin(phi), length * cos_theta};
}

}  // namespace

std::uint64_t run_memory_bytes(std::size_t n, GravityMethod method) {
  // Bodies (7 doubles), accelerations and potentials (4), the force loop's float copies and
  // the GPU path's pinned staging (~8 more doubles' worth).
  const std::uint64_t all_pairs = 19 * sizeof(double) * static_cast<std::uint64_t>(n);
  // The CPU tree adds the order (4 bytes a body), the bodies in that order (32), the sort's
  // (key, index) pairs and keys (24) and its cells (144 bytes each, about one per 10 bodies
  // with leaves of 32: ~15): 75, rounded up to 116 for trees of clustered bodies, whose
  // chains of one-child cells add more. (The GPU tree's pinned staging is the all-pairs path's.)
  return method == GravityMethod::tree ? all_pairs + 116 * static_cast<std::uint64_t>(n) : all_pairs;
}

GravityMethod parse_gravity_method(const std::string& name) {
  if (name == "all-pairs" || name == "all_pairs") return GravityMethod::all_pairs;
  if (name == "tree") return GravityMethod::tree;
  throw Error(fmt::format("unknown N-body method '{}': all-pairs or tree", name));
}

std::string to_string(GravityMethod method) { return method == GravityMethod::tree ? "tree" : "all-pairs"; }

Bodies plummer(std::size_t n, std::uint64_t seed) {
  if (n < 2)
    throw Error(fmt::format("a Plummer sphere needs at least 2 bodies (Henon units scale by the potential energy), got {}",
                            n));
  check_memory(run_memory_bytes(n), fmt::format("a Plummer sphere of {} bodies", n));
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  Bodies b;
  b.resize(n);
  // Plummer model with scale length a = 1 in units G = M = 1 has E = -3 pi / 64; scaling
  // lengths by 3 pi / 16 and velocities by sqrt(16 / (3 pi)) gives Henon units (E = -1/4).
  const double length_scale = 3 * M_PI / 16, velocity_scale = std::sqrt(16 / (3 * M_PI));
  for (std::size_t i = 0; i < n; ++i) {
    double r = 0;
    do {  // cumulative mass m(r) = r^3 / (1 + r^2)^(3/2) inverted; the far tail (beyond
          // 99.9% of the mass, r > 22 a) is drawn again, as is customary
      const double m = uniform(rng);
      r = 1 / std::sqrt(std::pow(m, -2.0 / 3.0) - 1);
    } while (!(r < 22.0));
    // Speed: q = v / v_escape with density g(q) = q^2 (1 - q^2)^(7/2), by rejection (max < 0.1).
    double q = 0;
    while (true) {
      q = uniform(rng);
      if (0.1 * uniform(rng) < q * q * std::pow(1 - q * q, 3.5)) break;
    }
    const double speed = q * std::sqrt(2.0) * std::pow(1 + r * r, -0.25);
    const auto p = isotropic(rng, r * length_scale), v = isotropic(rng, speed * velocity_scale);
    b.x[i] = p[0], b.y[i] = p[1], b.z[i] = p[2];
    b.vx[i] = v[0], b.vy[i] = v[1], b.vz[i] = v[2];
    b.mass[i] = 1.0 / static_cast<double>(n);
  }
  // Centre of mass at rest at the origin.
  double c[6] = {0, 0, 0, 0, 0, 0};
  for (std::size_t i = 0; i < n; ++i) {
    const double m = b.mass[i];
    c[0] += m * b.x[i], c[1] += m * b.y[i], c[2] += m * b.z[i];
    c[3] += m * b.vx[i], c[4] += m * b.vy[i], c[5] += m * b.vz[i];
  }
  for (std::size_t i = 0; i < n; ++i) {
    b.x[i] -= c[0], b.y[i] -= c[1], b.z[i] -= c[2];
    b.vx[i] -= c[3], b.vy[i] -= c[4], b.vz[i] -= c[5];
  }
  return b;
}

namespace {

// Moves the centre of mass of bodies [first, last) to `at`, at rest.
void recentre(Bodies& b, std::size_t first, std::size_t last, std::array<double, 3> at) {
  double c[7] = {0, 0, 0, 0, 0, 0, 0};
  for (std::size_t i = first; i < last; ++i) {
    const double m = b.mass[i];
    c[0] += m * b.x[i], c[1] += m * b.y[i], c[2] += m * b.z[i];
    c[3] += m * b.vx[i], c[4] += m * b.vy[i], c[5] += m * b.vz[i], c[6] += m;
  }
  for (std::size_t i = first; i < last; ++i) {
    b.x[i] += at[0] - c[0] / c[6], b.y[i] += at[1] - c[1] / c[6], b.z[i] += at[2] - c[2] / c[6];
    b.vx[i] -= c[3] / c[6], b.vy[i] -= c[4] / c[6], b.vz[i] -= c[5] / c[6];
  }
}

}  // namespace

Bodies hernquist_bodies(std::size_t n, std::uint64_t seed) {
  if (n < 1) throw Error("a Hernquist profile needs at least 1 body");
  check_memory(run_memory_bytes(n), fmt::format("a Hernquist profile of {} bodies", n));
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  Bodies b;
  b.resize(n);
  // Cumulative mass M(<r) = r^2 / (r + a)^2 (Hernquist 1990, eq. 3) inverted: r = a s / (1 - s), s = sqrt(m).
  for (std::size_t i = 0; i < n; ++i) {
    double r = 0;
    do {
      const double s = std::sqrt(uniform(rng));
      r = s / (1 - s);
    } while (!(r < 100.0));
    const auto p = isotropic(rng, r);
    b.x[i] = p[0], b.y[i] = p[1], b.z[i] = p[2];
    b.vx[i] = b.vy[i] = b.vz[i] = 0;
    b.mass[i] = 1.0 / static_cast<double>(n);
  }
  recentre(b, 0, n, {0, 0, 0});
  return b;
}

Bodies merging_plummer_spheres(std::size_t n, std::uint64_t seed, double separation) {
  if (n < 4) throw Error(fmt::format("two Plummer spheres need at least 4 bodies, got {}", n));
  if (!(separation > 0) || !std::isfinite(separation))
    throw Error(fmt::format("the spheres' separation must be positive, got {}", separation));
  const std::size_t half = n / 2;
  const Bodies a = plummer(half, seed), c = plummer(n - half, seed + 1);
  Bodies b;
  b.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    const Bodies& from = i < half ? a : c;
    const std::size_t k = i < half ? i : i - half;
    b.x[i] = from.x[k], b.y[i] = from.y[k], b.z[i] = from.z[k];
    // Each sphere keeps its size with a mass of about 1/2: speeds scale as sqrt(mass) for its virial equilibrium.
    const double v = std::sqrt(static_cast<double>(from.size()) / static_cast<double>(n));
    b.vx[i] = v * from.vx[k], b.vy[i] = v * from.vy[k], b.vz[i] = v * from.vz[k];
    b.mass[i] = 1.0 / static_cast<double>(n);
  }
  recentre(b, 0, half, {-separation / 2, 0, 0});
  recentre(b, half, n, {separation / 2, 0, 0});
  return b;
}

Diagnostics diagnose(const Bodies& b, const Accelerations& acc, double time) {
  if (!acc.has_potential || acc.potential.size() != b.size())
    throw Error("N-body diagnostics need the potentials at the current positions (compute them with_potential)");
  Diagnostics d;
  d.time = time;
  for (std::size_t i = 0; i < b.size(); ++i) {
    const double m = b.mass[i];
    d.kinetic += 0.5 * m * (b.vx[i] * b.vx[i] + b.vy[i] * b.vy[i] + b.vz[i] * b.vz[i]);
    d.potential += 0.5 * m * acc.potential[i];  // each pair counted twice
    d.momentum[0] += m * b.vx[i], d.momentum[1] += m * b.vy[i], d.momentum[2] += m * b.vz[i];
    d.angular_momentum[0] += m * (b.y[i] * b.vz[i] - b.z[i] * b.vy[i]);
    d.angular_momentum[1] += m * (b.z[i] * b.vx[i] - b.x[i] * b.vz[i]);
    d.angular_momentum[2] += m * (b.x[i] * b.vy[i] - b.y[i] * b.vx[i]);
  }
  d.total = d.kinetic + d.potential;
  d.virial_ratio = d.potential != 0 ? d.kinetic / std::fabs(d.potential) : 0;
  return d;
}

}  // namespace nbkit::nbody
