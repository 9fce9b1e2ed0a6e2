// The GPU N-body path: forces against the float64 reference at awkward sizes (tiles, blocks
// and splits of the bodies j cut at every place), the self pair masked in the potentials,
// the accelerations' bits independent of whether potentials were asked for, runs repeated
// bit for bit, bodies split over devices, energy conservation of a GPU run. Skips without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "nbkit/core/error.hpp"
#include "nbkit/nbody.hpp"
#include "nbody/nbody_test_support.hpp"

namespace nbkit::nbody {

namespace {

class CudaNbody : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    gpus_ = list_gpus(&why);
    if (gpus_.empty()) GTEST_SKIP() << "no GPU: " << why;
  }
  std::vector<GpuInfo> gpus_;
};

using nbkit::test::random_bodies;

ForceOptions on_gpu(Precision precision = Precision::single, double softening = 0.01, std::vector<int> gpus = {}) {
  ForceOptions o;
  o.backend = Backend::cuda;
  o.precision = precision;
  o.softening = softening;
  o.gpus = std::move(gpus);
  return o;
}

// Relative RMS errors of the acceleration vectors and of the potentials, over the bodies
// listed (all when empty), against float64 sums computed here for just those bodies.
std::pair<double, double> errors_against_float64(const Bodies& b, double softening, const Accelerations& a,
                                                 std::vector<std::size_t> bodies_i = {}) {
  if (bodies_i.empty())
    for (std::size_t i = 0; i < b.size(); ++i) bodies_i.push_back(i);
  double da = 0, na = 0, dp = 0, np = 0;
  for (const std::size_t i : bodies_i) {
    double ax = 0, ay = 0, az = 0, phi = 0;
    for (std::size_t j = 0; j < b.size(); ++j) {
      if (j == i) continue;
      const double dx = b.x[j] - b.x[i], dy = b.y[j] - b.y[i], dz = b.z[j] - b.z[i];
      const double u = 1 / std::sqrt(dx * dx + dy * dy + dz * dz + softening * softening);
      ax += b.mass[j] * u * u * u * dx, ay += b.mass[j] * u * u * u * dy, az += b.mass[j] * u * u * u * dz;
      phi -= b.mass[j] * u;
    }
    da += std::pow(a.ax[i] - ax, 2) + std::pow(a.ay[i] - ay, 2) + std::pow(a.az[i] - az, 2);
    na += ax * ax + ay * ay + az * az;
    dp += std::pow(a.potential[i] - phi, 2);
    np += phi * phi;
  }
  return {na > 0 ? std::sqrt(da / na) : std::sqrt(da), np > 0 ? std::sqrt(dp / np) : std::sqrt(dp)};
}

}  // namespace

namespace {

// float32 terms carry ~1e-7 relative error (rsqrt.approx: 2^-22.9), summed in float32 over
// one tile of 256 bodies and in float64 beyond: 1e-5 relative RMS bounds that with room, as
// on the CPU; float64 throughout (rsqrt within 1 ulp): 1e-12.
void expect_reference_accuracy(std::initializer_list<std::size_t> sizes) {
  for (const std::size_t n : sizes) {
    for (const bool plummer_input : {false, true}) {
      if (plummer_input && n < 2) continue;  // a Plummer sphere has two bodies at least
      const Bodies b = plummer_input ? plummer(n, 11) : random_bodies(n, static_cast<unsigned>(n));
      Accelerations single, dbl;
      accelerations(b, on_gpu(), single);
      accelerations(b, on_gpu(Precision::double_), dbl);
      const auto [acc_single, pot_single] = errors_against_float64(b, 0.01, single);
      const auto [acc_double, pot_double] = errors_against_float64(b, 0.01, dbl);
      EXPECT_LT(acc_single, 1e-5) << n;
      EXPECT_LT(pot_single, 1e-5) << n;
      EXPECT_LT(acc_double, 1e-12) << n;
      EXPECT_LT(pot_double, 1e-12) << n;
    }
  }
}

}  // namespace

// The sizes cut the 256-body tiles, the 1024-body blocks and the splits of the bodies j at
// every place. The small ones also run under compute-sanitizer's racecheck.
TEST_F(CudaNbody, MatchesTheReferenceAtSmallAwkwardSizes) {
  expect_reference_accuracy({1, 2, 3, 31, 255, 256, 257, 1023, 1025});
  // One body feels nothing: its own pair adds zero acceleration and is masked in the potential.
  Accelerations one;
  accelerations(random_bodies(1, 3), on_gpu(), one);
  EXPECT_EQ(one.ax[0], 0.0);
  EXPECT_EQ(one.potential[0], 0.0);
}

TEST_F(CudaNbody, MatchesTheReferenceAtLargerSizes) { expect_reference_accuracy({2053, 5003, 10007}); }

TEST_F(CudaNbody, LargeSystemSampledAgainstFloat64) {
  // Past one wave of blocks (300,007 bodies: 293 blocks of bodies i): 97 bodies i checked
  // against float64 sums over all j. Float32 tile sums, float64 across 1,172 tiles: the
  // error stays at the single-tile level, 1e-5 with room.
  const Bodies b = plummer(300007, 21);
  Accelerations a;
  accelerations(b, on_gpu(), a);
  std::vector<std::size_t> sample;
  for (std::size_t i = 0; i < b.size(); i += 3093) sample.push_back(i);
  sample.push_back(b.size() - 1);
  const auto [acc, pot] = errors_against_float64(b, 0.01, a, sample);
  EXPECT_LT(acc, 1e-5);
  EXPECT_LT(pot, 1e-5);
}

TEST_F(CudaNbody, SmallSofteningKeepsThePotentialAccurate) {
  // With eps = 1e-4 a body's own m/eps would be 10^4 times a neighbour's term: masked in
  // the kernel, not subtracted afterwards.
  const Bodies b = random_bodies(40, 9);
  Accelerations a;
  accelerations(b, on_gpu(Precision::single, 1e-4), a);
  EXPECT_LT(errors_against_float64(b, 1e-4, a).second, 1e-5);
}

TEST_F(CudaNbody, AccelerationsAreTheSameBitsWithOrWithoutPotentialsAndFromRunToRun) {
  for (const std::size_t n : {777, 16384, 20011}) {
    const Bodies b = plummer(n, 5);
    ForceEngine engine(on_gpu());
    Accelerations with, without, again;
    engine.compute(b, with, true);
    engine.compute(b, without, false);
    engine.compute(b, again, true);
    EXPECT_TRUE(with.has_potential);
    EXPECT_FALSE(without.has_potential);
    EXPECT_THROW(diagnose(b, without, 0), Error);
    EXPECT_EQ(with.ax, without.ax) << n;
    EXPECT_EQ(with.ay, without.ay) << n;
    EXPECT_EQ(with.az, without.az) << n;
    // A moving result would be a race.
    EXPECT_EQ(with.ax, again.ax) << n;
    EXPECT_EQ(with.potential, again.potential) << n;
    EXPECT_GT(engine.last_kernel_seconds(), 0.0);
  }
}

TEST_F(CudaNbody, BodiesSplitOverDevicesAgreeWithOneDevice) {
  // Two devices (the same one twice on a one-GPU machine: two ranges of bodies i, two
  // streams, two sets of buffers). A device's split of the bodies j follows its share of
  // bodies i, so the sums agree to float32 rounding, not bit for bit.
  const std::vector<int> two = gpus_.size() > 1 ? std::vector<int>{0, 1} : std::vector<int>{0, 0};
  for (const std::size_t n : {1, 3, 2053, 20011}) {
    const Bodies b = n < 2 ? random_bodies(n, 8) : plummer(n, 8);  // a Plummer sphere has two bodies at least
    Accelerations one_device, two_devices;
    accelerations(b, on_gpu(), one_device);
    ForceEngine engine(on_gpu(Precision::single, 0.01, two));
    engine.compute(b, two_devices, true);
    double worst = 0, scale = 0;
    for (std::size_t i = 0; i < n; ++i) {
      worst = std::max({worst, std::fabs(one_device.ax[i] - two_devices.ax[i]),
                        std::fabs(one_device.potential[i] - two_devices.potential[i])});
      scale = std::max({scale, std::fabs(one_device.ax[i]), std::fabs(one_device.potential[i])});
    }
    EXPECT_LE(worst, 1e-5 * scale) << n;
    EXPECT_NE(engine.description().find(" x "), std::string::npos) << engine.description();
  }
  EXPECT_THROW(ForceEngine(on_gpu(Precision::single, 0.01, {static_cast<int>(gpus_.size())})), Error);
}

TEST_F(CudaNbody, EnergyIsConservedOverACrossingTimeAndRunsRepeat) {
  // The CPU test's bound (eps 0.05, dt 1/256, 512 bodies: |dE/E| near 1e-5, bound 1e-4),
  // with potentials computed every 8th step only; a second run gives the same bits.
  auto run = [](Bodies b, double* worst) {
    ForceEngine engine(on_gpu(Precision::single, 0.05));
    Accelerations a;
    engine.compute(b, a, true);
    const double e0 = diagnose(b, a, 0).total, dt = 1.0 / 256;
    *worst = 0;
    for (int k = 1; k <= static_cast<int>(2 * std::sqrt(2.0) / dt); ++k) {
      const bool diagnostics = k % 8 == 0;
      leapfrog_step(b, a, dt, engine, diagnostics);
      if (diagnostics) *worst = std::max(*worst, std::fabs(diagnose(b, a, 0).total / e0 - 1));
    }
    return b;
  };
  double worst = 0, worst_again = 0;
  const Bodies first = run(plummer(512, 5), &worst), second = run(plummer(512, 5), &worst_again);
  EXPECT_LT(worst, 1e-4);
  EXPECT_EQ(first.x, second.x);
  EXPECT_EQ(first.vz, second.vz);
  std::printf("[ accuracy ] GPU plummer 512, eps 0.05, dt 1/256, one crossing time: max |dE/E| %.2e\n", worst);
}

}  // namespace nbkit::nbody
