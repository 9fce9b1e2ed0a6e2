// Maps computed a slab at a time (stream_map, issue 21) are compute_map's maps bit for bit, for
// every method and backend, any slab size, with or without a writer thread.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <string>

#include "maps/map_test_support.hpp"
#include "nbkit/core/error.hpp"
#include "nbkit/core/backend.hpp"
#include "nbkit/maps.hpp"
#include "nbkit/trajectory.hpp"
#include "test_support.hpp"

namespace nbkit {

namespace {

// The slabs stream_map hands over, pasted together in order (checking that they come in order,
// whole and once).
std::vector<double> streamed(const Atoms& atoms, const Lattice& lattice, const MapOptions& options,
                             std::int64_t slab_rows, bool overlap, MapStats* stats = nullptr) {
  std::vector<double> values;
  std::int64_t next_row = 0;
  stream_map(
      atoms, lattice, options, slab_rows,
      [&](const MapSlab& slab) {
        EXPECT_EQ(slab.row_begin, next_row);
        EXPECT_GT(slab.row_end, slab.row_begin);
        values.insert(values.end(), slab.values, slab.values + (slab.row_end - slab.row_begin) * lattice.dims[2]);
        next_row = slab.row_end;
      },
      stats, overlap);
  EXPECT_EQ(next_row, lattice.rows());
  return values;
}

bool same_bits(const std::vector<double>& a, const std::vector<double>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0;
}

struct Case {
  const char* name;
  MapMethod method;
  bool periodic = false;
};

class StreamedMap : public ::testing::TestWithParam<std::tuple<Case, Backend>> {
 protected:
  void SetUp() override {
    std::string why;
    if (backend() == Backend::cuda && list_gpus(&why).empty()) GTEST_SKIP() << "no GPU: " << why;
  }
  Case method_case() const { return std::get<0>(GetParam()); }
  Backend backend() const { return std::get<1>(GetParam()); }
};

}  // namespace

// Slabs of 1 row, 7 rows (across x-planes), a plane and a half, and the whole lattice, on an
// awkward 13 x 9 x 17 lattice; msm sums its grids once and must still give every slab the
// values of the whole map.
TEST_P(StreamedMap, SameBitsAsTheWholeMapForAnySlabs) {
  const Case c = method_case();
  Lattice lattice;
  lattice.origin = {-6.0, -4.5, -8.25};
  lattice.spacing = 0.9;
  lattice.dims = {13, 9, 17};
  Atoms atoms = test::random_atoms(300, {-7, -6, -9}, {6, 4, 7}, 17);
  MapOptions options = test::with(c.method, backend());
  if (c.method == MapMethod::cutoff || c.method == MapMethod::msm) options.cutoff = 5.0;
  if (c.periodic) {
    options.cutoff = 4.0;  // under half the shortest edge
    options.periodic_box = PeriodicBox::from_edges({11.7, 8.1, 15.3});
    lattice.origin = {0, 0, 0};
    for (std::size_t i = 0; i < atoms.size(); ++i) atoms.x[i] += 7, atoms.y[i] += 6, atoms.z[i] += 9;
  }
  const Map whole = compute_map(atoms, lattice, options);
  // One-row slabs on the CPU only: on a GPU each slab is a launch with its uploads (msm's 117
  // one-row slabs took 40 s there), and 7 rows already cross x-planes.
  for (const std::int64_t rows : {std::int64_t{1}, std::int64_t{7}, std::int64_t{13}, lattice.rows()})
    for (const bool overlap : {false, true}) {
      if (rows == 1 && backend() == Backend::cuda) continue;
      MapStats stats;
      EXPECT_TRUE(same_bits(streamed(atoms, lattice, options, rows, overlap, &stats), whole.values))
          << c.name << " in slabs of " << rows << " rows" << (overlap ? ", overlapped" : "");
      EXPECT_EQ(stats.lattice_points, static_cast<double>(lattice.size()));
      EXPECT_EQ(stats.backend, backend() == Backend::cuda ? Backend::cuda : Backend::cpu);
    }
}

INSTANTIATE_TEST_SUITE_P(
    Methods, StreamedMap,
    ::testing::Combine(::testing::Values(Case{"direct", MapMethod::direct}, Case{"mdh", MapMethod::mdh},
                                         Case{"cutoff", MapMethod::cutoff},
                                         Case{"periodic_cutoff", MapMethod::cutoff, true}, Case{"msm", MapMethod::msm},
                                         Case{"periodic_msm", MapMethod::msm, true},
                                         Case{"density", MapMethod::density}, Case{"occupancy", MapMethod::occupancy}),
                       ::testing::Values(Backend::cpu, Backend::cuda)),
    [](const auto& info) {
      return std::string(std::get<0>(info.param).name) + "_" +
             (std::get<1>(info.param) == Backend::cuda ? "cuda" : "cpu");
    });

// The reference backend too (the oracle's slabs), and msm's stage times summed once: the grids'
// stages in the first slab only.
TEST(StreamMap, ReferenceSlabsAndMsmStages) {
  Lattice lattice;
  lattice.origin = {-5, -5, -5};
  lattice.spacing = 1.25;
  lattice.dims = {9, 8, 7};
  const Atoms atoms = test::random_atoms(40, {-5, -5, -5}, {5, 5, 5}, 3);
  MapOptions options = test::with(MapMethod::cutoff, Backend::reference);
  options.cutoff = 4;
  EXPECT_TRUE(same_bits(streamed(atoms, lattice, options, 5, true), compute_map(atoms, lattice, options).values));
  options = test::with(MapMethod::msm, Backend::cpu);
  options.cutoff = 4;
  MapStats stats;
  streamed(atoms, lattice, options, 3, false, &stats);
  ASSERT_FALSE(stats.stage_seconds.empty());
  EXPECT_EQ(stats.stage_seconds.front().first, "short range");
}

// An exception in the consumer (a full disk) ends the run and reaches the caller, from the
// writer thread too; no slab is handed over after it.
TEST(StreamMap, TheConsumersErrorEndsTheRun) {
  Lattice lattice;
  lattice.origin = {-5, -5, -5};
  lattice.spacing = 1.0;
  lattice.dims = {10, 10, 10};
  const Atoms atoms = test::random_atoms(20, {-5, -5, -5}, {5, 5, 5}, 4);
  for (const bool overlap : {false, true}) {
    int calls = 0;
    EXPECT_THROW(stream_map(
                     atoms, lattice, test::with(MapMethod::direct, Backend::cpu), 10,
                     [&](const MapSlab&) {
                       if (++calls == 2) throw Error("disk full");
                     },
                     nullptr, overlap),
                 Error);
    EXPECT_EQ(calls, 2);
  }
  EXPECT_THROW(stream_map(atoms, lattice, test::with(MapMethod::direct, Backend::cpu), 0, [](const MapSlab&) {}), Error);
}

// Progress runs once from 0 to 1 over all slabs, never backwards.
TEST(StreamMap, ProgressCoversAllSlabsOnce) {
  Lattice lattice;
  lattice.origin = {-5, -5, -5};
  lattice.spacing = 1.0;
  lattice.dims = {10, 10, 10};
  const Atoms atoms = test::random_atoms(20, {-5, -5, -5}, {5, 5, 5}, 4);
  MapOptions options = test::with(MapMethod::direct, Backend::cpu);
  std::vector<double> seen;
  options.progress = [&](double f) { seen.push_back(f); };
  stream_map(atoms, lattice, options, 30, [](const MapSlab&) {});
  ASSERT_FALSE(seen.empty());
  for (std::size_t i = 1; i < seen.size(); ++i) EXPECT_GE(seen[i], seen[i - 1]);
  EXPECT_DOUBLE_EQ(seen.back(), 1.0);
}

}  // namespace nbkit

namespace nbkit {

// A trajectory combined a slab at a time (the frames read again for every slab) is
// combine_frame_maps' map bit for bit, for every combination, with the frames' count.
TEST(StreamFrameMaps, SameBitsAsTheWholeCombination) {
  Lattice lattice;
  lattice.origin = {-5, -4, -6};
  lattice.spacing = 1.1;
  lattice.dims = {9, 7, 11};
  const Atoms first = test::random_atoms(60, {-5, -4, -6}, {4, 3, 5}, 21);
  auto frame_source = [&first](int& k) {
    return [&first, &k](Atoms& atoms) {
      if (k == 5) return false;
      atoms = first;
      for (std::size_t i = 0; i < atoms.size(); ++i) atoms.x[i] += 0.3 * std::sin(1.7 * k + static_cast<double>(i));
      ++k;
      return true;
    };
  };
  for (const MapMethod method : {MapMethod::direct, MapMethod::msm})
    for (const Combine combine : {Combine::avg, Combine::min, Combine::max, Combine::stdev}) {
      // Two threads: on the 16-core GPU host under a parallel ctest, 16-thread teams on a
      // 693-point lattice took 84 s.
      MapOptions options = test::with(method, Backend::cpu, Precision::single, 2);
      options.cutoff = 4.5;
      int k = 0;
      const Map whole = combine_frame_maps(first, lattice, options, combine, frame_source(k));
      std::vector<double> streamed_values;
      TrajectoryMapStats stats;
      int rewinds = 0;
      stream_frame_maps(
          first, lattice, options, combine, 10, [&] { k = 0, ++rewinds; }, frame_source(k),
          [&](const MapSlab& slab) {
            streamed_values.insert(streamed_values.end(), slab.values,
                                   slab.values + (slab.row_end - slab.row_begin) * lattice.dims[2]);
          },
          {}, &stats);
      EXPECT_TRUE(same_bits(streamed_values, whole.values)) << to_string(method) << " " << to_string(combine);
      EXPECT_EQ(stats.frames, 5);
      EXPECT_EQ(rewinds, 7);  // 63 rows in slabs of 10
    }
}

}  // namespace nbkit

namespace nbkit {

// How mpirun shares a map's rows: the split follows the rates exactly (consecutive, in rank
// order, every row once, a rank with no rows where its rate is tiny), and the measured rate is a
// finite positive number for every method on the CPU, small lattices included (one row).
TEST(RankShares, RowsSplitByRateAndRatesMeasured) {
  EXPECT_EQ(split_rows_by_rate(100, {1.0, 1.0}), (std::vector<std::int64_t>{0, 50, 100}));
  EXPECT_EQ(split_rows_by_rate(100, {3.0, 1.0}), (std::vector<std::int64_t>{0, 75, 100}));
  EXPECT_EQ(split_rows_by_rate(3, {1.0, 1.0, 1.0, 1.0}).back(), 3);
  const std::vector<std::int64_t> lopsided = split_rows_by_rate(1000, {1e6, 1.0});
  EXPECT_EQ(lopsided.back(), 1000);
  EXPECT_LE(lopsided[2] - lopsided[1], 1);
  EXPECT_THROW(split_rows_by_rate(10, {1.0, 0.0}), Error);
  EXPECT_THROW(split_rows_by_rate(10, {}), Error);

  const Atoms atoms = test::random_atoms(300, {0, 0, 0}, {12, 12, 12}, 4);
  for (const MapMethod method : {MapMethod::direct, MapMethod::cutoff, MapMethod::msm}) {
    for (const Lattice& lattice : {lattice_around(atoms, 1.0, 2.0), Lattice{{0, 0, 0}, 1.0, {1, 1, 9}}}) {  // one row too
      const double rate = measure_map_rows_per_second(atoms, lattice, test::with(method, Backend::cpu), 2, 64, 0.002);
      EXPECT_GT(rate, 0) << to_string(method);
      EXPECT_TRUE(std::isfinite(rate)) << to_string(method);
    }
  }
}

}  // namespace nbkit
