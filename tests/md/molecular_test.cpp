// The biomolecular force terms (md/molecular_forces.hpp): each term's energy by hand on
// geometries with known answers, force = -gradient of energy by central differences for every
// term and nonbonded method, the reference and CPU backends against each other on a random
// molecule-like system, and the refusals. The comparison with OpenMM on real proteins is
// tests/clients/check_energy_openmm.py.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <numbers>
#include <random>
#include <tuple>

#include "nbkit/core/error.hpp"
#include "nbkit/core/units.hpp"
#include "md/molecular_test_support.hpp"
#include "nbkit/io/amber.hpp"
#include "md/ewald.hpp"
#include "nbkit/md/molecular_forces.hpp"
#include "test_support.hpp"

namespace nbkit::test {
namespace {

using md::EnergyTerms, md::MolecularForces, md::NonbondedSettings, md::Topology;
using test::bare, test::chains;
using Method = NonbondedSettings::Method;
constexpr double pi = std::numbers::pi;

MolecularForces evaluate(const Topology& t, const std::vector<Vec3>& x, const NonbondedSettings& s = {},
                         Backend backend = Backend::reference, const std::optional<PeriodicBox>& box = {}) {
  return md::molecular_forces(t, x, box, s, backend, 2);
}

// -dE/dx by central differences against the forces, for every atom and axis. The step (1e-5 A)
// leaves a truncation error ~h^2 E''' and a rounding error ~1e-16 E / h: both near 1e-9 of the
// force for these terms, so 1e-6 of the largest force is a test a wrong sign, factor or missing
// term cannot pass.
void expect_forces_are_minus_gradient(const Topology& t, std::vector<Vec3> x, const NonbondedSettings& s = {},
                                      const std::optional<PeriodicBox>& box = {}) {
  const MolecularForces at = evaluate(t, x, s, Backend::reference, box);
  double largest = 1e-3;
  for (const Vec3& f : at.force) largest = std::max({largest, std::abs(f.x), std::abs(f.y), std::abs(f.z)});
  const double h = 1e-5;
  for (std::size_t i = 0; i < x.size(); ++i)
    for (int a = 0; a < 3; ++a) {
      const double keep = x[i][a];
      x[i][a] = keep + h;
      const double up = evaluate(t, x, s, Backend::reference, box).energy.total();
      x[i][a] = keep - h;
      const double down = evaluate(t, x, s, Backend::reference, box).energy.total();
      x[i][a] = keep;
      EXPECT_NEAR(at.force[i][a], -(up - down) / (2 * h), 1e-6 * largest) << "atom " << i << " axis " << a;
    }
}

// A periodic box around atoms that have none: their bounding box grown by `margin` on each side
// (6 A round FKBP12 gives edges over twice a 10 A cutoff, 4 to 5 list cells each at 9 A).
PeriodicBox box_around(const std::vector<Vec3>& x, double margin) {
  PeriodicBox box;
  for (int a = 0; a < 3; ++a) {
    double lo = 1e9, hi = -1e9;
    for (const Vec3& p : x) lo = std::min(lo, p[a]), hi = std::max(hi, p[a]);
    box.lo[a] = lo - margin, box.hi[a] = hi + margin;
  }
  return box;
}

std::vector<Vec3> jiggled(std::vector<Vec3> x, unsigned seed, double amount = 0.2) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-amount, amount);
  for (Vec3& p : x) p = p + Vec3{u(rng), u(rng), u(rng)};
  return x;
}

// Four atoms with the dihedral i-j-k-l = phi (IUPAC: looking from j to k, i rotated clockwise
// by phi onto l), bonds of 1.5 A.
std::vector<Vec3> dihedral_at(double phi) {
  return {{1.5, 0, 0}, {0, 0, 0}, {0, 0, 1.5}, {1.5 * std::cos(phi), 1.5 * std::sin(phi), 1.5}};
}

TEST(MolecularTerms, BondAndUreyBradleyAreKTimesStretchSquared) {
  Topology t = bare(2);
  t.bonds = {{0, 1, 300.0, 1.5}};
  const auto e = evaluate(t, {{0, 0, 0}, {0, 0, 1.7}}).energy;
  EXPECT_NEAR(e.bond, 300.0 * 0.2 * 0.2, 1e-12);
  EXPECT_EQ(e.total(), e.bond);
  t.urey_bradley = std::move(t.bonds);
  t.bonds.clear();
  EXPECT_NEAR(evaluate(t, {{0, 0, 0}, {0, 0, 1.7}}).energy.urey_bradley, 12.0, 1e-12);
  expect_forces_are_minus_gradient(t, {{0.1, -0.2, 0.3}, {1.2, 0.4, 0.9}});
}

TEST(MolecularTerms, AngleIsKTimesAngleDifferenceSquared) {
  Topology t = bare(3);
  t.angles = {{0, 1, 2, 50.0, 109.5 * pi / 180}};
  const auto e = evaluate(t, {{1, 0, 0}, {0, 0, 0}, {0, 2, 0}}).energy;  // 90 degrees
  EXPECT_NEAR(e.angle, 50.0 * std::pow(19.5 * pi / 180, 2), 1e-12);
  expect_forces_are_minus_gradient(t, jiggled({{1, 0, 0}, {0, 0, 0}, {0, 2, 0}}, 3));
  expect_forces_are_minus_gradient(t, {{1.2, 0.1, 0}, {0, 0, 0}, {-1.0, 0.05, 0.02}});  // nearly linear
}

TEST(MolecularTerms, DihedralFollowsIupacSignAndEveryPeriodicity) {
  Topology t = bare(4);
  // A phase of 90 degrees tells phi from -phi: cos(phi - 90) = sin(phi).
  t.dihedrals = {{0, 1, 2, 3, 1, 2.0, pi / 2}};
  EXPECT_NEAR(evaluate(t, dihedral_at(pi / 3)).energy.dihedral, 2.0 * (1 + std::sin(pi / 3)), 1e-12);
  EXPECT_NEAR(evaluate(t, dihedral_at(-pi / 3)).energy.dihedral, 2.0 * (1 - std::sin(pi / 3)), 1e-12);
  for (int n = 0; n <= 6; ++n) {
    t.dihedrals = {{0, 1, 2, 3, n, 1.3, 0.4}, {0, 1, 2, 3, n + 1, 0.7, pi}};
    for (double phi : {-2.9, -1.0, 0.2, 1.7, 3.1})
      EXPECT_NEAR(evaluate(t, dihedral_at(phi)).energy.dihedral,
                  1.3 * (1 + std::cos(n * phi - 0.4)) + 0.7 * (1 + std::cos((n + 1) * phi - pi)), 1e-12);
    expect_forces_are_minus_gradient(t, jiggled(dihedral_at(1.1), 10 + n));
  }
  t.periodic_impropers = std::move(t.dihedrals);
  t.dihedrals.clear();
  const auto e = evaluate(t, dihedral_at(2.0)).energy;
  EXPECT_GT(e.improper, 0);
  EXPECT_EQ(e.dihedral, 0);
}

TEST(MolecularTerms, HarmonicImproperWrapsAroundPi) {
  Topology t = bare(4);
  t.harmonic_impropers = {{0, 1, 2, 3, 40.0, pi - 0.05}};
  // psi = -pi + 0.05 is 0.1 away from psi0 = pi - 0.05 across the wrap, not 2 pi - 0.1.
  EXPECT_NEAR(evaluate(t, dihedral_at(-pi + 0.05)).energy.improper, 40.0 * 0.01, 1e-10);
  expect_forces_are_minus_gradient(t, jiggled(dihedral_at(pi - 0.02), 4, 0.05));
  t.harmonic_impropers = {{0, 1, 2, 3, 40.0, 0.0}};
  expect_forces_are_minus_gradient(t, jiggled(dihedral_at(0.3), 5));
}

// Eight atoms: phi the dihedral 0-1-2-3, psi the dihedral 4-5-6-7 (CMAP's two angles need not
// share atoms), on one map.
std::vector<Vec3> cmap_at(double phi, double psi) {
  std::vector<Vec3> x = dihedral_at(phi);
  for (const Vec3& p : dihedral_at(psi)) x.push_back(p + Vec3{0, 0, 10});
  return x;
}

TEST(MolecularTerms, CmapMatchesItsGridAndInterpolatesSmoothly) {
  Topology t = bare(8);
  t.cmap_grids = {test::cmap_grid(24, 7)};
  t.cmaps = {{{0, 1, 2, 3}, {4, 5, 6, 7}, 0}};
  const md::CmapGrid& g = t.cmap_grids[0];
  // On the grid: the grid's own values (phi = -180 + 15 a degrees, psi likewise), including
  // -180 itself, which atan2 may return as +180.
  for (int a : {0, 1, 7, 12, 23})
    for (int b : {0, 5, 12, 18, 23}) {
      const double phi = -pi + 2 * pi * a / 24, psi = -pi + 2 * pi * b / 24;
      EXPECT_NEAR(evaluate(t, cmap_at(phi, psi)).energy.cmap, g.energy[a * 24 + b], 1e-10) << a << " " << b;
    }
  EXPECT_NEAR(evaluate(t, cmap_at(pi, 0.3)).energy.cmap, evaluate(t, cmap_at(-pi, 0.3)).energy.cmap, 1e-10);
  // A grid sampled from a smooth surface (no noise) is interpolated to the surface within the
  // bicubic spline's error, ~h^4 |f''''| / 384 with h = 15 degrees: ~1e-4 of its size here.
  for (int a = 0; a < 24; ++a)
    for (int b = 0; b < 24; ++b) {
      const double phi = -pi + 2 * pi * a / 24, psi = -pi + 2 * pi * b / 24;
      t.cmap_grids[0].energy[a * 24 + b] = std::cos(phi) + 0.5 * std::sin(2 * psi) + 0.3 * std::cos(phi - psi);
    }
  for (double phi : {-3.0, -1.234, 0.05, 2.71})
    for (double psi : {-2.2, 0.4, 3.1})
      EXPECT_NEAR(evaluate(t, cmap_at(phi, psi)).energy.cmap,
                  std::cos(phi) + 0.5 * std::sin(2 * psi) + 0.3 * std::cos(phi - psi), 2e-4)
          << phi << " " << psi;
  t.cmap_grids = {test::cmap_grid(24, 8)};
  for (unsigned seed : {1u, 2u, 3u}) expect_forces_are_minus_gradient(t, jiggled(cmap_at(0.3 * seed, -1.1 * seed), seed));
  // Five atoms in a chain, the backbone's shape: phi 0-1-2-3 and psi 1-2-3-4 share three.
  t = bare(5);
  t.cmap_grids = {test::cmap_grid(24, 9)};
  t.cmaps = {{{0, 1, 2, 3}, {1, 2, 3, 4}, 0}};
  expect_forces_are_minus_gradient(t, jiggled({{1.5, 0, 0}, {0, 0, 0}, {0, 0, 1.5}, {1.4, 0.5, 1.6}, {1.6, 1.2, 2.9}}, 4));
}

// Two charged atoms of one type, 1-4 or ordinary.
Topology pair_of_atoms(double q1, double q2) {
  Topology t = bare(2);
  t.charge = {q1, q2};
  t.c12 = {4 * 0.2 * std::pow(3.0, 12)}, t.c6 = {4 * 0.2 * std::pow(3.0, 6)};  // eps 0.2, sigma 3
  return t;
}

TEST(MolecularTerms, NonbondedPairByHandInEveryMethod) {
  const Topology t = pair_of_atoms(0.5, -0.4);
  const double r = 4.0, k = units::coulomb_constant_kcal;
  const std::vector<Vec3> x{{1, 1, 1}, {1 + r, 1, 1}};
  const double lj = 4 * 0.2 * (std::pow(3 / r, 12) - std::pow(3 / r, 6));
  auto e = evaluate(t, x).energy;
  EXPECT_NEAR(e.lennard_jones, lj, 1e-12);
  EXPECT_NEAR(e.coulomb, k * 0.5 * -0.4 / r, 1e-10);
  // The reaction field, eps_rf 78.3, rc 9: zero at the cutoff.
  NonbondedSettings s;
  s.method = Method::cutoff_non_periodic, s.cutoff = 9;
  const double krf = (78.3 - 1) / ((2 * 78.3 + 1) * 729), crf = 1.0 / 9 + krf * 81;
  e = evaluate(t, x, s).energy;
  EXPECT_NEAR(e.coulomb, k * 0.5 * -0.4 * (1 / r + krf * r * r - crf), 1e-10);
  EXPECT_NEAR(e.lennard_jones, lj, 1e-12);
  // Switched from 3.5 A: x = 0.5/5.5 of the way.
  s.switch_distance = 3.5;
  const double u = 0.5 / 5.5, switched = 1 - 10 * std::pow(u, 3) + 15 * std::pow(u, 4) - 6 * std::pow(u, 5);
  EXPECT_NEAR(evaluate(t, x, s).energy.lennard_jones, lj * switched, 1e-12);
  // CHARMM's switch from 3.5 A on both, plain Coulomb: S(r^2) of LAMMPS's lj/charmm/coul/charmm.
  s.style = NonbondedSettings::CutoffStyle::charmm;
  const double c = 81, i = 3.5 * 3.5, u2 = r * r;
  const double charmm = (c - u2) * (c - u2) * (c + 2 * u2 - 3 * i) / std::pow(c - i, 3);
  e = evaluate(t, x, s).energy;
  EXPECT_NEAR(e.lennard_jones, lj * charmm, 1e-12);
  EXPECT_NEAR(e.coulomb, k * 0.5 * -0.4 / r * charmm, 1e-10);
  // Shifted-force Coulomb, k q q (1/r - 1/rc + (r - rc)/rc^2), with CHARMM's switch on
  // Lennard-Jones alone.
  s.style = NonbondedSettings::CutoffStyle::shifted_force;
  e = evaluate(t, x, s).energy;
  EXPECT_NEAR(e.lennard_jones, lj * charmm, 1e-12);
  EXPECT_NEAR(e.coulomb, k * 0.5 * -0.4 * (1 / r - 1.0 / 9 + (r - 9) / 81), 1e-10);
  s.style = NonbondedSettings::CutoffStyle::openmm;
  // Beyond the cutoff: nothing; across a periodic face: the minimum image.
  EXPECT_EQ(evaluate(t, {{0, 0, 0}, {9.5, 0, 0}}, s).energy.total(), 0);
  s.method = Method::cutoff_periodic;
  const PeriodicBox box = PeriodicBox::from_edges({20, 20, 20});
  const auto across = evaluate(t, {{1, 1, 1}, {21 - r, 1, 1}}, s, Backend::reference, box).energy;
  const auto inside = evaluate(t, x, s, Backend::reference, box).energy;
  EXPECT_NEAR(across.lennard_jones, inside.lennard_jones, 1e-12);
  EXPECT_NEAR(across.coulomb, inside.coulomb, 1e-10);
}

TEST(MolecularTerms, ExcludedPairsGetNothingAndOneFourPairsTheirOwn) {
  Topology t = pair_of_atoms(0.5, -0.4);
  t.exclusions = {{0, 1}};
  const std::vector<Vec3> x{{0, 0, 0}, {3.5, 0, 0}};
  EXPECT_EQ(evaluate(t, x).energy.total(), 0);
  t.pairs14 = {{0, 1, 1 / 1.2, t.c12[0] / 2, t.c6[0] / 2}};  // AMBER's SCEE 1.2, SCNB 2
  NonbondedSettings s;
  s.method = Method::cutoff_non_periodic, s.cutoff = 3.0;  // 1-4 pairs are never cut off
  const auto e = evaluate(t, x, s).energy;
  EXPECT_NEAR(e.coulomb_14, units::coulomb_constant_kcal * 0.5 * -0.4 / 3.5 / 1.2, 1e-10);
  EXPECT_NEAR(e.lennard_jones_14, 0.5 * 4 * 0.2 * (std::pow(3 / 3.5, 12) - std::pow(3 / 3.5, 6)), 1e-12);
  EXPECT_EQ(e.coulomb, 0);
  EXPECT_EQ(e.lennard_jones, 0);
  expect_forces_are_minus_gradient(t, x, s);
}

TEST(MolecularTerms, EveryTermTogetherIsMinusTheGradient) {
  std::vector<Vec3> x;
  const Topology t = chains(4, 7, x, 12.0);
  expect_forces_are_minus_gradient(t, x);
  NonbondedSettings s;
  s.method = Method::cutoff_non_periodic, s.cutoff = 7, s.switch_distance = 5.5;
  expect_forces_are_minus_gradient(t, x, s);
  s.method = Method::cutoff_periodic;
  expect_forces_are_minus_gradient(t, x, s, PeriodicBox::from_edges({14.5, 15, 16}));
  s.style = NonbondedSettings::CutoffStyle::charmm;  // CHARMM's switch on Lennard-Jones and Coulomb
  expect_forces_are_minus_gradient(t, x, s, PeriodicBox::from_edges({14.5, 15, 16}));
  // PME at tolerance 1e-5 (the real-space cutoff's jump, erfc(alpha rc), is then ~1e-5 of one
  // pair's Coulomb: a finite difference meets it only if a pair sits within h of the cutoff;
  // the mesh, 49 points a side, stays small).
  s.method = Method::pme, s.style = NonbondedSettings::CutoffStyle::openmm, s.ewald_tolerance = 1e-5, s.cutoff = 7;
  expect_forces_are_minus_gradient(t, x, s, PeriodicBox::from_edges({14.5, 15, 16}));
  // Shifted-force Coulomb with CHARMM-switched Lennard-Jones (NAMD's switchdist).
  s.method = Method::cutoff_periodic, s.style = NonbondedSettings::CutoffStyle::shifted_force, s.switch_distance = 5.5;
  expect_forces_are_minus_gradient(t, x, s, PeriodicBox::from_edges({14.5, 15, 16}));
}

// Chains with Coulomb alone (no Lennard-Jones, ordinary or 1-4), one charge raised by 0.7 e
// when `charged`, and their Coulomb by the float64 Ewald sum (converged to `tolerance` with a
// real-space cutoff `cutoff`, the exclusions taken out) plus the 1-4 pairs' own scaled plain
// Coulomb at the nearest image: the oracle of the PME and MSM tests.
Topology coulomb_chains(int molecules, std::vector<Vec3>& x, double edge, bool charged) {
  Topology t = chains(molecules, 17, x, edge);
  if (charged) t.charge[3] += 0.7;
  for (double& c : t.c12) c = 0;
  for (double& c : t.c6) c = 0;
  for (md::Pair14& p : t.pairs14) p.c12 = p.c6 = 0;
  return t;
}

struct CoulombOracle {
  double energy;
  std::vector<Vec3> force;
};

CoulombOracle ewald_with_pairs14(const Topology& t, const std::vector<Vec3>& x, const PeriodicBox& box, double k,
                                 double cutoff, double tolerance) {
  const md::EwaldParameters p = md::ewald_parameters(box, cutoff, tolerance);
  const auto ewald = md::ewald_coulomb(x, t.charge, box, k, cutoff, p, t.exclusions);
  CoulombOracle out{ewald.total(), ewald.force};
  for (const md::Pair14& q : t.pairs14) {
    Vec3 d = x[q.i] - x[q.j];
    for (int a = 0; a < 3; ++a) d[a] -= box.length(a) * std::nearbyint(d[a] / box.length(a));
    const double r = norm(d), qq = q.coulomb_scale * k * t.charge[q.i] * t.charge[q.j];
    out.energy += qq / r;
    out.force[q.i] = out.force[q.i] + (qq / (r * r * r)) * d, out.force[q.j] = out.force[q.j] - (qq / (r * r * r)) * d;
  }
  return out;
}

// PME's Coulomb (the pairs' erfc part, the mesh, the self, excluded and background terms, and
// the 1-4 pairs' plain Coulomb) against the float64 Ewald sum with the same exclusions plus the
// 1-4 pairs' scaled Coulomb: equal within PME's error at tolerance 1e-7 and order 6 (measured
// 1.1e-8 of the Coulomb energy, forces 4e-8 relative RMS; bounds 3e-7 and 4e-7), for neutral
// and charged chains.
TEST(MolecularTerms, PmeMatchesTheEwaldSum) {
  for (bool charged : {false, true}) {
    std::vector<Vec3> x;
    const Topology t = coulomb_chains(12, x, 16.0, charged);
    const PeriodicBox box = PeriodicBox::from_edges({16.0, 17.0, 18.0});
    NonbondedSettings s;
    s.method = Method::pme, s.cutoff = 7.5, s.ewald_tolerance = 1e-7, s.pme_order = 6;
    const MolecularForces pme = evaluate(t, x, s, Backend::reference, box);
    const CoulombOracle oracle = ewald_with_pairs14(t, x, box, s.coulomb_constant, 7.5, 1e-12);
    const double e = oracle.energy;
    const std::vector<Vec3>& f = oracle.force;
    const double ours = pme.energy.coulomb + pme.energy.coulomb_reciprocal + pme.energy.coulomb_14;
    std::printf("  PME against Ewald (%s): Coulomb energy %.1e relative", charged ? "charged" : "neutral",
                std::abs(ours - e) / std::abs(e));
    EXPECT_NEAR(ours, e, 3e-7 * std::abs(e)) << (charged ? "charged" : "neutral");
    double diff = 0, size = 0, bonded = 0;
    const MolecularForces bonded_only = [&] {
      Topology b = t;
      for (double& q : b.charge) q = 0;
      return evaluate(b, x, s, Backend::reference, box);
    }();
    for (std::size_t i = 0; i < x.size(); ++i) {
      const Vec3 coulomb = pme.force[i] - bonded_only.force[i];
      diff += std::pow(norm(coulomb - f[i]), 2), size += std::pow(norm(f[i]), 2), bonded += norm(bonded_only.force[i]);
    }
    std::printf(", forces %.1e relative RMS\n", std::sqrt(diff / size));
    EXPECT_LT(std::sqrt(diff / size), 4e-7) << (charged ? "charged" : "neutral");
    EXPECT_GT(bonded, 0.0);
  }
}

// Multilevel summation's Coulomb (pairs, grids, self, excluded pairs) against the Ewald sum on
// the chains, neutral and charged, for cubic and quintic interpolation at two spacings (the
// bounds: 1.5 to 2 times the errors measured, which fall with h and the interpolation's degree
// as MSM's do: forces 3.3e-3 (cubic, 2 A) and 5e-4 (quintic, 1.5 A) relative RMS; energies
// 4.5e-4 to 2.4e-3 kcal/mol per atom, mostly each charge's own smooth part as the grids
// represent it); its
// forces are the gradient of its own energy (MSM's interpolation is C1), and the GPU's pairs
// with the host's grids give the reference's numbers.
TEST(MolecularTerms, MsmMatchesTheEwaldSumToItsAccuracyAndIsItsOwnGradient) {
  for (bool charged : {false, true}) {
    std::vector<Vec3> x;
    const Topology t = coulomb_chains(20, x, 24.0, charged);
    const PeriodicBox box = PeriodicBox::from_edges({24.0, 25.0, 26.0});
    const CoulombOracle oracle = ewald_with_pairs14(t, x, box, units::coulomb_constant_kcal, 12.0, 1e-13);
    const double e = oracle.energy;
    const std::vector<Vec3>& f = oracle.force;
    double size = 0;
    for (const Vec3& g : f) size += g.x * g.x + g.y * g.y + g.z * g.z;
    Topology bonded = t;  // the bonded terms' forces alone, to take out
    for (double& q : bonded.charge) q = 0;
    NonbondedSettings plain;
    plain.method = Method::cutoff_periodic, plain.cutoff = 9;
    const MolecularForces bonded_only = evaluate(bonded, x, plain, Backend::reference, box);
    // (cubic at 1.5 A, measured once: 7.2e-4 and 4.8e-4 kcal/mol per atom, forces 1.2e-3 and
    // 4.1e-4: between the two kept here, which are enough to see the order.)
    std::vector<std::tuple<bool, double, double, double>> settings{{false, 2.0, 4e-3, 6e-3}};
    if (!charged) settings.push_back({true, 1.5, 1e-3, 1e-3});
    for (const auto& [quintic, spacing, energy_bound, force_bound] : settings) {
      NonbondedSettings s;
      s.method = Method::msm, s.cutoff = 9, s.msm_spacing = spacing, s.msm_quintic = quintic;
      const MolecularForces msm = evaluate(t, x, s, Backend::reference, box);
      const double ours = msm.energy.coulomb + msm.energy.coulomb_reciprocal + msm.energy.coulomb_14;
      double diff = 0;
      for (std::size_t i = 0; i < x.size(); ++i) diff += std::pow(norm(msm.force[i] - bonded_only.force[i] - f[i]), 2);
      // The energy's error per atom (kcal/mol): the neutral chains' total nearly cancels.
      const double energy_error = std::abs(ours - e) / static_cast<double>(x.size()), force_error = std::sqrt(diff / size);
      std::printf("  MSM (%s, h %.1f A, a 9 A) against Ewald (%s): energy %.1e kcal/mol per atom (%.3g of %.6g), "
                  "forces %.1e relative RMS\n",
                  quintic ? "quintic" : "cubic", spacing, charged ? "charged" : "neutral", energy_error, ours - e, e,
                  force_error);
      EXPECT_LT(energy_error, energy_bound) << quintic << " " << spacing;
      EXPECT_LT(force_error, force_bound) << quintic << " " << spacing;
      if (!list_gpus().empty()) {  // the GPU's pairs and excluded pairs, the host's grids
        const MolecularForces gpu = md::molecular_forces(t, x, box, s, Backend::cuda);
        EXPECT_NEAR(gpu.energy.total(), msm.energy.total(), 1e-10 * std::abs(msm.energy.total()));
        EXPECT_NEAR(gpu.virial, msm.virial, 1e-9 * (1 + std::abs(msm.virial)));
        for (std::size_t i = 0; i < x.size(); ++i) EXPECT_LT(norm(gpu.force[i] - msm.force[i]), 1e-9 * std::sqrt(size));
      }
    }
  }
  // -gradient, on a small system (finite differences of every coordinate).
  std::vector<Vec3> x;
  Topology t = chains(2, 23, x, 12.0);
  NonbondedSettings s;
  s.method = Method::msm, s.cutoff = 6, s.msm_spacing = 1.5, s.switch_distance = 5;
  expect_forces_are_minus_gradient(t, x, s, PeriodicBox::from_edges({12.5, 13, 14}));
}

// The long-range dispersion correction (md/dispersion_correction.hpp) summed here another way:
// over every pair of atoms i <= j (OpenMM's weighting, N (N + 1) / 2 pairs whatever the types),
// each pair's integral taken by Simpson's rule on 20,000 intervals with OpenMM's switch written
// out here (S, and S' for the virial), beyond rc analytically. Simpson's error at this step is
// ~1e-15 of the integral; 1e-10 relative leaves room for the sums' rounding only.
TEST(MolecularTerms, DispersionCorrectionIsTheTailOfTheLennardJonesIntegral) {
  if (test::kSanitized) GTEST_SKIP() << "numerical integrals (40 s under the sanitizers): the release run has them";
  std::vector<Vec3> x;
  const Topology t = chains(9, 21, x, 20.0);
  const PeriodicBox box = PeriodicBox::from_edges({20.0, 21.0, 22.0});
  for (const bool switched : {false, true}) {
    NonbondedSettings s;
    s.method = Method::cutoff_periodic, s.cutoff = 9;
    if (switched) s.switch_distance = 7.5;
    const double rc = 9, rs = switched ? 7.5 : 9;
    auto integrals = [&](double c12, double c6) {  // {int r^2 (U - U_used), int r^2 (rF - rF_used)} from rs
      double e = c12 / (9 * std::pow(rc, 9)) - c6 / (3 * std::pow(rc, 3));
      double w = 4 * c12 / (3 * std::pow(rc, 9)) - 2 * c6 / std::pow(rc, 3);
      const int steps = 20000;
      const double h = (rc - rs) / steps;
      for (int k = 0; switched && k <= steps; ++k) {
        const double r = rs + k * h, xs = (r - rs) / (rc - rs);
        const double sw = 1 - 10 * std::pow(xs, 3) + 15 * std::pow(xs, 4) - 6 * std::pow(xs, 5);
        const double dsw = (-30 * xs * xs + 60 * std::pow(xs, 3) - 30 * std::pow(xs, 4)) / (rc - rs);
        const double u = c12 / std::pow(r, 12) - c6 / std::pow(r, 6);
        const double rf = 12 * c12 / std::pow(r, 12) - 6 * c6 / std::pow(r, 6);  // r . F = -r dU/dr
        const double rf_used = sw * rf - r * dsw * u;
        const double simpson = (k == 0 || k == steps) ? 1 : (k % 2 ? 4 : 2);
        e += h / 3 * simpson * r * r * (1 - sw) * u;
        w += h / 3 * simpson * r * r * (rf - rf_used);
      }
      return std::array<double, 2>{e, w};
    };
    double e_sum = 0, w_sum = 0;
    const std::size_t n = t.size();
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t j = i; j < n; ++j) {
        const std::size_t pair = static_cast<std::size_t>(t.lj_type[i]) * t.lj_types + t.lj_type[j];
        const auto [e, w] = integrals(t.c12[pair], t.c6[pair]);
        e_sum += e, w_sum += w;
      }
    const double nn = static_cast<double>(n), v = box.volume();
    const double expected_e = 2 * pi * nn * nn / v * e_sum / (nn * (nn + 1) / 2);
    const double expected_w = 2 * pi * nn * nn / v * w_sum / (nn * (nn + 1) / 2);
    const MolecularForces with = evaluate(t, x, s, Backend::reference, box);
    s.dispersion_correction = false;
    const MolecularForces without = evaluate(t, x, s, Backend::reference, box);
    EXPECT_LT(expected_e, 0.0);  // attraction dominates beyond 7.5 A
    EXPECT_NEAR(with.energy.dispersion_correction, expected_e, 1e-10 * std::abs(expected_e)) << switched;
    EXPECT_NEAR(with.virial - without.virial, expected_w, 1e-10 * std::abs(expected_w)) << switched;
    EXPECT_EQ(without.energy.dispersion_correction, 0.0);
    EXPECT_EQ(with.energy.total() - with.energy.dispersion_correction, without.energy.total());
    for (std::size_t i = 0; i < n; ++i) EXPECT_EQ(with.force[i], without.force[i]);  // a constant of the positions
  }
  // Only the periodic methods have a volume to spread the tail over.
  NonbondedSettings cut;
  cut.method = Method::cutoff_non_periodic, cut.cutoff = 9;
  EXPECT_EQ(evaluate(t, x, cut).energy.dispersion_correction, 0.0);
}

// The virial (the pressure's) is -dU/dlambda for every position and the box scaled by lambda:
// each pair's and each bonded term's r . f, checked by central differences in every method.
TEST(MolecularTerms, VirialIsMinusTheDerivativeOfUniformScaling) {
  std::vector<Vec3> x;
  const Topology t = chains(6, 13, x, 14.0);
  const PeriodicBox box = PeriodicBox::from_edges({16.5, 17, 18});
  for (const int variant : {0, 1, 2, 3, 4}) {
    const auto style = variant == 1   ? NonbondedSettings::CutoffStyle::charmm
                       : variant == 3 ? NonbondedSettings::CutoffStyle::shifted_force
                                      : NonbondedSettings::CutoffStyle::openmm;
    NonbondedSettings s;
    s.method = variant == 2 ? Method::pme : variant == 4 ? Method::msm : Method::cutoff_periodic, s.cutoff = 8,
    s.switch_distance = 6.5, s.style = style, s.msm_spacing = 2;
    s.dispersion_correction = false;  // its virial is the left-out pairs' (DispersionCorrectionIsTheTail...)
    auto energy_at = [&](double lambda) {
      std::vector<Vec3> scaled = x;
      for (Vec3& p : scaled) p = lambda * p;
      return evaluate(t, scaled, s, Backend::reference, PeriodicBox::from_edges(lambda * box.edges())).energy.total();
    };
    const double h = 1e-6;
    const double derivative = (energy_at(1 + h) - energy_at(1 - h)) / (2 * h);
    const MolecularForces at = evaluate(t, x, s, Backend::reference, box);
    EXPECT_NEAR(at.virial, -derivative, 1e-6 * (1 + std::abs(derivative))) << md::to_string(s.method) << " "
                                                                            << md::to_string(style);
    EXPECT_NEAR(md::molecular_forces(t, x, box, s, Backend::cpu, 3).virial, at.virial, 1e-9 * (1 + std::abs(at.virial)));
  }
}

// The CPU backend (cell list, threads) against the reference (every pair, one thread): the same
// pairs, summed in another order, so the same energies to rounding (1e-10 relative of the
// largest term's size) and forces to 1e-9 of the largest.
TEST(MolecularTerms, CpuMatchesReferenceInEveryMethod) {
  std::vector<Vec3> x;
  const double edge = 31.0;
  const Topology t = chains(150, 11, x, edge);  // 750 atoms at ~2.5 per 100 A^3
  const PeriodicBox box = PeriodicBox::from_edges({edge, edge + 1, edge + 2});
  for (Method method : {Method::no_cutoff, Method::cutoff_non_periodic, Method::cutoff_periodic, Method::pme}) {
    NonbondedSettings s;
    s.method = method, s.cutoff = 9.0;
    if (method == Method::pme) s.switch_distance = 7.5;
    if (method == Method::cutoff_non_periodic) s.style = NonbondedSettings::CutoffStyle::shifted_force;
    if (method == Method::cutoff_non_periodic) s.switch_distance = 7.0;
    if (method == Method::cutoff_periodic) s.switch_distance = 7.5, s.style = NonbondedSettings::CutoffStyle::charmm;
    const auto reference = evaluate(t, x, s, Backend::reference, box);
    for (int threads : {1, 3}) {
      const auto cpu = md::molecular_forces(t, x, box, s, Backend::cpu, threads);
      const auto ours = cpu.energy.named(), theirs = reference.energy.named();
      for (std::size_t k = 0; k < ours.size(); ++k)
        EXPECT_NEAR(ours[k].second, theirs[k].second, 1e-10 * (1 + std::abs(theirs[k].second)))
            << md::to_string(method) << " " << ours[k].first;
      double largest = 0;
      for (const Vec3& f : reference.force) largest = std::max(largest, norm(f));
      for (std::size_t i = 0; i < x.size(); ++i) EXPECT_LT(norm(cpu.force[i] - reference.force[i]), 1e-9 * largest);
    }
  }
}

// Every backend against the reference on a real protein (FKBP12 in amber14, tests/data) in every
// method and both cutoff styles, and on the chains: the same terms summed in other orders, so
// energies agree to rounding (1e-10 of each term's size) and forces to 1e-9 of the largest.
class MolecularBackends : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    std::string why;
    if (GetParam() == Backend::cuda && list_gpus(&why).empty()) GTEST_SKIP() << "no GPU: " << why;
  }
};

// ||ours - reference|| / ||reference|| over every atom's force: the relative RMS error.
double force_relative_rms(const MolecularForces& ours, const MolecularForces& reference) {
  double error = 0, size = 0;
  for (std::size_t i = 0; i < reference.force.size(); ++i)
    error += std::pow(norm(ours.force[i] - reference.force[i]), 2), size += std::pow(norm(reference.force[i]), 2);
  return std::sqrt(error / size);
}

void expect_same(const MolecularForces& ours, const MolecularForces& reference, const std::string& what) {
  const auto a = ours.energy.named(), b = reference.energy.named();
  for (std::size_t k = 0; k < a.size(); ++k)
    EXPECT_NEAR(a[k].second, b[k].second, 1e-10 * (1 + std::abs(b[k].second))) << what << " " << a[k].first;
  EXPECT_NEAR(ours.virial, reference.virial, 1e-10 * (1 + std::abs(reference.virial))) << what;
  double largest = 0;
  for (const Vec3& f : reference.force) largest = std::max(largest, norm(f));
  double worst = 0;
  for (std::size_t i = 0; i < reference.force.size(); ++i) worst = std::max(worst, norm(ours.force[i] - reference.force[i]));
  EXPECT_LT(worst, 1e-9 * largest) << what;
}

TEST_P(MolecularBackends, MatchTheReferenceOnAProteinInEveryMethod) {
  const Topology t = io::read_prmtop(test_data_file("fkbp-amber14.prmtop.gz"));
  const md::Coordinates c = io::read_inpcrd(test_data_file("fkbp-amber14.inpcrd.gz"), t.size());
  ASSERT_EQ(t.size(), 1663u);
  // A box around the protein (its own has none), every edge over twice the cutoff.
  const PeriodicBox box = box_around(c.positions, 6);
  std::vector<NonbondedSettings> cases(9);
  cases[1].method = Method::cutoff_non_periodic, cases[1].cutoff = 9, cases[1].switch_distance = 7.5;
  cases[2].method = Method::cutoff_periodic, cases[2].cutoff = 10;
  cases[3] = cases[2], cases[3].switch_distance = 8, cases[3].style = NonbondedSettings::CutoffStyle::charmm;
  cases[4] = cases[3], cases[4].style = NonbondedSettings::CutoffStyle::shifted_force;
  // PME with each B-spline order (the GPU's mesh is 64-bit fixed point, 2^-40 e per
  // contribution: ~1e-12 of the terms, inside the tolerance).
  cases[5].method = Method::pme, cases[5].cutoff = 10, cases[5].switch_distance = 8;
  cases[6] = cases[5], cases[6].pme_order = 4, cases[6].ewald_tolerance = 1e-3;
  cases[7] = cases[5], cases[7].pme_order = 6, cases[7].ewald_tolerance = 1e-5;
  // MSM (on the GPU: its pairs there, the grids on the host).
  cases[8].method = Method::msm, cases[8].cutoff = 10, cases[8].switch_distance = 8, cases[8].msm_spacing = 2.5;
  for (const NonbondedSettings& s : cases) {
    const auto reference = md::molecular_forces(t, c.positions, box, s, Backend::reference);
    const auto ours = md::molecular_forces(t, c.positions, box, s, GetParam(), 3);
    expect_same(ours, reference, md::to_string(s.method) + " " + md::to_string(s.style));
    // The same bits when evaluated again (a moving result is a race).
    const auto again = md::molecular_forces(t, c.positions, box, s, GetParam(), 3);
    EXPECT_EQ(again.energy.total(), ours.energy.total());
    for (std::size_t i = 0; i < t.size(); ++i) ASSERT_EQ(again.force[i], ours.force[i]) << "atom " << i;
  }
}

TEST_P(MolecularBackends, MatchTheReferenceOnChainsWithEveryTerm) {
  std::vector<Vec3> x;
  const Topology t = chains(60, 17, x, 24.0);
  NonbondedSettings s;
  s.method = Method::cutoff_periodic, s.cutoff = 9, s.switch_distance = 7;
  const PeriodicBox box = PeriodicBox::from_edges({24, 25, 26});
  expect_same(md::molecular_forces(t, x, box, s, GetParam(), 2), md::molecular_forces(t, x, box, s, Backend::reference),
              "chains");
  // PME with a net charge (the neutralising background) and an odd mesh.
  Topology charged = t;
  charged.charge[3] += 0.7;
  s.method = Method::pme, s.ewald_tolerance = 2e-4;
  const PeriodicBox odd = PeriodicBox::from_edges({23.3, 25, 26.7});
  expect_same(md::molecular_forces(charged, x, odd, s, GetParam(), 2),
              md::molecular_forces(charged, x, odd, s, Backend::reference), "charged chains, pme");
}

INSTANTIATE_TEST_SUITE_P(Backends, MolecularBackends, ::testing::Values(Backend::cpu, Backend::cuda),
                         [](const auto& info) { return to_string(info.param); });

// The GPU tests' two periodic systems: FKBP12 in a box 6 A round it (4 to 5 list cells an edge at
// 9 A) and the chains (1,020 atoms in a box 2 cells wide).
struct GpuSystems {
  Topology protein;
  md::Coordinates c;
  PeriodicBox protein_box;
  std::vector<Vec3> chain_x;
  Topology chain;
  PeriodicBox chain_box;
};

GpuSystems gpu_systems() {
  GpuSystems g;
  g.protein = io::read_prmtop(test_data_file("fkbp-amber14.prmtop.gz"));
  g.c = io::read_inpcrd(test_data_file("fkbp-amber14.inpcrd.gz"), g.protein.size());
  g.protein_box = box_around(g.c.positions, 6);
  g.chain = chains(60, 17, g.chain_x, 24.0);
  g.chain_box = PeriodicBox::from_edges({24, 25, 26});
  return g;
}

// The GPU's mixed precision (float32 pair arithmetic, float64 sums: OpenMM's "mixed") against
// the float64 reference on the protein in its box and on the chains (1,020 atoms: no multiple of
// 32; their box 2 cells wide, the protein's 4 to 5), in each periodic method. OpenMM's own tests
// hold its single and mixed precision to 1e-3 relative (1e-5 in double: the tolerances of its
// nonbonded tests, e.g. testDispersionCorrection); float32's rounding of each pair (6e-8) summed
// in float64 leaves ~1e-6 here (measured on an H100: forces 2.4e-6 relative RMS on the protein,
// 4.5e-6 on the chains; energy terms 2.5e-6 of their size at worst), so the bounds are 1e-5 for
// both, a hundred times tighter than OpenMM's. The virial, a sum with cancellation, is bounded by
// 1e-6 of the pair energies' size (its terms are of that size). Two evaluations give the same bits.
TEST(MolecularGpu, MixedPrecisionIsWithinFloat32sRoundingOfTheReferenceAndRepeats) {
  std::string why;
  if (list_gpus(&why).empty()) GTEST_SKIP() << "no GPU: " << why;
  const GpuSystems g = gpu_systems();
  std::vector<NonbondedSettings> cases(4);
  cases[0].method = Method::pme, cases[0].cutoff = 9, cases[0].switch_distance = 7.5;
  cases[1].method = Method::cutoff_periodic, cases[1].cutoff = 9, cases[1].switch_distance = 7;
  cases[2] = cases[1], cases[2].style = NonbondedSettings::CutoffStyle::charmm;
  cases[3].method = Method::msm, cases[3].cutoff = 9, cases[3].msm_spacing = 2.5;
  using Case = std::tuple<const Topology*, const std::vector<Vec3>*, PeriodicBox, const char*>;
  // `law`: PME's pairs with the fast float32 law (1, the default: md/fast_pair_math.hpp), the
  // same with a round's pairs summed in float32 first (2: NBKIT_PAIR_ROUND_SUMS=1, a candidate),
  // and every law without it (0, NBKIT_PAIR_FAST_LAW=0: the correctly rounded one), all within
  // float32's rounding; the list's cell offsets on (the default) throughout.
  for (const auto& [t, x, box, name] : {Case{&g.protein, &g.c.positions, g.protein_box, "protein"},
                                        Case{&g.chain, &g.chain_x, g.chain_box, "chains"}})
    for (const int law : {0, 1, 2})
      for (const NonbondedSettings& s : cases) {
        const bool fast = law > 0;
        if (fast && s.method != Method::pme) continue;
        struct Env {
          explicit Env(int law) {
            setenv("NBKIT_PAIR_FAST_LAW", law > 0 ? "1" : "0", 1);
            setenv("NBKIT_PAIR_ROUND_SUMS", law == 2 ? "1" : "0", 1);
          }
          ~Env() { unsetenv("NBKIT_PAIR_FAST_LAW"), unsetenv("NBKIT_PAIR_ROUND_SUMS"); }
        } env(law);
        const std::string what = std::string(name) + " " + md::to_string(s.method) + " " + md::to_string(s.style) +
                                 (law == 1 ? " (fast law)" : law == 2 ? " (fast law, round sums)" : "");
        const auto reference = md::molecular_forces(*t, *x, box, s, Backend::reference);
        const auto mixed = md::molecular_forces(*t, *x, box, s, Backend::cuda, 0, {}, Precision::single);
        const auto a = mixed.energy.named(), b = reference.energy.named();
        double worst_energy = 0;
        for (std::size_t k = 0; k < a.size(); ++k) {
          const double relative = std::abs(a[k].second - b[k].second) / (1 + std::abs(b[k].second));
          worst_energy = std::max(worst_energy, relative);
          EXPECT_LT(relative, 1e-5) << what << " " << a[k].first;
        }
        const double rms = force_relative_rms(mixed, reference);
        std::printf("  mixed precision, %s: forces %.2e relative RMS, energy terms %.2e relative (worst)\n",
                    what.c_str(), rms, worst_energy);
        EXPECT_LT(rms, 1e-5) << what;
        const double pair_size = std::abs(reference.energy.coulomb) + std::abs(reference.energy.lennard_jones);
        EXPECT_NEAR(mixed.virial, reference.virial, 1e-6 * (pair_size + std::abs(reference.virial))) << what;
        const auto again = md::molecular_forces(*t, *x, box, s, Backend::cuda, 0, {}, Precision::single);
        EXPECT_EQ(again.energy.total(), mixed.energy.total()) << what;
        for (std::size_t i = 0; i < x->size(); ++i) ASSERT_EQ(again.force[i], mixed.force[i]) << what << " atom " << i;
      }
  // Mixed precision is the GPU's, and needs a box (without one every pair is summed in float64).
  EXPECT_THROW(md::molecular_forces(g.chain, g.chain_x, g.chain_box, cases[0], Backend::cpu, 0, {}, Precision::single),
               Error);
  NonbondedSettings vacuum;
  EXPECT_THROW(md::molecular_forces(g.chain, g.chain_x, std::nullopt, vacuum, Backend::cuda, 0, {}, Precision::single),
               Error);
}

// The GPU's pair list has three builds, a warp per group of rows (the default), a warp per row
// (small boxes, or the groups switched off) and a lane per row (tests, A/B runs), that must write
// the same list entry for entry: forced in turn through NBKIT_PAIR_LIST_BUILD, they give the same
// bits in both precisions, on the protein (4 to 5 cells an edge: the 27-cell stencil, where the
// groups' boxes are tested before their atoms, so a box test that dropped an atom within reach
// would show) and on the chains (2 cells: every cell searched, each pair's image picked; "group"
// falls back to a warp a row). The build by group also with a cell's groups at a time rather than
// through its queue (NBKIT_PAIR_LIST_GROUP_QUEUE=0), with 8 rows a warp, and with boxes of 4 and 8
// atoms (NBKIT_PAIR_LIST_UNIT). An unknown value is refused.
TEST(MolecularGpu, PairListBuildsByGroupRowAndCellGiveTheSameBits) {
  std::string why;
  if (list_gpus(&why).empty()) GTEST_SKIP() << "no GPU: " << why;
  const GpuSystems g = gpu_systems();
  NonbondedSettings s;
  s.method = Method::pme, s.cutoff = 9, s.switch_distance = 7.5;
  auto with_build = [&](const char* build, const Topology& t, const std::vector<Vec3>& x, const PeriodicBox& box,
                        Precision precision) {
    setenv("NBKIT_PAIR_LIST_BUILD", build, 1);
    auto forces = md::molecular_forces(t, x, box, s, Backend::cuda, 0, {}, precision);
    unsetenv("NBKIT_PAIR_LIST_BUILD");
    return forces;
  };
  using Case = std::tuple<const Topology*, const std::vector<Vec3>*, PeriodicBox, const char*>;
  for (const auto& [t, x, box, name] : {Case{&g.protein, &g.c.positions, g.protein_box, "protein"},
                                        Case{&g.chain, &g.chain_x, g.chain_box, "chains"}})
    for (const Precision precision : {Precision::single, Precision::double_}) {
      const auto by_cell = with_build("cell", *t, *x, box, precision);
      using Way = std::tuple<const char*, const char*, const char*, const char*>;  // build, queue, rows, unit
      for (const auto& [build, queue, rows, unit] :
           {Way{"group", "1", "4", "4"}, Way{"group", "1", "4", "8"}, Way{"group", "0", "4", "4"},
            Way{"group", "1", "8", "4"}, Way{"group", "1", "8", "8"}, Way{"group", "0", "8", "4"},
            Way{"row", "1", "4", "4"}}) {
        const test::ScopedEnvironment queued("NBKIT_PAIR_LIST_GROUP_QUEUE", queue),
            rows_a_warp("NBKIT_PAIR_LIST_GROUP_ROWS", rows), unit_boxes("NBKIT_PAIR_LIST_UNIT", unit);
        const auto other = with_build(build, *t, *x, box, precision);
        const std::string what =
            std::string(name) + " " + build + " queue " + queue + " rows " + rows + " unit " + unit;
        EXPECT_EQ(other.energy.total(), by_cell.energy.total()) << what;
        EXPECT_EQ(other.virial, by_cell.virial) << what;
        for (std::size_t i = 0; i < x->size(); ++i) ASSERT_EQ(other.force[i], by_cell.force[i]) << what << " atom " << i;
      }
    }
  EXPECT_THROW(with_build("rows", g.chain, g.chain_x, g.chain_box, Precision::single), Error);
  unsetenv("NBKIT_PAIR_LIST_BUILD");
}

// The list's entries carry their cell offsets (by default; NBKIT_PAIR_LIST_OFFSETS=0: not) and the pair sums form
// r_i - r_j from them (molecular_pair_list.cu, offset_code): the same bits as without, for both
// builds and precisions, on the protein (every axis 3 cells or more: the offsets are used) and
// the chains (2 cells an edge: the kernel's cell arithmetic, as without); with the fast law's
// lean entries (NBKIT_PAIR_LEAN_ENTRIES, on by default: shifts from a table, entries found from one
// pointer) and without; the round sums' candidate (NBKIT_PAIR_ROUND_SUMS=1) the same way.
TEST(MolecularGpu, PairListOffsetsGiveTheSameBits) {
  std::string why;
  if (list_gpus(&why).empty()) GTEST_SKIP() << "no GPU: " << why;
  const GpuSystems g = gpu_systems();
  NonbondedSettings s;
  s.method = Method::pme, s.cutoff = 9;
  // lean: NBKIT_PAIR_LEAN_ENTRIES (listed_pairs' Lean); round: NBKIT_PAIR_ROUND_SUMS (a candidate,
  // each round's pairs summed in float32 first: other bits, but the same with and without Lean).
  auto with = [&](const char* offsets, const char* build, const Topology& t, const std::vector<Vec3>& x,
                  const PeriodicBox& box, Precision precision, const char* lean = "1", const char* round = "0") {
    setenv("NBKIT_PAIR_LIST_OFFSETS", offsets, 1);
    setenv("NBKIT_PAIR_LIST_BUILD", build, 1);
    setenv("NBKIT_PAIR_LEAN_ENTRIES", lean, 1);
    setenv("NBKIT_PAIR_ROUND_SUMS", round, 1);
    auto forces = md::molecular_forces(t, x, box, s, Backend::cuda, 0, {}, precision);
    unsetenv("NBKIT_PAIR_LIST_OFFSETS");
    unsetenv("NBKIT_PAIR_LIST_BUILD");
    unsetenv("NBKIT_PAIR_LEAN_ENTRIES");
    unsetenv("NBKIT_PAIR_ROUND_SUMS");
    return forces;
  };
  using Case = std::tuple<const Topology*, const std::vector<Vec3>*, PeriodicBox, const char*>;
  for (const auto& [t, x, box, name] : {Case{&g.protein, &g.c.positions, g.protein_box, "protein"},
                                        Case{&g.chain, &g.chain_x, g.chain_box, "chains"}})
    for (const char* build : {"group", "row", "cell"})
      for (const Precision precision : {Precision::single, Precision::double_})
        for (const char* round : {"0", "1"}) {
          if (*round == '1' && precision == Precision::double_) continue;  // float32's kernels' candidate
          const auto plain = with("0", build, *t, *x, box, precision, "1", round);
          for (const char* lean : {"1", "0"}) {
            const auto coded = with("1", build, *t, *x, box, precision, lean, round);
            const std::string what = std::string(name) + " " + build + " lean " + lean + " round sums " + round;
            EXPECT_EQ(plain.energy.total(), coded.energy.total()) << what;
            EXPECT_EQ(plain.virial, coded.virial) << what;
            for (std::size_t i = 0; i < x->size(); ++i) ASSERT_EQ(plain.force[i], coded.force[i]) << what << " atom " << i;
          }
        }
  EXPECT_THROW(with("yes", "row", g.chain, g.chain_x, g.chain_box, Precision::single), Error);
  EXPECT_THROW(with("1", "row", g.chain, g.chain_x, g.chain_box, Precision::single, "on"), Error);
  unsetenv("NBKIT_PAIR_LIST_OFFSETS");
  unsetenv("NBKIT_PAIR_LIST_BUILD");
  unsetenv("NBKIT_PAIR_LEAN_ENTRIES");
  unsetenv("NBKIT_PAIR_ROUND_SUMS");
}

// The pair sums' lanes an atom (NBKIT_PAIR_LANES, for A/B runs; by default from the atom count):
// each count sums a row in its own order, so the forces differ in their last bits, but every
// count stays within the bounds of MixedPrecisionIsWithinFloat32sRoundingOfTheReference in mixed
// precision (1e-5 relative RMS) and of MolecularBackends in float64 (1e-9: the mesh's fixed point
// leaves ~1e-12) on the protein, and repeats bit for bit. A count other than 1, 2, 4 or 8 is
// refused.
TEST(MolecularGpu, PairLanesAgreeWithinTheirPrecisionsRounding) {
  std::string why;
  if (list_gpus(&why).empty()) GTEST_SKIP() << "no GPU: " << why;
  const GpuSystems g = gpu_systems();
  NonbondedSettings s;
  s.method = Method::pme, s.cutoff = 9;
  struct Env {
    explicit Env(const char* lanes) { setenv("NBKIT_PAIR_LANES", lanes, 1); }
    ~Env() { unsetenv("NBKIT_PAIR_LANES"); }
  };
  auto with = [&](const char* lanes, Precision precision) {
    const Env env(lanes);
    return md::molecular_forces(g.protein, g.c.positions, g.protein_box, s, Backend::cuda, 0, {}, precision);
  };
  const auto reference = md::molecular_forces(g.protein, g.c.positions, g.protein_box, s, Backend::reference);
  for (const Precision precision : {Precision::single, Precision::double_})
    for (const char* lanes : {"1", "2", "4", "8"}) {
      const auto f = with(lanes, precision);
      const double bound = precision == Precision::single ? 1e-5 : 1e-9;
      EXPECT_LT(force_relative_rms(f, reference), bound) << lanes << " lanes";
      const auto again = with(lanes, precision);
      for (std::size_t i = 0; i < f.force.size(); ++i) ASSERT_EQ(f.force[i], again.force[i]) << lanes << " lanes";
    }
  EXPECT_THROW(with("3", Precision::single), Error);
}

// Rows longer than the list's capacity (NBKIT_PAIR_LIST_CAPACITY: the capacity fixed, as a build
// decided on the device leaves it until the host grows the list) are summed in full: their
// entries past the capacity found again from the cells (walk_row) in the row's order, so the bits
// are those of a list that held them. The protein (3 or more cells an axis: the build by group,
// the entries' cell offsets) and the chains' small box (2 cells an axis: the minimum image per
// pair), in both precisions; 8 entries (nearly every row past it) and 96 (some rows).
TEST(MolecularGpu, RowsPastTheListsCapacityGiveTheSameBits) {
  std::string why;
  if (list_gpus(&why).empty()) GTEST_SKIP() << "no GPU: " << why;
  const GpuSystems g = gpu_systems();
  NonbondedSettings s;
  s.method = Method::pme, s.cutoff = 9;
  struct Env {
    explicit Env(const char* capacity) {
      if (capacity) setenv("NBKIT_PAIR_LIST_CAPACITY", capacity, 1);
    }
    ~Env() { unsetenv("NBKIT_PAIR_LIST_CAPACITY"); }
  };
  auto with = [&](const char* capacity, const Topology& t, const std::vector<Vec3>& x, const PeriodicBox& box,
                  Precision precision) {
    const Env env(capacity);
    return md::molecular_forces(t, x, box, s, Backend::cuda, 0, {}, precision);
  };
  using Case = std::tuple<const Topology*, const std::vector<Vec3>*, PeriodicBox, const char*>;
  for (const auto& [t, x, box, name] : {Case{&g.protein, &g.c.positions, g.protein_box, "protein"},
                                        Case{&g.chain, &g.chain_x, g.chain_box, "chains"}})
    for (const Precision precision : {Precision::single, Precision::double_}) {
      const auto whole = with(nullptr, *t, *x, box, precision);
      for (const char* capacity : {"8", "96"}) {
        const auto walked = with(capacity, *t, *x, box, precision);
        const std::string what = std::string(name) + " capacity " + capacity;
        EXPECT_EQ(whole.energy.total(), walked.energy.total()) << what;
        EXPECT_EQ(whole.virial, walked.virial) << what;
        for (std::size_t i = 0; i < x->size(); ++i) ASSERT_EQ(whole.force[i], walked.force[i]) << what << " atom " << i;
      }
    }
  EXPECT_THROW(with("0", g.chain, g.chain_x, g.chain_box, Precision::single), Error);
  EXPECT_THROW(with("8k", g.chain, g.chain_x, g.chain_box, Precision::single), Error);
}

// The rows' near entries first (NBKIT_PAIR_LIST_NEAR_FIRST=1, a candidate: pair_list_order.cuh)
// keep every pair: each pair's terms are the same values, summed in another order, so energies,
// virial and forces agree with the list's order to float64's rounding of the sums (1e-12 of
// their size; in float32 the terms are float32 values added in float64 alike); every build
// reorders its list to the same bits, runs repeat bit for bit, and rows past the capacity (96
// entries: the listed part reordered, the rest walked) still sum every pair.
TEST(MolecularGpu, NearEntriesFirstKeepEveryPairAndRepeat) {
  std::string why;
  if (list_gpus(&why).empty()) GTEST_SKIP() << "no GPU: " << why;
  const GpuSystems g = gpu_systems();
  NonbondedSettings s;
  s.method = Method::pme, s.cutoff = 9;
  struct Env {
    Env(const char* near_first, const char* build, const char* capacity) {
      setenv("NBKIT_PAIR_LIST_NEAR_FIRST", near_first, 1);
      setenv("NBKIT_PAIR_LIST_BUILD", build, 1);
      if (capacity) setenv("NBKIT_PAIR_LIST_CAPACITY", capacity, 1);
    }
    ~Env() {
      unsetenv("NBKIT_PAIR_LIST_NEAR_FIRST"), unsetenv("NBKIT_PAIR_LIST_BUILD");
      unsetenv("NBKIT_PAIR_LIST_CAPACITY");
    }
  };
  auto with = [&](const char* near_first, const char* build, const char* capacity, const Topology& t,
                  const std::vector<Vec3>& x, const PeriodicBox& box, Precision precision) {
    const Env env(near_first, build, capacity);
    return md::molecular_forces(t, x, box, s, Backend::cuda, 0, {}, precision);
  };
  using Case = std::tuple<const Topology*, const std::vector<Vec3>*, PeriodicBox, const char*>;
  for (const auto& [t, x, box, name] : {Case{&g.protein, &g.c.positions, g.protein_box, "protein"},
                                        Case{&g.chain, &g.chain_x, g.chain_box, "chains"}})
    for (const Precision precision : {Precision::single, Precision::double_}) {
      const auto listed = with("0", "group", nullptr, *t, *x, box, precision);
      const auto first = with("1", "group", nullptr, *t, *x, box, precision);
      const std::string what = std::string(name) + (precision == Precision::single ? " float32" : " float64");
      const double size = std::abs(listed.energy.coulomb) + std::abs(listed.energy.lennard_jones);
      EXPECT_NEAR(first.energy.total(), listed.energy.total(), 1e-12 * size) << what;
      EXPECT_NEAR(first.virial, listed.virial, 1e-12 * (size + std::abs(listed.virial))) << what;
      EXPECT_LT(force_relative_rms(first, listed), 1e-12) << what;
      const auto again = with("1", "group", nullptr, *t, *x, box, precision);
      EXPECT_EQ(again.energy.total(), first.energy.total()) << what;
      for (std::size_t i = 0; i < x->size(); ++i) ASSERT_EQ(again.force[i], first.force[i]) << what << " atom " << i;
      for (const char* build : {"row", "cell"}) {
        const auto other = with("1", build, nullptr, *t, *x, box, precision);
        EXPECT_EQ(other.energy.total(), first.energy.total()) << what << " " << build;
        for (std::size_t i = 0; i < x->size(); ++i)
          ASSERT_EQ(other.force[i], first.force[i]) << what << " " << build << " atom " << i;
      }
      const auto short_rows = with("1", "group", "96", *t, *x, box, precision);
      EXPECT_NEAR(short_rows.energy.total(), listed.energy.total(), 1e-12 * size) << what << " capacity 96";
      EXPECT_LT(force_relative_rms(short_rows, listed), 1e-12) << what << " capacity 96";
    }
  EXPECT_THROW(with("on", "group", nullptr, g.chain, g.chain_x, g.chain_box, Precision::single), Error);
}

// Where the GPU's evaluation queues its work changes no bit: PME's excluded pairs' corrections
// apart from the pair sums, on the bonded terms' stream (by default; NBKIT_CORRECTIONS_APART=0:
// after the pairs on the main stream, added to their sums), the bonded terms on a stream of
// their own (by default; NBKIT_BONDED_STREAM=0: ahead of the mesh on its stream), and the pairs
// waiting for part of the mesh's chain (NBKIT_PAIRS_AFTER_MESH=k): gather_forces adds every part
// in the same order, so the forces, energies and virial are the same bits every way, in both
// precisions, on the protein and the chains. Bad values are refused.
TEST(MolecularGpu, ExcludedCorrectionsApartFromThePairsGiveTheSameBits) {
  std::string why;
  if (list_gpus(&why).empty()) GTEST_SKIP() << "no GPU: " << why;
  const GpuSystems g = gpu_systems();
  NonbondedSettings s;
  s.method = Method::pme, s.cutoff = 9;
  struct Env {  // unset again however the evaluation ends (a refusal throws)
    Env(const char* apart, const char* bonded_stream, const char* after_mesh) {
      setenv("NBKIT_CORRECTIONS_APART", apart, 1), setenv("NBKIT_BONDED_STREAM", bonded_stream, 1);
      setenv("NBKIT_PAIRS_AFTER_MESH", after_mesh, 1);
    }
    ~Env() { unsetenv("NBKIT_CORRECTIONS_APART"), unsetenv("NBKIT_BONDED_STREAM"), unsetenv("NBKIT_PAIRS_AFTER_MESH"); }
  };
  auto with = [&](const char* apart, const char* bonded_stream, const char* after_mesh, const Topology& t,
                  const std::vector<Vec3>& x, const PeriodicBox& box, Precision precision) {
    const Env env(apart, bonded_stream, after_mesh);
    return md::molecular_forces(t, x, box, s, Backend::cuda, 0, {}, precision);
  };
  using Case = std::tuple<const Topology*, const std::vector<Vec3>*, PeriodicBox, const char*>;
  using Way = std::tuple<const char*, const char*, const char*>;
  for (const auto& [t, x, box, name] : {Case{&g.protein, &g.c.positions, g.protein_box, "protein"},
                                        Case{&g.chain, &g.chain_x, g.chain_box, "chains"}})
    for (const Precision precision : {Precision::single, Precision::double_}) {
      const auto after = with("0", "0", "0", *t, *x, box, precision);
      for (const auto& [apart, bonded_stream, after_mesh] :
           {Way{"1", "1", "0"}, Way{"0", "1", "0"}, Way{"1", "0", "0"}, Way{"1", "1", "2"}, Way{"0", "0", "4"}}) {
        const auto other = with(apart, bonded_stream, after_mesh, *t, *x, box, precision);
        const std::string what = std::string(name) + " apart " + apart + " bonded stream " + bonded_stream +
                                 " pairs after mesh " + after_mesh;
        EXPECT_NE(after.energy.coulomb_reciprocal, 0.0) << what;
        EXPECT_EQ(after.energy.coulomb_reciprocal, other.energy.coulomb_reciprocal) << what;
        EXPECT_EQ(after.energy.total(), other.energy.total()) << what;
        EXPECT_EQ(after.virial, other.virial) << what;
        for (std::size_t i = 0; i < x->size(); ++i) ASSERT_EQ(after.force[i], other.force[i]) << what << " atom " << i;
      }
    }
  EXPECT_THROW(with("2", "1", "0", g.chain, g.chain_x, g.chain_box, Precision::single), Error);
  EXPECT_THROW(with("1", "yes", "0", g.chain, g.chain_x, g.chain_box, Precision::single), Error);
  EXPECT_THROW(with("1", "1", "5", g.chain, g.chain_x, g.chain_box, Precision::single), Error);
}

// md::replicate: a periodic system repeated along its edges is the same infinite system, so with
// a cutoff (every pair within it the same pair) each copy's atoms feel the original's forces and
// the energy is the copies' count times the original's (to rounding); indices and box follow.
TEST(MolecularTerms, ReplicatedSystemsRepeatTheOriginalsEnergyAndForces) {
  std::vector<Vec3> x;
  const Topology t = chains(12, 17, x, 24.0);
  md::Coordinates c{x, {}, PeriodicBox::from_edges({24, 25, 26})};
  const md::Replicated r = md::replicate(t, c, {2, 1, 3});
  ASSERT_EQ(r.topology.size(), 6 * t.size());
  EXPECT_EQ(r.topology.bonds.size(), 6 * t.bonds.size());
  EXPECT_EQ(r.topology.exclusions.size(), 6 * t.exclusions.size());
  EXPECT_EQ(r.coordinates.box->edges(), (Vec3{48, 25, 78}));
  EXPECT_EQ(r.coordinates.positions[t.size() + 5], (x[5] + Vec3{24, 0, 0}));   // copy (1, 0, 0)
  EXPECT_EQ(r.coordinates.positions[2 * t.size() + 5], (x[5] + Vec3{0, 0, 26}));  // copy (0, 0, 1)
  EXPECT_EQ(r.topology.bonds[t.bonds.size()].i, t.bonds[0].i + static_cast<int>(t.size()));
  NonbondedSettings s;
  s.method = Method::cutoff_periodic, s.cutoff = 9, s.switch_distance = 7;
  s.dispersion_correction = false;  // OpenMM's pair weighting counts i = j pairs: not extensive to the bit
  const MolecularForces one = md::molecular_forces(t, x, c.box, s, Backend::cpu, 2);
  const MolecularForces six = md::molecular_forces(r.topology, r.coordinates.positions, r.coordinates.box, s,
                                                   Backend::cpu, 2);
  EXPECT_NEAR(six.energy.total(), 6 * one.energy.total(), 1e-10 * std::abs(6 * one.energy.total()));
  EXPECT_NEAR(six.virial, 6 * one.virial, 1e-9 * std::abs(6 * one.virial));
  for (std::size_t copy = 0; copy < 6; ++copy)
    for (std::size_t i = 0; i < t.size(); ++i)
      ASSERT_LT(norm(six.force[copy * t.size() + i] - one.force[i]), 1e-9) << "copy " << copy << " atom " << i;
  EXPECT_THROW(md::replicate(t, md::Coordinates{x, {}, std::nullopt}, {2, 1, 1}), Error);  // no box
  EXPECT_THROW(md::replicate(t, c, {0, 1, 1}), Error);
}

// pme_fft_sizes: OpenMM's GPU platforms' rule (each edge up to a product of 2, 3, 5, 7), applied
// to the tolerance's mesh only, never below it; an explicit mesh stays as given.
TEST(MolecularTerms, PmeMeshRoundsUpToFftSizesWhenAsked) {
  EXPECT_EQ(md::fft_friendly_size(1), 1);
  EXPECT_EQ(md::fft_friendly_size(7), 7);
  EXPECT_EQ(md::fft_friendly_size(11), 12);
  EXPECT_EQ(md::fft_friendly_size(61), 63);    // the 30,680-atom protein box's edge
  EXPECT_EQ(md::fft_friendly_size(191), 192);  // a million-atom water box's
  EXPECT_EQ(md::fft_friendly_size(305), 315);
  EXPECT_EQ(md::fft_friendly_size(426), 432);
  EXPECT_EQ(md::fft_friendly_size(4096), 4096);
  NonbondedSettings s;
  s.method = NonbondedSettings::Method::pme, s.cutoff = 9;
  const PeriodicBox box = PeriodicBox::from_edges({68.5, 214.0, 480.0});
  const md::PmeParameters reference = md::pme_parameters(s, box);
  s.pme_fft_sizes = true;
  const md::PmeParameters fft = md::pme_parameters(s, box);
  EXPECT_EQ(fft.alpha, reference.alpha);
  EXPECT_NE(fft.mesh, reference.mesh);  // 61, 191, 428 from the tolerance
  for (int a = 0; a < 3; ++a) EXPECT_EQ(fft.mesh[a], md::fft_friendly_size(reference.mesh[a]));
  s.pme_mesh = std::array<int, 3>{61, 61, 61};
  EXPECT_EQ(md::pme_parameters(s, box).mesh, (std::array<int, 3>{61, 61, 61}));
}

// `nbkit md`'s notice of a mesh with a prime edge (pme_mesh_notice): named with its largest prime
// above 7 and the rounded mesh, where the tolerance gives the mesh and it is not rounded already.
TEST(MolecularTerms, PmeMeshWithPrimeEdgesIsNoticed) {
  NonbondedSettings s;
  s.method = NonbondedSettings::Method::pme, s.cutoff = 9;
  const PeriodicBox prime = PeriodicBox::from_edges({68.5, 214.0, 480.0});  // 61 x 191 x 428 (2^2 107)
  const std::string notice = md::pme_mesh_notice(s, prime);
  EXPECT_NE(notice.find("61 x 191 x 428"), std::string::npos) << notice;
  EXPECT_NE(notice.find("prime factor 191"), std::string::npos) << notice;
  EXPECT_NE(notice.find("63 x 192 x 432"), std::string::npos) << notice;
  const PeriodicBox friendly = PeriodicBox::from_edges({40, 40, 40});  // 36^3
  for (int m : md::pme_parameters(s, friendly).mesh) ASSERT_EQ(md::fft_friendly_size(m), m);
  EXPECT_EQ(md::pme_mesh_notice(s, friendly), "");
  EXPECT_NE(md::pme_mesh_notice(s, PeriodicBox::from_edges({36, 36, 36})).find("prime factor 11"),
            std::string::npos);  // 33^3
  NonbondedSettings rounded = s;
  rounded.pme_fft_sizes = true;
  EXPECT_EQ(md::pme_mesh_notice(rounded, prime), "");
  NonbondedSettings given = s;
  given.pme_mesh = std::array<int, 3>{61, 61, 61};
  EXPECT_EQ(md::pme_mesh_notice(given, prime), "");
  NonbondedSettings cutoff = s;
  cutoff.method = NonbondedSettings::Method::cutoff_periodic;
  EXPECT_EQ(md::pme_mesh_notice(cutoff, prime), "");
}

TEST(MolecularTerms, RefusesWhatItCannotComputeRight) {
  Topology t = pair_of_atoms(0.5, -0.5);
  const std::vector<Vec3> x{{0, 0, 0}, {3, 0, 0}};
  NonbondedSettings s;
  s.method = Method::cutoff_periodic, s.cutoff = 9;
  EXPECT_THROW(evaluate(t, x, s), Error);  // no box
  EXPECT_THROW(evaluate(t, x, s, Backend::reference, PeriodicBox::from_edges({17, 30, 30})), Error);  // < 2 rc
  s.method = Method::cutoff_non_periodic, s.switch_distance = 9.5;
  EXPECT_THROW(evaluate(t, x, s), Error);
  s.switch_distance.reset(), s.style = NonbondedSettings::CutoffStyle::charmm;
  EXPECT_THROW(evaluate(t, x, s), Error);  // charmm without a switch distance
  s.style = NonbondedSettings::CutoffStyle::openmm;
  EXPECT_THROW(evaluate(t, {{0, 0, 0}}), Error);  // one position for two atoms
  EXPECT_THROW(evaluate(t, {{0, 0, 0}, {NAN, 0, 0}}), Error);
  EXPECT_THROW(evaluate(t, {{0, 0, 0}, {0, 0, 0}}), Error);  // overlapping: not finite
  t.bonds = {{0, 2, 1, 1}};
  EXPECT_THROW(evaluate(t, x), Error);  // atom 3 of 2
  t.bonds.clear();
  t.lj_type[1] = 1;
  EXPECT_THROW(evaluate(t, x), Error);
  t.lj_type[1] = 0;
  t.exclusions = {{0, 1}, {1, 0}};  // the same pair twice
  EXPECT_THROW(evaluate(t, x), Error);
  t.exclusions.clear();
  if (list_gpus().empty()) EXPECT_THROW(evaluate(t, x, {}, Backend::cuda), Error);
  // PME: a box, the openmm style, an order of 4..6, a tolerance in (0, 0.5).
  NonbondedSettings pme;
  pme.method = Method::pme, pme.cutoff = 9;
  const PeriodicBox box = PeriodicBox::from_edges({20, 20, 20});
  EXPECT_THROW(evaluate(t, x, pme), Error);  // no box
  EXPECT_NO_THROW(evaluate(t, x, pme, Backend::reference, box));
  pme.pme_order = 7;
  EXPECT_THROW(evaluate(t, x, pme, Backend::reference, box), Error);
  pme.pme_order = 5, pme.ewald_tolerance = 0;
  EXPECT_THROW(evaluate(t, x, pme, Backend::reference, box), Error);
  pme.ewald_tolerance = 5e-4, pme.switch_distance = 7, pme.style = NonbondedSettings::CutoffStyle::charmm;
  EXPECT_THROW(evaluate(t, x, pme, Backend::reference, box), Error);
  pme.style = NonbondedSettings::CutoffStyle::openmm;
  if (list_gpus().empty()) EXPECT_THROW(evaluate(t, x, pme, Backend::cuda, box), Error);
  pme.ewald_alpha = -0.3;
  EXPECT_THROW(evaluate(t, x, pme, Backend::reference, box), Error);
  pme.ewald_alpha = 0.3, pme.pme_mesh = std::array<int, 3>{32, 32, 4};  // an edge shorter than the order
  EXPECT_THROW(evaluate(t, x, pme, Backend::reference, box), Error);
  pme.pme_mesh = std::array<int, 3>{32, 30, 28};
  EXPECT_NO_THROW(evaluate(t, x, pme, Backend::reference, box));
  pme.coulomb = false;
  EXPECT_THROW(evaluate(t, x, pme, Backend::reference, box), Error);  // pme without electrostatics
  // MSM: a spacing of at most half the cutoff, the openmm style.
  NonbondedSettings msm;
  msm.method = Method::msm, msm.cutoff = 9, msm.msm_spacing = 5;
  EXPECT_THROW(evaluate(t, x, msm, Backend::reference, box), Error);
  msm.msm_spacing = 2, msm.switch_distance = 7, msm.style = NonbondedSettings::CutoffStyle::charmm;
  EXPECT_THROW(evaluate(t, x, msm, Backend::reference, box), Error);
  msm.style = NonbondedSettings::CutoffStyle::openmm;
  EXPECT_NO_THROW(evaluate(t, x, msm, Backend::reference, box));
}

}  // namespace
}  // namespace nbkit::test
