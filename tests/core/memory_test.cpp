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
