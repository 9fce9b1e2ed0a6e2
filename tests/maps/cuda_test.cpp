// What only the CUDA map path has: atom segments, atoms on lattice points in a checked
// pass, slabs, several GPUs (bit for bit against one), device errors. The properties every
// fast path shares are tested once for all backends in tests/maps/backends_test.cpp.
// Skips without a GPU.
#include <gtest/gtest.h>
#include <stdlib.h>

#if NBKIT_TEST_CUDA
#include <cuda_runtime.h>
#endif

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <numeric>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "maps/frame_combiner.hpp"
#include "maps/kernels.hpp"
#include "maps/laws.hpp"
#include "maps/map_test_support.hpp"
#include "nbkit/core/error.hpp"
#include "nbkit/io/pqr.hpp"
#include "nbkit/trajectory.hpp"
#include "test_support.hpp"

namespace nbkit {

namespace {

using test::kDoubleTolerance;
using test::kSingleTolerance;
using test::run;
using test::with;

class CudaMaps : public ::testing::TestWithParam<MapMethod> {
 protected:
  void SetUp() override {
    std::string why;
    gpus_ = list_gpus(&why);
    if (gpus_.empty()) GTEST_SKIP() << "no GPU: " << why;
  }
  std::vector<GpuInfo> gpus_;
};

}  // namespace

TEST_P(CudaMaps, AMillionAtoms) {
  // 2^20 atoms in a 100 A box, a few lattice points: many shared-memory tiles, float64 sums
  // across them.
  const Atoms atoms = test::random_atoms(1 << 20, {-50, -50, -50}, {50, 50, 50}, 5);
  Lattice lattice;
  lattice.origin = {-3, -2, -1};
  lattice.spacing = 1.1;
  lattice.dims = {3, 2, 11};
  const auto reference = run(atoms, lattice, with(GetParam(), Backend::reference));
  const auto magnitude = run(test::with_absolute_charges(atoms), lattice, with(GetParam(), Backend::reference));
  const auto gpu = run(atoms, lattice, with(GetParam(), Backend::cuda));
  EXPECT_LT(test::error_relative_to(gpu, reference, magnitude), test::kSingleConditionedTolerance);
}

TEST_P(CudaMaps, SameBitsOnRepeatedRunsSlabSplitsAndDevices) {
  const Atoms atoms = io::read_pqr(test::data_file("1a63.pqr"));
  const Lattice lattice = lattice_around(atoms, 1.1, 4.0);
  const auto first = run(atoms, lattice, with(GetParam(), Backend::cuda));
  EXPECT_EQ(run(atoms, lattice, with(GetParam(), Backend::cuda)), first);
  {
    const test::ScopedEnvironment small_slabs("NBKIT_CUDA_SLAB_ROWS", "37");
    EXPECT_EQ(run(atoms, lattice, with(GetParam(), Backend::cuda)), first) << "37-row slabs";
  }
  MapOptions one_gpu = with(GetParam(), Backend::cuda);
  one_gpu.gpus = {0};
  EXPECT_EQ(run(atoms, lattice, one_gpu), first);
  if (gpus_.size() >= 2) {
    MapOptions two_gpus = with(GetParam(), Backend::cuda);
    two_gpus.gpus = {0, 1};
    EXPECT_EQ(run(atoms, lattice, two_gpus), first) << "two GPUs";
    const test::ScopedEnvironment small_slabs("NBKIT_CUDA_SLAB_ROWS", "5");
    EXPECT_EQ(run(atoms, lattice, two_gpus), first) << "two GPUs, 5-row slabs";
  }
}

TEST_P(CudaMaps, PointsOnAtomsWithManyAtomsInSegments) {
  // 6000 atoms on a tiny lattice: the atoms are split into segments; three atoms sit
  // exactly on lattice points and take the checked pass.
  Atoms atoms = test::random_atoms(6000, {-6, -5, -4}, {6, 5, 4}, 21);
  atoms.push_back({0, 0, 0}, 1.0, 1.0);
  atoms.push_back({1, 0, 0}, -2.0, 1.0);
  atoms.push_back({-2, -1.5, -1}, 0.5, 1.2);  // the lattice origin
  Lattice lattice;
  lattice.origin = {-2, -1.5, -1};
  lattice.spacing = 0.5;
  lattice.dims = {9, 7, 5};
  const auto reference = run(atoms, lattice, with(GetParam(), Backend::reference));
  const auto gpu = run(atoms, lattice, with(GetParam(), Backend::cuda));
  const auto dbl = run(atoms, lattice, with(GetParam(), Backend::cuda, Precision::double_));
  EXPECT_LT(test::relative_rms(gpu, reference), kSingleTolerance);
  EXPECT_LT(test::relative_rms(dbl, reference), kDoubleTolerance);
  lattice.dims = {9, 7, 24};  // eight points a thread
  const auto reference8 = run(atoms, lattice, with(GetParam(), Backend::reference));
  EXPECT_LT(test::relative_rms(run(atoms, lattice, with(GetParam(), Backend::cuda)), reference8), kSingleTolerance);
  lattice.dims = {9, 7, 29};  // sixteen points a thread, 3 past each row's end
  const auto reference16 = run(atoms, lattice, with(GetParam(), Backend::reference));
  EXPECT_LT(test::relative_rms(run(atoms, lattice, with(GetParam(), Backend::cuda)), reference16), kSingleTolerance);
}

TEST_P(CudaMaps, ThreadsOfEightAndSixteenPointsAgreeBitForBit) {
  // Rows of 40 points take 8 a thread, rows of 48 take 16 (direct_cuda's plan): each point is
  // computed alike (dz from every 8th point, the same points' rsqrt on the FP32 pipe), so the
  // first 40 points of every row have the same bits. 6000 atoms: two atom segments either way.
  const Atoms atoms = test::random_atoms(6000, {-6, -5, -4}, {6, 5, 4}, 23);
  Lattice lattice;
  lattice.origin = {-2.25, -1.5, -10.1};
  lattice.spacing = 0.5;
  lattice.dims = {9, 7, 40};
  const auto eights = run(atoms, lattice, with(GetParam(), Backend::cuda));
  lattice.dims = {9, 7, 48};
  const auto sixteens = run(atoms, lattice, with(GetParam(), Backend::cuda));
  for (std::int64_t row = 0; row < 9 * 7; ++row)
    for (std::int64_t k = 0; k < 40; ++k)
      ASSERT_EQ(eights[static_cast<std::size_t>(row * 40 + k)], sixteens[static_cast<std::size_t>(row * 48 + k)])
          << "row " << row << " point " << k;
}

TEST_P(CudaMaps, BadDeviceIsAClearError) {
  MapOptions options = with(GetParam(), Backend::cuda);
  options.gpus = {static_cast<int>(gpus_.size()) + 3};
  Atoms atoms;
  atoms.push_back({0, 0, 0}, 1, 1);
  Lattice lattice;
  try {
    run(atoms, lattice, options);
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("--gpus: there is no GPU"), std::string::npos) << error.what();
  }
}

// `count` frames of a protein whose atoms jiggle (0.3 A, a fixed seed per frame).
std::function<bool(Atoms&)> jiggling_frames(const Atoms& base, int count, double amplitude) {
  auto k = std::make_shared<int>(0);
  return [base, count, amplitude, k](Atoms& atoms) {
    if (*k == count) return false;
    std::mt19937 random(static_cast<unsigned>(1000 + *k));
    std::uniform_real_distribution<double> step(-amplitude, amplitude);
    for (std::size_t n = 0; n < atoms.size(); ++n) {
      atoms.x[n] = base.x[n] + step(random);
      atoms.y[n] = base.y[n] + step(random);
      atoms.z[n] = base.z[n] + step(random);
    }
    ++*k;
    return true;
  };
}

TEST_P(CudaMaps, TrajectoryCombinedOnTheDeviceEqualsTheHostLoopBitForBit) {
  // The device folds each frame's slabs into its accumulators with the host loop's operations
  // rounded one by one (trajectory_cuda.cu), so the two must agree to the last bit for every
  // combine, precision, slab split and device split, on an awkward lattice (odd sizes, 23
  // points along z: a partial chunk of 8 per thread).
  const Atoms atoms = io::read_pqr(test::data_file("1a63.pqr"));
  Lattice lattice = lattice_around(atoms, 1.7, 3.0);
  lattice.dims[2] = 23;
  for (const Precision precision : {Precision::single, Precision::double_}) {
    const MapOptions options = with(GetParam(), Backend::cuda, precision);
    for (const Combine combine : {Combine::avg, Combine::min, Combine::max, Combine::stdev}) {
      TrajectoryMapStats on_host_stats, on_device_stats;
      const Map on_host = maps::combine_frame_maps(atoms, lattice, options, combine, jiggling_frames(atoms, 4, 0.3), {},
                                                   &on_host_stats, false);
      const Map on_device = maps::combine_frame_maps(atoms, lattice, options, combine, jiggling_frames(atoms, 4, 0.3),
                                                     {}, &on_device_stats, true);
      EXPECT_FALSE(on_host_stats.combined_on_device);
      ASSERT_TRUE(on_device_stats.combined_on_device);
      EXPECT_EQ(on_device_stats.frames, 4);
      EXPECT_EQ(on_device.values, on_host.values) << to_string(combine) << " " << to_string(precision);
      // Fixed shares per device with many slabs: the same device listed twice (two host
      // threads, two shares), or two GPUs.
      MapOptions split = options;
      split.gpus = gpus_.size() >= 2 ? std::vector<int>{0, 1} : std::vector<int>{0, 0};
      const test::ScopedEnvironment small_slabs("NBKIT_CUDA_SLAB_ROWS", "7");
      EXPECT_EQ(combine_frame_maps(atoms, lattice, split, combine, jiggling_frames(atoms, 4, 0.3)).values,
                on_host.values)
          << to_string(combine) << " " << to_string(precision) << ", shares and 7-row slabs";
    }
  }
  // Identical frames: the single frame's GPU map bit for bit, and no spread.
  const MapOptions options = with(GetParam(), Backend::cuda);
  const auto single = run(atoms, lattice, options);
  EXPECT_EQ(combine_frame_maps(atoms, lattice, options, Combine::avg, jiggling_frames(atoms, 5, 0.0)).values, single);
  for (double v : combine_frame_maps(atoms, lattice, options, Combine::stdev, jiggling_frames(atoms, 3, 0.0)).values)
    ASSERT_EQ(v, 0.0);
}

TEST(CudaTrajectory, CutoffMapsCombinedOnTheDeviceAndMsmOnTheHost) {
  std::string why;
  if (list_gpus(&why).empty()) GTEST_SKIP() << "no GPU: " << why;
  const Atoms atoms = io::read_pqr(test::data_file("1a63.pqr"));
  const Lattice lattice = lattice_around(atoms, 1.3, 6.0);
  for (const MapMethod method : {MapMethod::cutoff, MapMethod::msm}) {
    const MapOptions options = with(method, Backend::cuda, Precision::double_);
    TrajectoryMapStats stats;
    const Map gpu = combine_frame_maps(atoms, lattice, options, Combine::stdev, jiggling_frames(atoms, 3, 0.3), {}, &stats);
    EXPECT_EQ(stats.combined_on_device, method == MapMethod::cutoff) << to_string(method);
    // Against the CPU's float64 frames combined on the host: the frame maps differ by float64
    // rounding only (different summation orders), ~1e-14 of the map's scale.
    const Map cpu = combine_frame_maps(atoms, lattice, with(method, Backend::cpu, Precision::double_), Combine::stdev,
                                       jiggling_frames(atoms, 3, 0.3));
    EXPECT_LT(test::relative_rms(gpu.values, cpu.values), 1e-9) << to_string(method);
  }
}

#if NBKIT_TEST_CUDA
namespace {

// A slab term (msm's interpolation is the real one) that overwrites each slab with each point's
// index from a copy on the GPU, ready only after `ready_after` polls (never if negative), and
// records the slabs it was given per host thread.
class IndexTerm final : public maps::DeviceSlabTerm {
 public:
  IndexTerm(const Lattice& lattice, int ready_after) : nz_(lattice.dims[2]), ready_after_(ready_after) {
    std::vector<double> index(static_cast<std::size_t>(lattice.size()));
    std::iota(index.begin(), index.end(), 0.0);
    if (cudaMalloc(&device_, index.size() * sizeof(double)) != cudaSuccess) throw Error("cudaMalloc");
    cudaMemcpy(device_, index.data(), index.size() * sizeof(double), cudaMemcpyHostToDevice);
  }
  ~IndexTerm() override { cudaFree(device_); }
  IndexTerm(const IndexTerm&) = delete;
  IndexTerm& operator=(const IndexTerm&) = delete;
  void add(int, std::int64_t first, std::int64_t last, double* slab, void* stream) override {
    cudaMemcpyAsync(slab, device_ + first * nz_, static_cast<std::size_t>((last - first) * nz_) * sizeof(double),
                    cudaMemcpyDeviceToDevice, static_cast<cudaStream_t>(stream));
    const std::lock_guard<std::mutex> lock(mutex_);
    if (slabs_.empty()) polls_before_first_add_ = polls_.load();
    slabs_[std::this_thread::get_id()].emplace_back(first, last);
  }
  bool ready() const override { return ++polls_ > ready_after_ && ready_after_ >= 0; }
  std::map<std::thread::id, std::vector<std::pair<std::int64_t, std::int64_t>>> slabs_;
  int polls_before_first_add_ = -1;

 private:
  std::int64_t nz_;
  int ready_after_;
  double* device_ = nullptr;
  mutable std::atomic<int> polls_{0};
  std::mutex mutex_;
};

}  // namespace

// The slab loop (gpu_slabs.cuh) queues slabs on more buffers while a term is not ready (msm's
// grids summed beside the short range), then adds it to each, oldest first, before the slab
// leaves: every point must hold the term's value (it overwrites the sum: a term queued before
// the slab's kernels, or a copy before the term, leaves the cutoff sum there), each slab must get
// the term once, in order on each host thread. Slabs of 3 rows: 400 of them, more than the loop
// defers (64 buffers), so "never ready" also takes the path that waits for the term.
TEST(CudaSlabs, TermsQueuedBeforeTheyAreReadyReachEverySlabOnce) {
  std::string why;
  if (list_gpus(&why).empty()) GTEST_SKIP() << "no GPU: " << why;
  const Atoms atoms = test::random_atoms(500, {0, 0, 0}, {20, 15, 10}, 41);
  Lattice lattice;
  lattice.dims = {40, 30, 20};
  const test::ScopedEnvironment small_slabs("NBKIT_CUDA_SLAB_ROWS", "3");
  const maps::CutoffMapLaw law = maps::CutoffLaw<Smoothing::cutcp>{8.0};
  for (const int ready_after : {0, 10, -1})
    for (const std::vector<int>& gpus : {std::vector<int>{0}, std::vector<int>{0, 0}}) {
      const std::string what = "ready after " + std::to_string(ready_after) + " polls, " +
                                std::to_string(gpus.size()) + " host thread(s)";
      IndexTerm term(lattice, ready_after);
      std::vector<double> out(static_cast<std::size_t>(lattice.size()), -1.0);
      maps::RowRange rows;
      rows.lattice = &lattice;
      rows.row_end = lattice.dims[0] * lattice.dims[1];
      rows.out = out.data();
      rows.slab_term = &term;
      maps::cutoff_cuda(atoms, std::nullopt, law, rows, false, gpus, nullptr);
      for (std::size_t p = 0; p < out.size(); ++p) ASSERT_EQ(out[p], static_cast<double>(p)) << what << ", point " << p;
      std::vector<std::pair<std::int64_t, std::int64_t>> all;
      for (const auto& [thread, slabs] : term.slabs_) {
        EXPECT_TRUE(std::is_sorted(slabs.begin(), slabs.end())) << what;
        all.insert(all.end(), slabs.begin(), slabs.end());
      }
      std::sort(all.begin(), all.end());
      ASSERT_FALSE(all.empty()) << what;
      EXPECT_EQ(all.front().first, 0) << what;
      EXPECT_EQ(all.back().second, rows.row_end) << what;
      for (std::size_t n = 1; n < all.size(); ++n) ASSERT_EQ(all[n].first, all[n - 1].second) << what;
      EXPECT_EQ(all.size(), 400u) << what;
      // Deferred: the loop polled the term (once or twice a slab) before its first add.
      if (ready_after != 0) EXPECT_GE(term.polls_before_first_add_, ready_after > 0 ? ready_after : 64) << what;
    }
}
#endif

INSTANTIATE_TEST_SUITE_P(Methods, CudaMaps, ::testing::Values(MapMethod::direct, MapMethod::mdh),
                         [](const auto& info) { return to_string(info.param); });

}  // namespace nbkit
