#pragma once
// Topologies built by hand, shared by the tests of the molecular terms (molecular_test.cpp) and
// of biomolecular dynamics (molecular_simulation_test.cpp).
#include <cmath>
#include <numbers>
#include <random>
#include <vector>

#include "nbkit/md/topology.hpp"

namespace nbkit::test {

using md::Topology;

// `n` neutral atoms of one Lennard-Jones type whose parameters are zero: each test adds the
// one term it checks.
inline Topology bare(std::size_t n) {
  Topology t;
  t.source = "test topology";
  t.atom_name.assign(n, "X"), t.residue_name.assign(n, "RES"), t.residue_number.assign(n, 1);
  t.mass.assign(n, 12.0), t.charge.assign(n, 0.0), t.lj_type.assign(n, 0);
  t.lj_types = 1, t.c12 = {0.0}, t.c6 = {0.0};
  return t;
}

// A CMAP grid of side `size` from a smooth periodic surface with a little noise (a real map
// is no smoother), kcal/mol.
inline md::CmapGrid cmap_grid(std::int32_t size, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> noise(-0.2, 0.2);
  md::CmapGrid g{size, std::vector<double>(static_cast<std::size_t>(size) * size)};
  for (int a = 0; a < size; ++a)
    for (int b = 0; b < size; ++b) {
      const double phi = -std::numbers::pi + 2 * std::numbers::pi * a / size;
      const double psi = -std::numbers::pi + 2 * std::numbers::pi * b / size;
      g.energy[a * size + b] = 1.5 * std::cos(phi) + 0.8 * std::sin(2 * psi) + 0.6 * std::cos(phi - psi) + noise(rng);
    }
  return g;
}

// A molecule-like system: chains of 5 atoms (bonds, angles, dihedrals, impropers, a CMAP term,
// 1-4 pairs, exclusions) of three Lennard-Jones types with charges, in a periodic box.
inline Topology chains(int molecules, unsigned seed, std::vector<Vec3>& x, double edge, bool grid = false) {
  const int n = 5 * molecules;
  Topology t = bare(static_cast<std::size_t>(n));
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0, 1);
  t.lj_types = 3;
  t.c12.resize(9), t.c6.resize(9);
  const double eps[3] = {0.15, 0.1, 0.02}, sigma[3] = {3.2, 3.0, 1.2};
  for (int a = 0; a < 3; ++a)
    for (int b = 0; b < 3; ++b) {
      const double e = std::sqrt(eps[a] * eps[b]), s = 0.5 * (sigma[a] + sigma[b]);
      t.c12[a * 3 + b] = 4 * e * std::pow(s, 12), t.c6[a * 3 + b] = 4 * e * std::pow(s, 6);
    }
  t.cmap_grids = {cmap_grid(24, seed), cmap_grid(12, seed + 1)};
  x.clear();
  for (int m = 0; m < molecules; ++m) {
    // At random (overlaps allowed: the force tests need no sane geometry), or on a grid of cells
    // edge / per wide, one chain each, clear of the others (dynamics).
    int per = 1;  // the smallest per with per^3 >= molecules, in integers (cbrt(27) may round above 3)
    while (per * per * per < molecules) ++per;
    const double cell = edge / per;
    const Vec3 start = grid ? Vec3{cell * (m % per) + 1, cell * (m / per % per) + 1, cell * (m / per / per) + 1}
                            : Vec3{edge * u(rng), edge * u(rng), edge * u(rng)};
    double q_sum = 0;
    for (int a = 0; a < 5; ++a) {
      const int i = 5 * m + a;
      x.push_back(start + Vec3{1.5 * a + 0.3 * u(rng), 0.8 * (a % 2) + 0.3 * u(rng), 0.3 * u(rng)});
      t.lj_type[i] = a % 3;
      t.charge[i] = a < 4 ? 0.6 * u(rng) - 0.3 : -q_sum;
      q_sum += t.charge[i];
      if (a >= 1) t.bonds.push_back({i - 1, i, 300, 1.5}), t.exclusions.push_back({i - 1, i});
      if (a >= 2) t.angles.push_back({i - 2, i - 1, i, 60, 2.0}), t.exclusions.push_back({i - 2, i});
      if (a >= 3) {
        t.dihedrals.push_back({i - 3, i - 2, i - 1, i, 3, 0.2, 0});
        t.dihedrals.push_back({i - 3, i - 2, i - 1, i, 1, 0.5, std::numbers::pi});
        t.exclusions.push_back({i - 3, i});
        const std::int64_t p = static_cast<std::int64_t>(t.lj_type[i - 3]) * 3 + t.lj_type[i];
        t.pairs14.push_back({i - 3, i, 1 / 1.2, t.c12[p] / 2, t.c6[p] / 2});
      }
    }
    t.harmonic_impropers.push_back({5 * m + 1, 5 * m, 5 * m + 2, 5 * m + 3, 20, 0.1});
    t.periodic_impropers.push_back({5 * m + 2, 5 * m + 1, 5 * m + 3, 5 * m + 4, 2, 1.1, std::numbers::pi});
    const std::int32_t f = 5 * m;
    t.cmaps.push_back({{f, f + 1, f + 2, f + 3}, {f + 1, f + 2, f + 3, f + 4}, m % 2});
  }
  return t;
}

// TIP3P water (AMBER's parameters: O-H 0.9572 A, H-H 1.5136 A, flexible bonds and angle for
// runs without constraints) on a cubic lattice of per^3 sites `spacing` apart, each molecule
// turned at random; the box is per x spacing (3.104 A gives 0.997 g/cm^3).
inline Topology water_box(int per, double spacing, unsigned seed, std::vector<Vec3>& x) {
  const int waters = per * per * per;
  Topology t = bare(static_cast<std::size_t>(3 * waters));
  t.lj_types = 2;
  const double sigma = 3.15061, eps = 0.1521;
  t.c12 = {4 * eps * std::pow(sigma, 12), 0, 0, 0}, t.c6 = {4 * eps * std::pow(sigma, 6), 0, 0, 0};
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> g(0, 1);
  const double oh = 0.9572, angle = 104.52 * std::numbers::pi / 180;
  x.clear();
  for (int w = 0; w < waters; ++w) {
    const auto o = static_cast<std::int32_t>(3 * w), h1 = o + 1, h2 = o + 2;
    t.atom_name[o] = "O", t.atom_name[h1] = "H1", t.atom_name[h2] = "H2";
    for (auto a : {o, h1, h2}) t.residue_name[a] = "WAT", t.residue_number[a] = w + 1;
    t.mass[o] = 15.9994, t.mass[h1] = t.mass[h2] = 1.008;
    t.charge[o] = -0.834, t.charge[h1] = t.charge[h2] = 0.417;
    t.lj_type[o] = 0, t.lj_type[h1] = t.lj_type[h2] = 1;
    t.bonds.push_back({o, h1, 553.0, oh}), t.bonds.push_back({o, h2, 553.0, oh});
    t.bonds.push_back({h1, h2, 553.0, 1.5136});
    t.angles.push_back({h1, o, h2, 100.0, angle});
    t.exclusions.push_back({o, h1}), t.exclusions.push_back({o, h2}), t.exclusions.push_back({h1, h2});
    // A random orientation: two orthonormal vectors from Gram-Schmidt on normal draws.
    Vec3 u{g(rng), g(rng), g(rng)}, v{g(rng), g(rng), g(rng)};
    u = (1 / norm(u)) * u;
    const double uv = u.x * v.x + u.y * v.y + u.z * v.z;
    v = v - uv * u;
    v = (1 / norm(v)) * v;
    const Vec3 site{spacing * (w % per + 0.5), spacing * (w / per % per + 0.5), spacing * (w / per / per + 0.5)};
    const double c = oh * std::cos(angle / 2), s = oh * std::sin(angle / 2);
    x.push_back(site);
    x.push_back(site + c * u + s * v);
    x.push_back(site + c * u - s * v);
  }
  return t;
}

}  // namespace nbkit::test
