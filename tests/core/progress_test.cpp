// ParallelProgress: a callback that throws stops the loop (the Python module's Ctrl-C), and the
// exception comes out of finish() on the calling thread, never out of an OpenMP region.
#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>

#include "nbkit/core/progress.hpp"

namespace {

TEST(ParallelProgress, ACallbackThatThrowsStopsTheLoopAndFinishRethrows) {
  std::atomic<int> calls{0};
  const std::function<void(double)> callback = [&](double fraction) {
    ++calls;
    if (fraction > 0.1) throw std::runtime_error("stop");
  };
  const std::int64_t total = 100000;
  nbkit::ParallelProgress progress(&callback, total, 100);
  std::atomic<std::int64_t> worked{0};
#pragma omp parallel for schedule(dynamic, 16) num_threads(2)
  for (std::int64_t i = 0; i < total; ++i) {
    if (progress.cancelled()) continue;
    ++worked;
    progress.done_one();
  }
  EXPECT_TRUE(progress.cancelled());
  EXPECT_LT(worked.load(), total / 2);  // stopped soon after a tenth
  EXPECT_THROW(progress.finish(), std::runtime_error);
  EXPECT_GT(calls.load(), 0);
}

TEST(ParallelProgress, ReportsInOrderAndFinishesAtOne) {
  std::vector<double> seen;
  const std::function<void(double)> callback = [&](double fraction) { seen.push_back(fraction); };
  nbkit::ParallelProgress progress(&callback, 1000, 10);
  for (int i = 0; i < 1000; ++i) progress.done_one();
  progress.finish();
  ASSERT_FALSE(seen.empty());
  EXPECT_EQ(seen.back(), 1.0);
  for (std::size_t k = 1; k < seen.size(); ++k) EXPECT_LE(seen[k - 1], seen[k]);
  EXPECT_FALSE(progress.cancelled());
}

}  // namespace
