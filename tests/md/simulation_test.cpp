// md::Simulation on every backend against its float64 reference engine (the maps' habit: one
// test body per property, run for each backend; CUDA's where a GPU is usable): NVE, Langevin
// and charged runs step by step, the reporters' rows and frames, and the backend choice.
#include "nbkit/md/simulation.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "md/md_test_support.hpp"
#include "nbkit/core/error.hpp"

namespace nbkit::md {

namespace {

using test::liquid;
using test::two_type_field;

class MdSimulationOn : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    std::string why;
    if (GetParam() == Backend::cuda && list_gpus(&why).empty()) GTEST_SKIP() << "no GPU: " << why;
  }
  // The backend under test, in float64 (the GPU too: these tests compare arithmetic, not
  // precision, so the tolerances below are rounding in a different summation order).
  SimulationOptions options() const {
    SimulationOptions o;
    o.backend = GetParam();
    if (GetParam() == Backend::cuda) o.precision = Precision::double_;
    o.threads = 2;
    return o;
  }
};

SimulationOptions reference_options() {
  SimulationOptions o;
  o.backend = Backend::reference;
  return o;
}

struct Recorded {
  std::vector<Thermo> rows;
  std::vector<std::int64_t> frame_steps;
  std::vector<System> frames;
};

Reporters recording(Recorded& r, std::int64_t thermo_every, std::int64_t frame_every) {
  Reporters reporters;
  reporters.thermo_every = thermo_every;
  reporters.thermo = [&r](const Thermo& t) { r.rows.push_back(t); };
  reporters.frame_every = frame_every;
  reporters.frame = [&r](const System& s, std::int64_t step) {
    r.frame_steps.push_back(step);
    r.frames.push_back(s);
  };
  return reporters;
}

// Largest distance between the same atom in two states, through the periodic box (the
// engines wrap atoms into the box at different moments).
double largest_displacement(const System& a, const System& b) {
  double worst = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    double d[3] = {a.x[i] - b.x[i], a.y[i] - b.y[i], a.z[i] - b.z[i]};
    for (int axis = 0; axis < 3; ++axis) d[axis] -= a.box.length(axis) * std::round(d[axis] / a.box.length(axis));
    worst = std::max(worst, std::sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]));
  }
  return worst;
}

// Same thermo rows within `tolerance` relative (of the quantity, or 1 where it is near zero).
void expect_same_rows(const Recorded& a, const Recorded& b, double tolerance) {
  ASSERT_EQ(a.rows.size(), b.rows.size());
  for (std::size_t k = 0; k < a.rows.size(); ++k) {
    const Thermo &x = a.rows[k], &y = b.rows[k];
    EXPECT_EQ(x.step, y.step);
    EXPECT_NEAR(x.potential, y.potential, tolerance * std::max(1.0, std::fabs(y.potential))) << "step " << y.step;
    EXPECT_NEAR(x.kinetic, y.kinetic, tolerance * std::max(1.0, std::fabs(y.kinetic))) << "step " << y.step;
    EXPECT_NEAR(x.pressure, y.pressure, tolerance * std::max(1.0, std::fabs(y.pressure))) << "step " << y.step;
  }
}

}  // namespace

// 256 atoms of a two-type liquid at in.lj's state (box 6.7 sigma: the GPU engine's minimum
// image holds), 60 steps with list rebuilds. float64 everywhere: the engines differ in summation
// order only, ~1e-15 a force, grown by the liquid's chaos over 60 steps to well under 1e-9.
TEST_P(MdSimulationOn, NveStepsMatchTheReferenceEngine) {
  System s = liquid(4, 5);
  assign_velocities(s, 1.44, 11);
  Integrator verlet;
  verlet.timestep = 0.005;
  Recorded expected, got;
  Simulation reference(s, two_type_field(), verlet, reference_options());
  reference.run(60, recording(expected, 10, 20));
  Simulation simulation(s, two_type_field(), verlet, options());
  EXPECT_EQ(simulation.backend(), GetParam());
  simulation.run(60, recording(got, 10, 20));
  expect_same_rows(got, expected, 1e-9);
  ASSERT_EQ(got.frame_steps, (std::vector<std::int64_t>{0, 20, 40, 60}));
  for (std::size_t k = 0; k < got.frames.size(); ++k)
    EXPECT_LT(largest_displacement(got.frames[k], expected.frames[k]), 1e-9) << "frame " << k;
  EXPECT_LT(largest_displacement(simulation.state(), reference.state()), 1e-9);
  if (GetParam() != Backend::reference) EXPECT_GT(simulation.list_builds(), 1);
  Forces a, b;
  simulation.forces(a);
  reference.forces(b);
  test::expect_same_forces(a, b, 1e-9, "forces after 60 steps");
}

// The thermostat's random numbers are counter-based (atom, call): every engine draws the same.
TEST_P(MdSimulationOn, LangevinStepsMatchTheReferenceEngine) {
  System s = liquid(4, 6);
  assign_velocities(s, 1.0, 12);
  Integrator langevin;
  langevin.timestep = 0.005;
  langevin.langevin = Integrator::LangevinSettings{1.5, 0.5, 77};
  Recorded expected, got;
  Simulation(s, two_type_field(), langevin, reference_options()).run(40, recording(expected, 5, 0));
  Simulation(s, two_type_field(), langevin, options()).run(40, recording(got, 5, 0));
  expect_same_rows(got, expected, 1e-9);
}

// Charges with shifted-force Coulomb to a longer cutoff than the Lennard-Jones one.
TEST_P(MdSimulationOn, ChargedStepsMatchTheReferenceEngine) {
  System s = test::charged_liquid(4, 7);
  assign_velocities(s, 1.2, 13);
  ForceField field = two_type_field();
  field.coulomb_cutoff = 2.8;
  Integrator verlet;
  verlet.timestep = 0.004;
  Recorded expected, got;
  Simulation(s, field, verlet, reference_options()).run(30, recording(expected, 10, 0));
  Simulation(s, field, verlet, options()).run(30, recording(got, 10, 0));
  expect_same_rows(got, expected, 1e-9);
}

// Uncharged atoms under a field whose Coulomb cutoff is longer than the Lennard-Jones one
// (lj/cut/coul/dsf over an atomic data file): the list reaches further, Lennard-Jones must
// not (the GPU kernels once took the longer reach for the LJ cutoff).
TEST_P(MdSimulationOn, UnchargedAtomsWithALongerCoulombCutoffKeepTheLennardJonesCutoff) {
  System s = liquid(4, 10);
  assign_velocities(s, 1.2, 15);
  ForceField field = two_type_field();
  field.coulomb_cutoff = 3.0;
  Recorded expected, got;
  Simulation(s, field, Integrator{}, reference_options()).run(20, recording(expected, 5, 0));
  Simulation(s, field, Integrator{}, options()).run(20, recording(got, 5, 0));
  expect_same_rows(got, expected, 1e-9);
}

// Rows at the first step of each run, every thermo_every steps and the last; frames at step 0
// and every frame_every steps, counted across runs; progress to 1.
TEST_P(MdSimulationOn, ReportersHearTheRowsAndFramesLammpsWouldPrint) {
  System s = liquid(4, 8);
  assign_velocities(s, 1.0, 14);
  Simulation simulation(s, two_type_field(), Integrator{}, options());
  Recorded r;
  std::vector<double> fractions;
  Reporters reporters = recording(r, 4, 3);
  reporters.progress = [&](double f) { fractions.push_back(f); };
  const RunSummary first = simulation.run(10, reporters);
  EXPECT_EQ(first.steps, 10);
  EXPECT_EQ(first.atoms, 256);
  std::vector<std::int64_t> steps;
  for (const Thermo& t : r.rows) steps.push_back(t.step);
  EXPECT_EQ(steps, (std::vector<std::int64_t>{0, 4, 8, 10}));
  EXPECT_EQ(r.frame_steps, (std::vector<std::int64_t>{0, 3, 6, 9}));
  ASSERT_EQ(fractions.size(), 10u);
  EXPECT_EQ(fractions.back(), 1.0);
  r = {};
  simulation.run(5, recording(r, 4, 3));  // steps 11..15
  steps.clear();
  for (const Thermo& t : r.rows) steps.push_back(t.step);
  EXPECT_EQ(steps, (std::vector<std::int64_t>{10, 12, 15}));
  EXPECT_EQ(r.frame_steps, (std::vector<std::int64_t>{12, 15}));
  EXPECT_EQ(simulation.step_count(), 15);
  EXPECT_EQ(simulation.thermo().step, 15);
  EXPECT_THROW(simulation.run(-1), Error);
}

// Two atoms on one spot: the first row is not finite, and the run says so after the first
// frame (the outputs keep it).
TEST_P(MdSimulationOn, AStateThatIsNotFiniteEndsTheRun) {
  System s = liquid(4, 9);
  s.x[1] = s.x[0], s.y[1] = s.y[0], s.z[1] = s.z[0];
  Simulation simulation(s, two_type_field(), Integrator{}, options());
  Recorded r;
  try {
    simulation.run(5, recording(r, 1, 1));
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("step 0: the energy or pressure is not finite"), std::string::npos) << e.what();
  }
  EXPECT_EQ(r.frame_steps, (std::vector<std::int64_t>{0}));
  EXPECT_TRUE(r.rows.empty());
}

INSTANTIATE_TEST_SUITE_P(Backends, MdSimulationOn, ::testing::Values(Backend::reference, Backend::cpu, Backend::cuda),
                         [](const auto& info) { return to_string(info.param); });

// The one backend rule: auto takes the GPU only for boxes its minimum image holds; requests
// that cannot be met are refused before anything runs.
TEST(MdSimulationBackend, RequestsAreMetOrRefused) {
  const System small = liquid(2, 1);  // 3.4 sigma: shorter than 2 (2.5 + 0.3)
  const ForceField field = two_type_field();
  SimulationOptions o;
  std::string notice;
  EXPECT_NE(choose_backend(small, field, o, &notice), Backend::cuda);
  if (build_info().cuda_compiled) EXPECT_FALSE(notice.empty());
  o.backend = Backend::reference;
  EXPECT_EQ(choose_backend(small, field, o), Backend::reference);
  o.precision = Precision::single;
  EXPECT_THROW(choose_backend(small, field, o), Error);  // the reference computes in double
  o.backend = Backend::cpu;
  EXPECT_THROW(choose_backend(small, field, o), Error);
  o.precision.reset();
  o.gpus = {0};
  EXPECT_THROW(choose_backend(small, field, o), Error);  // --gpus with the CPU
  o.backend = Backend::cuda;
  o.gpus = {0, 1};
  EXPECT_THROW(choose_backend(small, field, o), Error);  // MD runs on one GPU
  std::string why;
  if (list_gpus(&why).empty()) {
    o.gpus.clear();
    EXPECT_THROW(choose_backend(small, field, o), Error);
  }
  Integrator bad;
  bad.timestep = -1;
  EXPECT_THROW(Simulation(small, field, bad, reference_options()), Error);
}

}  // namespace nbkit::md
