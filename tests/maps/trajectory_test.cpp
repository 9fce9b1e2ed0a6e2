// Trajectory-combined maps.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "maps/frame_combiner.hpp"
#include "maps/map_test_support.hpp"
#include "nbkit/core/error.hpp"
#include "nbkit/io/pqr.hpp"
#include "nbkit/trajectory.hpp"
#include "test_support.hpp"

namespace nbkit {

namespace {

// `count` frames: frame k moves every atom by shift(k) along x.
std::function<bool(Atoms&)> frames_of(const Atoms& base, int count, double step) {
  auto k = std::make_shared<int>(0);
  return [base, count, step, k](Atoms& atoms) {
    if (*k == count) return false;
    for (std::size_t n = 0; n < atoms.size(); ++n) atoms.x[n] = base.x[n] + step * *k;
    ++*k;
    return true;
  };
}

}  // namespace

TEST(TrajectoryMaps, IdenticalFramesGiveTheSingleFrameBitForBitAndZeroSpread) {
  const Atoms atoms = io::read_pqr(test::data_file("1a63.pqr"));
  const Lattice lattice = lattice_around(atoms, 2.0, 5.0);
  const MapOptions options = test::with(MapMethod::direct, Backend::cpu);
  const Map single = compute_map(atoms, lattice, options);
  for (const Combine c : {Combine::avg, Combine::min, Combine::max}) {
    TrajectoryMapStats stats;
    const Map combined = combine_frame_maps(atoms, lattice, options, c, frames_of(atoms, 5, 0.0), {}, &stats);
    EXPECT_EQ(stats.frames, 5);
    EXPECT_EQ(combined.values, single.values) << to_string(c);
  }
  const Map spread = combine_frame_maps(atoms, lattice, options, Combine::stdev, frames_of(atoms, 4, 0.0));
  for (double v : spread.values) EXPECT_EQ(v, 0.0);
}

TEST(TrajectoryMaps, CombinesMovingFramesPointByPoint) {
  Atoms one;
  one.push_back({0, 0, 0}, 1.0, 1.0);
  Lattice lattice;
  lattice.origin = {5, -1, -1};
  lattice.dims = {3, 3, 3};
  const MapOptions options = test::with(MapMethod::direct, Backend::reference);
  std::vector<std::vector<double>> maps;
  auto frames = frames_of(one, 3, 0.5);
  Atoms a = one;
  while (frames(a)) maps.push_back(compute_map(a, lattice, options).values);
  const Map avg = combine_frame_maps(one, lattice, options, Combine::avg, frames_of(one, 3, 0.5));
  const Map lo = combine_frame_maps(one, lattice, options, Combine::min, frames_of(one, 3, 0.5));
  const Map hi = combine_frame_maps(one, lattice, options, Combine::max, frames_of(one, 3, 0.5));
  const Map sd = combine_frame_maps(one, lattice, options, Combine::stdev, frames_of(one, 3, 0.5));
  for (std::size_t p = 0; p < avg.values.size(); ++p) {
    const double mean = (maps[0][p] + maps[1][p] + maps[2][p]) / 3;
    const double var = (std::pow(maps[0][p] - mean, 2) + std::pow(maps[1][p] - mean, 2) + std::pow(maps[2][p] - mean, 2)) / 3;
    EXPECT_NEAR(avg.values[p], mean, 1e-12 * std::fabs(mean));
    EXPECT_NEAR(sd.values[p], std::sqrt(var), 1e-9 * std::fabs(mean));
    EXPECT_EQ(lo.values[p], std::min({maps[0][p], maps[1][p], maps[2][p]}));
    EXPECT_EQ(hi.values[p], std::max({maps[0][p], maps[1][p], maps[2][p]}));
  }
  EXPECT_THROW(combine_frame_maps(one, lattice, options, Combine::avg, frames_of(one, 0, 0.5)), Error);
  EXPECT_THROW(parse_combine("median"), Error);
}

}  // namespace nbkit

namespace nbkit::maps {

// No map leaves the library with a NaN or an infinity: the first one is named with its point.
TEST(MapChecks, NonFiniteValuesAreNamedWithTheirPoint) {
  Lattice lattice;
  lattice.origin = {1, 2, 3};
  lattice.spacing = 0.5;
  lattice.dims = {4, 5, 6};
  std::vector<double> values(static_cast<std::size_t>(lattice.size()), 1.0);
  EXPECT_NO_THROW(check_finite_map(lattice, 0, values.data(), values.size(), "direct map (single)"));
  values[lattice.index(2, 3, 4)] = std::numeric_limits<double>::quiet_NaN();
  values.back() = std::numeric_limits<double>::infinity();
  try {
    check_finite_map(lattice, 0, values.data(), values.size(), "direct map (single)");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "the direct map (single) is nan at lattice point (2, 3, 4) (2, 3.5, 5 A) and 1 more "
                                     "points: the sums overflowed; nothing was written");
  }
  // Rows from the middle of the lattice: the point is found from the first row's index.
  const std::size_t row_values = static_cast<std::size_t>(lattice.dims[2]);
  EXPECT_THROW(check_finite_map(lattice, 13, values.data() + 13 * row_values, 2 * row_values, "map"), Error);
}

}  // namespace nbkit::maps
