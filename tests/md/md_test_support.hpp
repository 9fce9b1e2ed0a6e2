#pragma once
// Systems and comparisons shared by the MD tests (md_test.cpp, simulation_test.cpp, engine_cuda_test.cpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>

#include "nbkit/md.hpp"

namespace nbkit::test {

using md::fcc_lattice, md::ForceField, md::Forces, md::System;

// A jiggled fcc lattice of two types (types alternate), LAMMPS's in.lj density.
inline System liquid(int cells, unsigned seed, double jiggle = 0.1) {
  System s = fcc_lattice(0.8442, cells, cells, cells);
  s.type_mass = {1.0, 2.0};
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-jiggle, jiggle);
  for (std::size_t i = 0; i < s.size(); ++i) {
    s.x[i] += u(rng), s.y[i] += u(rng), s.z[i] += u(rng);
    s.type[i] = static_cast<int>(i % 2);
  }
  return s;
}

// Atoms at random in a box of the given lengths (no overlap below 0.8 sigma).
inline System random_box(std::size_t n, double lx, double ly, double lz, unsigned seed) {
  System s;
  s.resize(n);
  s.box.hi = {lx, ly, lz};
  s.type_mass = {1.0};
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  for (std::size_t i = 0; i < n; ++i) {
    for (int attempt = 0;; ++attempt) {
      s.x[i] = lx * u(rng), s.y[i] = ly * u(rng), s.z[i] = lz * u(rng);
      bool clear = true;
      for (std::size_t j = 0; j < i && clear; ++j) {
        double dx = s.x[j] - s.x[i], dy = s.y[j] - s.y[i], dz = s.z[j] - s.z[i];
        dx -= lx * std::round(dx / lx), dy -= ly * std::round(dy / ly), dz -= lz * std::round(dz / lz);
        clear = dx * dx + dy * dy + dz * dz > 0.64;
      }
      if (clear || attempt > 1000) break;
    }
    s.id[i] = static_cast<std::int64_t>(i) + 1;
  }
  return s;
}

inline ForceField two_type_field(double cutoff = 2.5) {
  return ForceField::mixed({1.0, 0.5}, {1.0, 1.2}, cutoff);
}

// A jiggled lattice with alternating charges +-0.5 (neutral), atom style charge.
inline System charged_liquid(int cells, unsigned seed) {
  System s = liquid(cells, seed);
  s.has_charges = true;
  for (std::size_t i = 0; i < s.size(); ++i) s.charge[i] = i % 2 ? 0.5 : -0.5;
  return s;
}


// Largest force difference over the largest force; energy and virial relative differences.
inline void expect_same_forces(const Forces& a, const Forces& b, double tolerance, const std::string& what) {
  double worst = 0, scale = 0;
  for (std::size_t i = 0; i < a.fx.size(); ++i) {
    worst = std::max({worst, std::fabs(a.fx[i] - b.fx[i]), std::fabs(a.fy[i] - b.fy[i]), std::fabs(a.fz[i] - b.fz[i])});
    scale = std::max({scale, std::fabs(b.fx[i]), std::fabs(b.fy[i]), std::fabs(b.fz[i])});
  }
  EXPECT_LE(worst, tolerance * std::max(scale, 1.0)) << what;
  EXPECT_NEAR(a.potential, b.potential, tolerance * std::max(std::fabs(b.potential), 1.0)) << what;
  EXPECT_NEAR(a.virial, b.virial, tolerance * std::max(std::fabs(b.virial), 1.0)) << what;
}

}  // namespace nbkit::test
