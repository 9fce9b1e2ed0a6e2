// MD part 1 on the CPU: Lennard-Jones forces through the neighbour list against the
// all-images float64 reference (random, lattice, small boxes, any atom count, exclusions),
// force = -grad(energy), Newton's third law, neighbour-list rebuilds, determinism over
// thread counts, NVE energy conservation, LAMMPS data files read back bit for bit.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <optional>
#include <random>
#include <sstream>

#include "nbkit/core/error.hpp"
#include "nbkit/io/lammps_data.hpp"
#include "nbkit/io/md_config.hpp"
#include "md/langevin_noise.hpp"
#include "md/md_test_support.hpp"
#include "md/pair_law.hpp"
#include "nbkit/md.hpp"
#include "test_support.hpp"

namespace nbkit::md {

using test::liquid, test::random_box, test::two_type_field, test::charged_liquid, test::expect_same_forces;

namespace {

Forces through_list(const System& s, const ForceField& f, double skin = 0.3, int threads = 0) {
  NeighborList list(f.cutoff, skin);
  list.build(s, f);
  Forces out;
  forces_cpu(s, f, list, out, threads);
  return out;
}

}  // namespace

// Sums in different orders (by cells vs by index): float64 rounding only, 1e-12 with room.
TEST(MdForces, NeighborListMatchesTheReferenceOnALiquid) {
  const System s = liquid(4, 1);  // 256 atoms, box 6.72
  const ForceField f = two_type_field();
  Forces reference;
  forces_reference(s, f, reference);
  expect_same_forces(through_list(s, f), reference, 1e-12, "liquid");
  EXPECT_LT(reference.potential, 0.0);
}

TEST(MdForces, SimdRowsMatchTheReference) {
  // Boxes longer than twice (reach + 2 skin) = 6.8 along every axis take the SIMD rows
  // (forces_simd.cpp): two types, shifted energies, atoms moved out of the box after the
  // build (the minimum image taken in registers), one and two threads.
  System s = liquid(6, 31);  // 864 atoms, box 10.1
  ForceField f = two_type_field();
  f.shift = true;
  NeighborList list(f.cutoff, 0.3);
  list.build(s, f);
  for (std::size_t i = 0; i < s.size(); i += 5) s.x[i] += 0.1, s.z[i] -= 0.1;  // 0.14: under half the skin
  ASSERT_FALSE(list.needs_rebuild(s));
  Forces reference;
  forces_reference(s, f, reference);
  for (const int threads : {1, 2}) {
    Forces out;
    forces_cpu(s, f, list, out, threads);
    expect_same_forces(out, reference, 1e-12, "SIMD rows, " + std::to_string(threads) + " threads");
  }
}

TEST(MdForces, SmallBoxesAndAnyAtomCount) {
  // Boxes with 1 or 2 cells along an axis, and shorter than the cutoff (an atom meets its
  // own images and several images of each neighbour); atom counts from 1.
  const ForceField f = ForceField::mixed({1.0}, {1.0}, 2.5);
  struct Case { std::size_t n; double lx, ly, lz; };
  for (const Case c : {Case{1, 2.0, 2.0, 2.0}, Case{2, 3.0, 6.0, 9.0}, Case{7, 5.5, 4.0, 12.0}, Case{33, 8.0, 5.9, 3.1},
                       Case{64, 9.0, 9.0, 9.0}}) {
    const System s = random_box(c.n, c.lx, c.ly, c.lz, static_cast<unsigned>(c.n));
    Forces reference;
    forces_reference(s, f, reference);
    expect_same_forces(through_list(s, f), reference, 1e-12, "n = " + std::to_string(c.n));
    if (c.n == 1) EXPECT_NE(reference.potential, 0.0);  // the lone atom feels its images
  }
}

TEST(MdForces, ForceIsMinusTheGradientOfTheEnergy) {
  System s = liquid(3, 2);
  const ForceField f = two_type_field();
  Forces at;
  forces_reference(s, f, at);
  const double h = 1e-6;
  for (const std::size_t i : {0, 17, 63, 107}) {
    for (int axis = 0; axis < 3; ++axis) {
      std::vector<double>& c = axis == 0 ? s.x : axis == 1 ? s.y : s.z;
      const double keep = c[i];
      Forces plus, minus;
      c[i] = keep + h;
      forces_reference(s, f, plus);
      c[i] = keep - h;
      forces_reference(s, f, minus);
      c[i] = keep;
      const double gradient = (plus.potential - minus.potential) / (2 * h);
      const double force = axis == 0 ? at.fx[i] : axis == 1 ? at.fy[i] : at.fz[i];
      // Central differences: error ~h^2 |E'''| plus rounding ~1e-16 |E| / h; 1e-5 with room
      // (no pair within h of the cutoff, where the unshifted energy jumps, in this input).
      EXPECT_NEAR(force, -gradient, 1e-5 * std::max(1.0, std::fabs(force))) << "atom " << i << " axis " << axis;
    }
  }
}

TEST(MdForces, NewtonsThirdLawAndThreadCounts) {
  const System s = liquid(5, 3);  // 500 atoms
  const ForceField f = two_type_field();
  const Forces one = through_list(s, f, 0.3, 1), two = through_list(s, f, 0.3, 2),
               again = through_list(s, f, 0.3, 2);
  EXPECT_EQ(two.fx, again.fx);  // the same thread count: the same bits
  EXPECT_EQ(two.potential, again.potential);
  expect_same_forces(one, two, 1e-12, "1 and 2 threads");
  double sum[3] = {0, 0, 0}, scale = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    sum[0] += one.fx[i], sum[1] += one.fy[i], sum[2] += one.fz[i];
    scale += std::fabs(one.fx[i]) + std::fabs(one.fy[i]) + std::fabs(one.fz[i]);
  }
  for (double v : sum) EXPECT_LT(std::fabs(v), 1e-13 * scale);
}

TEST(MdForces, ExclusionsRemoveExactlyTheListedPairs) {
  System s = random_box(40, 7.0, 7.0, 7.0, 5);
  ForceField f = ForceField::mixed({1.0}, {1.0}, 2.5);
  Forces all;
  forces_reference(s, f, all);
  // Exclude the pairs of atom 0 with its three nearest neighbours (nearest images).
  std::vector<std::pair<double, std::int64_t>> by_distance;
  for (std::size_t j = 1; j < s.size(); ++j) {
    double dx = s.x[j] - s.x[0], dy = s.y[j] - s.y[0], dz = s.z[j] - s.z[0];
    dx -= 7.0 * std::round(dx / 7.0), dy -= 7.0 * std::round(dy / 7.0), dz -= 7.0 * std::round(dz / 7.0);
    by_distance.push_back({dx * dx + dy * dy + dz * dz, static_cast<std::int64_t>(j)});
  }
  std::sort(by_distance.begin(), by_distance.end());
  double removed = 0;
  for (int k = 0; k < 3; ++k) {
    f.exclusions.push_back({0, by_distance[k].second});
    const double r2 = by_distance[k].first;
    if (r2 < 6.25) removed += 4 * (std::pow(1 / r2, 6) - std::pow(1 / r2, 3));  // the pair's LJ energy
  }
  Forces reference;
  forces_reference(s, f, reference);
  EXPECT_NEAR(all.potential - reference.potential, removed, 1e-12 * std::fabs(all.potential));
  expect_same_forces(through_list(s, f), reference, 1e-12, "exclusions");
  // Atoms far from atom 0 and its excluded partners feel the same forces as before.
  f.exclusions.push_back({0, 0});
  EXPECT_THROW(forces_reference(s, f, reference), Error);
}

TEST(MdNeighborList, RebuildsWhenAnAtomMovesHalfTheSkin) {
  System s = liquid(3, 4);
  const ForceField f = two_type_field();
  NeighborList list(2.5, 0.3);
  EXPECT_TRUE(list.needs_rebuild(s));
  list.build(s, f);
  EXPECT_FALSE(list.needs_rebuild(s));
  s.x[5] += 0.14;  // under half the skin (0.15)
  EXPECT_FALSE(list.needs_rebuild(s));
  s.x[5] += 0.02;
  EXPECT_TRUE(list.needs_rebuild(s));
  // A list kept past its validity would miss pairs; a rebuilt one matches the reference.
  list.build(s, f);
  Forces reference, listed;
  forces_reference(s, f, reference);
  forces_cpu(s, f, list, listed);
  expect_same_forces(listed, reference, 1e-12, "after the move");
  EXPECT_EQ(list.builds(), 2);
  EXPECT_THROW(NeighborList(2.0, 0.3).build(s, f), Error);  // shorter than the field's cutoff
}

// The list holds every pair within the reach (cutoff + skin) once, and no excluded one: its
// pair count against all pairs by the minimum image, with exclusions, in a box long enough for
// the candidates' SIMD test (neighbor_scan_simd.cpp; 864 atoms, 10.1 wide) and in one under
// 2 (cutoff + 2 skin) but over 2 reaches, which keeps the scalar loop with its image shifts
// (150 atoms, ~5.9 wide; every pair still has one image within reach). Pairs within 1e-9 of the
// reach, where the two ways of forming a distance could round apart, may go either way.
TEST(MdNeighborList, HoldsEveryPairWithinReachOnceAndNoExcludedOne) {
  const ForceField base = two_type_field();
  const double skin = 0.3, reach2 = (base.cutoff + skin) * (base.cutoff + skin);
  for (const System& s : {liquid(6, 17), test::random_box(150, 5.9, 6.0, 5.8, 3)}) {
    ForceField f = base;
    for (std::int64_t i = 0; i + 3 < static_cast<std::int64_t>(s.size()); i += 7) f.exclusions.push_back({i, i + 3});
    NeighborList list(f.cutoff, skin);
    list.build(s, f);
    const bool simd = s.size() == 864;
    EXPECT_EQ(list.minimum_image(s.box), simd);  // the short box stores images: the scalar loop
    std::size_t within = 0, borderline = 0;
    const double length[3] = {s.box.length(0), s.box.length(1), s.box.length(2)};
    for (std::size_t i = 0; i < s.size(); ++i)
      for (std::size_t j = i + 1; j < s.size(); ++j) {
        if (j - i == 3 && i % 7 == 0) continue;  // excluded
        double d[3] = {s.x[i] - s.x[j], s.y[i] - s.y[j], s.z[i] - s.z[j]}, r2 = 0;
        for (int a = 0; a < 3; ++a) d[a] -= length[a] * std::round(d[a] / length[a]), r2 += d[a] * d[a];
        within += r2 < reach2;
        borderline += std::abs(r2 - reach2) < 1e-9;
      }
    EXPECT_GT(within, 100u * s.size() / 150);
    EXPECT_LE(list.pairs(), within + borderline) << s.size();
    EXPECT_GE(list.pairs() + borderline, within) << s.size();
  }
}

TEST(MdIntegration, NveConservesEnergy) {
  // in.lj's state (density 0.8442, T 1.44, cutoff 2.5, dt 0.005) at 500 atoms, 400 steps.
  // Unshifted, the energy jumps by 4 (2.5^-12 - 2.5^-6) = -0.0163 each time a pair crosses
  // the cutoff, and melting the fcc start adds ~0.6 pairs per atom inside 2.5 (27 in the
  // lattice, 27.6 in the liquid): ~0.01 per atom of drift (measured 1.1e-2 here, and the same
  // in LAMMPS, which MdLammps matches step by step). Shifted energies (pair_modify shift
  // yes) leave the force's jump at the cutoff (0.039 per crossing, an O(dt) error each time)
  // and velocity Verlet's ~dt^2 error: measured 1.1e-3 per atom from this violent start (T
  // falls from 1.44 to ~0.7 as the lattice melts); bound 3e-3. The integrator itself is
  // checked against LAMMPS step by step (MdLammps).
  System s = fcc_lattice(0.8442, 5, 5, 5);
  assign_velocities(s, 1.44, 87287);
  EXPECT_NEAR(thermo(s, Forces{}, 0).temperature, 1.44, 1e-12);
  ForceField f = ForceField::mixed({1.0}, {1.0}, 2.5);
  f.shift = true;
  NeighborList list(2.5, 0.3);
  list.build(s, f);
  Forces forces;
  forces_cpu(s, f, list, forces);
  const double e0 = thermo(s, forces, 0).total;
  double worst = 0;
  for (int step = 1; step <= 400; ++step) {
    verlet_step(s, forces, f, list, 0.005);
    worst = std::max(worst, std::fabs(thermo(s, forces, step).total - e0));
  }
  EXPECT_LT(worst, 3e-3);
  EXPECT_GT(list.builds(), 1);
  Forces reference;
  forces_reference(s, f, reference);
  expect_same_forces(forces, reference, 1e-12, "after 400 steps");
  std::printf("[ accuracy ] LJ 500 atoms, 400 NVE steps of 0.005: max |E - E0| per atom %.2e, %lld list builds\n",
              worst, static_cast<long long>(list.builds()));
}

TEST(MdFiles, LammpsDataRoundTripKeepsEveryBit) {
  test::ScratchDir dir;
  System s = liquid(2, 6);
  s.has_charges = true;
  for (std::size_t i = 0; i < s.size(); ++i) s.charge[i] = i % 2 ? 0.5 : -0.5;
  assign_velocities(s, 1.0, 3);
  io::write_lammps_data(dir.file("a.data"), s, {1.0, 0.5}, {1.0, 1.2}, "round trip", "lj/cut/coul/dsf");
  const io::LammpsData back = io::read_lammps_data(dir.file("a.data"), Units::lj);
  EXPECT_EQ(back.system.x, s.x);
  EXPECT_EQ(back.system.vz, s.vz);
  EXPECT_EQ(back.system.charge, s.charge);
  EXPECT_EQ(back.system.type, s.type);
  EXPECT_EQ(back.system.type_mass, s.type_mass);
  EXPECT_EQ(back.system.box.hi, s.box.hi);
  EXPECT_EQ(back.pair_sigma, (std::vector<double>{1.0, 1.2}));
  EXPECT_TRUE(back.system.has_charges);
  // Errors name the file and line.
  std::ofstream(dir.file("bad.data")) << "title\n\n2 atoms\n1 atom types\n0 1 xlo xhi\n0 1 ylo yhi\n0 1 zlo zhi\n\n"
                                         "Masses\n\n1 1.0\n\nAtoms # atomic\n\n1 1 0.1 0.2 0.3\n2 3 0.5 0.5 0.5\n";
  try {
    io::read_lammps_data(dir.file("bad.data"), Units::lj);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("bad.data:16: atom type 3 outside 1..1"), std::string::npos) << e.what();
  }
  std::ofstream(dir.file("bonds.data")) << "title\n\n2 atoms\n1 bonds\n";
  EXPECT_THROW(io::read_lammps_data(dir.file("bonds.data"), Units::lj), Error);
}

}  // namespace nbkit::md

namespace nbkit::md {

namespace {

// Runs LAMMPS (Debian's lmp) on `input` in `dir`; the thermo rows of its log (step temp pe ke
// etotal press), or nothing when lmp is not installed.
std::optional<std::vector<std::array<double, 6>>> run_lammps(const test::ScratchDir& dir, const std::string& input) {
  if (std::system("command -v lmp >/dev/null 2>&1") != 0) return std::nullopt;
  std::ofstream(dir.file("in.test")) << input;
  const std::string command = "cd " + dir.file("") + " && lmp -in in.test -log log.lammps -screen none -nocite";
  if (std::system(command.c_str()) != 0) {
    std::ifstream log(dir.file("log.lammps"));
    std::string all((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
    ADD_FAILURE() << "LAMMPS failed:\n" << all;
    return std::vector<std::array<double, 6>>{};
  }
  std::ifstream log(dir.file("log.lammps"));
  std::string line;
  std::vector<std::array<double, 6>> rows;
  bool in_table = false;
  while (std::getline(log, line)) {
    if (line.find("Step") != std::string::npos && line.find("Press") != std::string::npos) {
      in_table = true;
      continue;
    }
    if (in_table && line.rfind("Loop time", 0) == 0) break;
    if (!in_table) continue;
    std::istringstream fields(line);
    std::array<double, 6> row{};
    if (fields >> row[0] >> row[1] >> row[2] >> row[3] >> row[4] >> row[5]) rows.push_back(row);
  }
  return rows;
}

}  // namespace

TEST(MdLammps, InLjMatchesLammpsStepByStep) {
  // LAMMPS's in.lj benchmark state: fcc at density 0.8442, 32,000 atoms (20^3 cells), T 1.44,
  // cutoff 2.5 (unshifted), skin 0.3, dt 0.005, NVE, here from one data file both codes read.
  // Step 0: the same pairs summed in another order and with the pair energy written another
  // way (LAMMPS: r^-6 (lj3 r^-6 - lj4)), measured 3e-12 relative: 1e-10 (the issue asks 1e-6).
  // Over 100 steps the trajectories part only as float64 rounding grows through the chaotic
  // dynamics (Lyapunov time ~0.1-0.2 here: 1e-16 grows to ~1e-13 by t = 0.5): 1e-9 relative.
  // A comparison with a reference program, as the OpenMM and LAMMPS scripts the sanitized run
  // leaves out (scripts/test): its code paths are the unit tests' (22 s under the sanitizers).
  if (test::kSanitized) GTEST_SKIP() << "a comparison with LAMMPS: the release build runs it";
  test::ScratchDir dir;
  System s = fcc_lattice(0.8442, 20, 20, 20);
  assign_velocities(s, 1.44, 87287);
  io::write_lammps_data(dir.file("lj.data"), s, {1.0}, {1.0});
  const auto lammps = run_lammps(dir,
                                 "units lj\natom_style atomic\npair_style lj/cut 2.5\nread_data lj.data\n"
                                 "pair_coeff * * 1.0 1.0 2.5\n"
                                 "neighbor 0.3 bin\nneigh_modify delay 0 every 1 check yes\n"
                                 "fix 1 all nve\ntimestep 0.005\n"
                                 "thermo_style custom step temp pe ke etotal press\n"
                                 "thermo_modify format float %.17g\nthermo 10\nrun 100\n");
  if (!lammps) GTEST_SKIP() << "LAMMPS (lmp) is not installed: scripts/setup installs Debian's lammps";
  ASSERT_EQ(lammps->size(), 11u);
  const ForceField f = ForceField::mixed({1.0}, {1.0}, 2.5);
  NeighborList list(2.5, 0.3);
  list.build(s, f);
  Forces forces;
  forces_cpu(s, f, list, forces);
  for (int step = 0; step <= 100; ++step) {
    if (step > 0) verlet_step(s, forces, f, list, 0.005);
    if (step % 10 != 0) continue;
    const Thermo t = thermo(s, forces, step);
    const auto& row = (*lammps)[step / 10];
    const double tolerance = step == 0 ? 1e-10 : 1e-9;
    ASSERT_EQ(row[0], step);
    EXPECT_NEAR(t.temperature, row[1], tolerance * std::fabs(row[1])) << "step " << step;
    EXPECT_NEAR(t.potential, row[2], tolerance * std::fabs(row[2])) << "step " << step;
    EXPECT_NEAR(t.kinetic, row[3], tolerance * std::fabs(row[3])) << "step " << step;
    EXPECT_NEAR(t.total, row[4], tolerance * std::fabs(row[4])) << "step " << step;
    EXPECT_NEAR(t.pressure, row[5], tolerance * std::fabs(row[5])) << "step " << step;
    if (step == 0 || step == 100)
      std::printf("[ lammps ] step %3d: pe %.12f (LAMMPS %.12f), press %.12f (LAMMPS %.12f)\n", step, t.potential,
                  row[2], t.pressure, row[5]);
  }
}

}  // namespace nbkit::md

namespace nbkit::md {

TEST(MdIntegration, PhiloxMatchesRandom123sKnownAnswers) {
  // Random123's kat_vectors for philox4x32-10: zero, all ones, and the digits of pi.
  const std::uint32_t cases[3][10] = {
      {0, 0, 0, 0, 0, 0, 0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8},
      {0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0x408f276d, 0x41c83b0e, 0xa20bc7c6,
       0x6d5451fd},
      {0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344, 0xa4093822, 0x299f31d0, 0xd16cfe09, 0x94fdcceb, 0x5001e420,
       0x24126ea1}};
  for (const auto& c : cases) {
    std::uint32_t out[4];
    philox4x32_10(c, c + 4, out);
    for (int k = 0; k < 4; ++k) EXPECT_EQ(out[k], c[6 + k]) << std::hex << c[0];
  }
}

TEST(MdIntegration, LangevinNoiseHasTheVarianceAndNoMemory) {
  // The random force's components: mean 0, variance 2 k T m / (damping dt) (u - 1/2 has
  // variance 1/12, times 24 k T m / (damping dt)); no correlation between atoms, calls or
  // components. 60,000 samples (40 calls x 500 atoms x 3): the variance to 3% (its standard
  // error is ~0.5%), mean and correlations under 0.03 (standard errors ~0.004).
  System s = fcc_lattice(0.8442, 5, 5, 5);  // 500 atoms at rest: the force is the noise alone
  Langevin thermostat(1.5, 0.2, 99);
  const double dt = 0.004, expected = 2 * 1.5 * 1.0 / (0.2 * dt);
  std::vector<double> previous;
  double sum = 0, sum2 = 0, lag_atoms = 0, lag_calls = 0;
  int samples = 0, pairs = 0;
  for (int call = 0; call < 40; ++call) {
    Forces f;
    f.resize(s.size());
    thermostat.apply(s, f, dt);
    std::vector<double> now;
    for (std::size_t i = 0; i < s.size(); ++i) now.insert(now.end(), {f.fx[i], f.fy[i], f.fz[i]});
    for (std::size_t k = 0; k < now.size(); ++k) {
      sum += now[k], sum2 += now[k] * now[k], ++samples;
      if (k + 1 < now.size()) lag_atoms += now[k] * now[k + 1];
      if (!previous.empty()) lag_calls += now[k] * previous[k], ++pairs;
    }
    previous = now;
  }
  const double variance = sum2 / samples;
  EXPECT_NEAR(variance / expected, 1.0, 0.03);
  EXPECT_LT(std::fabs(sum / samples) / std::sqrt(variance), 0.03);
  EXPECT_LT(std::fabs(lag_atoms / samples / variance), 0.03);
  EXPECT_LT(std::fabs(lag_calls / pairs / variance), 0.03);
}

TEST(MdIntegration, LangevinHoldsTheTemperature) {
  // 500 atoms started at T = 0.5, thermostat at 1.2 with damping 0.1 (in.lj's units): after
  // 10 damping times the kinetic temperature fluctuates around 1.2 with relative spread
  // sqrt(2 / (3N)) = 3.7%; the mean over the last 500 steps is within 2%.
  System s = fcc_lattice(0.8442, 5, 5, 5);
  assign_velocities(s, 0.5, 1);
  ForceField f = ForceField::mixed({1.0}, {1.0}, 2.5);
  NeighborList list(2.5, 0.3);
  list.build(s, f);
  Langevin thermostat(1.2, 0.1, 7);
  Forces forces;
  forces_cpu(s, f, list, forces);
  thermostat.apply(s, forces, 0.005);
  double sum = 0;
  for (int step = 1; step <= 1500; ++step) {
    verlet_step(s, forces, f, list, 0.005, 0, &thermostat);
    if (step > 1000) sum += thermo(s, forces, step).temperature;
  }
  EXPECT_NEAR(sum / 500, 1.2, 0.024);
  EXPECT_THROW(Langevin(1.0, 0.0, 1), Error);
}

}  // namespace nbkit::md

namespace nbkit::md {

TEST(MdCoulomb, ShiftedForceThroughTheListMatchesTheReferenceAndTheGradient) {
  System s = charged_liquid(3, 8);
  ForceField f = two_type_field();
  f.coulomb_cutoff = 3.0;  // longer than the LJ cutoff: the list reaches 3.0 + skin
  Forces reference;
  forces_reference(s, f, reference);
  NeighborList list(f.reach(), 0.3);
  list.build(s, f);
  Forces listed;
  forces_cpu(s, f, list, listed);
  expect_same_forces(listed, reference, 1e-12, "charged liquid");
  EXPECT_THROW(forces_cpu(s, f, NeighborList(2.5, 0.3), listed), Error);  // a list shorter than the reach
  // Zero at the cutoff, energy and force: one pair just inside and just outside.
  double e_in, f_in;
  shifted_force_coulomb(ScalarPairMath<double>{}, 3.0 * 3.0 * (1 - 1e-12), 1.0, 1 / 3.0, e_in, f_in);
  EXPECT_NEAR(e_in, 0.0, 1e-12);
  EXPECT_NEAR(f_in, 0.0, 1e-12);
  // -grad E by central differences, as for LJ.
  const double h = 1e-6;
  for (const std::size_t i : {1, 40, 99}) {
    const double keep = s.y[i];
    Forces plus, minus;
    s.y[i] = keep + h;
    forces_reference(s, f, plus);
    s.y[i] = keep - h;
    forces_reference(s, f, minus);
    s.y[i] = keep;
    EXPECT_NEAR(reference.fy[i], -(plus.potential - minus.potential) / (2 * h), 1e-5 * std::max(1.0, std::fabs(reference.fy[i])));
  }
}

TEST(MdLammps, ChargedSystemWithShiftedForceCoulombMatchesLammps) {
  // 4,000 atoms of in.lj's state with charges +-0.5, LAMMPS's lj/cut/coul/dsf with alpha 0
  // (shifted-force Coulomb), LJ cutoff 2.5, Coulomb cutoff 3.0. LAMMPS evaluates erfc(0) by
  // its polynomial (1 - 1e-9), so the Coulomb pair energies may differ by ~1e-9 relative
  // (measured: 2e-11 in pe and pressure, at step 0 and step 100): bounds 1e-7 at step 0 (the
  // issue asks 1e-6) and 1e-6 over 100 steps.
  test::ScratchDir dir;
  System s = fcc_lattice(0.8442, 10, 10, 10);
  s.has_charges = true;
  for (std::size_t i = 0; i < s.size(); ++i) s.charge[i] = i % 2 ? 0.5 : -0.5;
  assign_velocities(s, 1.44, 4928);
  io::write_lammps_data(dir.file("q.data"), s);
  const auto lammps = run_lammps(dir,
                                 "units lj\natom_style charge\nread_data q.data\n"
                                 "pair_style lj/cut/coul/dsf 0.0 2.5 3.0\npair_coeff * * 1.0 1.0\n"
                                 "neighbor 0.3 bin\nneigh_modify delay 0 every 1 check yes\n"
                                 "fix 1 all nve\ntimestep 0.005\n"
                                 "thermo_style custom step temp pe ke etotal press\n"
                                 "thermo_modify format float %.17g\nthermo 10\nrun 100\n");
  if (!lammps) GTEST_SKIP() << "LAMMPS (lmp) is not installed: scripts/setup installs Debian's lammps";
  ASSERT_EQ(lammps->size(), 11u);
  ForceField f = ForceField::mixed({1.0}, {1.0}, 2.5);
  f.coulomb_cutoff = 3.0;
  NeighborList list(f.reach(), 0.3);
  list.build(s, f);
  Forces forces;
  forces_cpu(s, f, list, forces);
  for (int step = 0; step <= 100; ++step) {
    if (step > 0) verlet_step(s, forces, f, list, 0.005);
    if (step % 10 != 0) continue;
    const Thermo t = thermo(s, forces, step);
    const auto& row = (*lammps)[step / 10];
    const double tolerance = step == 0 ? 1e-7 : 1e-6;
    EXPECT_NEAR(t.potential, row[2], tolerance * std::fabs(row[2])) << "step " << step;
    EXPECT_NEAR(t.total, row[4], tolerance * std::fabs(row[4])) << "step " << step;
    EXPECT_NEAR(t.pressure, row[5], tolerance * std::max(1.0, std::fabs(row[5]))) << "step " << step;
    if (step == 0 || step == 100)
      std::printf("[ lammps ] charged, step %3d: pe %.12f (LAMMPS %.12f), press %.12f (LAMMPS %.12f)\n", step,
                  t.potential, row[2], t.pressure, row[5]);
  }
}

}  // namespace nbkit::md

namespace nbkit::md {

TEST(MdLammps, RealUnitsWithTwoTypesAndChargesMatchLammps) {
  // LAMMPS's `real` units (Angstrom, kcal/mol, g/mol, fs, K; energies in total, pressure in
  // atm, Coulomb constant 332.06371): 864 atoms of two types (argon-like and a smaller,
  // lighter one) with charges +-0.2 on an fcc lattice scaled to sigma = 3.405 A, LJ cutoff
  // 8.5 A, shifted-force Coulomb cutoff 10 A, geometric mixing from the data file's Pair
  // Coeffs, skin 2 A, 100 NVE steps of 2 fs at 120 K. Tolerances as the lj-units charged test
  // (the same arithmetic with other constants): 1e-7 at step 0, 1e-6 over 100 steps. Measured:
  // 6e-10 in pe at step 0, most of it LAMMPS's erfc polynomial, whose coefficients sum to
  // 1 - 1e-9 at alpha 0 (the Coulomb part is larger here than in the lj-units test).
  test::ScratchDir dir;
  System s = fcc_lattice(0.8442, 6, 6, 6);
  s.units = Units::real;
  const double sigma = 3.405;
  for (std::size_t i = 0; i < s.size(); ++i) s.x[i] *= sigma, s.y[i] *= sigma, s.z[i] *= sigma;
  for (int a = 0; a < 3; ++a) s.box.lo[a] *= sigma, s.box.hi[a] *= sigma;
  s.type_mass = {39.948, 22.99};
  s.has_charges = true;
  for (std::size_t i = 0; i < s.size(); ++i) s.type[i] = static_cast<int>(i % 2), s.charge[i] = i % 2 ? 0.2 : -0.2;
  assign_velocities(s, 120.0, 9127);
  const std::vector<double> epsilon = {0.2381, 0.1}, sigmas = {3.405, 2.5};
  io::write_lammps_data(dir.file("real.data"), s, epsilon, sigmas);
  const auto lammps = run_lammps(dir,
                                 "units real\natom_style charge\npair_style lj/cut/coul/dsf 0.0 8.5 10.0\n"
                                 "read_data real.data\n"
                                 "neighbor 2.0 bin\nneigh_modify delay 0 every 1 check yes\n"
                                 "fix 1 all nve\ntimestep 2.0\n"
                                 "thermo_style custom step temp pe ke etotal press\n"
                                 "thermo_modify format float %.17g\nthermo 10\nrun 100\n");
  if (!lammps) GTEST_SKIP() << "LAMMPS (lmp) is not installed: scripts/setup installs Debian's lammps";
  ASSERT_EQ(lammps->size(), 11u);
  ForceField f = ForceField::mixed(epsilon, sigmas, 8.5);
  f.coulomb_cutoff = 10.0;
  NeighborList list(f.reach(), 2.0);
  list.build(s, f);
  Forces forces;
  forces_cpu(s, f, list, forces);
  for (int step = 0; step <= 100; ++step) {
    if (step > 0) verlet_step(s, forces, f, list, 2.0);
    if (step % 10 != 0) continue;
    const Thermo t = thermo(s, forces, step);
    const auto& row = (*lammps)[step / 10];
    const double tolerance = step == 0 ? 1e-7 : 1e-6;
    EXPECT_NEAR(t.temperature, row[1], tolerance * std::fabs(row[1])) << "step " << step;
    EXPECT_NEAR(t.potential, row[2], tolerance * std::fabs(row[2])) << "step " << step;
    EXPECT_NEAR(t.total, row[4], tolerance * std::fabs(row[4])) << "step " << step;
    EXPECT_NEAR(t.pressure, row[5], tolerance * std::max(1.0, std::fabs(row[5]))) << "step " << step;
    if (step == 0 || step == 100)
      std::printf("[ lammps ] real units, step %3d: pe %.12f (LAMMPS %.12f), press %.12f (LAMMPS %.12f)\n", step,
                  t.potential, row[2], t.pressure, row[5]);
  }
}

}  // namespace nbkit::md

namespace nbkit::md {

// Pairs set apart from mixing (LAMMPS's pair_coeff i j), as LAMMPS's write_data emits them
// (PairIJ Coeffs) and as nbkit's TOML gives them (types = [i, j]): read, written and summed as
// LAMMPS sums them. Step 0 of the same state: the same pairs in another order, 1e-10.
TEST(MdLammps, PairIJCoefficientsFromLammpsWriteDataAndTheToml) {
  test::ScratchDir dir;
  System s = test::liquid(4, 17);
  assign_velocities(s, 1.0, 4242);
  io::write_lammps_data(dir.file("start.data"), s, {1.0, 0.5}, {1.0, 1.2});
  const auto lammps = run_lammps(dir,
                                 "units lj\natom_style atomic\npair_style lj/cut 2.5\nread_data start.data\n"
                                 "pair_coeff 1 2 0.9 0.95\n"
                                 "thermo_style custom step temp pe ke etotal press\n"
                                 "thermo_modify format float %.17g\nrun 0\nwrite_data lammps.data pair ij\n");
  if (!lammps) GTEST_SKIP() << "LAMMPS (lmp) is not installed: scripts/setup installs Debian's lammps";
  ASSERT_EQ(lammps->size(), 1u);
  // LAMMPS's own data file, read through the TOML as a user would.
  std::ofstream(dir.file("run.toml")) << "[system]\ndata = \"lammps.data\"\n[pair]\ncutoff = 2.5\n[run]\nsteps = 0\n";
  const io::MdConfig run = io::read_md_config(dir.file("run.toml"));
  ASSERT_EQ(run.pair_ij.size(), 3u);
  EXPECT_EQ(run.field.epsilon[1], 0.9);
  EXPECT_EQ(run.field.sigma[2], 0.95);
  auto energies = [](const System& system, const ForceField& field) {
    NeighborList list(field.reach(), 0.3);
    list.build(system, field);
    Forces forces;
    forces_cpu(system, field, list, forces);
    return thermo(system, forces, 0);
  };
  const Thermo t = energies(run.system, run.field);
  const auto& row = (*lammps)[0];
  EXPECT_NEAR(t.potential, row[2], 1e-10 * std::fabs(row[2]));
  EXPECT_NEAR(t.pressure, row[5], 1e-10 * std::max(1.0, std::fabs(row[5])));
  // The same pairs from the TOML; nbkit's data file keeps them as PairIJ Coeffs, and reads back.
  std::ofstream(dir.file("pairs.toml"))
      << "[system]\ndata = \"start.data\"\n[pair]\ncutoff = 2.5\n"
         "coeffs = [{type = 1, epsilon = 1.0, sigma = 1.0}, {type = 2, epsilon = 0.5, sigma = 1.2},\n"
         "          {types = [2, 1], epsilon = 0.9, sigma = 0.95}]\n[run]\nsteps = 0\n";
  const io::MdConfig toml = io::read_md_config(dir.file("pairs.toml"));
  EXPECT_EQ(toml.field.epsilon, run.field.epsilon);
  EXPECT_EQ(toml.field.sigma, run.field.sigma);
  io::write_lammps_data(dir.file("again.data"), toml.system, toml.type_epsilon, toml.type_sigma, "pairs", "lj/cut",
                        toml.pair_ij);
  const io::LammpsData again = io::read_lammps_data(dir.file("again.data"), Units::lj);
  ASSERT_EQ(again.pair_ij.size(), 3u);
  EXPECT_EQ(again.pair_ij[1].epsilon, 0.9);
  // Arithmetic mixing is no geometric mixing: kept pair by pair, so LAMMPS reads what nbkit ran.
  EXPECT_EQ(io::pairs_beyond_geometric_mixing(ForceField::mixed({1.0, 0.5}, {1.0, 1.2}, 2.5, true)).size(), 3u);
  EXPECT_TRUE(io::pairs_beyond_geometric_mixing(ForceField::mixed({1.0, 0.5}, {1.0, 1.2}, 2.5)).empty());
  std::printf("[ lammps ] PairIJ Coeffs, step 0: pe %.12f (LAMMPS %.12f)\n", t.potential, row[2]);
}

TEST(MdFiles, PairIJCoeffsErrorsNameTheLine) {
  test::ScratchDir dir;
  const std::string head = "title\n\n2 atoms\n2 atom types\n0 9 xlo xhi\n0 9 ylo yhi\n0 9 zlo zhi\n\n"
                           "Masses\n\n1 1.0\n2 1.0\n\n";
  const std::string atoms = "\nAtoms # atomic\n\n1 1 1 1 1\n2 2 3 3 3\n";
  auto message = [&](const std::string& pairs) {
    std::ofstream(dir.file("p.data")) << head << pairs << atoms;
    try {
      io::read_lammps_data(dir.file("p.data"), Units::lj);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message("PairIJ Coeffs # lj/cut\n\n1 1 1.0 1.0\n2 1 1.0 1.0\n2 2 1.0 1.0\n"),
            dir.file("p.data") + ":17: PairIJ Coeffs: expected i <= j, got 2 1");
  EXPECT_EQ(message("PairIJ Coeffs\n\n1 1 1.0 1.0\n1 1 1.0 1.0\n2 2 1.0 1.0\n"),
            dir.file("p.data") + ":17: PairIJ Coeffs: pair 1 1 appears twice");
  EXPECT_EQ(message("PairIJ Coeffs # lj/cut\n\n1 1 1.0 1.0\n1 2 0.5 1.1\n2 2 1.0 1.0\n"), "no error");
  // A corrupt count is refused before anything is sized by it (found by fuzz/lammps_data_fuzz.cpp).
  std::ofstream(dir.file("p.data")) << "title\n\n4 atoms\n277777777777777 atom types\n";
  try {
    io::read_lammps_data(dir.file("p.data"), Units::lj);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("the header gives 4 atoms and 277777777777777 atom types, but the file has only 5 "
                                         "lines"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace nbkit::md

namespace nbkit::io {

// The error parse_md_config gives a TOML text (as run.toml), or "no error".
static std::string config_message(const std::string& text) {
  try {
    parse_md_config(text, "run.toml", "/nowhere");
  } catch (const Error& e) {
    return std::string(e.what());
  }
  return std::string("no error");
}

TEST(MdConfig, KeysPairsAndCharactersBeyondAscii) {
  const std::string lattice = "[system]\nlattice = \"fcc\"\ndensity = 0.8442\ncells = [2, 2, 2]\n[run]\nsteps = 1\n";
  const MdConfig plain = parse_md_config(lattice, "run.toml", "/nowhere");
  EXPECT_EQ(plain.system.size(), 32u);
  EXPECT_FALSE(plain.langevin);
  auto message = config_message;
  // One-line strings and comment lines may hold any characters; keys and bare values not.
  EXPECT_EQ(message("# Ηλίας's run, 1 \u00e9t\u00e9\n" + lattice + "[output]\ndirectory = \"r\u00e9sultats-\u0397\" # \u00e9\n"),
            "no error");
  EXPECT_EQ(message(lattice + "[output]\n\u00e9 = 1\n"),
            "run.toml:8: a character beyond ASCII outside a one-line string value or a comment line (nbkit reads them "
            "only in `key = \"...\"` lines and comments)");
  EXPECT_EQ(message(lattice + "[output]\ndirectory = \"\"\"a\\\n   \u00a7\"\"\"\n"),
            "run.toml:9: a character beyond ASCII outside a one-line string value or a comment line (nbkit reads them "
            "only in `key = \"...\"` lines and comments)");
  // Settings that would be ignored are refused.
  EXPECT_EQ(message(lattice.substr(0, lattice.find("[run]")) + "[run]\nsteps = 1\ntemperature = 1.0\n"),
            "run.toml:7: run.temperature: a thermostat setting: add ensemble = \"nvt\" or \"langevin\" (the run is NVE)");
  // Per-pair coefficients: a pair of types, once; types within the system's.
  const std::string two_types = "[system]\ndata = \"x.data\"\n";
  EXPECT_NE(message(two_types).find("/nowhere/x.data: no such file"), std::string::npos) << message(two_types);
  const MdConfig pairs = parse_md_config(lattice.substr(0, lattice.find("[run]")) +
                                             "[pair]\ncoeffs = [{type = 1, epsilon = 1.0, sigma = 1.0},"
                                             " {types = [1, 1], epsilon = 0.5, sigma = 1.1}]\n[run]\nsteps = 1\n",
                                         "run.toml", "/nowhere");
  EXPECT_EQ(pairs.field.epsilon[0], 0.5);
  EXPECT_EQ(pairs.field.sigma[0], 1.1);
  // One type: its pair 1 1 is its own coefficients, which the data file's Pair Coeffs then carry.
  EXPECT_TRUE(pairs.pair_ij.empty());
  EXPECT_EQ(pairs.type_epsilon, std::vector<double>{0.5});
  EXPECT_EQ(pairs.type_sigma, std::vector<double>{1.1});
  EXPECT_NE(message(lattice.substr(0, lattice.find("[run]")) +
                    "[pair]\ncoeffs = [{types = [1, 2], epsilon = 0.5, sigma = 1.1}]\n[run]\nsteps = 1\n")
                .find("type 2 outside 1..1"),
            std::string::npos);
}

}  // namespace nbkit::io

namespace nbkit::io {

// The production keys (issue 19) of a biomolecular TOML: read into the run, or refused with the
// file and line.
TEST(MdConfig, ProductionKeysAreReadOrRefusedWithTheLine) {
  const std::string system = "[system]\npsf = \"" + test::test_data_file("butane.psf") + "\"\nparameters = [\"" +
                             test::test_data_file("butane.prm") + "\"]\ncoordinates = \"" +
                             test::test_data_file("butane.crd") + "\"\nbox = [20.0, 20.0, 20.0]\nhydrogen_mass = 1.5\n";
  const std::string nonbonded = "[nonbonded]\nelectrostatics = \"pme\"\ncutoff = 8.0\n";
  const std::string npt = system + "[constraints]\n" + nonbonded +
                          "[run]\nsteps = 1\nensemble = \"npt\"\ntemperature = 310\nfriction = 2.0\n"
                          "[barostat]\npressure = 1.0\nscaling = \"anisotropic\"\naxes = [\"z\"]\n";
  const MdConfig run = parse_md_config(npt, "run.toml", "/nowhere");
  EXPECT_EQ(run.constraints.bonds, md::ConstraintOptions::Bonds::hydrogen);  // [constraints] alone: h-bonds
  EXPECT_TRUE(run.constraints.rigid_water);
  ASSERT_TRUE(run.langevin_middle);
  EXPECT_EQ(run.langevin_middle->temperature, 310);
  EXPECT_DOUBLE_EQ(run.langevin_middle->friction, 2e-3);  // 1/ps given, 1/fs held
  ASSERT_TRUE(run.barostat);
  EXPECT_TRUE(run.barostat->anisotropic);
  EXPECT_EQ(run.barostat->axes, (std::array<bool, 3>{false, false, true}));
  EXPECT_EQ(run.barostat->temperature, 310);
  EXPECT_EQ(run.hydrogen_mass, 1.5);  // (the test butane has no atom under 4.5 g/mol)
  EXPECT_FALSE(run.molecular->nonbonded.pme_fft_sizes);  // OpenMM Reference's mesh unless asked
  const std::string fft = "pme_mesh_sizes = \"fft\"\n";
  EXPECT_TRUE(parse_md_config(system + nonbonded + fft + "[run]\nsteps = 1\n", "run.toml", "/nowhere")
                  .molecular->nonbonded.pme_fft_sizes);
  auto message = config_message;
  EXPECT_NE(message(system + nonbonded + "pme_mesh_sizes = \"pow2\"\n[run]\nsteps = 1\n").find("run.toml:10: nonbonded.pme_mesh_sizes"),
            std::string::npos);
  EXPECT_NE(message(system + nonbonded + fft + "pme_mesh = [24, 24, 24]\n[run]\nsteps = 1\n").find("pme_mesh gives the mesh"),
            std::string::npos);
  const std::string run_nvt = "[run]\nsteps = 1\nensemble = \"nvt\"\ntemperature = 300\n";
  EXPECT_NE(message(system + nonbonded + run_nvt + "[barostat]\npressure = 1.0\n").find("run.toml:14: barostat"),
            std::string::npos);
  EXPECT_NE(message(system + nonbonded + "[run]\nsteps = 1\nensemble = \"langevin\"\ntemperature = 300\ndamping = "
                                         "100.0\nfriction = 1.0\n")
                .find("run.toml:15: run.friction"),
            std::string::npos);
  EXPECT_NE(message(system + "[constraints]\nbonds = \"hbond\"\n" + nonbonded + run_nvt).find("run.toml:8: constraints.bonds"),
            std::string::npos);
  EXPECT_NE(message(system + nonbonded + run_nvt + "[barostat]\naxes = [\"x\"]\n").find("barostat"), std::string::npos);
  EXPECT_NE(message(npt + "seed = 1\nwrong = 2\n").find("run.toml:21: barostat.wrong: unknown key"), std::string::npos);
  const std::string lattice = "[system]\nlattice = \"fcc\"\ndensity = 0.8442\ncells = [2, 2, 2]\nhydrogen_mass = 1.5\n"
                              "[run]\nsteps = 1\n";
  EXPECT_NE(message(lattice).find("run.toml:5: system.hydrogen_mass"), std::string::npos);
}

}  // namespace nbkit::io
