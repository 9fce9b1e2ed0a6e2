// Smooth particle-mesh Ewald's reciprocal sum on the CPU (md/pme.hpp) against the float64 Ewald
// sum's (md/ewald.hpp): the B-splines, energy and forces converging with the mesh and the
// order, the virial as -dE/dlambda, and the same bits on every run.
#include "md/bspline.hpp"
#include "md/pme.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <random>

#include "md/ewald.hpp"
#include "nbkit/core/error.hpp"

namespace nbkit::test {
namespace {

TEST(Pme, BsplinesAreCardinalAndSumToOne) {
  // M_4 by its pieces (Essmann et al. eq. 4.1's recurrence, written out).
  auto m4 = [](double x) {
    if (x < 1) return x * x * x / 6;
    if (x < 2) return (-3 * x * x * x + 12 * x * x - 12 * x + 4) / 6;
    if (x < 3) return (3 * x * x * x - 24 * x * x + 60 * x - 44) / 6;
    return (4 - x) * (4 - x) * (4 - x) / 6;
  };
  for (double w : {0.0, 0.13, 0.5, 0.77, 0.999}) {
    double value[8], derivative[8];
    md::bspline_weights(4, w, value, derivative);
    for (int j = 0; j < 4; ++j) {
      EXPECT_NEAR(value[j], m4(w + j), 1e-14) << w << " " << j;
      EXPECT_NEAR(derivative[j], (m4(w + j + 1e-6) - m4(w + j - 1e-6)) / 2e-6, 1e-8) << w << " " << j;
    }
    for (int order : {4, 5, 6}) {
      md::bspline_weights(order, w, value, derivative);
      double sum = 0, slope = 0;
      for (int j = 0; j < order; ++j) sum += value[j], slope += derivative[j];
      EXPECT_NEAR(sum, 1.0, 1e-15);
      EXPECT_NEAR(slope, 0.0, 1e-14);
    }
  }
}

struct PmeCharges {
  std::vector<Vec3> x;
  std::vector<double> q;
};

PmeCharges random_neutral(int n, const PeriodicBox& box, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0, 1);
  PmeCharges c;
  double sum = 0;
  for (int i = 0; i < n; ++i) {
    c.x.push_back({box.lo[0] + box.length(0) * u(rng), box.lo[1] + box.length(1) * u(rng),
                   box.lo[2] + box.length(2) * u(rng)});
    c.q.push_back(2 * u(rng) - 1);
    sum += c.q.back();
  }
  for (double& q : c.q) q -= sum / n;
  return c;
}

// Relative errors of PME's reciprocal energy and forces (RMS over the force's RMS) against the
// Ewald sum's, for meshes of `per_angstrom` points per A.
std::pair<double, double> pme_error(const PmeCharges& c, const PeriodicBox& box, double alpha, int order, double per_angstrom) {
  md::EwaldParameters p{alpha, {20, 20, 20}, {}};  // |m| < 20: terms below exp(-(pi 20 / (alpha L))^2) ~ 1e-40
  const auto ewald = md::ewald_coulomb(c.x, c.q, box, 1.0, 0.5 * std::min({box.length(0), box.length(1), box.length(2)}), p);
  std::array<int, 3> grid;
  for (int a = 0; a < 3; ++a) grid[a] = static_cast<int>(std::ceil(per_angstrom * box.length(a)));
  md::PmeCpu pme(grid, order, alpha, 2);
  const auto ours = pme.evaluate(c.x, c.q, box, 1.0);
  double diff = 0, norm = 0;
  for (std::size_t i = 0; i < c.x.size(); ++i)
    for (int a = 0; a < 3; ++a) {
      diff += std::pow(ours.force[i][a] - ewald.reciprocal_force[i][a], 2);
      norm += std::pow(ewald.reciprocal_force[i][a], 2);
    }
  return {std::abs(ours.energy - ewald.reciprocal) / std::abs(ewald.reciprocal), std::sqrt(diff / norm)};
}

// The mesh's error falls about as h^order (Essmann et al. section 5): with alpha = 0.35 / A (a
// 9 A cutoff at tolerance ~1e-5), 2 points per A give force errors of 2.6e-4, 1.1e-5, 1.5e-6 for
// orders 4, 5, 6 (measured), and 4 points per A cut them 8, 22 and 33 times. Bounds: twice the
// measured errors at 2 points per A, a factor 5 for the finer mesh, and every order better
// than the one below. The table is printed for docs/methods.md.
TEST(Pme, ReciprocalSumConvergesToEwaldsWithMeshAndOrder) {
  const PeriodicBox box{{-3.0, 1.0, 0.5}, {17.0, 22.5, 19.0}};  // 20 x 21.5 x 18.5 A, not at the origin
  const PmeCharges c = random_neutral(60, box, 11);
  const double alpha = 0.35;
  double previous_force = 1;
  for (int order : {4, 5, 6}) {
    const auto [e2, f2] = pme_error(c, box, alpha, order, 2.0);
    const auto [e4, f4] = pme_error(c, box, alpha, order, 4.0);
    std::printf("  PME order %d, alpha %.2f/A: 2 points/A energy %.1e forces %.1e; 4 points/A energy %.1e forces %.1e\n",
                order, alpha, e2, f2, e4, f4);
    EXPECT_LT(f2, order == 4 ? 5e-4 : order == 5 ? 2.5e-5 : 3e-6) << order;
    EXPECT_LT(f4, f2 / 5) << order;
    EXPECT_LT(e4, 5e-6) << order;
    EXPECT_LT(f2, previous_force) << order;  // a higher order is more accurate on the same mesh
    previous_force = f2;
  }
}

TEST(Pme, VirialIsMinusTheDerivativeOfUniformScaling) {
  const PeriodicBox box = PeriodicBox::from_edges({15.0, 16.0, 17.0});
  const PmeCharges c = random_neutral(30, box, 12);
  md::PmeCpu pme({24, 25, 27}, 5, 0.4, 1);
  auto energy_at = [&](double lambda) {
    std::vector<Vec3> x = c.x;
    for (Vec3& p : x) p = lambda * p;
    return pme.evaluate(x, c.q, PeriodicBox::from_edges(lambda * box.edges()), 332.0).energy;
  };
  const double h = 1e-6;
  const double derivative = (energy_at(1 + h) - energy_at(1 - h)) / (2 * h);
  const auto at = pme.evaluate(c.x, c.q, box, 332.0);
  EXPECT_NEAR(at.virial, -derivative, 1e-6 * (1 + std::abs(derivative)));
}

TEST(Pme, SameBitsEveryRunAndRefusals) {
  const PeriodicBox box = PeriodicBox::from_edges({12.0, 12.0, 12.0});
  const PmeCharges c = random_neutral(25, box, 13);
  md::PmeCpu pme({16, 16, 16}, 5, 0.4, 2);
  const auto a = pme.evaluate(c.x, c.q, box, 1.0), b = pme.evaluate(c.x, c.q, box, 1.0);
  EXPECT_EQ(a.energy, b.energy);
  for (std::size_t i = 0; i < c.x.size(); ++i) EXPECT_EQ(a.force[i].x, b.force[i].x);
  EXPECT_THROW(md::PmeCpu({16, 16, 16}, 3, 0.4, 1), Error);
  EXPECT_THROW(md::PmeCpu({16, 4, 16}, 5, 0.4, 1), Error);
  EXPECT_THROW(md::PmeCpu({16, 16, 16}, 5, 0.0, 1), Error);
}

}  // namespace
}  // namespace nbkit::test
