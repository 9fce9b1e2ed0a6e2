// The nbkit binary, run as a user runs it: outputs, summary line, and error messages.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <cmath>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "nbkit/core/backend.hpp"
#include "nbkit/io/amber.hpp"
#include "nbkit/io/dcd.hpp"
#include "nbkit/io/map_files.hpp"
#include "nbkit/io/pqr.hpp"
#include "nbkit/io/snapshot.hpp"
#include "nbkit/md/molecular_forces.hpp"
#include "cli/cli_support.hpp"
#include "test_support.hpp"

using nbkit::test::contains;
using nbkit::test::data;
using nbkit::test::Result;
using nbkit::test::run_nbkit;
using nbkit::test::write_text;

TEST(Cli, VersionAndHelp) {
  const Result version = run_nbkit("--version");
  EXPECT_EQ(version.status, 0);
  EXPECT_TRUE(contains(version.output, "nbkit 0.")) << version.output;
  const Result help = run_nbkit("--help");
  EXPECT_EQ(help.status, 0);
  EXPECT_TRUE(contains(help.output, "map")) << help.output;
  EXPECT_TRUE(contains(help.output, "info")) << help.output;
  const Result map_help = run_nbkit("map --help");
  EXPECT_TRUE(contains(map_help.output, "--spacing")) << map_help.output;
  EXPECT_TRUE(contains(map_help.output, "Example: nbkit map")) << map_help.output;
  const Result none = run_nbkit("");
  EXPECT_NE(none.status, 0);
}

TEST(Cli, InfoNamesSimdTargetAndGpus) {
  const Result info = run_nbkit("info");
  EXPECT_EQ(info.status, 0);
  EXPECT_TRUE(contains(info.output, "SIMD target:")) << info.output;
  EXPECT_TRUE(contains(info.output, "GPU")) << info.output;
  const Result json = run_nbkit("info --json");
  ASSERT_EQ(json.status, 0);
  const auto parsed = nlohmann::json::parse(json.output);
  EXPECT_TRUE(parsed.contains("simd_target"));
  EXPECT_TRUE(parsed["gpus"].is_array());
}

TEST(Cli, MapOfARealProteinWithPictureAndReport) {
  nbkit::test::ScratchDir dir;
  const Result r = run_nbkit("map " + data("1a63.pqr") + " -o " + dir.file("m.dx") + " --spacing 1.5 --png " +
                         dir.file("m.png") + " --report " + dir.file("m.json"));
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "nbkit map: 2,065 atoms")) << r.output;
  EXPECT_TRUE(contains(r.output, "atom-lattice evaluations/s")) << r.output;
  EXPECT_FALSE(contains(r.output, "\r")) << "a progress bar was drawn into a pipe";
  const nbkit::Map map = nbkit::io::read_dx(dir.file("m.dx"));
  const auto report = nlohmann::json::parse(std::ifstream(dir.file("m.json")));
  EXPECT_EQ(report["input"]["atoms"], 2065);
  EXPECT_EQ(report["lattice"]["points"], map.lattice.size());
  EXPECT_EQ(report["backend"]["used"], nbkit::list_gpus().empty() ? "cpu" : "cuda");
  EXPECT_GT(report["rates"]["evaluations_per_second"].get<double>(), 0);
  EXPECT_TRUE(std::filesystem::file_size(dir.file("m.png")) > 1000);
  // Nothing but the three outputs is left behind (no temporary files).
  int files = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(dir.path())) ++files;
  EXPECT_EQ(files, 3);
}

TEST(Cli, RdfOfATrajectoryWithPictureReportAndRefusals) {
  nbkit::test::ScratchDir dir;
  const std::string inputs = "rdf " + data("1a63.pqr") + " " + data("1a63-wobble.dcd") + " ";
  const Result r = run_nbkit(inputs + "--select-a \"name CA\" --select-b \"name CB\" --rmax 12 --bins 48 -o " +
                             dir.file("g.csv") + " --png " + dir.file("g.png") + " --report " + dir.file("g.json"));
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "nbkit rdf: 130 x ")) << r.output;
  EXPECT_TRUE(contains(r.output, "20 frames")) << r.output;
  std::ifstream csv(dir.file("g.csv"));
  std::string line;
  int rows = 0;
  while (std::getline(csv, line))
    if (!line.empty() && line[0] != '#' && line[0] != 'r') ++rows;
  EXPECT_EQ(rows, 48);
  const auto report = nlohmann::json::parse(std::ifstream(dir.file("g.json")));
  EXPECT_EQ(report["rdf"]["frames"], 20);
  EXPECT_GT(std::filesystem::file_size(dir.file("g.png")), 1000u);
  // VMD's normalisation (each frame over its own volume): the same g(r) for this trajectory's one
  // cell, to rounding.
  const Result vmd = run_nbkit(inputs + "--select-a \"name CA\" --select-b \"name CB\" --rmax 12 --bins 48 --norm vmd -q -o " +
                               dir.file("v.csv"));
  ASSERT_EQ(vmd.status, 0) << vmd.output;
  auto g_column = [](const std::string& path) {
    std::vector<double> g;
    std::ifstream in(path);
    for (std::string row; std::getline(in, row);) {
      if (row.empty() || row[0] == '#' || row[0] == 'r') continue;
      std::stringstream fields(row);
      std::string field;
      for (int c = 0; c < 5; ++c) std::getline(fields, field, ',');
      g.push_back(std::stod(field));
    }
    return g;
  };
  const std::vector<double> g_interrdf = g_column(dir.file("g.csv")), g_vmd = g_column(dir.file("v.csv"));
  ASSERT_EQ(g_vmd.size(), 48u);
  ASSERT_EQ(g_interrdf.size(), 48u);
  for (std::size_t k = 0; k < g_vmd.size(); ++k) EXPECT_NEAR(g_vmd[k], g_interrdf[k], 1e-12 * std::max(1.0, g_interrdf[k])) << k;
  // The cell is 50 A: rmax over 25 A has no unique minimum images.
  const Result wide = run_nbkit(inputs + "--select-a \"name CA\" --rmax 30 -o " + dir.file("w.csv"));
  EXPECT_NE(wide.status, 0);
  EXPECT_TRUE(contains(wide.output, "over half the narrowest width")) << wide.output;
  // A file named .xtc that is not one: one line, whether or not the build reads XTC.
  std::ofstream(dir.file("fake.xtc")) << "not a trajectory\n";
  const Result fake = run_nbkit("rdf " + data("1a63.pqr") + " " + dir.file("fake.xtc") + " --select-a \"name CA\" -o " +
                                dir.file("f.csv"));
  EXPECT_NE(fake.status, 0);
  EXPECT_TRUE(contains(fake.output, "not an XTC or TRR") || contains(fake.output, "reads no XTC")) << fake.output;
  EXPECT_FALSE(contains(fake.output, "GROMACS website")) << fake.output;
  const Result typo = run_nbkit(inputs + "--select-a \"name CA and resnme ALA\" -o " + dir.file("t.csv"));
  EXPECT_NE(typo.status, 0);
  EXPECT_TRUE(contains(typo.output, "unknown keyword 'resnme'")) << typo.output;
  const Result over_input = run_nbkit(inputs + "--select-a \"name CA\" -o " + data("1a63.pqr"));
  EXPECT_NE(over_input.status, 0);
  EXPECT_TRUE(contains(over_input.output, "never writes over its inputs")) << over_input.output;
  const Result no_bonds = run_nbkit(inputs + "--select-a \"name CA\" --exclude molecule -o " + dir.file("m.csv"));
  EXPECT_NE(no_bonds.status, 0);
  EXPECT_TRUE(contains(no_bonds.output, "no bonds")) << no_bonds.output;
  // Frames read ahead on a thread: a range with a stride takes its frames, and a file that ends
  // inside a frame is refused with the file's name and the frame, leaving no output.
  const Result some = run_nbkit(inputs + "--select-a \"name CA\" --first 3 --last 15 --stride 4 --report " +
                                dir.file("s.json") + " -q -o " + dir.file("s.csv"));
  ASSERT_EQ(some.status, 0) << some.output;
  EXPECT_EQ(nlohmann::json::parse(std::ifstream(dir.file("s.json")))["rdf"]["frames"], 4);  // 3, 7, 11, 15
  {
    std::ifstream whole(data("1a63-wobble.dcd"), std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(whole)), std::istreambuf_iterator<char>());
    // The header's frame count is kept: the frames' bytes end 100 bytes early, inside the last frame.
    std::ofstream(dir.file("cut.dcd"), std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size() - 100));
  }
  const Result cut = run_nbkit("rdf " + data("1a63.pqr") + " " + dir.file("cut.dcd") + " --select-a \"name CA\" -o " +
                               dir.file("c.csv"));
  EXPECT_NE(cut.status, 0);
  EXPECT_TRUE(contains(cut.output, "cut.dcd: frame 20") && contains(cut.output, "truncated")) << cut.output;
  EXPECT_FALSE(std::filesystem::exists(dir.file("c.csv")));
  const Result ignored = run_nbkit(inputs + "--select-a \"name CA\" --norm density --volume 100 -o " + dir.file("v.csv"));
  EXPECT_NE(ignored.status, 0);
  EXPECT_FALSE(std::filesystem::exists(dir.file("w.csv")) || std::filesystem::exists(dir.file("m.csv")));
}

TEST(Cli, DensityAndOccupancyMapsOfATrajectory) {
  nbkit::test::ScratchDir dir;
  const Result d = run_nbkit("map " + data("1a63.pqr") + " --method density --spacing 1.5 -o " + dir.file("d.dx") +
                             " --png " + dir.file("d.png"));
  ASSERT_EQ(d.status, 0) << d.output;
  EXPECT_TRUE(contains(d.output, "1/A^3")) << d.output;
  const nbkit::Map density = nbkit::io::read_dx(dir.file("d.dx"));
  double sum = 0;
  for (double v : density.values) sum += v;
  // Every atom's Gaussian integrates to one: the sum over a lattice 1.5 A apart comes near the
  // atom count where the widths (the radii) are not far below the spacing.
  EXPECT_NEAR(sum * std::pow(1.5, 3) / 2065.0, 1.0, 0.05);
  const Result o = run_nbkit("map " + data("1a63.pqr") + " --trajectory " + data("1a63-wobble.dcd") +
                             " --method occupancy --select \"name CA\" --spacing 1.5 -o " + dir.file("o.dx") +
                             " --report " + dir.file("o.json"));
  ASSERT_EQ(o.status, 0) << o.output;
  const auto report = nlohmann::json::parse(std::ifstream(dir.file("o.json")));
  EXPECT_EQ(report["values"]["unit"], "fraction");
  EXPECT_EQ(report["values"]["max"], 1.0);
  EXPECT_EQ(report["input"]["atoms"], 130);
  const Result units = run_nbkit("map " + data("1a63.pqr") + " --method density --units V -o " + dir.file("u.dx"));
  EXPECT_NE(units.status, 0);
  EXPECT_TRUE(contains(units.output, "--units applies to the potentials")) << units.output;
  const Result none = run_nbkit("map " + data("1a63.pqr") + " --method occupancy --select \"resname XYZ\" -o " +
                                dir.file("n.dx"));
  EXPECT_NE(none.status, 0);
  EXPECT_TRUE(contains(none.output, "selects none")) << none.output;
}

TEST(Cli, ExplicitLatticeMdhAndMrc) {
  nbkit::test::ScratchDir dir;
  const Result r = run_nbkit("map " + data("hca.pqr") + " -o " + dir.file("m.mrc") +
                         " --method mdh --ionic-strength 0.1 --origin -10,-10,-10 --dims 11,12,13 --spacing 2 -q");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(r.output, "");  // --quiet
  EXPECT_GT(std::filesystem::file_size(dir.file("m.mrc")), 11u * 12 * 13 * 4);
  const Result centered = run_nbkit("map " + data("hca.pqr") + " -o " + dir.file("c.dx") +
                                " --center 0,0,0 --length 10 --spacing 1 --units V -q");
  ASSERT_EQ(centered.status, 0) << centered.output;
  EXPECT_EQ(nbkit::io::read_dx(dir.file("c.dx")).lattice.dims, (std::array<std::int64_t, 3>{11, 11, 11}));
}

TEST(Cli, CutoffMapWithSmoothing) {
  nbkit::test::ScratchDir dir;
  const Result r = run_nbkit("map " + data("1a63.pqr") + " -o " + dir.file("c.dx") +
                             " --method cutoff --cutoff 8 --smoothing taylor2 --spacing 1.5 --report " + dir.file("c.json"));
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "lattice points/s")) << r.output;
  const auto report = nlohmann::json::parse(std::ifstream(dir.file("c.json")));
  EXPECT_EQ(report["parameters"]["smoothing"], "taylor2");
  EXPECT_EQ(report["parameters"]["cutoff_angstrom"], 8.0);
  EXPECT_EQ(report["backend"]["used"], nbkit::list_gpus().empty() ? "cpu" : "cuda");  // --backend auto
  const Result bad = run_nbkit("map " + data("1a63.pqr") + " -o " + dir.file("d.dx") + " --method cutoff --smoothing gauss");
  EXPECT_NE(bad.status, 0);
  EXPECT_TRUE(contains(bad.output, "unknown smoothing 'gauss'")) << bad.output;
}

TEST(Cli, MultilevelSummationMap) {
  nbkit::test::ScratchDir dir;
  const Result r = run_nbkit("map " + data("1a63.pqr") + " -o " + dir.file("m.dx") +
                             " --method msm --msm-interpolation quintic --spacing 1.5 --report " + dir.file("m.json"));
  ASSERT_EQ(r.status, 0) << r.output;
  const auto report = nlohmann::json::parse(std::ifstream(dir.file("m.json")));
  EXPECT_EQ(report["parameters"]["msm_interpolation"], "quintic");
  EXPECT_EQ(report["parameters"]["msm_splitting"], "taylor3");  // quintic's pairing
  EXPECT_EQ(report["parameters"]["msm_grid_spacing_angstrom"], 2.0);
  EXPECT_TRUE(report["timing_seconds"].contains("msm lattice cutoff")) << report.dump();
  const Result bad = run_nbkit("map " + data("1a63.pqr") + " -o " + dir.file("b.dx") + " --method msm --msm-splitting cutcp");
  EXPECT_NE(bad.status, 0);
  EXPECT_TRUE(contains(bad.output, "splitting must be taylor1, taylor2 or taylor3")) << bad.output;
  EXPECT_FALSE(std::filesystem::exists(dir.file("b.dx")));
}

TEST(Cli, NbodyRunWritesDiagnostics) {
  nbkit::test::ScratchDir dir;
  const Result r = run_nbkit("nbody --plummer 300 --softening 0.05 --dt 0.01 --steps 20 --every 5 -o " + dir.file("run"));
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "interactions/s")) << r.output;
  std::ifstream log(dir.file("run") + "/diagnostics.csv");
  std::string line;
  int rows = 0;
  while (std::getline(log, line))
    if (!line.empty() && line[0] != '#' && line[0] != 't') ++rows;
  EXPECT_EQ(rows, 5);  // t = 0 and every 5 of 20 steps
  const Result bad = run_nbkit("nbody --plummer 10 --softening 0 -o " + dir.file("bad"));
  EXPECT_NE(bad.status, 0);
  EXPECT_TRUE(contains(bad.output, "softening must be a positive length")) << bad.output;
  EXPECT_FALSE(std::filesystem::exists(dir.file("bad") + "/diagnostics.csv"));
  // --backend cuda: the GPU path where there is one, a clear error where there is none.
  std::string why;
  const Result gpu = run_nbkit("nbody --plummer 300 --softening 0.05 --dt 0.01 --steps 4 --backend cuda -o " +
                               dir.file("gpu"));
  const auto gpus = nbkit::list_gpus(&why);
  if (gpus.empty()) {
    EXPECT_NE(gpu.status, 0);
    EXPECT_TRUE(contains(gpu.output, "--backend cuda:")) << gpu.output;
    EXPECT_FALSE(std::filesystem::exists(dir.file("gpu") + "/diagnostics.csv"));
  } else {
    ASSERT_EQ(gpu.status, 0) << gpu.output;
    EXPECT_TRUE(contains(gpu.output, gpus[0].name)) << gpu.output;  // the summary names the GPUs
  }
}

TEST(Cli, NbodyTreeRunsAndSaysSo) {
  nbkit::test::ScratchDir dir;
  const Result r = run_nbkit("nbody --plummer 2000 --method tree --theta 0.6 --multipole monopole --steps 4 --report " +
                             dir.file("r.json") + " -o " + dir.file("run"));
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "bodies/s")) << r.output;
  EXPECT_TRUE(contains(r.output, "tree (theta 0.6, monopole)")) << r.output;
  std::ifstream in(dir.file("r.json"));
  const nlohmann::json report = nlohmann::json::parse(in);
  EXPECT_EQ(report["method"], "tree");
  EXPECT_EQ(report["tree"]["theta"], 0.6);
  EXPECT_GT(report["rates"]["bodies_per_second"].get<double>(), 0);
  // Tree options without the tree, and out-of-range angles, are refused before anything is written.
  for (const std::string& bad : {"--theta 0.4", "--multipole monopole", "--method tree --theta 1.5",
                                 "--method tree --multipole octupole", "--method fmm", "--method tree --backend reference"}) {
    const Result refused = run_nbkit("nbody --plummer 100 --steps 1 " + bad + " -o " + dir.file("bad"));
    EXPECT_NE(refused.status, 0) << bad;
    EXPECT_FALSE(std::filesystem::exists(dir.file("bad") + "/diagnostics.csv")) << bad;
  }
}

TEST(Cli, NbodyRestartContinuesBitForBit) {
  if (!nbkit::io::snapshots_available()) GTEST_SKIP() << "this build has no HDF5";
  nbkit::test::ScratchDir dir;
  // --every 5: potentials on some steps only; a restart must not see the difference (on the
  // GPU, where --backend auto runs this when one is usable, they are a separate kernel).
  const std::string common = " --softening 0.03 --dt 0.01 --steps 24 --every 5 --png -q";
  ASSERT_EQ(run_nbkit("nbody --plummer 257 --seed 5 --snapshot-every 12" + common + " -o " + dir.file("whole")).status, 0);
  const Result part = run_nbkit("nbody --restart " + dir.file("whole") + "/snapshot_00000012.hdf5" + common + " -o " +
                                dir.file("continued"));
  ASSERT_EQ(part.status, 0) << part.output;
  nbkit::io::SnapshotInfo a_info, b_info;
  const auto a = nbkit::io::read_snapshot(dir.file("whole") + "/snapshot_00000024.hdf5", &a_info);
  const auto b = nbkit::io::read_snapshot(dir.file("continued") + "/snapshot_00000024.hdf5", &b_info);
  EXPECT_EQ(a.x, b.x);
  EXPECT_EQ(a.vz, b.vz);
  EXPECT_EQ(a_info.step, 24);
  EXPECT_EQ(b_info.time, a_info.time);
  EXPECT_EQ(b_info.initial_energy, a_info.initial_energy);  // the energy error stays relative to t = 0
  EXPECT_TRUE(std::filesystem::exists(dir.file("continued") + "/density.png"));
  EXPECT_TRUE(std::filesystem::exists(dir.file("continued") + "/energy.png"));
  // A snapshot as initial conditions: a new run from step 0 with this command's parameters.
  const Result initial = run_nbkit("nbody --initial " + dir.file("whole") + "/snapshot_00000024.hdf5 --dt 0.02 --steps 3 -o " +
                                   dir.file("fresh"));
  ASSERT_EQ(initial.status, 0) << initial.output;
  EXPECT_TRUE(contains(initial.output, "257 bodies, steps 0 to 3")) << initial.output;
  const Result both = run_nbkit("nbody --plummer 10 --initial x.hdf5 -o " + dir.file("y"));
  EXPECT_NE(both.status, 0);
  const Result missing = run_nbkit("nbody --restart " + dir.file("nothing.hdf5") + " -o " + dir.file("x"));
  EXPECT_NE(missing.status, 0);
  EXPECT_TRUE(contains(missing.output, "not an HDF5 file")) << missing.output;
}

// A tree run's snapshots record its forces; a restart without --method continues with them, bit
// for bit; one with other forces says that it is not the same run.
TEST(Cli, NbodyTreeRestartKeepsTheTree) {
  if (!nbkit::io::snapshots_available()) GTEST_SKIP() << "this build has no HDF5";
  nbkit::test::ScratchDir dir;
  const std::string common = " --softening 0.03 --dt 0.01 --steps 16 --every 4 --backend cpu";
  ASSERT_EQ(run_nbkit("nbody --plummer 600 --seed 2 --method tree --theta 0.7 --multipole monopole --snapshot-every 8" +
                      common + " -q -o " + dir.file("whole"))
                .status,
            0);
  const std::string middle = dir.file("whole") + "/snapshot_00000008.hdf5";
  nbkit::io::SnapshotInfo info;
  nbkit::io::read_snapshot(middle, &info);
  EXPECT_EQ(info.method, "tree");
  EXPECT_EQ(info.theta, 0.7);
  EXPECT_EQ(info.multipole, "monopole");
  const Result part = run_nbkit("nbody --restart " + middle + common + " -o " + dir.file("continued"));
  ASSERT_EQ(part.status, 0) << part.output;
  EXPECT_TRUE(contains(part.output, "tree (theta 0.7, monopole)")) << part.output;
  const auto a = nbkit::io::read_snapshot(dir.file("whole") + "/snapshot_00000016.hdf5");
  const auto b = nbkit::io::read_snapshot(dir.file("continued") + "/snapshot_00000016.hdf5");
  EXPECT_EQ(a.x, b.x);
  EXPECT_EQ(a.vy, b.vy);
  const Result other = run_nbkit("nbody --restart " + middle + common + " --method all-pairs -o " + dir.file("other"));
  ASSERT_EQ(other.status, 0) << other.output;
  EXPECT_TRUE(contains(other.output, "not the uninterrupted run bit for bit")) << other.output;
}

TEST(Cli, MdRunsFromATomlFileAndRefusesTypos) {
  nbkit::test::ScratchDir dir;
  std::ofstream(dir.file("run.toml")) << "units = \"lj\"\n[system]\nlattice = \"fcc\"\ndensity = 0.8442\n"
                                         "cells = [4, 4, 3]\ntemperature = 1.44\n[pair]\ncutoff = 2.5\n"
                                         "[run]\nsteps = 20\nthermo = 5\n[output]\ndcd_every = 5\n";
  const Result r = run_nbkit("md " + dir.file("run.toml") + " -o " + dir.file("out"));
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "192 atoms, 20 steps")) << r.output;
  EXPECT_TRUE(contains(r.output, "TotEng")) << r.output;
  std::ifstream csv(dir.file("out") + "/thermo.csv");
  std::string line;
  int rows = 0;
  while (std::getline(csv, line))
    if (!line.empty() && std::isdigit(static_cast<unsigned char>(line[0]))) ++rows;
  EXPECT_EQ(rows, 5);  // steps 0, 5, 10, 15, 20
  const nbkit::io::DcdReader dcd(dir.file("out") + "/trajectory.dcd");
  EXPECT_EQ(dcd.atoms(), 192);
  EXPECT_EQ(dcd.frames(), 5);
  // The final data file continues the run: read back as a system.
  std::ofstream(dir.file("again.toml")) << "[system]\ndata = \"out/final.data\"\n[run]\nsteps = 2\n";
  const Result again = run_nbkit("md " + dir.file("again.toml") + " -q -o " + dir.file("out2"));
  EXPECT_EQ(again.status, 0) << again.output;
  // A misspelt key is an error naming the file, line and key; nothing is written.
  std::ofstream(dir.file("typo.toml")) << "[run]\nstep = 20\n";
  const Result typo = run_nbkit("md " + dir.file("typo.toml") + " -o " + dir.file("typo"));
  EXPECT_NE(typo.status, 0);
  EXPECT_TRUE(contains(typo.output, "typo.toml:2: run.step: unknown key")) << typo.output;
  EXPECT_FALSE(std::filesystem::exists(dir.file("typo")));
}

// The GPU engine from the command line, NVE and Langevin (the CPU's random numbers): the same
// thermo as the CPU path in float64 (to the 1e-9 the engine's own tests hold after 100
// steps), or, without a GPU, a clear error.
TEST(Cli, MdOnTheGpuMatchesTheCpuPath) {
  nbkit::test::ScratchDir dir;
  const std::string system = "[system]\nlattice = \"fcc\"\ndensity = 0.8442\ncells = [5, 6, 5]\ntemperature = 1.44\n";
  std::ofstream(dir.file("nve.toml")) << system << "[run]\nsteps = 40\nthermo = 10\n";
  std::ofstream(dir.file("langevin.toml"))
      << system << "[run]\nsteps = 40\nthermo = 10\nensemble = \"langevin\"\ntemperature = 1.0\ndamping = 0.5\nseed = 3\n";
  auto rows = [&](const std::string& name) {
    std::ifstream csv(dir.file(name) + "/thermo.csv");
    std::vector<std::vector<double>> out;
    std::string line;
    while (std::getline(csv, line)) {
      if (line.empty() || !std::isdigit(static_cast<unsigned char>(line[0]))) continue;
      std::vector<double> row;
      std::stringstream fields(line);
      for (std::string field; std::getline(fields, field, ',');) row.push_back(std::stod(field));
      out.push_back(row);
    }
    return out;
  };
  for (const std::string run : {"nve", "langevin"}) {
    const Result gpu = run_nbkit("md " + dir.file(run + ".toml") + " --backend cuda --precision double -o " +
                                 dir.file(run + "-gpu"));
    std::string why;
    if (nbkit::list_gpus(&why).empty()) {
      EXPECT_NE(gpu.status, 0);
      EXPECT_TRUE(contains(gpu.output, "--backend cuda")) << gpu.output;
      continue;
    }
    ASSERT_EQ(gpu.status, 0) << gpu.output;
    EXPECT_TRUE(contains(gpu.output, "GPU: ")) << gpu.output;
    const Result cpu = run_nbkit("md " + dir.file(run + ".toml") + " --backend cpu -q -o " + dir.file(run + "-cpu"));
    ASSERT_EQ(cpu.status, 0) << cpu.output;
    const auto a = rows(run + "-gpu"), b = rows(run + "-cpu");
    ASSERT_EQ(a.size(), 5u);
    ASSERT_EQ(b.size(), 5u);
    for (std::size_t r = 0; r < a.size(); ++r)
      for (std::size_t c = 1; c < a[r].size(); ++c)
        EXPECT_NEAR(a[r][c], b[r][c], 1e-9 * std::fabs(b[r][c])) << run << " " << r << "," << c;
  }
}

// The README's trajectory example on the bundled DCD (VMD's dcdplugin wrote it): 20 frames,
// the mean map between the frames' extremes.
TEST(Cli, BundledTrajectoryAverages) {
  nbkit::test::ScratchDir dir;
  const std::string common = "map " + data("1a63.pqr") + " --trajectory " + data("1a63-wobble.dcd") +
                             " --spacing 2 --backend cpu -q --combine ";
  for (const char* combine : {"avg", "min", "max"})
    ASSERT_EQ(run_nbkit(common + combine + " -o " + dir.file(std::string(combine) + ".dx") + " --report " +
                        dir.file(std::string(combine) + ".json"))
                  .status,
              0);
  const auto report = nlohmann::json::parse(std::ifstream(dir.file("avg.json")));
  EXPECT_EQ(report["trajectory"]["frames"], 20) << report.dump();
  const nbkit::Map avg = nbkit::io::read_dx(dir.file("avg.dx")), lo = nbkit::io::read_dx(dir.file("min.dx")),
                   hi = nbkit::io::read_dx(dir.file("max.dx"));
  ASSERT_EQ(avg.values.size(), lo.values.size());
  for (std::size_t p = 0; p < avg.values.size(); ++p) {  // the files hold 8 significant digits
    const double slack = 1e-7 * std::fabs(avg.values[p]) + 1e-12;
    ASSERT_LE(lo.values[p], avg.values[p] + slack) << p;
    ASSERT_GE(hi.values[p], avg.values[p] - slack) << p;
  }
}

TEST(Cli, IonizeAppendsIonsToThePqr) {
  nbkit::test::ScratchDir dir;
  const Result r = run_nbkit("ionize " + data("1a63.pqr") + " --cations 3 --anions 2 --spacing 1.5 --backend cpu -o " +
                             dir.file("ions.pqr") + " --png " + dir.file("ions.png"));
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "3 cations and 2 anions")) << r.output;
  const nbkit::Atoms with_ions = nbkit::io::read_pqr(dir.file("ions.pqr"));
  const nbkit::Atoms protein = nbkit::io::read_pqr(data("1a63.pqr"));
  EXPECT_EQ(with_ions.size(), protein.size() + 5);
  EXPECT_NEAR(with_ions.net_charge(), protein.net_charge() + 1, 1e-9);
  EXPECT_TRUE(std::filesystem::exists(dir.file("ions.png")));
  // The PDB file (gemmi's writer) has the protein's heavy and hydrogen atoms and the ions.
  const Result pdb = run_nbkit("ionize " + data("1a63.pqr") + " --cations 1 --spacing 2 --backend cpu -q -o " +
                               dir.file("p.pqr") + " --pdb " + dir.file("p.pdb"));
  ASSERT_EQ(pdb.status, 0) << pdb.output;
  std::ifstream pdb_file(dir.file("p.pdb"));
  std::string line;
  int atoms = 0, ions = 0;
  while (std::getline(pdb_file, line)) {
    if (line.rfind("ATOM", 0) == 0 || line.rfind("HETATM", 0) == 0) ++atoms;
    if (line.rfind("HETATM", 0) == 0 && line.find(" NA ") != std::string::npos) ++ions;
  }
  EXPECT_EQ(atoms, static_cast<int>(protein.size()) + 1);
  EXPECT_EQ(ions, 1);
  const Result neutral = run_nbkit("ionize " + data("1a63.pqr") + " --neutralize --spacing 1.5 --backend cpu -q -o " +
                                   dir.file("neutral.pqr"));
  ASSERT_EQ(neutral.status, 0) << neutral.output;
  EXPECT_NEAR(nbkit::io::read_pqr(dir.file("neutral.pqr")).net_charge(), 0.0, 0.5);
  const Result none = run_nbkit("ionize " + data("1a63.pqr") + " -o " + dir.file("x.pqr"));
  EXPECT_NE(none.status, 0);
  EXPECT_TRUE(contains(none.output, "give --cations N")) << none.output;
}

TEST(Cli, TrajectoryAverageOfADcd) {
  nbkit::test::ScratchDir dir;
  const nbkit::Atoms protein = nbkit::io::read_pqr(data("1a63.pqr"));
  std::vector<nbkit::io::DcdFrame> frames(6);
  for (std::size_t f = 0; f < frames.size(); ++f)
    for (std::size_t n = 0; n < protein.size(); ++n) {
      frames[f].x.push_back(static_cast<float>(protein.x[n] + 0.1 * f));
      frames[f].y.push_back(static_cast<float>(protein.y[n]));
      frames[f].z.push_back(static_cast<float>(protein.z[n]));
    }
  nbkit::io::write_dcd(dir.file("t.dcd"), frames);
  const Result r = run_nbkit("map " + data("1a63.pqr") + " --trajectory " + dir.file("t.dcd") +
                             " --first 1 --stride 2 --combine stdev --spacing 2 --backend cpu -o " + dir.file("sd.dx") +
                             " --report " + dir.file("sd.json"));
  ASSERT_EQ(r.status, 0) << r.output;
  const auto report = nlohmann::json::parse(std::ifstream(dir.file("sd.json")));
  EXPECT_EQ(report["trajectory"]["frames"], 3);  // frames 1, 3, 5
  const nbkit::Map sd = nbkit::io::read_dx(dir.file("sd.dx"));
  double largest = 0;
  for (double v : sd.values) largest = std::max(largest, v);
  EXPECT_GT(largest, 0.0);
  // The strided frames (passed over by a seek, not read) are frames 1, 3 and 5: the map of a
  // trajectory holding just those is the same.
  nbkit::io::write_dcd(dir.file("odd.dcd"), {frames[1], frames[3], frames[5]});
  ASSERT_EQ(run_nbkit("map " + data("1a63.pqr") + " --trajectory " + dir.file("odd.dcd") +
                      " --combine stdev --spacing 2 --backend cpu -q -o " + dir.file("odd.dx"))
                .status,
            0);
  EXPECT_EQ(nbkit::io::read_dx(dir.file("odd.dx")).values, sd.values);
  // A multi-model PQR as the trajectory: two identical models average to the single map.
  write_text(dir.file("one.pqr"), "ATOM 1 N HIS 1 1.0 2.0 3.0 0.5 1.0\nATOM 2 C HIS 1 2.0 2.0 3.0 -0.25 1.0\n");
  write_text(dir.file("two.pqr"), "MODEL 1\nATOM 1 N HIS 1 1.0 2.0 3.0 0.5 1.0\nATOM 2 C HIS 1 2.0 2.0 3.0 -0.25 1.0\n"
                                  "ENDMDL\nMODEL 2\nATOM 1 N HIS 1 1.0 2.0 3.0 0.5 1.0\n"
                                  "ATOM 2 C HIS 1 2.0 2.0 3.0 -0.25 1.0\nENDMDL\n");
  ASSERT_EQ(run_nbkit("map " + dir.file("one.pqr") + " --spacing 1 --backend cpu -q -o " + dir.file("one.dx")).status, 0);
  const Result models = run_nbkit("map " + dir.file("one.pqr") + " --trajectory " + dir.file("two.pqr") +
                                  " --spacing 1 --backend cpu -q -o " + dir.file("two.dx"));
  ASSERT_EQ(models.status, 0) << models.output;
  EXPECT_EQ(nbkit::io::read_dx(dir.file("two.dx")).values, nbkit::io::read_dx(dir.file("one.dx")).values);
  const Result wrong = run_nbkit("map " + data("hca.pqr") + " --trajectory " + dir.file("t.dcd") + " -o " + dir.file("w.dx"));
  EXPECT_NE(wrong.status, 0);
  EXPECT_TRUE(contains(wrong.output, "atoms per frame")) << wrong.output;
}

TEST(Cli, PeriodicBoxFromCryst1OrBox) {
  nbkit::test::ScratchDir dir;
  write_text(dir.file("water.pqr"),
             "CRYST1   12.000   10.000   14.000  90.00  90.00  90.00 P 1           1\n"
             "ATOM      1  O   HOH     1       0.500   5.000   7.000 -0.8340 1.7683\n"
             "ATOM      2  H1  HOH     1       1.450   5.000   7.000  0.4170 0.0000\n"
             "ATOM      3  H2  HOH     1      11.800   5.900   7.000  0.4170 0.0000\n");
  const Result r = run_nbkit("map " + dir.file("water.pqr") + " -o " + dir.file("w.dx") +
                             " --method cutoff --cutoff 4.5 --periodic --spacing 1 --backend cpu --report " +
                             dir.file("w.json"));
  ASSERT_EQ(r.status, 0) << r.output;
  const auto report = nlohmann::json::parse(std::ifstream(dir.file("w.json")));
  EXPECT_EQ(report["parameters"]["periodic_box_angstrom"], nlohmann::json({12.0, 10.0, 14.0}));
  EXPECT_EQ(report["lattice"]["dims"], nlohmann::json({12, 10, 14}));  // spans the cell
  EXPECT_FALSE(contains(r.output, "notice")) << r.output;               // edges are multiples of 1 A
  const Result boxed = run_nbkit("map " + dir.file("water.pqr") + " -o " + dir.file("b.dx") +
                                 " --method cutoff --cutoff 4.5 --periodic --box 12,10,14.5 --spacing 1 --backend cpu");
  ASSERT_EQ(boxed.status, 0) << boxed.output;
  EXPECT_TRUE(contains(boxed.output, "not all multiples of the spacing")) << boxed.output;

  write_text(dir.file("nobox.pqr"), "ATOM      1  O   HOH     1       0.500   5.000   7.000 -0.8340 1.7683\n");
  const Result nobox = run_nbkit("map " + dir.file("nobox.pqr") + " -o " + dir.file("n.dx") + " --method cutoff --periodic");
  EXPECT_NE(nobox.status, 0);
  EXPECT_TRUE(contains(nobox.output, "has no CRYST1 record")) << nobox.output;
  const Result direct = run_nbkit("map " + dir.file("water.pqr") + " -o " + dir.file("d.dx") + " --periodic");
  EXPECT_NE(direct.status, 0);
  EXPECT_TRUE(contains(direct.output, "--periodic needs --method cutoff")) << direct.output;
  // msm in a periodic box: the lattice spans the cell; 1a63's net charge gets a notice.
  const Result msm = run_nbkit("map " + data("1a63.pqr") + " --method msm --periodic --box 61,62,63 --spacing 2 --backend cpu -o " +
                               dir.file("periodic-msm.dx"));
  ASSERT_EQ(msm.status, 0) << msm.output;
  EXPECT_TRUE(std::filesystem::exists(dir.file("periodic-msm.dx")));
  const Result long_cutoff = run_nbkit("map " + dir.file("water.pqr") + " -o " + dir.file("l.dx") +
                                       " --method cutoff --cutoff 6 --periodic");
  EXPECT_NE(long_cutoff.status, 0);
  EXPECT_TRUE(contains(long_cutoff.output, "less than half the shortest box edge")) << long_cutoff.output;
  EXPECT_FALSE(std::filesystem::exists(dir.file("l.dx")));
  write_text(dir.file("mono.pqr"), "CRYST1   12.000   10.000   14.000  90.00 104.00  90.00 P 21          2\n"
                                   "ATOM      1  O   HOH     1       0.500   5.000   7.000 -0.8340 1.7683\n");
  const Result mono = run_nbkit("map " + dir.file("mono.pqr") + " -o " + dir.file("m.dx") + " --method cutoff --periodic");
  EXPECT_NE(mono.status, 0);
  EXPECT_TRUE(contains(mono.output, "mono.pqr:1: beta: only orthorhombic boxes")) << mono.output;
}

TEST(Cli, BadInputGetsOneClearLineAndNoOutput) {
  nbkit::test::ScratchDir dir;
  write_text(dir.file("bad.pqr"), "ATOM 1 N HIS 1 1.0 2.0 3.0 0.5 1.0\nATOM 2 C HIS 1 1.0 zz 3.0 0.5 1.0\n");
  write_text(dir.file("empty.pqr"), "REMARK nothing\n");
  write_text(dir.file("nan.pqr"), "ATOM 1 N HIS 1 1.0 2.0 nan 0.5 1.0\n");
  struct Case {
    std::string arguments, expected, environment = "";
  };
  const std::string out = " -o " + dir.file("out.dx");
  const std::vector<Case> cases = {
      {"map " + dir.file("bad.pqr") + out, "bad.pqr:2: y: expected a number, got 'zz'"},
      {"map " + dir.file("empty.pqr") + out, "empty.pqr: no ATOM or HETATM records"},
      {"map " + dir.file("nan.pqr") + out, "nan.pqr:1: z: expected a finite number, got 'nan'"},
      {"map " + data("1a63.pqr") + out + " --spacing -1", "lattice spacing must be a positive number"},
      {"map " + data("1a63.pqr") + out + " --spacing 0", "lattice spacing must be a positive number"},
      {"map " + data("1a63.pqr") + " -o /nonexistent-dir/out.dx", "/nonexistent-dir/out.dx: cannot write here"},
      {"map " + data("1a63.pqr") + " -o " + dir.file("out.txt"), "unknown map format"},
      {"map " + data("1a63.pqr") + out + " --method fmm", "unknown method 'fmm'"},
      {"map " + data("1a63.pqr") + out + " --origin 1,2", "--origin and --dims go together"},
      {"map " + data("1a63.pqr") + out + " --origin 1,2 --dims 3,3,3", "--origin: expected three comma-separated"},
      {"map " + data("1a63.pqr") + out, "nbkit map needs at least", "NBKIT_MEMORY_LIMIT=1000"},
      {"map " + std::string(NBKIT_TEST_DATA_DIR) + "/tripeptide.pdb" + out, "carries no partial charges"},
      {"map /nonexistent.pqr" + out, "nonexistent.pqr"},
  };
  for (const auto& c : cases) {
    const Result r = run_nbkit(c.arguments, c.environment);
    EXPECT_NE(r.status, 0) << c.arguments;
    EXPECT_TRUE(contains(r.output, c.expected)) << c.arguments << "\n  got: " << r.output;
    EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << "one line expected: " << r.output;
    EXPECT_FALSE(std::filesystem::exists(dir.file("out.dx"))) << c.arguments;
  }
}

TEST(Cli, FailedRunLeavesAnExistingOutputUntouched) {
  nbkit::test::ScratchDir dir;
  write_text(dir.file("out.dx"), "previous");
  write_text(dir.file("bad.pqr"), "ATOM 1 N HIS 1 1.0 2.0 3.0 0.5 -1.0\n");
  const Result r = run_nbkit("map " + dir.file("bad.pqr") + " -o " + dir.file("out.dx"));
  EXPECT_NE(r.status, 0);
  std::ifstream in(dir.file("out.dx"));
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "previous");
}

// Issue 16: every command takes the same run options with the same meaning and writes the
// same report shape (what ran and where, timings, rates, outputs); --gpus with a CPU backend
// is refused by each, not ignored.
TEST(Cli, EveryCommandTakesTheRunOptionsAndWritesOneReportShape) {
  nbkit::test::ScratchDir dir;
  write_text(dir.file("lj.toml"),
             "[system]\nlattice = \"fcc\"\ndensity = 0.8442\ncells = [3, 3, 3]\ntemperature = 1.0\n[run]\nsteps = 5\n");
  const std::string common = " --backend cpu --precision double --threads 1 -q --report ";
  const std::vector<std::pair<std::string, std::string>> commands = {
      {"map", "map " + data("1a63.pqr") + " --spacing 2 -o " + dir.file("m.dx")},
      {"ionize", "ionize " + data("1a63.pqr") + " --cations 1 --spacing 2 -o " + dir.file("i.pqr")},
      {"nbody", "nbody --plummer 64 --steps 3 -o " + dir.file("nb")},
      {"md", "md " + dir.file("lj.toml") + " -o " + dir.file("md")},
      {"energy", "energy " + nbkit::test::test_data_file("chain.data") + " --nonbonded cutoff-periodic --cutoff 9"},
  };
  for (const auto& [name, command] : commands) {
    const std::string report = dir.file(name + ".json");
    const Result r = run_nbkit(command + common + report);
    ASSERT_EQ(r.status, 0) << name << ": " << r.output;
    const auto json = nlohmann::json::parse(std::ifstream(report));
    EXPECT_EQ(json["command"], name);
    EXPECT_EQ(json["backend"]["requested"], "cpu") << name;
    EXPECT_EQ(json["backend"]["used"], "cpu") << name;
    EXPECT_FALSE(json["backend"]["detail"].get<std::string>().empty()) << name;
    for (const char* key : {"nbkit_version", "timing_seconds", "rates", "outputs"})
      EXPECT_TRUE(json.contains(key)) << name << " has no " << key;
    // A report that cannot be written is refused before the work, not after it.
    const Result unwritable = run_nbkit(command + common + dir.file("no-such-folder/r.json"));
    EXPECT_NE(unwritable.status, 0) << name;
    EXPECT_TRUE(contains(unwritable.output, "cannot write here")) << name << ": " << unwritable.output;
    const Result gpus = run_nbkit(command + " --backend cpu --gpus 1 -q");
    EXPECT_NE(gpus.status, 0) << name;
    EXPECT_TRUE(contains(gpus.output, "--gpus picks GPUs for --backend auto or cuda, not cpu")) << name << ": "
                                                                                                  << gpus.output;
  }
  // md: the reference engine runs too (every periodic image, float64).
  const Result reference = run_nbkit("md " + dir.file("lj.toml") + " --backend reference -q -o " + dir.file("ref"));
  EXPECT_EQ(reference.status, 0) << reference.output;
}

// A biomolecular system from a LAMMPS data file: nbkit energy prints every term and writes the
// forces; nbkit md runs it with per-term thermo columns and an rst7 restart AMBER reads.
// A CHARMM psf with its parameter file and crd: nbkit energy (every term, CMAP included; the GPU
// gives the CPU's energies where there is one), and nbkit md from [system] psf, parameters,
// coordinates and box.
TEST(Cli, EnergyAndMdOfACharmmPsf) {
  nbkit::test::ScratchDir dir;
  const std::string psf = nbkit::test::test_data_file("butane.psf"), prm = nbkit::test::test_data_file("butane.prm"),
                    crd = nbkit::test::test_data_file("butane.crd");
  const Result energy = run_nbkit("energy " + psf + " " + crd + " -p " + prm + " --report " + dir.file("e.json"));
  ASSERT_EQ(energy.status, 0) << energy.output;
  const auto json = nlohmann::json::parse(std::ifstream(dir.file("e.json")));
  for (const char* term : {"bond", "angle", "urey_bradley", "dihedral", "improper", "cmap", "lennard_jones_14"})
    EXPECT_NE(json["energy_kcal_per_mol"][term].get<double>(), 0.0) << term;
  const Result no_parameters = run_nbkit("energy " + psf + " " + crd);
  EXPECT_NE(no_parameters.status, 0);
  EXPECT_TRUE(contains(no_parameters.output, "needs CHARMM parameter files")) << no_parameters.output;
  if (!nbkit::list_gpus().empty()) {
    const Result cuda = run_nbkit("energy " + psf + " " + crd + " -p " + prm + " --backend cuda --report " +
                                  dir.file("cuda.json"));
    ASSERT_EQ(cuda.status, 0) << cuda.output;
    const auto on_gpu = nlohmann::json::parse(std::ifstream(dir.file("cuda.json")));
    for (const auto& [term, value] : json["energy_kcal_per_mol"].items())
      EXPECT_NEAR(on_gpu["energy_kcal_per_mol"][term].get<double>(), value.get<double>(),
                  1e-10 * (1 + std::abs(value.get<double>())))
          << term;
  }
  write_text(dir.file("butane.toml"), "[system]\npsf = \"" + psf + "\"\nparameters = [\"" + prm + "\"]\ncoordinates = \"" +
                                          crd + "\"\nbox = [20.0, 20.0, 20.0]\ntemperature = 300\n"
                                          "[nonbonded]\nelectrostatics = \"pme\"\ncutoff = 8.0\n"
                                          "dispersion_correction = true\n[run]\ntimestep = 0.5\nsteps = 20\nthermo = 10\n");
  const Result md = run_nbkit("md " + dir.file("butane.toml") + " -q -o " + dir.file("out"));
  ASSERT_EQ(md.status, 0) << md.output;
  std::ifstream thermo(dir.file("out/thermo.csv"));
  std::string header, row;
  while (std::getline(thermo, header) && !header.empty() && header[0] == '#') {
  }
  EXPECT_TRUE(contains(header, "cmap")) << header;
  ASSERT_TRUE(std::getline(thermo, row));
  const std::string tail = row.substr(row.rfind(',') + 1), mesh = row.substr(0, row.rfind(','));
  EXPECT_LT(std::stod(tail), 0.0) << header << "\n" << row;  // the dispersion correction, asked for
  EXPECT_NE(std::stod(mesh.substr(mesh.rfind(',') + 1)), 0.0) << row;  // PME's reciprocal terms
  // [minimize]: L-BFGS to the largest force's tolerance before the run, in the report.
  write_text(dir.file("min.toml"), "[system]\npsf = \"" + psf + "\"\nparameters = [\"" + prm +
                                       "\"]\ncoordinates = \"" + crd + "\"\n[minimize]\ntolerance = 0.01\n"
                                       "[run]\nsteps = 5\n");
  const Result minimized = run_nbkit("md " + dir.file("min.toml") + " -o " + dir.file("min") + " --report " +
                                     dir.file("min.json"));
  ASSERT_EQ(minimized.status, 0) << minimized.output;
  EXPECT_TRUE(contains(minimized.output, "minimized:")) << minimized.output;
  const auto m = nlohmann::json::parse(std::ifstream(dir.file("min.json")))["minimization"];
  EXPECT_TRUE(m["converged"].get<bool>()) << m.dump();
  EXPECT_LE(m["final_max_force"].get<double>(), 0.01);
  EXPECT_LT(m["final_energy"].get<double>(), m["initial_energy"].get<double>());
  write_text(dir.file("lj-min.toml"), "[system]\nlattice = \"fcc\"\ndensity = 0.8442\ncells = [2, 2, 2]\n"
                                          "[minimize]\ntolerance = 1.0\n[run]\nsteps = 1\n");
  const Result lj = run_nbkit("md " + dir.file("lj-min.toml") + " -q -o " + dir.file("lj-min"));
  EXPECT_NE(lj.status, 0);
  EXPECT_TRUE(contains(lj.output, "minimize")) << lj.output;
  // [output] checkpoint_every and --restart: 20 steps in one run, and 10 + 10 through a
  // checkpoint, end in the same restart file (bit for bit: the positions' text is the same).
  auto checkpointed = [&](const std::string& name, int steps) {
    write_text(dir.file(name + ".toml"), "[system]\npsf = \"" + psf + "\"\nparameters = [\"" + prm +
                                             "\"]\ncoordinates = \"" + crd + "\"\nbox = [20.0, 20.0, 20.0]\n"
                                             "temperature = 300\n[nonbonded]\nelectrostatics = \"pme\"\n"
                                             "cutoff = 8.0\n[run]\ntimestep = 0.5\nsteps = " +
                                             std::to_string(steps) + "\n[output]\ncheckpoint_every = 10\n");
    return dir.file(name + ".toml");
  };
  ASSERT_EQ(run_nbkit("md " + checkpointed("whole", 20) + " -q -o " + dir.file("whole")).status, 0);
  ASSERT_EQ(run_nbkit("md " + checkpointed("first", 10) + " -q -o " + dir.file("first")).status, 0);
  const Result second = run_nbkit("md " + checkpointed("second", 10) + " -q -o " + dir.file("second") +
                                  " --restart " + dir.file("first/checkpoint.chk") + " --report " +
                                  dir.file("second.json"));
  ASSERT_EQ(second.status, 0) << second.output;
  auto text_of = [](const std::string& path) {
    std::ifstream in(path);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  };
  EXPECT_EQ(text_of(dir.file("second/final.rst7")), text_of(dir.file("whole/final.rst7")));
  EXPECT_EQ(nlohmann::json::parse(std::ifstream(dir.file("second.json")))["run"]["last_step"].get<int>(), 20);
  std::ofstream(dir.file("broken.chk")) << "NBKITCHK but nothing more";
  const Result broken = run_nbkit("md " + checkpointed("third", 10) + " -q -o " + dir.file("third") +
                                  " --restart " + dir.file("broken.chk"));
  EXPECT_NE(broken.status, 0);
  EXPECT_TRUE(contains(broken.output, "broken.chk")) << broken.output;
  // [system] replicate: the box's copies (LAMMPS's replicate), refused without whole counts.
  write_text(dir.file("copies.toml"), "[system]\npsf = \"" + psf + "\"\nparameters = [\"" + prm +
                                          "\"]\ncoordinates = \"" + crd + "\"\nbox = [20.0, 20.0, 20.0]\n"
                                          "replicate = [2, 1, 3]\n[nonbonded]\ncutoff = 8.0\n[run]\nsteps = 2\n");
  const Result copies = run_nbkit("md " + dir.file("copies.toml") + " -q -o " + dir.file("copies") + " --report " +
                                  dir.file("copies.json"));
  ASSERT_EQ(copies.status, 0) << copies.output;
  EXPECT_EQ(nlohmann::json::parse(std::ifstream(dir.file("copies.json")))["input"]["atoms"].get<int>(), 6 * 5);  // butane.psf: 5 atoms
  write_text(dir.file("zero.toml"), "[system]\npsf = \"" + psf + "\"\nparameters = [\"" + prm +
                                        "\"]\ncoordinates = \"" + crd + "\"\nbox = [20.0, 20.0, 20.0]\n"
                                        "replicate = [2, 0, 1]\n[run]\nsteps = 2\n");
  const Result zero = run_nbkit("md " + dir.file("zero.toml") + " -q -o " + dir.file("zero"));
  EXPECT_NE(zero.status, 0);
  EXPECT_TRUE(contains(zero.output, "system.replicate")) << zero.output;
  write_text(dir.file("both.toml"), "[system]\npsf = \"" + psf + "\"\nparameters = [\"" + prm + "\"]\ncoordinates = \"" +
                                        crd + "\"\nbox = [20.0, 20.0, 20.0]\n[nonbonded]\nelectrostatics = \"pme\"\n"
                                        "method = \"cutoff-periodic\"\n[run]\nsteps = 2\n");
  const Result both = run_nbkit("md " + dir.file("both.toml") + " -q -o " + dir.file("both"));
  EXPECT_NE(both.status, 0);
  EXPECT_TRUE(contains(both.output, "electrostatics sets the method")) << both.output;
  EXPECT_TRUE(std::filesystem::exists(dir.file("out/final.rst7")));
}

// --electrostatics names the Coulomb treatment in one word; --dispersion-correction turns the
// Lennard-Jones tail on and off (off by default for a LAMMPS data file, as in LAMMPS). On a GPU,
// PME gives the CPU's energies.
TEST(Cli, EnergyElectrostaticsWordsAndTheDispersionCorrection) {
  nbkit::test::ScratchDir dir;
  const std::string chain = nbkit::test::test_data_file("chain.data");
  auto energy_of = [&](const std::string& options, const std::string& name) {
    const Result r = run_nbkit("energy " + chain + " --cutoff 9 " + options + " -q --report " + dir.file(name));
    EXPECT_EQ(r.status, 0) << options << "\n" << r.output;
    return nlohmann::json::parse(std::ifstream(dir.file(name)));
  };
  const auto rf = energy_of("--electrostatics reaction-field", "rf.json");
  EXPECT_EQ(rf["nonbonded"]["method"], "cutoff-periodic");
  EXPECT_EQ(rf["nonbonded"]["dispersion_correction"], false);
  EXPECT_EQ(rf["energy_kcal_per_mol"]["dispersion_correction"].get<double>(), 0.0);
  const auto none = energy_of("--electrostatics none", "none.json");
  EXPECT_EQ(none["nonbonded"]["electrostatics"], "none");
  EXPECT_EQ(none["energy_kcal_per_mol"]["coulomb"].get<double>(), 0.0);
  EXPECT_EQ(none["energy_kcal_per_mol"]["coulomb_14"].get<double>(), 0.0);
  EXPECT_NE(rf["energy_kcal_per_mol"]["coulomb_14"].get<double>(), 0.0);
  EXPECT_EQ(none["energy_kcal_per_mol"]["lennard_jones"], rf["energy_kcal_per_mol"]["lennard_jones"]);
  const auto pme = energy_of("--electrostatics pme --dispersion-correction on", "pme.json");
  EXPECT_EQ(pme["nonbonded"]["method"], "pme");
  EXPECT_LT(pme["energy_kcal_per_mol"]["dispersion_correction"].get<double>(), 0.0);
  EXPECT_NE(pme["energy_kcal_per_mol"]["coulomb_reciprocal"].get<double>(), 0.0);
  // alpha and the mesh given outright: the tolerance's own give the same bits, others another sum.
  char alpha[64];
  std::snprintf(alpha, sizeof alpha, "%.17g", pme["nonbonded"]["pme"]["alpha_per_angstrom"].get<double>());
  const auto& mesh = pme["nonbonded"]["pme"]["mesh"];
  const auto given = energy_of(std::string("--electrostatics pme --dispersion-correction on --ewald-alpha ") + alpha +
                                   " --pme-mesh " + std::to_string(mesh[0].get<int>()) + "," +
                                   std::to_string(mesh[1].get<int>()) + "," + std::to_string(mesh[2].get<int>()),
                               "given.json");
  EXPECT_EQ(given["energy_kcal_per_mol"]["total"], pme["energy_kcal_per_mol"]["total"]);
  // The mesh rounded up to FFT-friendly sizes (2, 3, 5, 7-smooth) as OpenMM's GPU platforms have it.
  EXPECT_EQ(pme["nonbonded"]["pme"]["mesh_sizes"], "reference");
  const auto fft = energy_of("--electrostatics pme --dispersion-correction on --pme-mesh-sizes fft", "fft.json");
  EXPECT_EQ(fft["nonbonded"]["pme"]["mesh_sizes"], "fft");
  for (int a = 0; a < 3; ++a) {
    const int reference = mesh[a].get<int>(), rounded = fft["nonbonded"]["pme"]["mesh"][a].get<int>();
    EXPECT_EQ(rounded, nbkit::md::fft_friendly_size(reference)) << a;
  }
  const auto finer = energy_of("--electrostatics pme --pme-mesh 48,48,48", "finer.json");
  EXPECT_EQ(finer["nonbonded"]["pme"]["mesh"][0].get<int>(), 48);
  EXPECT_NE(finer["energy_kcal_per_mol"]["coulomb_reciprocal"], pme["energy_kcal_per_mol"]["coulomb_reciprocal"]);
  const auto msm = energy_of("--electrostatics msm --msm-spacing 2 --msm-interpolation quintic", "msm.json");
  EXPECT_EQ(msm["nonbonded"]["method"], "msm");
  EXPECT_EQ(msm["nonbonded"]["msm"]["interpolation"], "quintic");
  EXPECT_NE(msm["energy_kcal_per_mol"]["coulomb_reciprocal"].get<double>(), 0.0);
  for (const auto& [refused, named] : std::vector<std::pair<std::string, std::string>>{
           {"--electrostatics pme --nonbonded cutoff", "--electrostatics"},
           {"--electrostatics msm --msm-spacing 6", "msm"},
           {"--electrostatics ewald", "electrostatics"},
           {"--electrostatics pme --msm-spacing 2", "--msm-spacing"},
           {"--electrostatics pme --pme-mesh 64,64", "--pme-mesh"},
           {"--electrostatics pme --pme-mesh-sizes fast", "--pme-mesh-sizes"},
           {"--electrostatics pme --pme-mesh 48,48,48 --pme-mesh-sizes fft", "--pme-mesh-sizes"},
           {"--electrostatics msm --pme-mesh-sizes fft", "--pme-mesh-sizes"},
           {"--electrostatics msm --ewald-alpha 0.3", "--ewald-alpha"},
           {"--nonbonded no-cutoff --dispersion-correction on", "dispersion"},
           {"--dispersion-correction maybe", "dispersion"}}) {
    const Result r = run_nbkit("energy " + chain + " " + refused);
    EXPECT_NE(r.status, 0) << refused;
    EXPECT_TRUE(contains(r.output, named)) << refused << "\n" << r.output;
  }
  if (!nbkit::list_gpus().empty()) {
    const auto gpu = energy_of("--electrostatics pme --dispersion-correction on --backend cuda", "pme-gpu.json");
    for (const auto& [term, value] : pme["energy_kcal_per_mol"].items())
      EXPECT_NEAR(gpu["energy_kcal_per_mol"][term].get<double>(), value.get<double>(),
                  1e-9 * (1 + std::abs(value.get<double>())))
          << term;
  }
}

TEST(Cli, EnergyAndMdOfAMolecularDataFile) {
  nbkit::test::ScratchDir dir;
  const std::string chain = nbkit::test::test_data_file("chain.data");
  const Result energy = run_nbkit("energy " + chain + " --nonbonded cutoff-periodic --cutoff 9 --switch-distance 7 "
                                  "--cutoff-style charmm --forces " + dir.file("f.txt") + " --report " +
                                  dir.file("e.json"));
  ASSERT_EQ(energy.status, 0) << energy.output;
  for (const char* term : {"bond", "urey_bradley", "dihedral", "improper", "lennard_jones_14", "coulomb_14", "total"})
    EXPECT_TRUE(contains(energy.output, term)) << energy.output;
  const auto json = nlohmann::json::parse(std::ifstream(dir.file("e.json")));
  EXPECT_EQ(json["nonbonded"]["cutoff_style"], "charmm");
  EXPECT_DOUBLE_EQ(json["nonbonded"]["coulomb_constant"].get<double>(), 332.06371);  // LAMMPS's, for its files
  EXPECT_NEAR(json["energy_kj_per_mol"]["total"].get<double>(),
              4.184 * json["energy_kcal_per_mol"]["total"].get<double>(), 1e-9);
  std::ifstream forces(dir.file("f.txt"));
  std::string line;
  int rows = 0;
  while (std::getline(forces, line))
    if (!line.empty() && line[0] != '#') ++rows;
  EXPECT_EQ(rows, 5);
  // Options that the method would ignore are refused.
  const Result ignored = run_nbkit("energy " + chain + " --nonbonded no-cutoff --cutoff 9");
  EXPECT_NE(ignored.status, 0);
  EXPECT_TRUE(contains(ignored.output, "--cutoff")) << ignored.output;
  // The GPU gives the CPU's energies where there is one, and a clear refusal where there is none.
  const Result cuda = run_nbkit("energy " + chain + " --backend cuda --report " + dir.file("cuda.json"));
  if (nbkit::list_gpus().empty()) {
    EXPECT_NE(cuda.status, 0);
  } else {
    ASSERT_EQ(cuda.status, 0) << cuda.output;
    const auto on_gpu = nlohmann::json::parse(std::ifstream(dir.file("cuda.json")));
    const auto on_cpu = nlohmann::json::parse(std::ifstream(dir.file("e.json")));
    EXPECT_EQ(on_gpu["backend"]["used"], "cuda");
    const Result again = run_nbkit("energy " + chain + " --report " + dir.file("e2.json"));
    const auto plain = nlohmann::json::parse(std::ifstream(dir.file("e2.json")));
    EXPECT_NEAR(on_gpu["energy_kcal_per_mol"]["total"].get<double>(), plain["energy_kcal_per_mol"]["total"].get<double>(),
                1e-9 * (1 + std::abs(plain["energy_kcal_per_mol"]["total"].get<double>())));
    (void)on_cpu;
  }

  write_text(dir.file("chain.toml"), "units = \"real\"\n[system]\ndata = \"" + chain +
                                         "\"\ntemperature = 300\n[nonbonded]\nmethod = \"cutoff-periodic\"\n"
                                         "cutoff = 9.0\n[run]\ntimestep = 0.5\nsteps = 20\nthermo = 10\n");
  const Result md = run_nbkit("md " + dir.file("chain.toml") + " -q -o " + dir.file("out"));
  ASSERT_EQ(md.status, 0) << md.output;
  std::ifstream thermo(dir.file("out/thermo.csv"));
  std::getline(thermo, line);  // the comment
  std::getline(thermo, line);
  EXPECT_EQ(line, "step,temperature,potential,kinetic,total,pressure,volume,density,ns_per_day,bond,angle,urey_bradley,"
                  "dihedral,improper,cmap,"
                  "lennard_jones,coulomb,lennard_jones_14,coulomb_14,coulomb_reciprocal,dispersion_correction");
  EXPECT_GT(std::filesystem::file_size(dir.file("out/thermo.png")), 1000u);  // the thermo picture
  const nbkit::md::Coordinates restart = nbkit::io::read_inpcrd(dir.file("out/final.rst7"), 5);
  EXPECT_EQ(restart.velocities.size(), 5u);
  ASSERT_TRUE(restart.box);
  EXPECT_EQ(restart.box->length(1), 31.0);
  // PME's mesh in the report, rounded up to FFT sizes when asked.
  write_text(dir.file("pme.toml"), "units = \"real\"\n[system]\ndata = \"" + chain +
                                       "\"\ntemperature = 300\n[nonbonded]\nelectrostatics = \"pme\"\ncutoff = 9.0\n"
                                       "pme_mesh_sizes = \"fft\"\n[run]\ntimestep = 0.5\nsteps = 2\n");
  const Result pme = run_nbkit("md " + dir.file("pme.toml") + " -q -o " + dir.file("pme") + " --report " +
                               dir.file("pme.json"));
  ASSERT_EQ(pme.status, 0) << pme.output;
  const auto pme_report = nlohmann::json::parse(std::ifstream(dir.file("pme.json")));
  EXPECT_EQ(pme_report["nonbonded"]["method"], "pme");
  EXPECT_EQ(pme_report["nonbonded"]["pme_mesh_sizes"], "fft");
  for (const auto& m : pme_report["nonbonded"]["pme_mesh"]) EXPECT_EQ(nbkit::md::fft_friendly_size(m.get<int>()), m.get<int>());
  // [pair] is for Lennard-Jones systems.
  write_text(dir.file("bad.toml"), "units = \"real\"\n[system]\ndata = \"" + chain + "\"\n[pair]\ncutoff = 9.0\n");
  const Result bad = run_nbkit("md " + dir.file("bad.toml") + " -q -o " + dir.file("bad"));
  EXPECT_NE(bad.status, 0);
  EXPECT_TRUE(contains(bad.output, "takes [nonbonded], not [pair]")) << bad.output;
}
