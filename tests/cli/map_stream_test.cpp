// nbkit map beyond memory (issue 21): a memory limit small enough to force many slabs gives
// the same file, in every format; a lattice of more than 2^31 points is computed and written
// within 2 GB of memory.
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli/cli_support.hpp"
#include "nbkit/core/resources.hpp"
#include "nbkit/io/map_files.hpp"

namespace {

using nbkit::test::bytes_of;
using nbkit::test::contains;
using nbkit::test::data;
using nbkit::test::Result;
using nbkit::test::run_nbkit;

}  // namespace

// 1a63 at 0.5 A: 2,042,400 points, 15.6 MiB of values; an 8 MiB limit (one thread's writer
// buffers at most 6 MiB for gzip) leaves room for slabs of a few hundred rows. The map, the PNG
// slice and the report's span are the whole map's, in every format and for the cutoff and msm
// methods (the others are covered slab by slab in tests/maps/stream_test.cpp).
TEST(CliStream, ManySlabsGiveTheSameFiles) {
  nbkit::test::ScratchDir dir;
  // 0.6 A: 134 x 93 x 96 points, 1.2 million (0.5 A's 2 million took 52 s of CI's sanitized run).
  const std::string base = "map " + data("1a63.pqr") + " --spacing 0.6 --threads 1 ";
  for (const char* method : {"cutoff", "msm"})
    for (const char* format : {"dx", "dx.gz", "dxbin", "mrc"}) {
      if (std::string(method) == "msm" && std::string(format) != "mrc") continue;  // msm: one format is enough
      const std::string name = std::string(method) + "." + format;
      // A limit that leaves each writer more than two slabs (dxbin's buffers are the smallest: 3
      // slabs at 4.5 MiB, 2 at 7; the text writers need ~6.2 MiB at least).
      const std::string limit = std::string(format) == "dxbin" ? "4500K" : "7M";
      const Result whole = run_nbkit(base + "--method " + method + " -o " + dir.file("whole-" + name) + " --png " +
                                     dir.file("whole-" + name + ".png") + " --report " +
                                     dir.file("whole-" + name + ".json"));
      ASSERT_EQ(whole.status, 0) << whole.output;
      EXPECT_FALSE(contains(whole.output, "slabs")) << whole.output;
      const Result slabs = run_nbkit(base + "--method " + method + " -o " + dir.file("slabs-" + name) + " --png " +
                                     dir.file("slabs-" + name + ".png") + " --report " +
                                     dir.file("slabs-" + name + ".json") + " --memory-limit " + limit);
      ASSERT_EQ(slabs.status, 0) << slabs.output;
      EXPECT_TRUE(contains(slabs.output, "computed and written in")) << slabs.output;
      EXPECT_EQ(bytes_of(dir.file("slabs-" + name)), bytes_of(dir.file("whole-" + name))) << name;
      EXPECT_EQ(bytes_of(dir.file("slabs-" + name + ".png")), bytes_of(dir.file("whole-" + name + ".png"))) << name;
      const auto report = nlohmann::json::parse(bytes_of(dir.file("slabs-" + name + ".json")));
      const auto whole_report = nlohmann::json::parse(bytes_of(dir.file("whole-" + name + ".json")));
      EXPECT_GT(report["output"]["slabs"]["count"].get<int>(), 2) << name;
      EXPECT_EQ(whole_report["output"]["slabs"]["count"].get<int>(), 1) << name;
      EXPECT_EQ(report["potential"], whole_report["potential"]) << name;
      EXPECT_EQ(report["output"]["bytes"].get<std::uint64_t>(), std::filesystem::file_size(dir.file("slabs-" + name)));
      EXPECT_GT(report["output"]["write_seconds"].get<double>(), 0.0);
      // Where the disk waited: the first slab is computed before anything is written.
      EXPECT_GT(report["output"]["seconds_before_first_write"].get<double>(), 0.0) << name;
      EXPECT_GE(report["output"]["seconds_after_last_write"].get<double>(), 0.0) << name;
      EXPECT_LT(report["output"]["seconds_before_first_write"].get<double>(),
                report["timing_seconds"]["total"].get<double>()) << name;
    }
}

// A trajectory's combined map in slabs (the frames read once a slab) is the whole combination's,
// for the mean and the standard deviation, with its PNG slice.
TEST(CliStream, TrajectoryInSlabsGivesTheSameFiles) {
  nbkit::test::ScratchDir dir;
  for (const char* combine : {"avg", "stdev"}) {
    // Cutoff sums over 5 frames: the whole test takes seconds under AddressSanitizer.
    const std::string base = "map " + data("1a63.pqr") + " --trajectory " + data("1a63-wobble.dcd") +
                             " --last 4 --method cutoff --spacing 1.0 --threads 1 --combine " + combine + " ";
    const std::string c = combine;
    const Result whole = run_nbkit(base + "-o " + dir.file("whole-" + c + ".mrc") + " --png " + dir.file("whole-" + c + ".png"));
    ASSERT_EQ(whole.status, 0) << whole.output;
    const Result slabs = run_nbkit(base + "-o " + dir.file("slabs-" + c + ".mrc") + " --png " +
                                   dir.file("slabs-" + c + ".png") + " --memory-limit 3M --report " +
                                   dir.file("slabs-" + c + ".json"));
    ASSERT_EQ(slabs.status, 0) << slabs.output;
    EXPECT_TRUE(contains(slabs.output, "the frames are read once a slab")) << slabs.output;
    EXPECT_EQ(bytes_of(dir.file("slabs-" + c + ".mrc")), bytes_of(dir.file("whole-" + c + ".mrc"))) << combine;
    EXPECT_EQ(bytes_of(dir.file("slabs-" + c + ".png")), bytes_of(dir.file("whole-" + c + ".png"))) << combine;
    const auto report = nlohmann::json::parse(bytes_of(dir.file("slabs-" + c + ".json")));
    EXPECT_GT(report["output"]["slabs"]["count"].get<int>(), 1);
    EXPECT_EQ(report["trajectory"]["frames"].get<int>(), 5);
  }
}

// A limit that cannot hold a row and the writer's buffers is refused before anything runs,
// naming what it could not hold; a size that is not one is refused.
TEST(CliStream, ImpossibleLimitsAreRefused) {
  nbkit::test::ScratchDir dir;
  const Result tiny = run_nbkit("map " + data("1a63.pqr") + " --threads 1 -o " + dir.file("m.dx") + " --memory-limit 1M");
  EXPECT_NE(tiny.status, 0);
  EXPECT_TRUE(contains(tiny.output, "but the memory limit is 1.0 MiB")) << tiny.output;
  EXPECT_FALSE(std::filesystem::exists(dir.file("m.dx")));
  const Result words = run_nbkit("map " + data("1a63.pqr") + " -o " + dir.file("m.dx") + " --memory-limit lots");
  EXPECT_NE(words.status, 0);
  EXPECT_TRUE(contains(words.output, "--memory-limit lots: expected a size")) << words.output;
}

// The check: a 1300^3 lattice (2,197,000,000 points: past 2^31) by the cutoff method
// over three atoms, written as MRC (8.8 GB) with at most 1 GiB for the map's slabs; the
// process's peak resident memory stays under 2 GB, and values read back from the file at three
// points (near an atom, in the last plane, past the 2^31st value) equal those of small maps
// computed around the same points.
TEST(CliStream, LatticeBeyondTwoTo31PointsInBoundedMemory) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "2.2e9 points under AddressSanitizer take too long; the release build runs this";
#endif
  nbkit::test::ScratchDir dir;
  const std::int64_t n = 1300;
  const std::uint64_t file = 1024 + 80 + 4 * static_cast<std::uint64_t>(n * n * n);
  const std::uint64_t free_bytes = nbkit::available_disk_bytes(dir.file("big.mrc"));
  if (free_bytes != 0 && free_bytes < file + (std::uint64_t{2} << 30))
    GTEST_SKIP() << "needs " << file / 1e9 << " GB of disk, " << free_bytes / 1e9 << " GB free";
  // Three charges: at the lattice's near corner, its middle and its far corner.
  nbkit::test::write_text(dir.file("three.pqr"),
                          "ATOM      1  C   ALA     1       1.000   1.000   1.000  1.0000 1.5000\n"
                          "ATOM      2  C   ALA     1     325.000 325.000 325.000 -1.0000 1.5000\n"
                          "ATOM      3  C   ALA     1     648.000 648.000 648.000  0.5000 1.5000\n");
  const std::string lattice = " --spacing 0.5 --method cutoff --cutoff 4 --threads 2 ";
  struct rusage before {};
  ::getrusage(RUSAGE_CHILDREN, &before);
  const Result big = run_nbkit("map " + dir.file("three.pqr") + lattice + "--origin 0,0,0 --dims 1300,1300,1300 --memory-limit 1G -o " +
                               dir.file("big.mrc") + " --report " + dir.file("big.json"));
  struct rusage after {};
  ::getrusage(RUSAGE_CHILDREN, &after);
  ASSERT_EQ(big.status, 0) << big.output;
  EXPECT_TRUE(contains(big.output, "2,197,000,000 lattice points")) << big.output;
  EXPECT_LT(after.ru_maxrss, 2L * 1000 * 1000) << "peak resident memory, KiB";  // under 2 GB
  ASSERT_EQ(std::filesystem::file_size(dir.file("big.mrc")), file);
  const auto report = nlohmann::json::parse(bytes_of(dir.file("big.json")));
  EXPECT_EQ(report["lattice"]["points"].get<std::int64_t>(), n * n * n);
  EXPECT_GT(report["output"]["slabs"]["count"].get<int>(), 1);

  // (i, j, k) read from the file (z fastest, x slowest) against a 3 x 3 x 3 map around it.
  const int fd = ::open(dir.file("big.mrc").c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  for (const std::array<std::int64_t, 3>& p :
       {std::array<std::int64_t, 3>{3, 2, 1}, std::array<std::int64_t, 3>{649, 650, 651},
        std::array<std::int64_t, 3>{1297, 1296, 1298}}) {
    const std::int64_t index = (p[0] * n + p[1]) * n + p[2];
    float value = 0;
    ASSERT_EQ(::pread(fd, &value, 4, static_cast<off_t>(1024 + 80 + 4 * index)), 4);
    const std::string small = dir.file("small.dx");
    const Result r = run_nbkit("map " + dir.file("three.pqr") + lattice + "--dims 3,3,3 --precision single -q -o " +
                               small + " --origin " + std::to_string(0.5 * (p[0] - 1)) + "," +
                               std::to_string(0.5 * (p[1] - 1)) + "," + std::to_string(0.5 * (p[2] - 1)));
    ASSERT_EQ(r.status, 0) << r.output;
    const double expected = nbkit::io::read_dx(small).at(1, 1, 1);
    EXPECT_NE(expected, 0.0) << "a point within the cutoff of an atom";
    // The small map's text keeps 8 digits, the file float32; the same sum otherwise.
    EXPECT_NEAR(value, expected, 1e-6 * std::fabs(expected)) << p[0] << "," << p[1] << "," << p[2];
    if (index > (std::int64_t{1} << 31)) SUCCEED() << "read past the 2^31st value";
  }
  ::close(fd);
}
