// The float64 Ewald sum (md/ewald.hpp), the oracle of issue 18's particle-mesh Ewald: rock
// salt's Madelung constant, the total independent of alpha (neutral and charged systems), the
// excluded-pair correction, forces = -gradient, and OpenMM's parameter rules.
#include "md/ewald.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "nbkit/core/error.hpp"

namespace nbkit::test {
namespace {

using md::EwaldParameters;

// Converged parameters: a cutoff of half the edge, tolerance 1e-15 (alpha rc ~ 5.9; reciprocal
// terms below exp(-36) of the largest).
EwaldParameters converged(const PeriodicBox& box, double cutoff) { return md::ewald_parameters(box, cutoff, 1e-15); }

TEST(Ewald, RockSaltMadelungConstant) {
  // 3 x 3 x 3 conventional cells of NaCl (216 ions), nearest neighbours 1 A apart: the energy per
  // ion pair is -M k / r0 with M = 1.747564594633182 (Madelung's constant of rock salt).
  std::vector<Vec3> x;
  std::vector<double> q;
  const int cells = 3;
  for (int a = 0; a < 2 * cells; ++a)
    for (int b = 0; b < 2 * cells; ++b)
      for (int c = 0; c < 2 * cells; ++c) {
        x.push_back({static_cast<double>(a), static_cast<double>(b), static_cast<double>(c)});
        q.push_back((a + b + c) % 2 == 0 ? 1.0 : -1.0);
      }
  const PeriodicBox box = PeriodicBox::from_edges({2.0 * cells, 2.0 * cells, 2.0 * cells});
  const auto e = md::ewald_coulomb(x, q, box, 1.0, cells, converged(box, cells));
  EXPECT_NEAR(e.total() / (x.size() / 2.0), -1.747564594633182, 1e-11);
  EXPECT_EQ(e.background, 0.0);
  for (const Vec3& f : e.force) EXPECT_NEAR(std::abs(f.x) + std::abs(f.y) + std::abs(f.z), 0.0, 1e-10);  // symmetry
}

struct Charges {
  std::vector<Vec3> x;
  std::vector<double> q;
};

Charges random_charges(int n, const PeriodicBox& box, unsigned seed, bool neutral) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0, 1);
  Charges c;
  double sum = 0;
  for (int i = 0; i < n; ++i) {
    c.x.push_back({box.length(0) * u(rng), box.length(1) * u(rng), box.length(2) * u(rng)});
    c.q.push_back(2 * u(rng) - 1);
    sum += c.q.back();
  }
  if (neutral)
    for (double& qi : c.q) qi -= sum / n;
  return c;
}

// The split between real and reciprocal space moves with alpha; the total must not (the
// background term keeps it so for a charged system).
TEST(Ewald, TotalIsIndependentOfAlphaNeutralOrCharged) {
  const PeriodicBox box = PeriodicBox::from_edges({11.0, 12.5, 10.0});
  for (bool neutral : {true, false}) {
    const Charges c = random_charges(37, box, neutral ? 3 : 4, neutral);
    EwaldParameters wide = converged(box, 5.0), narrow = wide;
    narrow.alpha *= 1.5;
    for (int a = 0; a < 3; ++a) narrow.kmax[a] = static_cast<int>(wide.kmax[a] * 1.5) + 1;
    const auto e1 = md::ewald_coulomb(c.x, c.q, box, 332.0, 5.0, wide);
    const auto e2 = md::ewald_coulomb(c.x, c.q, box, 332.0, 5.0, narrow);
    EXPECT_GT(std::abs(e1.real - e2.real), 1.0);  // the split did move
    EXPECT_NEAR(e1.total(), e2.total(), 1e-9 * std::abs(e1.total())) << (neutral ? "neutral" : "charged");
    if (neutral) EXPECT_NEAR(e1.background, 0.0, 1e-9);
    else EXPECT_LT(e1.background, 0.0);
    for (std::size_t i = 0; i < c.x.size(); ++i)
      for (int a = 0; a < 3; ++a) EXPECT_NEAR(e1.force[i][a], e2.force[i][a], 1e-8 * 332.0);
  }
}

// An excluded pair loses exactly its nearest image's plain Coulomb energy.
TEST(Ewald, ExcludedPairsLoseTheirNearestImage) {
  const PeriodicBox box = PeriodicBox::from_edges({10.0, 10.0, 10.0});
  const Charges c = random_charges(20, box, 5, true);
  const auto p = converged(box, 5.0);
  const auto full = md::ewald_coulomb(c.x, c.q, box, 1.0, 5.0, p);
  const std::vector<std::pair<std::int32_t, std::int32_t>> excluded{{0, 1}, {7, 3}, {2, 19}};
  const auto without = md::ewald_coulomb(c.x, c.q, box, 1.0, 5.0, p, excluded);
  double direct = 0;
  for (const auto& [i, j] : excluded) {
    Vec3 d = c.x[i] - c.x[j];
    for (int a = 0; a < 3; ++a) d[a] -= 10.0 * std::nearbyint(d[a] / 10.0);
    direct += c.q[i] * c.q[j] / std::sqrt(d.x * d.x + d.y * d.y + d.z * d.z);
  }
  EXPECT_NEAR(without.total(), full.total() - direct, 1e-10 * (1 + std::abs(full.total())));
  EXPECT_NE(without.excluded, 0.0);
  EXPECT_EQ(full.excluded, 0.0);
}

TEST(Ewald, ForcesAreMinusTheGradient) {
  const PeriodicBox box = PeriodicBox::from_edges({9.0, 10.0, 11.0});
  Charges c = random_charges(12, box, 6, false);
  const auto p = md::ewald_parameters(box, 4.5, 1e-6);  // any parameters: the sum is smooth in x
  const std::vector<std::pair<std::int32_t, std::int32_t>> excluded{{0, 1}, {4, 9}};
  const auto at = md::ewald_coulomb(c.x, c.q, box, 332.0, 4.5, p, excluded);
  const double h = 1e-5;
  for (std::size_t i = 0; i < c.x.size(); ++i)
    for (int a = 0; a < 3; ++a) {
      const double keep = c.x[i][a];
      c.x[i][a] = keep + h;
      const double up = md::ewald_coulomb(c.x, c.q, box, 332.0, 4.5, p, excluded).total();
      c.x[i][a] = keep - h;
      const double down = md::ewald_coulomb(c.x, c.q, box, 332.0, 4.5, p, excluded).total();
      c.x[i][a] = keep;
      // The real-space cutoff makes the energy jump where a pair crosses it (by erfc(alpha rc),
      // ~1e-6 of a pair here): no pair sits within h of it in this configuration.
      EXPECT_NEAR(at.force[i][a], -(up - down) / (2 * h), 1e-5 * 332.0) << i << " " << a;
    }
}

// The reciprocal sum's virial (sum r . F) is -dE/dlambda with the positions and box scaled by
// lambda (the same vectors m: their g shrink as 1/lambda).
TEST(Ewald, ReciprocalVirialIsMinusTheDerivativeOfUniformScaling) {
  const PeriodicBox box = PeriodicBox::from_edges({9.0, 10.0, 11.0});
  const Charges c = random_charges(15, box, 7, true);
  const EwaldParameters p = md::ewald_parameters(box, 4.5, 1e-6);
  auto reciprocal_at = [&](double lambda) {
    std::vector<Vec3> x = c.x;
    for (Vec3& r : x) r = lambda * r;
    return md::ewald_coulomb(x, c.q, PeriodicBox::from_edges(lambda * box.edges()), 332.0, 4.4, p).reciprocal;
  };
  const double h = 1e-6;
  const double derivative = (reciprocal_at(1 + h) - reciprocal_at(1 - h)) / (2 * h);
  EXPECT_NEAR(md::ewald_coulomb(c.x, c.q, box, 332.0, 4.4, p).reciprocal_virial, -derivative,
              1e-6 * (1 + std::abs(derivative)));
}

// OpenMM 7.7's choices for the same box, cutoff and tolerance (getPMEParametersInContext on its
// Reference platform, boxes 30 x 33 x 27 A and 23.4 x 25.74 x 21.06 A): alpha and the mesh.
TEST(Ewald, ParametersFollowOpenMMsRules) {
  const auto p = md::ewald_parameters(PeriodicBox::from_edges({30.0, 33.0, 27.0}), 9.0, 5e-4);
  EXPECT_NEAR(p.alpha, 0.29202898720871846, 1e-15);  // OpenMM: 2.9202898720871846 / nm
  EXPECT_EQ(p.pme_grid, (std::array<int, 3>{27, 30, 25}));
  const auto q = md::ewald_parameters(PeriodicBox::from_edges({23.4, 25.74, 21.06}), 10.0, 5e-4);
  EXPECT_NEAR(q.alpha, 0.2628260884878466, 1e-15);
  EXPECT_EQ(q.pme_grid, (std::array<int, 3>{19, 21, 17}));
  for (int a = 0; a < 3; ++a) EXPECT_EQ(p.kmax[a] % 2, 1);
  EXPECT_THROW(md::ewald_parameters(PeriodicBox::from_edges({30.0, 30.0, 30.0}), 9.0, 0.0), Error);
  EXPECT_THROW(md::ewald_coulomb({{0, 0, 0}}, {1.0}, PeriodicBox::from_edges({10.0, 10.0, 10.0}), 1.0, 6.0, p), Error);
}

}  // namespace
}  // namespace nbkit::test
