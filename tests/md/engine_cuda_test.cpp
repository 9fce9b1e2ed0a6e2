// The GPU MD engine: forces against the float64 all-images reference (two types, charges,
// exclusions, non-cubic boxes two cells wide, any atom count), list rows that overflow and
// grow (also inside graph steps, redone by the host), boxes too small refused, 100-step NVE and Langevin runs against the CPU path step by
// step (same list rebuilds), runs repeated bit for bit, and the energy drift over 10,000 steps in both
// precisions. Skips without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "md/md_test_support.hpp"
#include "nbkit/core/backend.hpp"
#include "nbkit/core/error.hpp"
#include "nbkit/md.hpp"

namespace nbkit::md {

namespace {

using test::charged_liquid, test::expect_same_forces, test::liquid, test::random_box, test::two_type_field;

class CudaMd : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (list_gpus(&why).empty()) GTEST_SKIP() << "no GPU: " << why;
  }
};

GpuEngine::Options precision(bool double_precision, int initial_neighbors = 0) {
  GpuEngine::Options o;
  o.double_precision = double_precision;
  o.initial_neighbors = initial_neighbors;
  return o;
}

Forces gpu_forces(const System& s, const ForceField& f, GpuEngine::Options options, double skin = 0.3) {
  GpuEngine engine(s, f, skin, options);
  Forces out;
  engine.forces(out);
  return out;
}

// Tolerances. float64: the same sums in other orders, rounding only (1e-12 of the largest
// force, as the CPU list test). float32: each pair's force carries a relative rounding of a
// few 1e-7 (r^2 from float differences, then u^3 terms); a row sums ~80 of them with
// cancellation between near and far neighbours, so 2e-5 of the largest force holds with
// room; energies and virials are summed in double from float pair terms: 2e-5 too.
constexpr double kDoubleTolerance = 1e-12;
constexpr double kSingleTolerance = 2e-5;

}  // namespace

TEST_F(CudaMd, ForcesMatchTheReferenceWithTypesChargesAndExclusions) {
  System s = charged_liquid(6, 21);  // 864 atoms, box 10.1
  ForceField f = two_type_field();
  f.coulomb_cutoff = 3.0;  // the list reaches 3.3
  f.shift = true;
  for (std::int64_t i = 0; i + 1 < static_cast<std::int64_t>(s.size()); i += 7) f.exclusions.push_back({i, i + 1});
  f.exclusions.push_back({0, 400});
  Forces reference;
  forces_reference(s, f, reference);
  expect_same_forces(gpu_forces(s, f, precision(true)), reference, kDoubleTolerance, "float64");
  expect_same_forces(gpu_forces(s, f, precision(false)), reference, kSingleTolerance, "float32");
  System plain = liquid(6, 22);
  const ForceField lj = two_type_field();
  forces_reference(plain, lj, reference);
  expect_same_forces(gpu_forces(plain, lj, precision(true)), reference, kDoubleTolerance, "float64, LJ only");
  expect_same_forces(gpu_forces(plain, lj, precision(false)), reference, kSingleTolerance, "float32, LJ only");
}

TEST_F(CudaMd, AwkwardBoxesAndAtomCounts) {
  // Boxes 2, 3 and 4 cells wide (x is the two-cell case where both neighbour cells are one),
  // atom counts that fill no block of 128 threads.
  for (const std::size_t n : {1u, 2u, 129u, 561u}) {
    System s = random_box(n, 5.7, 9.3, 12.7, static_cast<unsigned>(n));
    const ForceField f = ForceField::mixed({1.0}, {1.0}, 2.5);
    Forces reference;
    forces_reference(s, f, reference);
    expect_same_forces(gpu_forces(s, f, precision(true)), reference, kDoubleTolerance, "n = " + std::to_string(n));
  }
}

// The other pair kernels: the slides' patch pairs (no list; every pair of neighbouring cells
// tested), and cluster pairs (tiles of 32 atoms, a list of neighbour clusters). Both against
// the reference with charges, exclusions, two types, boxes 2 cells wide, random atom counts
// and crowded cells (more than one 32-atom tile a cell); the patch kernel against the list
// kernel, whose sums it repeats in the same order.
TEST_F(CudaMd, PatchAndClusterPairKernelsMatchTheReferenceAndTheListKernel) {
  using Kernel = GpuEngine::Options::PairKernel;
  auto with_kernel = [](Kernel kernel, bool double_precision) {
    GpuEngine::Options o = precision(double_precision);
    o.pair_kernel = kernel;
    return o;
  };
  System s = charged_liquid(6, 21);
  ForceField f = two_type_field();
  f.coulomb_cutoff = 3.0;
  f.shift = true;
  for (std::int64_t i = 0; i + 1 < static_cast<std::int64_t>(s.size()); i += 7) f.exclusions.push_back({i, i + 1});
  f.exclusions.push_back({0, 400});
  Forces charged_reference, reference;
  forces_reference(s, f, charged_reference);
  // Same sums, same order as the list kernel: float32 forces within a few float32 roundings
  // (the compiler may fuse a multiply-add differently in the two kernels).
  expect_same_forces(gpu_forces(s, f, with_kernel(Kernel::patch_pairs, false)), gpu_forces(s, f, precision(false)),
                     1e-6, "patch vs list");
  for (const Kernel kernel : {Kernel::patch_pairs, Kernel::cluster_pairs}) {
    const std::string name = kernel == Kernel::patch_pairs ? "patch" : "cluster";
    expect_same_forces(gpu_forces(s, f, with_kernel(kernel, true)), charged_reference, kDoubleTolerance, name + " float64");
    expect_same_forces(gpu_forces(s, f, with_kernel(kernel, false)), charged_reference, kSingleTolerance,
                       name + " float32");
    for (const std::size_t n : {1u, 2u, 33u, 129u, 561u}) {
      const System box = random_box(n, 5.7, 9.3, 12.7, static_cast<unsigned>(n));
      const ForceField lj = ForceField::mixed({1.0}, {1.0}, 2.5);
      forces_reference(box, lj, reference);
      expect_same_forces(gpu_forces(box, lj, with_kernel(kernel, true)), reference, kDoubleTolerance,
                         name + " n = " + std::to_string(n));
    }
    // Cutoff 3.5: cells of 4.5 hold ~75 atoms, three tiles of 32.
    const System crowded = liquid(8, 20);
    const ForceField long_reach = two_type_field(3.5);
    forces_reference(crowded, long_reach, reference);
    expect_same_forces(gpu_forces(crowded, long_reach, with_kernel(kernel, true)), reference, kDoubleTolerance,
                       name + ", crowded cells");
  }
}

// The patch-pair and cluster-pair engines run beside the list engine step by step (float64,
// same rebuilds; the cluster list made to overflow twice on the way).
TEST_F(CudaMd, PatchAndClusterPairEnginesRunAsTheListEngine) {
  using Kernel = GpuEngine::Options::PairKernel;
  ForceField f = two_type_field();
  f.coulomb_cutoff = 3.0;
  f.shift = true;
  for (std::int64_t i = 0; i + 1 < 864; i += 7) f.exclusions.push_back({i, i + 1});
  for (const Kernel kernel : {Kernel::patch_pairs, Kernel::cluster_pairs}) {
    const std::string name = kernel == Kernel::patch_pairs ? "patch" : "cluster";
    GpuEngine::Options options = precision(true);
    options.pair_kernel = kernel;
    System start = liquid(8, 29);
    assign_velocities(start, 1.44, 3);
    wrap_into_box(start);
    GpuEngine other(start, f, 0.3, options), with_list(start, f, 0.3, precision(true));
    for (int step = 1; step <= 100; ++step) {
      if (kernel == Kernel::cluster_pairs && step % 50 == 1) other.set_neighbor_capacity(2);  // overflows at the next build
      other.step(0.005, step % 50 == 0), with_list.step(0.005, step % 50 == 0);
    }
    const Thermo a = other.thermo(100), b = with_list.thermo(100);
    EXPECT_NEAR(a.potential, b.potential, 1e-9 * std::fabs(b.potential)) << name;
    EXPECT_NEAR(a.pressure, b.pressure, 1e-9 * std::fabs(b.pressure)) << name;
    EXPECT_EQ(other.builds(), with_list.builds()) << name;
    EXPECT_GT(with_list.builds(), 2);
  }
}

TEST_F(CudaMd, AnyGpuCurrentBeforehandAndAnyGpuChosen) {
  // The engine's stream and buffers belong to its own GPU whichever GPU the caller left
  // current (a bug once: the stream was made on the current GPU, the buffers on the chosen
  // one). Each engine leaves its GPU current: engines on every GPU in turn, last to first.
  const int devices = static_cast<int>(list_gpus().size());
  const System s = liquid(6, 26);
  const ForceField f = two_type_field();
  Forces reference;
  forces_reference(s, f, reference);
  for (int round = 0; round < 2; ++round)
    for (int chosen = devices - 1; chosen >= 0; --chosen) {
      GpuEngine::Options options = precision(true);
      options.device = chosen;
      expect_same_forces(gpu_forces(s, f, options), reference, kDoubleTolerance, "engine on GPU " + std::to_string(chosen));
    }
  GpuEngine::Options missing = precision(true);
  missing.device = devices;
  EXPECT_THROW(GpuEngine(s, f, 0.3, missing), Error);
}

TEST_F(CudaMd, OverflowingRowsGrowTheList) {
  const System s = liquid(6, 23);
  const ForceField f = two_type_field();
  GpuEngine engine(s, f, 0.3, precision(true, 8));
  EXPECT_GE(engine.neighbor_capacity(), 60);  // ~78 neighbours within 2.8 at this density
  Forces gpu, reference;
  engine.forces(gpu);
  forces_reference(s, f, reference);
  expect_same_forces(gpu, reference, kDoubleTolerance, "after growing");
}

// A row that does not fit during a graph step (the rebuild decided on the device) freezes the
// steps until the host's next check, which grows the list and redoes them: the run is the
// CPU path's step by step, with the same number of list builds, however often it happens.
TEST_F(CudaMd, RowsOverflowingInGraphStepsAreRedoneWithALongerList) {
  System cpu = liquid(8, 29);  // 2048 atoms, two types
  assign_velocities(cpu, 1.44, 3);
  const ForceField f = two_type_field();
  const double dt = 0.005;
  wrap_into_box(cpu);
  GpuEngine gpu(cpu, f, 0.3, precision(true));
  NeighborList list(f.reach(), 0.3);
  list.build(cpu, f);
  Forces forces;
  forces_cpu(cpu, f, list, forces, 2);
  int shrinks = 0;
  for (int step = 1; step <= 120; ++step) {
    // Rows of 8: the next rebuild overflows (somewhere in the 16 steps between checks).
    if (step % 30 == 1) gpu.set_neighbor_capacity(8), ++shrinks;
    verlet_step(cpu, forces, f, list, dt, 2);
    gpu.step(dt, step % 10 == 0);
    if (step % 10) continue;
    const Thermo a = thermo(cpu, forces, step), b = gpu.thermo(step);
    EXPECT_NEAR(b.potential, a.potential, 1e-9 * std::fabs(a.potential)) << "step " << step;
    EXPECT_NEAR(b.kinetic, a.kinetic, 1e-9 * std::fabs(a.kinetic)) << "step " << step;
  }
  EXPECT_EQ(shrinks, 4);
  EXPECT_GE(gpu.neighbor_capacity(), 60);
  EXPECT_EQ(gpu.builds(), list.builds());
  System back = cpu;
  gpu.download(back);
  double worst = 0;
  for (std::size_t i = 0; i < cpu.size(); ++i) worst = std::max(worst, std::fabs(back.x[i] - cpu.x[i]));
  EXPECT_LT(worst, 1e-8);
}

TEST_F(CudaMd, BoxesTooSmallForTheMinimumImageAreRefused) {
  const System s = liquid(3, 24);  // box 5.04 < 2 x 2.8
  try {
    GpuEngine engine(s, two_type_field(), 0.3, precision(true));
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("use the CPU backend"), std::string::npos) << e.what();
  }
}

// The same 100 steps on the CPU path and the GPU in float64: different summation orders
// only, so the trajectories agree to ~1e-12 at first and the difference grows with the
// liquid's Lyapunov exponent (a few units of 1/tau): after 100 steps of 0.005 (0.5 tau) the
// energies still agree to 1e-9; the list is rebuilt on the same steps (the same half-skin test
// on positions that agree to far below its resolution).
TEST_F(CudaMd, NveRunMatchesTheCpuPathStepByStep) {
  System cpu = fcc_lattice(0.8442, 8, 8, 8);  // 2048 atoms, in.lj's settings
  assign_velocities(cpu, 1.44, 87287);
  const ForceField f = ForceField::mixed({1.0}, {1.0}, 2.5);
  const double dt = 0.005;
  wrap_into_box(cpu);
  GpuEngine gpu(cpu, f, 0.3, precision(true));
  NeighborList list(f.cutoff, 0.3);
  list.build(cpu, f);
  Forces forces;
  forces_cpu(cpu, f, list, forces, 2);
  for (int step = 1; step <= 100; ++step) {
    verlet_step(cpu, forces, f, list, dt, 2);
    gpu.step(dt, step % 10 == 0);
    if (step % 10) continue;
    const Thermo a = thermo(cpu, forces, step), b = gpu.thermo(step);
    EXPECT_NEAR(b.potential, a.potential, 1e-9 * std::fabs(a.potential)) << "step " << step;
    EXPECT_NEAR(b.kinetic, a.kinetic, 1e-9 * std::fabs(a.kinetic)) << "step " << step;
    EXPECT_NEAR(b.pressure, a.pressure, 1e-9 * std::fabs(a.pressure)) << "step " << step;
  }
  EXPECT_EQ(gpu.builds(), list.builds());
  EXPECT_GT(gpu.builds(), 2);
  System back = cpu;
  gpu.download(back);
  double worst = 0;
  for (std::size_t i = 0; i < cpu.size(); ++i)
    worst = std::max({worst, std::fabs(back.x[i] - cpu.x[i]), std::fabs(back.vz[i] - cpu.vz[i])});
  EXPECT_LT(worst, 1e-8);
}

// Langevin on the GPU draws the CPU's numbers (counter-based, by atom index: the GPU's cell
// sort does not change them), so a thermostatted run matches the CPU path step by step in
// float64 as NVE does (same list rebuilds), and holds the temperature in float32 too.
TEST_F(CudaMd, LangevinRunMatchesTheCpuPathStepByStep) {
  System cpu = liquid(9, 31);  // 2916 atoms, two types
  assign_velocities(cpu, 0.5, 11);
  const ForceField f = two_type_field();
  const double dt = 0.005;
  wrap_into_box(cpu);
  Langevin cpu_thermostat(1.2, 0.1, 2026), gpu_thermostat(1.2, 0.1, 2026);
  GpuEngine gpu(cpu, f, 0.3, precision(true));
  gpu.apply_thermostat(gpu_thermostat, dt);
  NeighborList list(f.reach(), 0.3);
  list.build(cpu, f);
  Forces forces;
  forces_cpu(cpu, f, list, forces, 2);
  cpu_thermostat.apply(cpu, forces, dt);
  for (int step = 1; step <= 100; ++step) {
    verlet_step(cpu, forces, f, list, dt, 2, &cpu_thermostat);
    gpu.step(dt, step % 10 == 0, &gpu_thermostat);
    if (step % 10) continue;
    const Thermo a = thermo(cpu, forces, step), b = gpu.thermo(step);
    EXPECT_NEAR(b.potential, a.potential, 1e-9 * std::fabs(a.potential)) << "step " << step;
    EXPECT_NEAR(b.kinetic, a.kinetic, 1e-9 * std::fabs(a.kinetic)) << "step " << step;
  }
  EXPECT_EQ(gpu.builds(), list.builds());
  System back = cpu;
  gpu.download(back);
  double worst = 0;
  for (std::size_t i = 0; i < cpu.size(); ++i)
    worst = std::max({worst, std::fabs(back.x[i] - cpu.x[i]), std::fabs(back.vy[i] - cpu.vy[i])});
  EXPECT_LT(worst, 1e-8);
  // float32: from T 0.5 to the thermostat's 1.2 in 10 damping times; the mean over the last
  // 500 steps within 2% (the kinetic temperature's spread is sqrt(2 / 3N) = 1.5% a sample).
  System s = liquid(9, 31);
  assign_velocities(s, 0.5, 11);
  Langevin thermostat(1.2, 0.1, 7);
  GpuEngine single(s, f, 0.3, precision(false));
  single.apply_thermostat(thermostat, dt);
  double sum = 0;
  for (int step = 1; step <= 1500; ++step) {
    single.step(dt, false, &thermostat);
    if (step > 1000) sum += single.thermo(step).temperature;
  }
  EXPECT_NEAR(sum / 500, 1.2, 0.024);
}

TEST_F(CudaMd, RunsRepeatBitForBit) {
  for (const bool double_precision : {false, true}) {
    System s = liquid(8, 25);
    assign_velocities(s, 1.44, 5);
    const ForceField f = two_type_field();
    System a = s, b = s, c = s;
    // The third engine: the host decides each rebuild (no graphs), the same kernels in the
    // same order: the same bits.
    GpuEngine::Options without_graphs = precision(double_precision);
    without_graphs.step_graphs = false;
    GpuEngine first(s, f, 0.3, precision(double_precision)), second(s, f, 0.3, precision(double_precision)),
        third(s, f, 0.3, without_graphs);
    for (int step = 1; step <= 60; ++step)
      first.step(0.005, step % 20 == 0), second.step(0.005, step % 20 == 0), third.step(0.005, step % 20 == 0);
    first.download(a), second.download(b), third.download(c);
    EXPECT_EQ(a.x, b.x);
    EXPECT_EQ(a.vy, b.vy);
    EXPECT_EQ(a.x, c.x);
    EXPECT_EQ(a.vz, c.vz);
    const Thermo ta = first.thermo(60), tb = second.thermo(60), tc = third.thermo(60);
    EXPECT_EQ(ta.potential, tb.potential);
    EXPECT_EQ(ta.pressure, tb.pressure);
    EXPECT_EQ(ta.potential, tc.potential);
    EXPECT_EQ(first.builds(), third.builds());
  }
}

// Energy conservation over 10,000 velocity-Verlet steps (50 tau) of in.lj's liquid (4,000
// atoms, T 1.44, dt 0.005) with the energy shifted to zero at the cutoff (else every pair that
// crosses the cutoff makes the total jump). The bound: velocity Verlet's energy fluctuates by
// O(dt^2) without drifting; in float64 the largest excursion is ~1e-4 of the total; float32
// forces add rounding noise to every step's kick, a random walk of ~1e-7 relative a step, so
// 1e-3 bounds both with room while catching any systematic drift (a wrong force, a
// missed pair, a stale list).
TEST_F(CudaMd, EnergyDriftOverTenThousandStepsIsBounded) {
  for (const bool double_precision : {true, false}) {
    System s = fcc_lattice(0.8442, 10, 10, 10);
    assign_velocities(s, 1.44, 87287);
    ForceField f = ForceField::mixed({1.0}, {1.0}, 2.5);
    f.shift = true;
    GpuEngine engine(s, f, 0.3, precision(double_precision));
    const double start = engine.thermo(0).total;
    double worst = 0, last = start;
    for (int step = 1; step <= 10000; ++step) {
      engine.step(0.005, step % 100 == 0);
      if (step % 100) continue;
      last = engine.thermo(step).total;
      worst = std::max(worst, std::fabs(last - start));
    }
    EXPECT_LT(worst, 1e-3 * std::fabs(start)) << (double_precision ? "float64" : "float32");
    std::printf("[ accuracy ] GPU %s, 4000 atoms, 10,000 NVE steps: E0 %.6f per atom, max |E - E0| %.2e, end %.2e "
                "(relative %.2e), %lld list builds\n",
                double_precision ? "float64" : "float32", start, worst, last - start, worst / std::fabs(start),
                static_cast<long long>(engine.builds()));
  }
}

}  // namespace nbkit::md
