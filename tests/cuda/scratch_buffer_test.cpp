// The cache of device scratch buffers behind the GPU maps' slab buffers (src/cuda/scratch_buffer.hpp):
// reused when a request fits (up to twice its size), bounded, and never handed on from a scope an
// exception left (kernels queued on it may still run). Skips without a GPU; nothing to test
// without a CUDA build.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "nbkit/core/backend.hpp"

#if NBKIT_TEST_CUDA
#include "cuda/scratch_buffer.hpp"

namespace nbkit {

TEST(CudaScratch, BuffersAreReusedBoundedAndNotKeptFromAnException) {
  std::string why;
  if (list_gpus(&why).empty()) GTEST_SKIP() << "no GPU: " << why;
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  const std::size_t n = 1234567, bytes = n * sizeof(double);  // a size no other test's buffer has
  const std::size_t before = cuda::ScratchBuffer::cached_bytes();
  const double* first = nullptr;
  {
    cuda::ScratchBuffer a(n);
    first = a.data();
    ASSERT_NE(first, nullptr);
  }
  EXPECT_EQ(cuda::ScratchBuffer::cached_bytes(), before + bytes) << "kept after use";
  {
    cuda::ScratchBuffer b(n - 1000);  // fits: the same buffer
    EXPECT_EQ(b.data(), first);
    EXPECT_EQ(b.size(), n);
    EXPECT_EQ(cuda::ScratchBuffer::cached_bytes(), before) << "taken out while in use";
    cuda::ScratchBuffer c(n / 4);  // a quarter: not given a buffer four times its size
    EXPECT_NE(c.data(), first);
  }
  const std::size_t kept = cuda::ScratchBuffer::cached_bytes();
  try {
    cuda::ScratchBuffer d(n);  // from the cache
    EXPECT_EQ(d.data(), first);
    throw std::runtime_error("a failed launch, say");
  } catch (const std::runtime_error&) {
  }
  EXPECT_EQ(cuda::ScratchBuffer::cached_bytes(), kept - bytes) << "freed, not kept, when unwinding";
  {
    cuda::ScratchBuffer huge(cuda::ScratchBuffer::kCachedBytes / sizeof(double) + 1);  // over the bound alone
  }
  EXPECT_EQ(cuda::ScratchBuffer::cached_bytes(), kept - bytes) << "a buffer over the bound is freed, the others kept";
}

}  // namespace nbkit
#endif
