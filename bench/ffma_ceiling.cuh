#pragma once
// The N-body benchmark's ceiling: float32 fused multiply-adds per second of device 0,
// measured by a microkernel in the same run (8 independent FFMA chains a thread, every SM
// full). An all-pairs gravity interaction needs 12 float32-pipe instructions (3 subtracts,
// 3 FMAs for r^2 + eps^2, 3 multiplies for m / r^3, 3 FMAs for the acceleration) besides its
// rsqrt, so no kernel can pass FFMA/s / 12 interactions per second; on Hopper, where the
// rsqrt and the shared-memory loads take issue slots too, FFMA/s / 13 is the practical one.
#include <cuda_runtime.h>

#include <algorithm>
#include <vector>

#include "cuda/check.hpp"
#include "cuda/device_buffer.hpp"

namespace nbkit::bench {

__global__ void ffma_ceiling_kernel(float* out, int iterations, float a, float b) {
  float x[8];
#pragma unroll
  for (int c = 0; c < 8; ++c) x[c] = 1.0f + 0.001f * (threadIdx.x + c);
#pragma unroll 16  // no loop overhead to speak of: 128 FFMAs a trip
  for (int it = 0; it < iterations; ++it) {
#pragma unroll
    for (int c = 0; c < 8; ++c) x[c] = __fmaf_rn(x[c], a, b);
  }
  float s = 0;
#pragma unroll
  for (int c = 0; c < 8; ++c) s += x[c];
  out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}

// FFMA instructions per second of device 0 (times 2 for flops).
inline double measure_ffma_per_second() {
  int sms = 0;
  NBKIT_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const int blocks = sms * 8, threads = 256, iterations = 16384;
  cuda::DeviceBuffer<float> out(static_cast<std::size_t>(blocks) * threads);
  cudaEvent_t start, stop;
  NBKIT_CUDA_CHECK(cudaEventCreate(&start));
  NBKIT_CUDA_CHECK(cudaEventCreate(&stop));
  ffma_ceiling_kernel<<<blocks, threads>>>(out.data(), iterations, 0.9999f, 0.0001f);  // warm-up, clocks up
  NBKIT_CUDA_CHECK_LAUNCH();
  std::vector<float> times;
  for (int r = 0; r < 5; ++r) {
    NBKIT_CUDA_CHECK(cudaEventRecord(start));
    ffma_ceiling_kernel<<<blocks, threads>>>(out.data(), iterations, 0.9999f, 0.0001f);
    NBKIT_CUDA_CHECK_LAUNCH();
    NBKIT_CUDA_CHECK(cudaEventRecord(stop));
    NBKIT_CUDA_CHECK(cudaEventSynchronize(stop));
    float ms = 0;
    NBKIT_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    times.push_back(ms);
  }
  NBKIT_CUDA_CHECK(cudaEventDestroy(start));
  NBKIT_CUDA_CHECK(cudaEventDestroy(stop));
  std::sort(times.begin(), times.end());
  return static_cast<double>(blocks) * threads * iterations * 8 / (times[2] * 1e-3);
}

}  // namespace nbkit::bench
