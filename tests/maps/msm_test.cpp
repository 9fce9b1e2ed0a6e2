// The multilevel summation method: its basis functions, one charge against q/r, and maps
// against the exact direct sum at the documented accuracy (docs/methods.md's table).
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "maps/map_test_support.hpp"
#include "maps/msm/msm.hpp"
#include "nbkit/core/error.hpp"
#include "nbkit/io/pqr.hpp"
#include "nbkit/maps.hpp"
#include "test_support.hpp"

namespace nbkit {

namespace {

MapOptions msm_options(Backend backend, MsmInterpolation interpolation = MsmInterpolation::cubic, double spacing = 0,
                       Smoothing splitting = Smoothing::taylor2) {
  MapOptions o = test::with(MapMethod::msm, backend);
  o.msm_interpolation = interpolation;
  o.msm_spacing = spacing;
  o.msm_splitting = splitting;
  return o;
}

// The accuracy the docs promise (relative RMS against the exact sum on protein maps,
// measured 1.0e-3 to 1.2e-3 and 6e-5 to 8e-5 by bench_map_msm): the default setting and the
// high-accuracy one.
constexpr double kDefaultAccuracy = 5e-3;
constexpr double kHighAccuracy = 1e-4;

class MsmMaps : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    std::string why;
    if (GetParam() == Backend::cuda && list_gpus(&why).empty()) GTEST_SKIP() << "no GPU: " << why;
  }
};

}  // namespace

TEST(MsmBasis, InterpolatesAndReproducesPolynomials) {
  for (const MsmInterpolation ip : {MsmInterpolation::cubic, MsmInterpolation::quintic}) {
    const int support = maps::msm::basis_support(ip);
    EXPECT_EQ(maps::msm::basis(ip, 0.0), 1.0);
    for (int k = 1; k <= support; ++k) {
      EXPECT_NEAR(maps::msm::basis(ip, k), 0.0, 1e-15);
      EXPECT_NEAR(maps::msm::basis(ip, -k), 0.0, 1e-15);
    }
    EXPECT_EQ(maps::msm::basis(ip, support + 0.01), 0.0);
    // sum_k k^p Phi(t - k) = t^p for the degrees the interpolation reproduces (cubic: up
    // to 2, quintic: up to 4).
    const int degree = ip == MsmInterpolation::cubic ? 2 : 4;
    for (double t = -1.7; t < 2.0; t += 0.173)
      for (int p = 0; p <= degree; ++p) {
        double sum = 0;
        for (int k = -10; k <= 10; ++k) sum += std::pow(k, p) * maps::msm::basis(ip, t - k);
        EXPECT_NEAR(sum, std::pow(t, p), 1e-12) << to_string(ip) << " degree " << p << " at " << t;
      }
  }
}

TEST(MsmBasis, SplittingKernelIsSmoothAndExactBeyondTheCutoff) {
  for (const Smoothing s : {Smoothing::taylor1, Smoothing::taylor2, Smoothing::taylor3}) {
    EXPECT_DOUBLE_EQ(maps::msm::smoothed_kernel(s, 10, 12), 1.0 / 12);
    EXPECT_NEAR(maps::msm::smoothed_kernel(s, 10, 10 - 1e-9), 0.1, 1e-9);
    EXPECT_LT(maps::msm::smoothed_kernel(s, 10, 0), 0.25);  // bounded at r = 0
  }
}

TEST_P(MsmMaps, OneChargeIsCoulombsLawWithinTheAccuracy) {
  // A unit charge off the grid, lattice points from 0.7 A to 40 A away.
  Atoms atoms;
  atoms.push_back({0.37, -0.21, 0.55}, 1.0, 1.5);
  Lattice lattice;
  lattice.origin = {-20, -14.5, -31};
  lattice.spacing = 1.3;
  lattice.dims = {31, 23, 48};
  const auto msm = test::run(atoms, lattice, msm_options(GetParam()));
  const double prefactor = units::potential_prefactor(units::PotentialUnit::kT_per_e, 1.0, units::default_temperature);
  double worst = 0;
  for (std::int64_t i = 0; i < lattice.dims[0]; ++i)
    for (std::int64_t j = 0; j < lattice.dims[1]; ++j)
      for (std::int64_t k = 0; k < lattice.dims[2]; ++k) {
        const double r = norm(lattice.point(i, j, k) - atoms.position(0));
        const double exact = prefactor / r;
        worst = std::max(worst, std::fabs(msm[static_cast<std::size_t>(lattice.index(i, j, k))] - exact) / exact);
      }
  // The smooth part's error is at most ~1% of 1/r (at r ~ 2 cutoffs, where 1/r is small);
  // cubic on a 2 A grid with a 12 A cutoff gives 0.3% here.
  EXPECT_LT(worst, 1e-2);
  std::printf("[ accuracy ] msm one charge: largest pointwise relative error %.2e\n", worst);
}

TEST_P(MsmMaps, RealProteinsAtTheDocumentedAccuracy) {
  for (const char* name : {"1a63.pqr", "hca.pqr"}) {
    const Atoms atoms = io::read_pqr(test::data_file(name));
    const Lattice lattice = lattice_around(atoms, 1.7, 6.0);
    MapOptions exact = test::with(MapMethod::direct, Backend::cpu, Precision::double_);
    const auto reference = test::run(atoms, lattice, exact);
    const double default_error = test::relative_rms(test::run(atoms, lattice, msm_options(GetParam())), reference);
    const double high_error = test::relative_rms(
        test::run(atoms, lattice, msm_options(GetParam(), MsmInterpolation::quintic, 1.5, Smoothing::taylor3)),
        reference);
    EXPECT_LT(default_error, kDefaultAccuracy) << name;
    EXPECT_LT(high_error, kHighAccuracy) << name;
    std::printf("[ accuracy ] msm %s %s: relative RMS default (cubic, 2 A) %.2e, quintic 1.5 A %.2e\n",
                to_string(GetParam()).c_str(), name, default_error, high_error);
  }
}

TEST_P(MsmMaps, AwkwardLatticesAndMoleculesOffCentre) {
  // Near-neutral random charges in a 14 A blob; lattices that cut through it, sit beside it,
  // or are much larger than it, with sizes far from powers of two.
  Atoms atoms = test::random_atoms(300, {3, -2, 5}, {17, 12, 19}, 61);
  struct Case {
    Vec3 origin;
    double spacing;
    std::array<std::int64_t, 3> dims;
  };
  for (const Case& c : {Case{{8, 2, 9}, 0.9, {13, 7, 29}}, Case{{-30, 20, -3}, 1.1, {17, 5, 3}},
                        Case{{-40, -45, -38}, 3.1, {31, 33, 29}}, Case{{10, 5, 12}, 0.6, {1, 1, 1}}}) {
    Lattice lattice;
    lattice.origin = c.origin;
    lattice.spacing = c.spacing;
    lattice.dims = c.dims;
    const auto reference = test::run(atoms, lattice, test::with(MapMethod::direct, Backend::cpu, Precision::double_));
    const auto magnitude =
        test::run(test::with_absolute_charges(atoms), lattice, test::with(MapMethod::direct, Backend::cpu, Precision::double_));
    const auto msm = test::run(atoms, lattice, msm_options(GetParam()));
    EXPECT_LT(test::error_relative_to(msm, reference, magnitude), kDefaultAccuracy)
        << c.dims[0] << "x" << c.dims[1] << "x" << c.dims[2];
  }
}

TEST_P(MsmMaps, RowsAloneGiveTheWholeMapsValues) {
  const Atoms atoms = io::read_pqr(test::data_file("1a63.pqr"));
  const Lattice lattice = lattice_around(atoms, 2.1, 3.0);
  const auto whole = test::run(atoms, lattice, msm_options(GetParam()));
  const std::int64_t first = lattice.rows() / 3, last = first + 17;
  const auto part = test::run_rows(atoms, lattice, msm_options(GetParam()), first, last);
  for (std::size_t p = 0; p < part.size(); ++p)
    EXPECT_NEAR(part[p], whole[static_cast<std::size_t>(first * lattice.dims[2]) + p], 1e-9 * std::fabs(part[p]) + 1e-12);
}

INSTANTIATE_TEST_SUITE_P(Backends, MsmMaps, ::testing::Values(Backend::reference, Backend::cpu, Backend::cuda),
                         [](const auto& info) {
                           return info.param == Backend::cuda ? std::string("Cuda") : to_string(info.param);
                         });

// The lattice-cutoff sums on the GPU against the CPU's: both float64, the same terms in the
// same order per grid point, so only the short range (GPU vs CPU float64, other summation
// orders) and FMA contraction differ: 1e-11 relative RMS with room.
TEST(MsmCuda, LongRangeOnTheGpuMatchesTheCpu) {
  std::string why;
  if (list_gpus(&why).empty()) GTEST_SKIP() << "no GPU: " << why;
  const Atoms atoms = io::read_pqr(test::data_file("hca.pqr"));
  const Lattice lattice = lattice_around(atoms, 1.3, 9.0);
  for (const MsmInterpolation ip : {MsmInterpolation::cubic, MsmInterpolation::quintic}) {
    MapOptions cpu = msm_options(Backend::cpu, ip, 1.5);
    cpu.precision = Precision::double_;
    MapOptions gpu = cpu;
    gpu.backend = Backend::cuda;
    const auto on_cpu = test::run(atoms, lattice, cpu), on_gpu = test::run(atoms, lattice, gpu);
    EXPECT_LT(test::relative_rms(on_gpu, on_cpu), 1e-11) << to_string(ip);
  }
}

TEST(MsmDeterminism, SameBitsForOneAndTwoThreads) {
  const Atoms atoms = io::read_pqr(test::data_file("hca.pqr"));
  const Lattice lattice = lattice_around(atoms, 1.9, 5.0);
  MapOptions one = msm_options(Backend::cpu, MsmInterpolation::quintic);
  one.threads = 1;
  MapOptions two = one;
  two.threads = 2;
  EXPECT_EQ(test::run(atoms, lattice, one), test::run(atoms, lattice, two));
}

TEST(MsmRequests, BadValuesAreRefused) {
  Atoms atoms;
  atoms.push_back({0, 0, 0}, 1, 1);
  Lattice lattice;
  lattice.dims = {3, 3, 3};
  MapOptions periodic = msm_options(Backend::cpu);
  periodic.periodic_box = Vec3{30, 30, 30};
  EXPECT_THROW(test::run(atoms, lattice, periodic), Error);
  EXPECT_THROW(test::run(atoms, lattice, msm_options(Backend::cpu, MsmInterpolation::cubic, 0, Smoothing::cutcp)), Error);
  EXPECT_THROW(test::run(atoms, lattice, msm_options(Backend::cpu, MsmInterpolation::cubic, 7.0)), Error);  // cutoff < 2h
  EXPECT_THROW(test::run(atoms, lattice, msm_options(Backend::cpu, MsmInterpolation::cubic, -1)), Error);
  EXPECT_EQ(parse_msm_interpolation("quintic"), MsmInterpolation::quintic);
  EXPECT_THROW(parse_msm_interpolation("linear"), Error);
  EXPECT_EQ(parse_map_method("msm"), MapMethod::msm);
}

}  // namespace nbkit
