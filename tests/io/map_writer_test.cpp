// Map files written a slab at a time (issue 21): every format gives the same bytes whatever the
// slabs, reads back, and leaves no file when the values fall short.
#include <gtest/gtest.h>
#include <zlib.h>

#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <gemmi/ccp4.hpp>
#include <random>

#include "io/scientific.hpp"
#include "io/text.hpp"
#include "nbkit/core/error.hpp"
#include "nbkit/io/map_files.hpp"
#include "test_support.hpp"

namespace nbkit::io {

namespace {

Map awkward_map() {  // 7 x 5 x 11: rows of an odd length, a value count not a multiple of 3
  Map map;
  map.lattice.origin = {-3.25, 1.5, 20};
  map.lattice.spacing = 0.4;
  map.lattice.dims = {7, 5, 11};
  std::mt19937_64 rng(5);
  std::normal_distribution<double> normal;
  for (std::int64_t i = 0; i < map.lattice.size(); ++i)
    map.values.push_back(normal(rng) * std::pow(10.0, normal(rng) * 3));
  return map;
}

std::string bytes_of(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// The map through the writer in slabs of `rows` rows.
void write_in_slabs(const std::string& path, const Map& map, std::int64_t rows) {
  const std::int64_t nz = map.lattice.dims[2];
  write_map_file(path, map.lattice, {"slabs"}, [&](MapFileWriter& writer) {
    for (std::int64_t r = 0; r < map.lattice.rows(); r += rows) {
      const std::int64_t end = std::min(map.lattice.rows(), r + rows);
      writer.write(map.values.data() + r * nz, (end - r) * nz);
    }
  });
}

}  // namespace

// The fast "%.7e" is printf's, byte for byte: random magnitudes over 60 decades, the
// boundaries of its fast range, values next to rounding ties and powers of ten.
TEST(Scientific, FormatsAsPrintfDoes) {
  std::mt19937_64 rng(11);
  std::normal_distribution<double> normal;
  std::uniform_real_distribution<double> decade(-30, 30);
  std::vector<double> values = {0.0, -0.0, 5e-324, 1.7976931348623157e308, 1e-15, 1e22, 9.99999995e7, 99999999.5, 0.5};
  for (int e = -20; e <= 25; ++e)
    for (double m : {1.0, 9.99999995, 9.999999949999, 1.00000005, 1.000000049999999, 2.5, 5.0}) {
      const double v = m * std::pow(10.0, e);
      for (double w : {v, -v, std::nextafter(v, 0.0), std::nextafter(v, 1e300)}) values.push_back(w);
    }
  for (int i = 0; i < 400000; ++i) values.push_back(normal(rng) * std::pow(10.0, decade(rng)));
  for (std::uint64_t k = 1; k < 100000; ++k) values.push_back(static_cast<double>(k) * 0.125 + 1e-8);
  int differ = 0;
  for (double v : values) {
    char fast[40], exact[40];
    const std::string f(fast, static_cast<std::size_t>(format_scientific7(fast, v) - fast));
    const std::string x(exact, static_cast<std::size_t>(
                                   std::to_chars(exact, exact + sizeof exact, v, std::chars_format::scientific, 7).ptr - exact));
    if (f != x && ++differ <= 5) ADD_FAILURE() << f << " vs " << x;
  }
  EXPECT_EQ(differ, 0);
}

TEST(MapWriter, EveryFormatIsTheSameBytesForAnySlabs) {
  test::ScratchDir dir;
  const Map map = awkward_map();
  for (const char* name : {"m.dx", "m.dx.gz", "m.dxbin", "m.mrc"}) {
    write_in_slabs(dir.file(std::string("whole-") + name), map, map.lattice.rows());
    const std::string whole = bytes_of(dir.file(std::string("whole-") + name));
    ASSERT_GT(whole.size(), 100u) << name;
    for (std::int64_t rows : {1, 2, 7, 34}) {
      const std::string path = dir.file(std::to_string(rows) + "-" + name);
      write_in_slabs(path, map, rows);
      EXPECT_EQ(bytes_of(path), whole) << name << " in slabs of " << rows << " rows";
    }
  }
}

TEST(MapWriter, EveryFormatReadsBack) {
  test::ScratchDir dir;
  const Map map = awkward_map();
  for (const char* name : {"m.dx", "m.dx.gz", "m.dxbin", "m.mrc"}) {
    write_in_slabs(dir.file(name), map, 3);
    const Map back = read_map(dir.file(name));
    EXPECT_EQ(back.lattice.dims, map.lattice.dims) << name;
    EXPECT_NEAR(back.lattice.spacing, map.lattice.spacing, 1e-6) << name;
    for (int a = 0; a < 3; ++a) EXPECT_NEAR(back.lattice.origin[a], map.lattice.origin[a], 1e-5) << name;
    ASSERT_EQ(back.values.size(), map.values.size()) << name;
    // Binary OpenDX holds the doubles; text eight significant digits; MRC float32.
    const double tolerance = std::string(name) == "m.dxbin" ? 0.0 : std::string(name) == "m.mrc" ? 6e-8 : 5e-8;
    for (std::size_t i = 0; i < map.values.size(); ++i)
      ASSERT_NEAR(back.values[i], map.values[i], tolerance * std::fabs(map.values[i])) << name << " value " << i;
  }
}

// gzip members one after another: zlib reads them as one stream, and the text inside is the
// plain OpenDX file's.
TEST(MapWriter, GzipIsThePlainTextCompressed) {
  test::ScratchDir dir;
  Map map = awkward_map();
  map.lattice.dims = {40, 30, 200};  // several chunks of 196,608 values: several members
  map.values.resize(static_cast<std::size_t>(map.lattice.size()));
  for (std::size_t i = 0; i < map.values.size(); ++i) map.values[i] = std::cos(0.001 * static_cast<double>(i));
  write_dx(dir.file("m.dx"), map);
  write_map(dir.file("m.dx.gz"), map);
  const std::string packed = bytes_of(dir.file("m.dx.gz"));
  ASSERT_EQ(static_cast<unsigned char>(packed[0]), 0x1f);
  EXPECT_LT(packed.size(), bytes_of(dir.file("m.dx")).size() / 2);
  EXPECT_EQ(read_file_bytes(dir.file("m.dx.gz")), bytes_of(dir.file("m.dx")));
}

// APBS's dxbin: the text header says "binary data follows", then 8-byte doubles, then the footer.
TEST(MapWriter, BinaryDxHasApbsLayout) {
  test::ScratchDir dir;
  const Map map = awkward_map();
  write_map(dir.file("m.dxbin"), map, {"comment"});
  const std::string bytes = bytes_of(dir.file("m.dxbin"));
  const std::string marker = "items 385 binary data follows\n";
  const std::size_t at = bytes.find(marker);
  ASSERT_NE(at, std::string::npos);
  const std::size_t data = at + marker.size();
  double first = 0, last = 0;
  std::memcpy(&first, bytes.data() + data, 8);
  std::memcpy(&last, bytes.data() + data + 8 * 384, 8);
  EXPECT_EQ(first, map.values.front());
  EXPECT_EQ(last, map.values.back());
  EXPECT_EQ(bytes.substr(data + 8 * 385, 29), "\nattribute \"dep\" string \"posi");
}

// MRC in the map's own axis order (z columns, x sections); gemmi reorders it to x, y, z and
// finds the statistics words filled.
TEST(MapWriter, MrcAxisOrderAndStatistics) {
  test::ScratchDir dir;
  const Map map = awkward_map();
  write_in_slabs(dir.file("m.mrc"), map, 4);
  gemmi::Ccp4<float> back;
  back.read_ccp4_file(dir.file("m.mrc"));
  EXPECT_EQ(back.header_i32(17), 3);  // MAPC: columns along z
  EXPECT_EQ(back.header_i32(19), 1);  // MAPS: sections along x
  float low = HUGE_VALF, high = -HUGE_VALF;
  for (double v : map.values) low = std::min(low, static_cast<float>(v)), high = std::max(high, static_cast<float>(v));
  EXPECT_EQ(back.header_float(20), low);
  EXPECT_EQ(back.header_float(21), high);
  back.setup(NAN, gemmi::MapSetup::ReorderOnly);
  ASSERT_EQ(back.grid.nu, 7);
  ASSERT_EQ(back.grid.nw, 11);
  for (int i = 0; i < 7; ++i)
    for (int j = 0; j < 5; ++j)
      for (int k = 0; k < 11; ++k) ASSERT_EQ(back.grid.get_value_q(i, j, k), static_cast<float>(map.at(i, j, k)));
}

// Too few values, too many, or an exception from the producer: no file, and an older file of
// the same name untouched.
TEST(MapWriter, AnUnfinishedMapLeavesNoFile) {
  test::ScratchDir dir;
  const Map map = awkward_map();
  const std::int64_t nz = map.lattice.dims[2];
  for (const char* name : {"m.dx", "m.dx.gz", "m.dxbin", "m.mrc"}) {
    const std::string path = dir.file(name);
    EXPECT_THROW(write_map_file(path, map.lattice, {},
                                [&](MapFileWriter& writer) { writer.write(map.values.data(), 3 * nz); }),
                 Error)
        << name;
    EXPECT_FALSE(std::filesystem::exists(path)) << name;
    { std::ofstream(path) << "older"; }
    EXPECT_THROW(write_map_file(path, map.lattice, {},
                                [&](MapFileWriter& writer) {
                                  writer.write(map.values.data(), map.lattice.size());
                                  writer.write(map.values.data(), nz);
                                }),
                 Error)
        << name;
    EXPECT_THROW(write_map_file(path, map.lattice, {}, [&](MapFileWriter&) { throw Error("stopped"); }), Error);
    EXPECT_EQ(bytes_of(path), "older") << name;
    std::filesystem::remove(path);
    ASSERT_TRUE(std::filesystem::is_empty(dir.path())) << name << ": a temporary was left";
  }
}

TEST(MapWriter, FormatsByName) {
  EXPECT_EQ(guess_map_format("a.dx"), MapFormat::dx);
  EXPECT_EQ(guess_map_format("a.DX.GZ"), MapFormat::dx_gzip);
  EXPECT_EQ(guess_map_format("a.dxbin"), MapFormat::dx_binary);
  EXPECT_EQ(guess_map_format("a.ccp4"), MapFormat::ccp4);
  EXPECT_THROW(guess_map_format("a.gz"), Error);
  EXPECT_THROW(guess_map_format("a.txt"), Error);
}

// A binary OpenDX file cut short, or holding a value that is not finite, is refused.
TEST(MapWriter, TruncatedBinaryDxIsRefused) {
  test::ScratchDir dir;
  const Map map = awkward_map();
  write_map(dir.file("m.dxbin"), map);
  std::string bytes = bytes_of(dir.file("m.dxbin"));
  { std::ofstream(dir.file("cut.dxbin"), std::ios::binary) << bytes.substr(0, bytes.size() - 400); }
  EXPECT_THROW(read_dx(dir.file("cut.dxbin")), InputError);
  const std::size_t data = bytes.find("data follows\n") + 13;
  const double nan = std::nan("");
  std::memcpy(bytes.data() + data + 16, &nan, 8);
  { std::ofstream(dir.file("nan.dxbin"), std::ios::binary) << bytes; }
  EXPECT_THROW(read_dx(dir.file("nan.dxbin")), InputError);
}

}  // namespace nbkit::io
