// Dynamics of biomolecular systems through md::Simulation (the molecular engine): the CPU engine
// against the float64 reference step by step, NVE energy conservation on chains with smooth
// switching, Langevin runs the same for a seed, per-atom masses in the temperature, and the
// backend refusals. The NVE run of a solvated protein is tests/clients/check_energy_openmm.py's.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <tuple>

#include "md/kinetic_sum.hpp"
#include "md/molecular_test_support.hpp"
#include "nbkit/io/checkpoint.hpp"
#include "test_support.hpp"
#include "nbkit/core/error.hpp"
#include "nbkit/md/simulation.hpp"

namespace nbkit::md {
namespace {

// 27 chains of 5 atoms, 10 A apart, in a 30 A periodic box at 300 K, CHARMM-switched from 7.5 to 9 A (smooth:
// the energy is conserved to the integrator's error, not the cutoff's jumps).
struct Chains {
  Topology topology;
  System system;
  MolecularForceField field() const {
    MolecularForceField f{topology, {}};
    f.nonbonded.method = NonbondedSettings::Method::cutoff_periodic;
    f.nonbonded.cutoff = 9, f.nonbonded.switch_distance = 7.5;
    f.nonbonded.style = NonbondedSettings::CutoffStyle::charmm;
    return f;
  }
};

Chains chains_at_300k() {
  Chains c;
  std::vector<Vec3> x;
  c.topology = test::chains(27, 21, x, 30.0, true);
  // The toy chains' angles swing open towards 180 degrees, where any dihedral's force grows as
  // 1 / sin^2 of the angle: a full-size random CMAP (+-3 kcal/mol) gives one atom a kick there
  // that costs Verlet 5 kcal/mol at 0.5 fs (measured, t = 84 fs); at half the size the run keeps
  // the integrator's bounded O(dt^2) error, which is what this test measures.
  for (auto& grid : c.topology.cmap_grids)
    for (double& e : grid.energy) e *= 0.5;
  for (std::size_t i = 0; i < c.topology.size(); ++i) c.topology.mass[i] = 12.0 + 4.0 * static_cast<double>(i % 3);
  Coordinates coordinates{x, {}, PeriodicBox::from_edges({30, 30, 30})};
  c.system = molecular_system(c.topology, coordinates);
  assign_velocities(c.system, 300, 5);
  return c;
}

// The chains' force field with PME and OpenMM's cutoff style (the GPU list tests' runs).
MolecularForceField pme_field(const Chains& c) {
  MolecularForceField field = c.field();
  field.nonbonded.method = NonbondedSettings::Method::pme;
  field.nonbonded.style = NonbondedSettings::CutoffStyle::openmm;
  return field;
}

// float64 on every backend (the GPU's default for periodic systems is mixed precision).
SimulationOptions on(Backend backend) {
  SimulationOptions o;
  o.backend = backend;
  o.threads = 2;
  o.precision = Precision::double_;
  return o;
}

TEST(MolecularSimulation, CpuAndGpuStepsMatchTheReferenceEngine) {
  const Chains c = chains_at_300k();
  Integrator integrator;
  integrator.timestep = 0.5;
  Simulation reference(c.system, c.field(), integrator, on(Backend::reference));
  reference.run(50);
  std::vector<Backend> backends{Backend::cpu};
  if (!list_gpus().empty()) backends.push_back(Backend::cuda);
  for (Backend backend : backends) {
    Simulation ours(c.system, c.field(), integrator, on(backend));
    ours.run(50);
    const System &a = reference.state(), &b = ours.state();
    for (std::size_t i = 0; i < a.size(); ++i) {
      // The same pairs summed in another order: rounding differences, grown by 50 steps of
      // chaotic dynamics to well below 1e-9 A here.
      EXPECT_NEAR(a.x[i], b.x[i], 1e-9) << to_string(backend);
      EXPECT_NEAR(a.vz[i], b.vz[i], 1e-9) << to_string(backend);
    }
    EXPECT_NEAR(reference.thermo().potential, ours.thermo().potential, 1e-8 * std::abs(reference.thermo().potential));
    ASSERT_TRUE(ours.energy_terms());
    EXPECT_NEAR(ours.energy_terms()->total(), ours.thermo().potential, 1e-9);
    EXPECT_EQ(ours.backend(), backend);
  }
}

// Particle-mesh Ewald and multilevel summation dynamics: the CPU and GPU engines follow the
// reference step by step, and the GPU's run repeats to the bit (PME's mesh is spread in fixed
// point, MSM's grids are summed in fixed orders; a moving result is a race).
TEST(MolecularSimulation, PmeAndMsmRunsMatchTheReferenceAndRepeatOnTheGpu) {
  const Chains c = chains_at_300k();
  for (const auto method : {NonbondedSettings::Method::pme, NonbondedSettings::Method::msm}) {
    MolecularForceField field = c.field();
    field.nonbonded.method = method;
    field.nonbonded.style = NonbondedSettings::CutoffStyle::openmm;
    field.nonbonded.msm_spacing = 3;  // coarse: the test is of the dynamics, not of accuracy
    Integrator integrator;
    integrator.timestep = 0.5;
    Simulation reference(c.system, field, integrator, on(Backend::reference));
    reference.run(30);
    std::vector<Backend> backends{Backend::cpu};
    if (!list_gpus().empty()) backends.push_back(Backend::cuda);
    for (Backend backend : backends) {
      Simulation ours(c.system, field, integrator, on(backend));
      ours.run(30);
      for (std::size_t i = 0; i < c.system.size(); ++i) EXPECT_NEAR(reference.state().x[i], ours.state().x[i], 1e-9);
      ASSERT_TRUE(ours.energy_terms());
      EXPECT_NE(ours.energy_terms()->coulomb_reciprocal, 0.0);
      EXPECT_LT(ours.energy_terms()->dispersion_correction, 0.0);
      Simulation again(c.system, field, integrator, on(backend));
      again.run(30);
      EXPECT_EQ(again.state().x, ours.state().x) << to_string(backend) << " " << to_string(method);
      EXPECT_EQ(again.state().vx, ours.state().vx) << to_string(backend) << " " << to_string(method);
    }
  }
}

// The GPU's default for periodic systems, mixed precision, through a run long enough for its pair
// list to be rebuilt (a skin of 0.5 A; atoms at 300 K move ~0.005 A/fs): the trajectory stays
// within float32's rounding of the float64 reference's (the force errors of ~1e-6 relative move
// the atoms by ~1e-8 A in 100 steps of 0.5 fs; 1e-6 A allows growth by the chaos), and repeats
// to the bit.
TEST(MolecularSimulation, MixedPrecisionRunsRebuildTheirListAndRepeat) {
  std::string why;
  if (list_gpus(&why).empty()) GTEST_SKIP() << "no GPU: " << why;
  const Chains c = chains_at_300k();
  const MolecularForceField field = pme_field(c);
  Integrator integrator;
  integrator.timestep = 0.5;
  Simulation reference(c.system, field, integrator, on(Backend::cpu));
  reference.run(100);
  SimulationOptions mixed = on(Backend::cuda);
  mixed.precision.reset();
  mixed.skin = 0.5;
  Simulation ours(c.system, field, integrator, mixed), again(c.system, field, integrator, mixed);
  ours.run(100), again.run(100);
  EXPECT_NE(ours.description().find("mixed"), std::string::npos) << ours.description();
  EXPECT_GT(ours.list_builds(), 1);
  double worst = 0;
  for (std::size_t i = 0; i < c.system.size(); ++i)
    worst = std::max(worst, std::abs(reference.state().x[i] - ours.state().x[i]));
  std::printf("  mixed precision, 100 steps of PME dynamics: %lld list builds, positions within %.2e A of float64\n",
              static_cast<long long>(ours.list_builds()), worst);
  EXPECT_LT(worst, 1e-6);
  EXPECT_EQ(again.state().x, ours.state().x);
  EXPECT_EQ(again.state().vx, ours.state().vx);
}

// The list's rebuilds decided on the device (a graph's conditional node after the check; the
// default) and by the host (NBKIT_PAIR_LIST_DEVICE_CHECK=0, which waits for the check's word every
// step) give the same trajectory to the bit and the same count of builds: the same test of the
// same word. So do the steps replayed as CUDA graphs (the default where the device decides;
// NBKIT_STEP_GRAPH=0: each call launched by the host), Verlet's and Langevin-middle's (whose graph
// takes each step's noise index), with the check's last block deciding inside the step's graph
// (the default) or decide_rebuild after it (NBKIT_PAIR_LIST_CHECK_DECIDES=0). With NBKIT_PAIR_LIST_CAPACITY=16 (most rows of these chains are
// longer: walk_row sums their rest) the host's run keeps that capacity and the device's grows it
// once a build on the device finds the longer rows (its rows written again from the positions of
// that build): the same bits again. Mixed precision and float64, 100 steps of PME dynamics with a
// 0.5 A skin.
TEST(MolecularSimulation, ListRebuildsDecidedOnTheDeviceGiveTheSameBits) {
  std::string why;
  if (list_gpus(&why).empty()) GTEST_SKIP() << "no GPU: " << why;
  const Chains c = chains_at_300k();
  const MolecularForceField field = pme_field(c);
  struct Env {
    Env(const char* device_check, const char* graphs, const char* capacity, const char* decides) {
      setenv("NBKIT_PAIR_LIST_DEVICE_CHECK", device_check, 1), setenv("NBKIT_STEP_GRAPH", graphs, 1);
      if (capacity) setenv("NBKIT_PAIR_LIST_CAPACITY", capacity, 1);
      setenv("NBKIT_PAIR_LIST_CHECK_DECIDES", decides, 1);
    }
    ~Env() {
      unsetenv("NBKIT_PAIR_LIST_DEVICE_CHECK"), unsetenv("NBKIT_STEP_GRAPH"), unsetenv("NBKIT_PAIR_LIST_CAPACITY");
      unsetenv("NBKIT_PAIR_LIST_CHECK_DECIDES");
    }
  };
  for (const bool langevin : {false, true})
    for (const bool mixed : {true, false}) {
      Integrator integrator;
      integrator.timestep = 0.5;
      if (langevin) integrator.langevin_middle = Integrator::LangevinMiddleSettings{300, 1e-2, 7};
      SimulationOptions options = on(Backend::cuda);
      if (mixed) options.precision.reset();
      options.skin = 0.5;
      auto run = [&](const char* device_check, const char* graphs, const char* capacity, const char* decides = "1") {
        const Env env(device_check, graphs, capacity, decides);
        auto simulation = std::make_unique<Simulation>(c.system, field, integrator, options);
        simulation->run(60);
        const double potential = simulation->thermo().potential;  // a step with energies between
        simulation->run(40);
        EXPECT_TRUE(std::isfinite(potential));
        return simulation;
      };
      const auto host = run("0", "1", nullptr);
      ASSERT_GT(host->list_builds(), 2);
      using Case = std::tuple<const char*, const char*, const char*, const char*>;
      for (const auto& [device_check, graphs, capacity, decides] :
           {Case{"1", "1", nullptr, "1"}, Case{"1", "1", nullptr, "0"}, Case{"1", "0", nullptr, "1"},
            Case{"0", "1", "16", "1"}, Case{"1", "1", "16", "1"}}) {
        const auto other = run(device_check, graphs, capacity, decides);
        const std::string what = std::string(langevin ? "langevin " : "verlet ") + (mixed ? "mixed" : "float64") +
                                 " device check " + device_check + " graphs " + graphs + " capacity " +
                                 (capacity ? capacity : "grown") + " check decides " + decides;
        EXPECT_EQ(host->list_builds(), other->list_builds()) << what;
        EXPECT_EQ(host->state().x, other->state().x) << what;
        EXPECT_EQ(host->state().vx, other->state().vx) << what;
        EXPECT_EQ(host->thermo().potential, other->thermo().potential) << what;
      }
    }
}

// The list's sort by counting (the default where the keys are few) against cub's radix sort
// (NBKIT_PAIR_LIST_SORT=radix): the same order, so the same rows in the same order and the same
// bits, for the build by group (the default) and by cell (NBKIT_PAIR_LIST_BUILD=cell, the
// default above 2^18 atoms up to session 40; below 2^18 atoms with the same sub-cell keys). 60
// steps of Langevin-middle PME dynamics on the GPU's graphs with a 0.5 A skin (several rebuilds,
// each decided on the device), mixed precision and float64. (Without sub-cells,
// NBKIT_PAIR_LIST_GROUPS=0, the sort is cub's either way.)
TEST(MolecularSimulation, ListSortByCountingGivesTheSameBits) {
  std::string why;
  if (list_gpus(&why).empty()) GTEST_SKIP() << "no GPU: " << why;
  const Chains c = chains_at_300k();
  const MolecularForceField field = pme_field(c);
  for (const char* build : {"group", "cell"})
    for (const bool mixed : {true, false}) {
      Integrator integrator;
      integrator.timestep = 0.5;
      integrator.langevin_middle = Integrator::LangevinMiddleSettings{300, 1e-2, 7};
      SimulationOptions options = on(Backend::cuda);
      if (mixed) options.precision.reset();
      options.skin = 0.5;
      auto run = [&](const char* sort) {
        const test::ScopedEnvironment sorted("NBKIT_PAIR_LIST_SORT", sort), built("NBKIT_PAIR_LIST_BUILD", build);
        auto simulation = std::make_unique<Simulation>(c.system, field, integrator, options);
        simulation->run(60);
        return simulation;
      };
      const auto radix = run("radix");
      const auto counted = run("count");
      const std::string what = std::string(mixed ? "mixed" : "float64") + " build by " + build;
      ASSERT_GT(radix->list_builds(), 2) << what;
      EXPECT_EQ(radix->list_builds(), counted->list_builds()) << what;
      EXPECT_EQ(radix->state().x, counted->state().x) << what;
      EXPECT_EQ(radix->state().vx, counted->state().vx) << what;
      EXPECT_EQ(radix->thermo().potential, counted->thermo().potential) << what;
    }
}

// L-BFGS minimisation: the largest force ends below the tolerance, as md::molecular_forces
// computes it afresh at the positions left; the energy falls; the engine's state is the minimum's
// (the first thermo row's potential); dynamics go on from there. On every backend there is.
TEST(MolecularSimulation, MinimisationReachesTheForceTolerance) {
  const Chains c = chains_at_300k();
  std::vector<Backend> backends{Backend::cpu, Backend::reference};
  if (!list_gpus().empty()) backends.push_back(Backend::cuda);
  for (Backend backend : backends) {
    Simulation simulation(c.system, c.field(), Integrator{0.5, std::nullopt}, on(backend));
    const double before = simulation.thermo().potential;
    MinimizeOptions options;
    options.tolerance = 0.05;
    int reports = 0;
    options.progress = [&reports](double fraction) {
      EXPECT_GE(fraction, 0.0);
      EXPECT_LE(fraction, 1.0);
      ++reports;
    };
    const MinimizeResult m = simulation.minimize(options);
    EXPECT_TRUE(m.converged) << to_string(backend) << ": largest force " << m.final_max_force;
    EXPECT_LE(m.final_max_force, 0.05);
    EXPECT_NEAR(m.initial_energy, before, 1e-9 * std::abs(before));
    EXPECT_LT(m.final_energy, m.initial_energy - 100);  // the chains start far from their minima
    EXPECT_EQ(reports, m.iterations);
    std::printf("  minimised on %s: %.6g -> %.6g kcal/mol, largest force %.3g -> %.3g, %lld iterations, %lld "
                "evaluations\n",
                to_string(backend).c_str(), m.initial_energy, m.final_energy, m.initial_max_force, m.final_max_force,
                static_cast<long long>(m.iterations), static_cast<long long>(m.evaluations));
    // The forces afresh at the positions left.
    const System& s = simulation.state();
    std::vector<Vec3> x(s.size());
    for (std::size_t i = 0; i < s.size(); ++i) x[i] = {s.x[i], s.y[i], s.z[i]};
    const MolecularForces check =
        molecular_forces(c.topology, x, s.box, c.field().nonbonded, Backend::reference);
    double largest = 0;
    for (const Vec3& f : check.force) largest = std::max(largest, norm(f));
    EXPECT_LE(largest, 0.05 * (1 + 1e-9)) << to_string(backend);
    EXPECT_NEAR(check.energy.total(), m.final_energy, 1e-9 * std::abs(m.final_energy));
    EXPECT_NEAR(simulation.thermo().potential, m.final_energy, 1e-9 * std::abs(m.final_energy));
    EXPECT_EQ(s.vx, c.system.vx);  // velocities untouched
    simulation.run(20);
    EXPECT_TRUE(std::isfinite(simulation.thermo().total));
    EXPECT_THROW(simulation.minimize(), Error);  // after steps
  }
  Simulation simulation(c.system, c.field(), Integrator{0.5, std::nullopt}, on(Backend::cpu));
  MinimizeOptions bad;
  bad.tolerance = 0;
  EXPECT_THROW(simulation.minimize(bad), Error);
  // An iteration limit stops it short, saying so.
  MinimizeOptions short_run;
  short_run.tolerance = 1e-6, short_run.max_iterations = 3;
  const MinimizeResult m = simulation.minimize(short_run);
  EXPECT_FALSE(m.converged);
  EXPECT_EQ(m.iterations, 3);
}

// The sum of m v^2 in kinetic_sum.hpp's order (slices of 64, slices of those, then in order),
// which the GPU's thermo rows reduce on the device and the host's rows of the same engine make
// from its copy: within rounding of a plain float64 loop, and exact where every partial sum is
// (integers); an atom count past two levels of slices (64 * 64 + 5) takes every level's tail.
TEST(MolecularSimulation, KineticSumInSlicesIsTheSumOfMassVelocitySquared) {
  for (const std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{63}, std::size_t{64}, std::size_t{4101}}) {
    std::vector<double> m(n), v(3 * n);
    double plain = 0, integers = 0;
    for (std::size_t i = 0; i < n; ++i) {
      m[i] = 1.0 + 0.25 * static_cast<double>(i % 7);
      for (int a = 0; a < 3; ++a) v[3 * i + a] = std::sin(0.37 * static_cast<double>(3 * i + a)) * 0.01;
      plain += m[i] * (v[3 * i] * v[3 * i] + v[3 * i + 1] * v[3 * i + 1] + v[3 * i + 2] * v[3 * i + 2]);
      integers += 2.0 * 3.0;  // m = 2, v = (1, 1, 1)
    }
    const double sliced = md::kinetic_mass_velocity2(
        n, [&](std::size_t i) { return m[i]; },
        [&](std::size_t i, double* w) { w[0] = v[3 * i], w[1] = v[3 * i + 1], w[2] = v[3 * i + 2]; });
    EXPECT_NEAR(sliced, plain, 1e-14 * std::max(plain, 1e-300)) << n << " atoms";
    const double exact = md::kinetic_mass_velocity2(
        n, [](std::size_t) { return 2.0; }, [](std::size_t, double* w) { w[0] = w[1] = w[2] = 1.0; });
    EXPECT_EQ(exact, integers) << n << " atoms";
  }
}

// A thermo row on the GPU from the device's sums (the default) is the row the whole state brought
// to the host gives (NBKIT_MD_DEVICE_THERMO=0), bit for bit: the energies, the virial, m v^2
// (kinetic_sum.hpp's order on both sides), every term, the pressure (Langevin middle on the
// chains, rows every 3 steps); and the trajectory is the same either way.
TEST(MolecularSimulation, GpuThermoRowsFromTheDevicesSumsAreTheDownloadedStatesRows) {
  std::string why;
  if (list_gpus(&why).empty()) GTEST_SKIP() << "no GPU: " << why;
  const Chains c = chains_at_300k();
  const MolecularForceField field = pme_field(c);
  Integrator integrator;
  integrator.timestep = 0.5;
  integrator.langevin_middle = Integrator::LangevinMiddleSettings{300, 1e-2, 7};
  auto rows = [&](const char* on_device, Simulation** keep) {
    const test::ScopedEnvironment env("NBKIT_MD_DEVICE_THERMO", on_device);
    auto simulation = std::make_unique<Simulation>(c.system, field, integrator, on(Backend::cuda));
    std::vector<Thermo> out;
    std::vector<EnergyTerms> terms;
    Reporters r;
    r.thermo_every = 3;
    r.thermo = [&](const Thermo& t) {
      out.push_back(t);
      terms.push_back(*simulation->energy_terms());
    };
    simulation->run(30, r);
    *keep = simulation.release();
    return std::pair{out, terms};
  };
  Simulation *from_sums = nullptr, *from_state = nullptr;
  const auto [sums_rows, sums_terms] = rows("1", &from_sums);
  const auto [state_rows, state_terms] = rows("0", &from_state);
  const std::unique_ptr<Simulation> a(from_sums), b(from_state);
  ASSERT_EQ(sums_rows.size(), state_rows.size());
  ASSERT_EQ(sums_rows.size(), 11u);  // steps 0, 3, ..., 30
  for (std::size_t k = 0; k < sums_rows.size(); ++k) {
    const Thermo &x = sums_rows[k], &y = state_rows[k];
    EXPECT_EQ(x.step, y.step);
    EXPECT_EQ(x.temperature, y.temperature) << "step " << x.step;
    EXPECT_EQ(x.kinetic, y.kinetic) << "step " << x.step;
    EXPECT_EQ(x.potential, y.potential) << "step " << x.step;
    EXPECT_EQ(x.pressure, y.pressure) << "step " << x.step;
    EXPECT_EQ(sums_terms[k].named(), state_terms[k].named()) << "step " << x.step;
  }
  EXPECT_EQ(a->state().x, b->state().x);
  EXPECT_EQ(a->state().vz, b->state().vz);
}

// Checkpoints: a run that checkpoints at step 15 and goes on to 40 is repeated bit for bit by a
// new simulation restored from that checkpoint (file round trip included), with a Langevin
// thermostat's stream going on; on every backend there is. A damaged or foreign file is refused.
TEST(MolecularSimulation, CheckpointsRestartBitForBit) {
  const Chains c = chains_at_300k();
  test::ScratchDir dir;
  std::vector<Backend> backends{Backend::cpu, Backend::reference};
  if (!list_gpus().empty()) backends.push_back(Backend::cuda);
  for (Backend backend : backends)
    for (bool langevin : {false, true}) {
      Integrator integrator{0.5, std::nullopt};
      if (langevin) integrator.langevin = Integrator::LangevinSettings{300, 50, 11};
      SimulationOptions options = on(backend);
      options.skin = 0.5;  // list rebuilds within the run
      Simulation whole(c.system, c.field(), integrator, options);
      whole.run(15);
      io::write_checkpoint(dir.file("run.chk"), whole.checkpoint());
      whole.run(25);
      // The restart's own start is elsewhere (as a TOML's coordinates are the run's first ones):
      // its engine's list, built there, must not be what it sums with.
      System elsewhere = c.system;
      for (std::size_t i = 0; i < elsewhere.size(); ++i) elsewhere.x[i] += 0.3 * std::sin(3.0 * static_cast<double>(i));
      Simulation restarted(elsewhere, c.field(), integrator, options);
      restarted.restore(io::read_checkpoint(dir.file("run.chk")));
      EXPECT_EQ(restarted.step_count(), 15);
      restarted.run(25);
      const std::string what = to_string(backend) + (langevin ? " langevin" : " nve");
      EXPECT_EQ(restarted.state().x, whole.state().x) << what;
      EXPECT_EQ(restarted.state().vz, whole.state().vz) << what;
      EXPECT_EQ(restarted.thermo().potential, whole.thermo().potential) << what;
      EXPECT_EQ(restarted.step_count(), 40);
    }
  // Refusals: a flipped byte, a truncated file, another system's atom count, a Lennard-Jones run.
  Simulation s(c.system, c.field(), Integrator{0.5, std::nullopt}, on(Backend::cpu));
  io::write_checkpoint(dir.file("good.chk"), s.checkpoint());
  std::string bytes;
  {
    std::ifstream in(dir.file("good.chk"), std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  auto write_bytes = [&](const std::string& name, const std::string& content) {
    std::ofstream(dir.file(name), std::ios::binary) << content;
    return dir.file(name);
  };
  std::string flipped = bytes;
  flipped[bytes.size() / 2] ^= 0x10;
  for (const auto& [name, content, reason] :
       {std::tuple{"flipped.chk", flipped, "checksum"}, std::tuple{"short.chk", bytes.substr(0, bytes.size() - 9), "bytes"},
        std::tuple{"other.chk", "not a checkpoint at all, just text that is long enough to be read as a header ok" +
                                    std::string(400, 'x'),
                   "NBKITCHK"}}) {
    try {
      io::read_checkpoint(write_bytes(name, content));
      ADD_FAILURE() << name << " was read";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(reason), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
    }
  }
  Checkpoint fewer = io::read_checkpoint(dir.file("good.chk"));
  fewer.x.pop_back();
  EXPECT_THROW(s.restore(fewer), Error);
}

TEST(MolecularSimulation, NveConservesEnergyAndTheTemperatureCountsEachMass) {
  Chains c = chains_at_300k();
  Simulation simulation(c.system, c.field(), Integrator{0.5, std::nullopt}, on(Backend::cpu));
  const Thermo start = simulation.thermo();
  EXPECT_NEAR(start.temperature, 300, 1e-9);  // assign_velocities with each atom's mass
  std::vector<double> totals;
  Reporters r;
  r.thermo_every = 10;
  double kinetic = 0;
  r.thermo = [&](const Thermo& t) { totals.push_back(t.total), kinetic += t.kinetic; };
  simulation.run(400, r);
  // The chains start far from their bonds' minima, so ~2000 kcal/mol of potential energy turns
  // into heat and back. Velocity Verlet's energy error is O(dt^2) and bounded, not a drift: at
  // 0.5 fs against bond periods of ~30 fs, (omega dt)^2 / 8 ~ 1e-3 of the energy exchanged, so
  // the total wanders by less than 0.5% of the mean kinetic energy (measured: 0.17%), and the
  // last ten rows' mean differs from the first ten's by less than 0.1% (measured: < 0.05%).
  kinetic /= static_cast<double>(totals.size());
  double worst = 0, first = 0, last = 0;
  for (double total : totals) worst = std::max(worst, std::abs(total - start.total));
  for (std::size_t k = 0; k < 10; ++k) first += totals[k] / 10, last += totals[totals.size() - 1 - k] / 10;
  EXPECT_LT(worst, 5e-3 * kinetic) << "mean kinetic " << kinetic;
  EXPECT_LT(std::abs(last - first), 1e-3 * kinetic) << "mean kinetic " << kinetic;
}

TEST(MolecularSimulation, LangevinRunsAreTheSameForASeed) {
  const Chains c = chains_at_300k();
  Integrator integrator{0.5, Integrator::LangevinSettings{300, 50, 9}};
  Simulation a(c.system, c.field(), integrator, on(Backend::cpu));
  Simulation b(c.system, c.field(), integrator, on(Backend::cpu));
  a.run(30), b.run(30);
  EXPECT_EQ(a.state().x, b.state().x);
  integrator.langevin->seed = 10;
  Simulation other(c.system, c.field(), integrator, on(Backend::cpu));
  other.run(30);
  EXPECT_NE(a.state().x, other.state().x);
}

TEST(MolecularSimulation, RefusesWhatItCannotRun) {
  const Chains c = chains_at_300k();
  SimulationOptions two = on(Backend::cuda);
  two.gpus = {0, 0};
  EXPECT_THROW(Simulation(c.system, c.field(), Integrator{}, two), Error);
  if (list_gpus().empty()) EXPECT_THROW(Simulation(c.system, c.field(), Integrator{}, on(Backend::cuda)), Error);
  SimulationOptions single = on(Backend::cpu);
  single.precision = Precision::single;
  EXPECT_THROW(Simulation(c.system, c.field(), Integrator{}, single), Error);
  if (!list_gpus().empty()) {  // mixed precision needs a box (without one the GPU sums every pair in float64)
    MolecularForceField vacuum = c.field();
    vacuum.nonbonded.method = NonbondedSettings::Method::no_cutoff;
    single.backend = Backend::cuda;
    EXPECT_THROW(Simulation(c.system, vacuum, Integrator{}, single), Error);
  }
  System wrong = c.system;
  wrong.resize(wrong.size() - 1);
  wrong.atom_mass.pop_back();
  EXPECT_THROW(Simulation(wrong, c.field(), Integrator{}, on(Backend::cpu)), Error);
  EXPECT_THROW(Simulation(c.system, c.field(), Integrator{-1.0, std::nullopt}, on(Backend::cpu)), Error);
}

}  // namespace
}  // namespace nbkit::md
