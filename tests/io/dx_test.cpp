#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "io/text.hpp"
#include "nbkit/core/error.hpp"
#include "nbkit/io/map_files.hpp"
#include "test_support.hpp"

namespace nbkit::io {

namespace {
Map sample_map() {
  Map map;
  map.lattice.origin = {-1.5, 2.25, 10};
  map.lattice.spacing = 0.75;
  map.lattice.dims = {3, 4, 5};
  for (std::int64_t i = 0; i < map.lattice.size(); ++i) map.values.push_back(std::sin(0.37 * i) * 1e3 - 1e-4 * i);
  return map;
}
}  // namespace

TEST(Dx, LayoutAsApbsWritesIt) {
  test::ScratchDir dir;
  const Map map = sample_map();
  write_dx(dir.file("m.dx"), map, {"a comment"});
  const std::string text = read_file_text(dir.file("m.dx"));
  EXPECT_EQ(text.rfind("# a comment\nobject 1 class gridpositions counts 3 4 5\n", 0), 0u);
  EXPECT_NE(text.find("origin -1.500000e+00 2.250000e+00 1.000000e+01\n"), std::string::npos);
  EXPECT_NE(text.find("delta 7.500000e-01 0.000000e+00 0.000000e+00\n"), std::string::npos);
  EXPECT_NE(text.find("object 2 class gridconnections counts 3 4 5\n"), std::string::npos);
  EXPECT_NE(text.find("object 3 class array type double rank 0 items 60 data follows\n"), std::string::npos);
  EXPECT_NE(text.find("component \"data\" value 3\n"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(dir.file("m.dx.tmp-" + std::to_string(::getpid()))));
}

TEST(Dx, RoundTripKeepsEightSignificantDigits) {
  test::ScratchDir dir;
  const Map map = sample_map();
  write_dx(dir.file("m.dx"), map);
  const Map back = read_dx(dir.file("m.dx"));
  EXPECT_EQ(back.lattice.dims, map.lattice.dims);
  EXPECT_EQ(back.lattice.origin, map.lattice.origin);
  EXPECT_EQ(back.lattice.spacing, map.lattice.spacing);
  ASSERT_EQ(back.values.size(), map.values.size());
  for (std::size_t i = 0; i < map.values.size(); ++i)
    EXPECT_NEAR(back.values[i], map.values[i], 5e-8 * std::fabs(map.values[i]));
}

TEST(Dx, ErrorsNameLineAndField) {
  const std::string header =
      "object 1 class gridpositions counts 2 1 1\norigin 0 0 0\ndelta 1 0 0\ndelta 0 1 0\ndelta 0 0 1\n"
      "object 2 class gridconnections counts 2 1 1\n";
  auto message = [](const std::string& text) {
    try {
      parse_dx(text, "m.dx");
    } catch (const InputError& error) {
      return std::string(error.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message(header + "object 3 class array type double rank 0 items 3 data follows\n1 2 3\n"),
            "m.dx:7: items: expected 2 items for a 2x1x1 grid, found 3");
  EXPECT_EQ(message(header + "object 3 class array type double rank 0 items 2 data follows\n1 x\n"),
            "m.dx:8: data: expected a number, got 'x'");
  EXPECT_EQ(message(header + "object 3 class array type double rank 0 items 2 data follows\n1\n"),
            "m.dx:8: data: expected 2 values, the file ends after 1");
  EXPECT_EQ(message("origin 0 0\n"), "m.dx:1: origin: expected 3 numbers after 'origin'");
  EXPECT_EQ(message("hello\n"), "m.dx:1: no 'object 1 class gridpositions counts nx ny nz' line: not an OpenDX grid");
  EXPECT_EQ(message("object 1 class gridpositions counts 2 1 1\norigin 0 0 0\ndelta 1 0 0\ndelta 0 2 0\n"),
            "m.dx:4: delta: expected the same spacing along x, y and z");
}

TEST(Dx, UnwritablePathIsAnErrorAndLeavesNothing) {
  EXPECT_THROW(write_dx("/nonexistent-dir/m.dx", sample_map()), Error);
}

}  // namespace nbkit::io
