// The GPU query behind `nbkit info` and --backend auto. Skips where no GPU is usable.
#include <gtest/gtest.h>

#include "nbkit/core/backend.hpp"

namespace nbkit {

TEST(CudaDevices, ListedWithPropertiesOrSkippedWithAReason) {
  std::string why;
  const auto gpus = list_gpus(&why);
  if (gpus.empty()) {
    EXPECT_FALSE(why.empty());
    GTEST_SKIP() << "no GPU: " << why;
  }
  for (const auto& gpu : gpus) {
    EXPECT_FALSE(gpu.name.empty());
    EXPECT_GT(gpu.multiprocessors, 0);
    EXPECT_GT(gpu.memory_gib, 0.5);
    EXPECT_GE(gpu.compute_capability_major, 7);
  }
  EXPECT_TRUE(build_info().cuda_compiled);
}

}  // namespace nbkit
