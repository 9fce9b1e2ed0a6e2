#pragma once
// What the CUDA benchmarks share: BENCH_CHECK (a CUDA call that must succeed, else the
// benchmark exits with the error) and the GPU's memory bandwidth measured in the run (the
// ceiling of bandwidth-bound kernels).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#define BENCH_CHECK(call)                                                                      \
  do {                                                                                         \
    const cudaError_t status_ = (call);                                                        \
    if (status_ != cudaSuccess) {                                                              \
      std::fprintf(stderr, "%s: %s\n", #call, cudaGetErrorString(status_));                    \
      std::exit(1);                                                                            \
    }                                                                                          \
  } while (0)

namespace nbkit::bench {

// Bytes per second of a 1 GiB device-to-device copy (read + write), the best of 5.
inline double memory_bandwidth() {
  const std::size_t bytes = std::size_t(1) << 30;
  void *a = nullptr, *b = nullptr;
  BENCH_CHECK(cudaMalloc(&a, bytes));
  BENCH_CHECK(cudaMalloc(&b, bytes));
  BENCH_CHECK(cudaMemset(a, 1, bytes));
  cudaEvent_t start, stop;
  BENCH_CHECK(cudaEventCreate(&start));
  BENCH_CHECK(cudaEventCreate(&stop));
  double best = 0;
  for (int rep = 0; rep < 6; ++rep) {
    BENCH_CHECK(cudaEventRecord(start));
    BENCH_CHECK(cudaMemcpy(b, a, bytes, cudaMemcpyDeviceToDevice));
    BENCH_CHECK(cudaEventRecord(stop));
    BENCH_CHECK(cudaEventSynchronize(stop));
    float ms = 0;
    BENCH_CHECK(cudaEventElapsedTime(&ms, start, stop));
    if (rep > 0) best = std::max(best, 2.0 * bytes / (ms * 1e-3));
  }
  cudaEventDestroy(start), cudaEventDestroy(stop);
  cudaFree(a), cudaFree(b);
  return best;
}

}  // namespace nbkit::bench
