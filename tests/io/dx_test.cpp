#include <gtest/gtest.h>

#include <algorithm>
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
  EXPECT_NE(text.find("origin -1.5 2.25 10\n"), std::string::npos);
  EXPECT_NE(text.find("delta 0.75 0 0\ndelta 0 0.75 0\ndelta 0 0 0.75\n"), std::string::npos);
  EXPECT_NE(text.find("object 2 class gridconnections counts 3 4 5\n"), std::string::npos);
  EXPECT_NE(text.find("object 3 class array type double rank 0 items 60 data follows\n"), std::string::npos);
  EXPECT_NE(text.find("component \"data\" value 3\n"), std::string::npos);
  for (const auto& entry : std::filesystem::directory_iterator(dir.path()))  // no temporary left
    EXPECT_EQ(entry.path().filename().string().find(".tmp-"), std::string::npos) << entry.path();
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

// A client placing values at origin + i * delta must see the lattice nbkit computed on: the
// header's numbers read back as the same doubles (seven digits cost 1.9e-5 relative error).
TEST(Dx, PositionsReadBackAsTheSameDoubles) {
  test::ScratchDir dir;
  Map map = sample_map();
  map.lattice.origin = {-23.456789012345678, 0.1 + 0.2, 1e-7 / 3};
  map.lattice.spacing = 1.0 / 3;
  write_dx(dir.file("m.dx"), map);
  const Map back = read_dx(dir.file("m.dx"));
  EXPECT_EQ(back.lattice.origin, map.lattice.origin);
  EXPECT_EQ(back.lattice.spacing, map.lattice.spacing);
}

TEST(Dx, LargeMapsReportProgressAndWriteEveryLine) {
  test::ScratchDir dir;
  Map map;
  map.lattice.dims = {61, 67, 71};  // 290,177 values: more than one chunk of lines, not a multiple of 3
  map.lattice.spacing = 0.5;
  for (std::int64_t i = 0; i < map.lattice.size(); ++i) map.values.push_back(1e-3 * static_cast<double>(i) - 7);
  std::vector<double> fractions;
  write_dx(dir.file("m.dx"), map, {}, [&](double f) { fractions.push_back(f); });
  ASSERT_FALSE(fractions.empty());
  EXPECT_DOUBLE_EQ(fractions.back(), 1.0);
  EXPECT_TRUE(std::is_sorted(fractions.begin(), fractions.end()));
  const Map back = read_dx(dir.file("m.dx"));
  ASSERT_EQ(back.values.size(), map.values.size());
  for (std::size_t i = 0; i < map.values.size(); i += 997) EXPECT_NEAR(back.values[i], map.values[i], 1e-7 * 300);
  EXPECT_EQ(back.values.back(), map.values.back());
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
  // An item count past 2^53 (the fuzzer's 6.7e121: its cast to an integer was undefined).
  EXPECT_EQ(message(header + "object 3 class array type double rank 0 items 6.7e121 data follows\n1 2\n"),
            "m.dx:7: items: expected a whole number of items");
  EXPECT_EQ(message("origin 0 0\n"), "m.dx:1: origin: expected 3 numbers after 'origin'");
  EXPECT_EQ(message("hello\n"), "m.dx:1: no 'object 1 class gridpositions counts nx ny nz' line: not an OpenDX grid");
  EXPECT_EQ(message("object 1 class gridpositions counts 2 1 1\norigin 0 0 0\ndelta 1 0 0\ndelta 0 2 0\n"),
            "m.dx:4: delta: expected the same spacing along x, y and z");
}

TEST(Dx, UnwritablePathIsAnErrorAndLeavesNothing) {
  EXPECT_THROW(write_dx("/nonexistent-dir/m.dx", sample_map()), Error);
}

}  // namespace nbkit::io
