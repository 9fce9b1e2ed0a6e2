// nbody::Simulation on every backend: a run split by a restart is the same bits as the run
// in one piece, the reporters hear the rows and snapshots `nbkit nbody` writes, the energy
// error is measured against the first energy (or a restart's), and bad requests are refused.
#include "nbkit/nbody/simulation.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "nbkit/core/error.hpp"

namespace nbkit::nbody {

namespace {

class NbodySimulationOn : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    std::string why;
    if (GetParam() == Backend::cuda && list_gpus(&why).empty()) GTEST_SKIP() << "no GPU: " << why;
  }
  ForceOptions options() const {
    ForceOptions o;
    o.backend = GetParam();
    o.precision = Precision::double_;
    o.threads = 2;
    return o;
  }
};

}  // namespace

// 300 bodies (not a multiple of any SIMD width or block), 24 steps in one run, and 10 + 14
// steps across a restart from the bodies at step 10: every position and velocity the same bits.
TEST_P(NbodySimulationOn, ARunSplitByARestartIsTheSameBits) {
  const Bodies start = plummer(300, 4);
  const double dt = 1.0 / 256;
  Simulation whole(start, dt, options());
  whole.run_to(24);
  Simulation first_half(start, dt, options());
  first_half.run_to(10);
  Simulation second_half(first_half.bodies(), dt, options(), 10, first_half.initial_energy());
  second_half.run_to(24);
  EXPECT_EQ(second_half.step(), 24);
  EXPECT_EQ(whole.bodies().x, second_half.bodies().x);
  EXPECT_EQ(whole.bodies().vz, second_half.bodies().vz);
  EXPECT_EQ(whole.last_diagnostics().total, second_half.last_diagnostics().total);
  EXPECT_EQ(whole.initial_energy(), second_half.initial_energy());
  // Leapfrog at dt 1/256 on 300 bodies softened at 0.01: close pairs dominate the error,
  // 3.4e-5 measured here (float64, every backend); an integrator broken by the split, or an
  // energy measured against the wrong reference, is off by orders of magnitude.
  EXPECT_LT(whole.largest_energy_error(), 1e-4);
  EXPECT_GT(whole.largest_energy_error(), 0);
}

TEST_P(NbodySimulationOn, ReportersHearTheRowsAndSnapshotsOfTheCommand) {
  Simulation simulation(plummer(64, 5), 1.0 / 128, options());
  std::vector<std::int64_t> rows, snapshots;
  std::vector<double> fractions;
  Reporters r;
  r.diagnostics_every = 4;
  r.diagnostics = [&](const Diagnostics& d, std::int64_t step) {
    rows.push_back(step);
    EXPECT_DOUBLE_EQ(d.time, static_cast<double>(step) / 128);
  };
  r.snapshot_every = 5;
  r.snapshot_at_start = true;
  r.snapshot = [&](const Bodies& b, std::int64_t step) {
    snapshots.push_back(step);
    EXPECT_EQ(b.size(), 64u);
  };
  r.progress = [&](double f) { fractions.push_back(f); };
  const RunSummary summary = simulation.run_to(10, r);
  EXPECT_EQ(rows, (std::vector<std::int64_t>{0, 4, 8, 10}));
  EXPECT_EQ(snapshots, (std::vector<std::int64_t>{0, 5, 10}));
  ASSERT_FALSE(fractions.empty());
  EXPECT_TRUE(std::is_sorted(fractions.begin(), fractions.end()));
  EXPECT_DOUBLE_EQ(fractions.back(), 1.0);
  EXPECT_EQ(summary.first_step, 0);
  EXPECT_EQ(summary.last_step, 10);
  EXPECT_EQ(summary.bodies, 64);
  EXPECT_THROW(simulation.run_to(9), Error);  // behind the present step
  r.diagnostics_every = 0;
  EXPECT_THROW(simulation.run_to(12, r), Error);
}

INSTANTIATE_TEST_SUITE_P(Backends, NbodySimulationOn, ::testing::Values(Backend::reference, Backend::cpu, Backend::cuda),
                         [](const auto& info) { return to_string(info.param); });

TEST(NbodySimulation, BadRequestsAreRefused) {
  ForceOptions o;
  o.backend = Backend::cpu;
  EXPECT_THROW(Simulation(plummer(8, 1), 0.0, o), Error);
  EXPECT_THROW(Simulation(plummer(8, 1), 0.01, o, -1), Error);
  EXPECT_THROW(Simulation(plummer(8, 1), 0.01, o, 0, std::nan("")), Error);
  Bodies bad = plummer(8, 1);
  bad.mass[2] = -1;
  Simulation simulation(bad, 0.01, o);
  EXPECT_THROW(simulation.run_to(1), Error);  // the force engine refuses the bodies
}

}  // namespace nbkit::nbody
