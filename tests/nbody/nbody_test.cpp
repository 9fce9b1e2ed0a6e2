// N-body: forces against the float64 reference, conservation laws, a two-body orbit,
// energy conservation of a Plummer sphere, and its initial virial ratio.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <vector>
#include <numbers>
#include <random>

#include "nbkit/core/error.hpp"
#include "nbkit/io/snapshot.hpp"
#include "nbkit/nbody.hpp"
#include "nbody/nbody_test_support.hpp"
#include "test_support.hpp"

namespace nbkit::nbody {

namespace {

using nbkit::test::random_bodies;

ForceOptions with(Backend backend, Precision precision = Precision::single, double softening = 0.01) {
  ForceOptions o;
  o.backend = backend;
  o.precision = precision;
  o.softening = softening;
  return o;
}

// ||a - b|| / ||b|| over the acceleration vectors, and the same for the potentials.
std::pair<double, double> errors(const Accelerations& a, const Accelerations& b) {
  double da = 0, na = 0, dp = 0, np = 0;
  for (std::size_t i = 0; i < a.ax.size(); ++i) {
    da += std::pow(a.ax[i] - b.ax[i], 2) + std::pow(a.ay[i] - b.ay[i], 2) + std::pow(a.az[i] - b.az[i], 2);
    na += b.ax[i] * b.ax[i] + b.ay[i] * b.ay[i] + b.az[i] * b.az[i];
    dp += std::pow(a.potential[i] - b.potential[i], 2);
    np += b.potential[i] * b.potential[i];
  }
  return {na > 0 ? std::sqrt(da / na) : std::sqrt(da), np > 0 ? std::sqrt(dp / np) : std::sqrt(dp)};
}

}  // namespace

TEST(NbodyForces, CpuMatchesTheReferenceAtAwkwardSizes) {
  // float32 terms carry ~1e-7 relative error and are summed in float32 over 1024 bodies,
  // float64 beyond: 1e-5 relative RMS bounds both with room; float64 throughout ~1e-15.
  for (const std::size_t n : {1, 2, 3, 7, 31, 97, 1009, 2053}) {
    for (const bool plummer_input : {false, true}) {
      if (plummer_input && n < 2) continue;  // a Plummer sphere has two bodies at least
      const Bodies b = plummer_input ? plummer(n, 11) : random_bodies(n, static_cast<unsigned>(n));
      Accelerations reference, single, dbl;
      accelerations(b, with(Backend::reference), reference);
      accelerations(b, with(Backend::cpu), single);
      accelerations(b, with(Backend::cpu, Precision::double_), dbl);
      const auto [acc_single, pot_single] = errors(single, reference);
      const auto [acc_double, pot_double] = errors(dbl, reference);
      EXPECT_LT(acc_single, 1e-5) << n;
      EXPECT_LT(pot_single, 1e-5) << n;
      EXPECT_LT(acc_double, 1e-12) << n;
      EXPECT_LT(pot_double, 1e-12) << n;
    }
  }
}

TEST(NbodyForces, OneBodyFeelsNothingAndSmallSofteningStaysAccurate) {
  Bodies one = random_bodies(1, 3);
  Accelerations a;
  accelerations(one, with(Backend::cpu), a);
  EXPECT_EQ(a.ax[0], 0.0);
  EXPECT_EQ(a.potential[0], 0.0);
  // A body's pair with itself is masked, not subtracted: with eps = 1e-4 its m/eps would be
  // 10^4 times a neighbour's term.
  const Bodies b = random_bodies(40, 9);
  Accelerations reference, single;
  accelerations(b, with(Backend::reference, Precision::single, 1e-4), reference);
  accelerations(b, with(Backend::cpu, Precision::single, 1e-4), single);
  EXPECT_LT(errors(single, reference).second, 1e-5);
}

TEST(NbodyForces, NewtonsThirdLawInTheReference) {
  const Bodies b = plummer(500, 4);
  Accelerations a;
  accelerations(b, with(Backend::reference), a);
  double fx = 0, fy = 0, fz = 0, scale = 0;
  for (std::size_t i = 0; i < b.size(); ++i) {
    fx += b.mass[i] * a.ax[i], fy += b.mass[i] * a.ay[i], fz += b.mass[i] * a.az[i];
    scale += b.mass[i] * std::sqrt(a.ax[i] * a.ax[i] + a.ay[i] * a.ay[i] + a.az[i] * a.az[i]);
  }
  EXPECT_LT(std::sqrt(fx * fx + fy * fy + fz * fz), 1e-14 * scale);
}

TEST(NbodyForces, BadSofteningIsRefused) {
  const Bodies b = random_bodies(3, 1);
  Accelerations a;
  EXPECT_THROW(accelerations(b, with(Backend::cpu, Precision::single, 0.0), a), Error);
  EXPECT_THROW(accelerations(b, with(Backend::cpu, Precision::single, -1.0), a), Error);
}

TEST(NbodyOrbit, TwoBodiesOnACircleReturnAfterOnePeriod) {
  // Equal masses 1/2 at x = +-1/2 on circular orbits about their centre. With softening
  // eps the pull at separation 1 is m / (1 + eps^2)^(3/2); v^2 / r = that, r = 1/2.
  const double eps = 1e-3, m = 0.5, r = 0.5;
  const double pull = m / std::pow(1 + eps * eps, 1.5);
  const double v = std::sqrt(pull * r), period = 2 * std::numbers::pi * r / v;
  Bodies b;
  b.resize(2);
  b.x = {r, -r}, b.y = {0, 0}, b.z = {0, 0};
  b.vx = {0, 0}, b.vy = {v, -v}, b.vz = {0, 0};
  b.mass = {m, m};
  // Distance from the start after one period with `steps` steps.
  auto miss = [&](Precision precision, int steps) {
    Bodies s = b;
    const ForceOptions o = with(Backend::cpu, precision, eps);
    Accelerations a;
    accelerations(s, o, a);
    for (int k = 0; k < steps; ++k) leapfrog_step(s, a, period / steps, o);
    return std::hypot(s.x[0] - r, s.y[0]) + std::hypot(s.x[1] + r, s.y[1]);
  };
  // Leapfrog is second order: halving dt quarters the miss (a phase lag of about
  // 2 pi (omega dt)^2 / 3 per orbit: 2e-5 of the radius at 2000 steps).
  const double coarse = miss(Precision::double_, 2000), fine = miss(Precision::double_, 4000);
  EXPECT_LT(coarse, 1e-4 * r);
  EXPECT_NEAR(coarse / fine, 4.0, 0.2);
  EXPECT_LT(miss(Precision::single, 2000), 1e-4 * r);  // float32 forces: the same orbit
}

TEST(NbodyPlummer, InitialConditionsAreInVirialEquilibriumInHenonUnits) {
  const Bodies b = plummer(4096, 2);
  Accelerations a;
  accelerations(b, with(Backend::cpu, Precision::double_, 1e-4), a);
  const Diagnostics d = diagnose(b, a, 0);
  // Sampling noise of 4096 bodies: a few percent.
  EXPECT_NEAR(d.virial_ratio, 0.5, 0.05);
  EXPECT_NEAR(d.total, -0.25, 0.02);
  double mass = 0;
  for (double m : b.mass) mass += m;
  EXPECT_NEAR(mass, 1.0, 1e-12);
  for (int c = 0; c < 3; ++c) EXPECT_NEAR(d.momentum[c], 0.0, 1e-15);
  EXPECT_EQ(plummer(100, 7).x, plummer(100, 7).x);  // deterministic for a seed
}

TEST(NbodyPlummer, EnergyIsConservedOverACrossingTime) {
  // Leapfrog's energy error oscillates with amplitude ~ (dt / t_close)^2, t_close ~
  // sqrt(eps^3 / m) for the closest softened encounters; with eps = 0.05 and dt = 1/256 a
  // 512-body sphere keeps |dE/E| near 1e-5: the bound 1e-4 allows for float32 forces.
  Bodies b = plummer(512, 5);
  const ForceOptions o = with(Backend::cpu, Precision::single, 0.05);
  Accelerations a;
  accelerations(b, o, a);
  const double e0 = diagnose(b, a, 0).total;
  const double dt = 1.0 / 256, crossing = 2 * std::sqrt(2.0);
  double worst = 0;
  for (int k = 0; k < static_cast<int>(crossing / dt); ++k) {
    leapfrog_step(b, a, dt, o);
    worst = std::max(worst, std::fabs(diagnose(b, a, 0).total / e0 - 1));
  }
  EXPECT_LT(worst, 1e-4);
  std::printf("[ accuracy ] plummer 512, eps 0.05, dt 1/256, one crossing time: max |dE/E| %.2e\n", worst);
}

TEST(NbodySnapshots, RoundTripKeepsEveryBit) {
  if (!io::snapshots_available()) GTEST_SKIP() << "this build has no HDF5";
  test::ScratchDir dir;
  const Bodies b = plummer(101, 8);
  io::SnapshotInfo info;
  info.time = 1.25, info.step = 160, info.dt = 1.0 / 128, info.softening = 0.02, info.seed = 8, info.initial_energy = -0.2497;
  io::write_snapshot(dir.file("s.hdf5"), b, info);
  io::SnapshotInfo back;
  const Bodies r = io::read_snapshot(dir.file("s.hdf5"), &back);
  EXPECT_EQ(r.x, b.x);
  EXPECT_EQ(r.y, b.y);
  EXPECT_EQ(r.vz, b.vz);
  EXPECT_EQ(r.mass, b.mass);
  EXPECT_EQ(back.step, 160);
  EXPECT_EQ(back.time, 1.25);
  EXPECT_EQ(back.softening, 0.02);
  EXPECT_EQ(back.initial_energy, -0.2497);
  std::ofstream(dir.file("text.hdf5")) << "not hdf5\n";
  EXPECT_THROW(io::read_snapshot(dir.file("text.hdf5")), Error);
}

}  // namespace nbkit::nbody

namespace nbkit::nbody {

// A million bodies on a few cores take minutes per evaluation: the CPU loop reports its
// progress; inputs that would poison every sum are refused, as are non-finite results.
TEST(NbodyForces, LongEvaluationsReportProgressAndBadBodiesAreRefused) {
  const Bodies b = plummer(4096, 3);
  ForceOptions options;
  options.backend = Backend::cpu;
  // Many threads racing for blocks: the first thread must still report (it once reported
  // only when the shared count landed on a multiple of its step, which it may never draw).
  options.threads = 16;
  std::vector<double> fractions;
  options.progress = [&](double f) { fractions.push_back(f); };
  ForceEngine engine(options);
  Accelerations acc;
  engine.compute(b, acc);
  ASSERT_GE(fractions.size(), 2u);
  EXPECT_TRUE(std::is_sorted(fractions.begin(), fractions.end()));
  EXPECT_EQ(fractions.back(), 1.0);
  Bodies bad = b;
  bad.mass[7] = 0;
  EXPECT_THROW(engine.compute(bad, acc), Error);
  bad = b;
  bad.z[3] = std::numeric_limits<double>::infinity();
  EXPECT_THROW(engine.compute(bad, acc), Error);
  EXPECT_THROW(plummer(1, 1), Error);
}

}  // namespace nbkit::nbody
