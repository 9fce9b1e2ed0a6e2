// Maps against closed forms a reader can check by hand, on every backend.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "nbkit/core/error.hpp"
#include "nbkit/maps.hpp"
#include "test_support.hpp"

namespace nbkit {

namespace {
struct BackendCase {
  Backend backend;
  Precision precision;
  // float32: 1/r from rsqrt + one Newton step (~1e-7) and coordinates rounded to float32
  // (~1e-7 relative): 2e-6 per point is several times the worst case seen.
  double tolerance;
};

class HandComputed : public ::testing::TestWithParam<BackendCase> {
 protected:
  void SetUp() override {
    std::string why;
    if (GetParam().backend == Backend::cuda && list_gpus(&why).empty()) GTEST_SKIP() << "no GPU: " << why;
  }
  MapOptions options(MapMethod method) const {
    MapOptions o;
    o.method = method;
    o.backend = GetParam().backend;
    o.precision = GetParam().precision;
    o.unit = units::PotentialUnit::kcal_per_mol_per_e;
    return o;
  }
};

Lattice small_lattice() {
  Lattice lattice;
  lattice.origin = {-2, -1.5, -1};
  lattice.spacing = 0.5;
  lattice.dims = {9, 7, 5};
  return lattice;
}
}  // namespace

TEST_P(HandComputed, OneChargeIsCoulombsLaw) {
  Atoms atoms;
  const Vec3 position{0.3, 0.2, 0.1};
  atoms.push_back(position, 2.0, 1.5);
  const Map map = compute_map(atoms, small_lattice(), options(MapMethod::direct));
  for (std::int64_t i = 0; i < 9; ++i)
    for (std::int64_t j = 0; j < 7; ++j)
      for (std::int64_t k = 0; k < 5; ++k) {
        const double r = norm(map.lattice.point(i, j, k) - position);
        const double expected = units::coulomb_constant_kcal * 2.0 / r;
        EXPECT_NEAR(map.at(i, j, k), expected, GetParam().tolerance * std::fabs(expected));
      }
}

TEST_P(HandComputed, DipoleOnAxisAndZeroOnBisectingPlane) {
  Atoms atoms;
  atoms.push_back({0, 0, 0.5}, 1.0, 1.0);
  atoms.push_back({0, 0, -0.5}, -1.0, 1.0);
  Lattice lattice;
  lattice.origin = {0, 0, -10};
  lattice.spacing = 1.0;
  lattice.dims = {1, 3, 21};  // x = 0, y = 0..2, z = -10..10
  const Map map = compute_map(atoms, lattice, options(MapMethod::direct));
  const double c = units::coulomb_constant_kcal;
  for (std::int64_t k = 0; k < 21; ++k) {
    const double z = -10.0 + static_cast<double>(k);
    if (z == 0) {
      for (std::int64_t j = 0; j < 3; ++j) EXPECT_NEAR(map.at(0, j, k), 0.0, 1e-9) << "bisecting plane, y=" << j;
      continue;
    }
    // on the axis: q/|z - 1/2| - q/|z + 1/2|
    const double expected = c * (1.0 / std::fabs(z - 0.5) - 1.0 / std::fabs(z + 0.5));
    EXPECT_NEAR(map.at(0, 0, k), expected, GetParam().tolerance * c) << "z=" << z;
  }
}

TEST_P(HandComputed, DebyeHueckelClosedForm) {
  Atoms atoms;
  const Vec3 position{0.1, -0.2, 0.3};
  const double q = -1.5, a = 2.0;
  atoms.push_back(position, q, a);
  MapOptions o = options(MapMethod::mdh);
  o.dielectric = 78.54;
  o.ionic_strength = 0.3;
  const double kappa = screening_kappa(o);
  ASSERT_GT(kappa, 0.15);
  const Map map = compute_map(atoms, small_lattice(), o);
  for (std::int64_t i = 0; i < 9; ++i)
    for (std::int64_t j = 0; j < 7; ++j)
      for (std::int64_t k = 0; k < 5; ++k) {
        const double d = norm(map.lattice.point(i, j, k) - position);
        const double expected =
            units::coulomb_constant_kcal / 78.54 * q * std::exp(-kappa * (d - a)) / ((1 + kappa * a) * d);
        EXPECT_NEAR(map.at(i, j, k), expected, GetParam().tolerance * std::fabs(expected));
      }
}

TEST_P(HandComputed, ZeroIonicStrengthGivesCoulomb) {
  const Atoms atoms = test::random_atoms(50, {-3, -3, -3}, {3, 3, 3}, 7);
  MapOptions mdh = options(MapMethod::mdh), direct = options(MapMethod::direct);
  mdh.ionic_strength = 0;
  mdh.dielectric = direct.dielectric = 4.0;
  const Map a = compute_map(atoms, small_lattice(), mdh), b = compute_map(atoms, small_lattice(), direct);
  EXPECT_LT(test::relative_rms(a.values, b.values), GetParam().tolerance);
}

TEST_P(HandComputed, LatticePointOnAnAtomIsFiniteAndFeelsTheOthers) {
  Atoms atoms;
  atoms.push_back({0, 0, 0}, 1.0, 1.0);   // exactly on lattice point (4, 3, 2)
  atoms.push_back({1, 0, 0}, -2.0, 1.0);  // on lattice point (6, 3, 2)
  for (MapMethod method : {MapMethod::direct, MapMethod::mdh}) {
    const Map map = compute_map(atoms, small_lattice(), options(method));
    for (double v : map.values) ASSERT_TRUE(std::isfinite(v));
    if (method == MapMethod::direct) {
      EXPECT_NEAR(map.at(4, 3, 2), units::coulomb_constant_kcal * -2.0 / 1.0, 1e-5 * units::coulomb_constant_kcal);
      EXPECT_NEAR(map.at(6, 3, 2), units::coulomb_constant_kcal * 1.0 / 1.0, 1e-5 * units::coulomb_constant_kcal);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, HandComputed,
                         ::testing::Values(BackendCase{Backend::reference, Precision::double_, 1e-13},
                                           BackendCase{Backend::cpu, Precision::double_, 1e-13},
                                           BackendCase{Backend::cpu, Precision::single, 2e-6},
                                           BackendCase{Backend::cuda, Precision::double_, 1e-13},
                                           // MUFU rsqrt: 2^-22.9 relative, as the CPU's Newton step
                                           BackendCase{Backend::cuda, Precision::single, 2e-6}),
                         [](const auto& info) {
                           // "Cuda" capitalised: scripts/gpu-check runs '*Cuda*' under compute-sanitizer
                           const std::string backend =
                               info.param.backend == Backend::cuda ? "Cuda" : to_string(info.param.backend);
                           return backend + "_" + to_string(info.param.precision);
                         });

TEST(MapRequests, BadInputsAreRefused) {
  Atoms atoms;
  atoms.push_back({0, 0, 0}, 1, 1);
  Lattice lattice = small_lattice();
  MapOptions options;
  EXPECT_THROW(compute_map(Atoms{}, lattice, options), Error);
  Atoms nan_atoms;
  nan_atoms.push_back({std::numeric_limits<double>::quiet_NaN(), 0, 0}, 1, 1);
  EXPECT_THROW(compute_map(nan_atoms, lattice, options), Error);
  lattice.spacing = -1;
  EXPECT_THROW(compute_map(atoms, lattice, options), Error);
  if (list_gpus().empty()) {
    options.backend = Backend::cuda;
    EXPECT_THROW(compute_map(atoms, small_lattice(), options), Error);
  }
}

TEST(MapRequests, MemoryNeedIsCheckedBeforeAllocating) {
  Atoms atoms;
  atoms.push_back({0, 0, 0}, 1, 1);
  Lattice lattice;
  lattice.dims = {4096, 4096, 4096};  // 2^36 points, 512 GiB of float64
  try {
    compute_map(atoms, lattice, MapOptions{});
    FAIL() << "expected MemoryError";
  } catch (const MemoryError& error) {
    EXPECT_NE(std::string(error.what()).find("a 4096x4096x4096 lattice (68719476736 points) needs 512.00 GiB"),
              std::string::npos)
        << error.what();
  }
}

}  // namespace nbkit
