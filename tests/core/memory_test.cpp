#include "nbkit/core/memory.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>

#include "nbkit/core/error.hpp"

namespace nbkit {

TEST(Memory, MachineReportsSomething) { EXPECT_GT(available_memory_bytes(), 0u); }

TEST(Memory, CheckNamesNeedAndAvailability) {
  ::setenv("NBKIT_MEMORY_LIMIT", "1048576", 1);
  try {
    check_memory(3u << 20, "a test lattice");
    FAIL() << "expected MemoryError";
  } catch (const MemoryError& error) {
    EXPECT_STREQ(error.what(), "a test lattice needs 3.0 MiB of memory but only 1.0 MiB are available");
  }
  EXPECT_NO_THROW(check_memory(1u << 20, "fits"));
  ::unsetenv("NBKIT_MEMORY_LIMIT");
}

}  // namespace nbkit

#include <numeric>
#include <vector>

#include "core/parallel_copy.hpp"

namespace nbkit {

// parallel_copy's parts (at least 2^15 doubles, up to 8 threads) cover every element once, at
// sizes around a part's edges and with a last part shorter than the others.
TEST(Memory, ParallelCopyCopiesEveryElement) {
  for (const std::size_t count : {std::size_t{0}, std::size_t{1}, std::size_t{32767}, std::size_t{32769},
                                  std::size_t{8 * 32768 + 5}, std::size_t{409600}}) {
    std::vector<double> from(count), to(count + 1, -1.0);
    std::iota(from.begin(), from.end(), 0.5);
    parallel_copy(to.data(), from.data(), count);
    EXPECT_TRUE(std::equal(from.begin(), from.end(), to.begin())) << count;
    EXPECT_EQ(to[count], -1.0) << count;  // nothing past the end
  }
}

}  // namespace nbkit
