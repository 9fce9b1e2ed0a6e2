#pragma once
// The GPU benchmarks' ceiling: the special-function unit's rsqrt.approx (MUFU.RSQ)
// throughput, measured by a microkernel in the same run (16 per clock per SM on Hopper).
// Every map evaluation of nbkit's kernels takes one, so no kernel that uses the hardware
// rsqrt for every evaluation can pass this rate.
#include <cuda_runtime.h>

#include <algorithm>
#include <vector>

#include "cuda/check.hpp"
#include "cuda/device_buffer.hpp"

namespace nbkit::bench {

// kWithExp: an ex2.approx beside each rsqrt, the Debye-Hueckel law's ceiling (the exp of
// exp(-kappa r) takes the special-function unit too).
template <bool kWithExp>
__global__ void rsqrt_ceiling_kernel(float* out, int iterations) {
  float x[8];
#pragma unroll
  for (int c = 0; c < 8; ++c) x[c] = 1.0f + 0.001f * (threadIdx.x + c);
  for (int it = 0; it < iterations; ++it) {
#pragma unroll
    for (int c = 0; c < 8; ++c) {
      float y, e = 0.0f;
      asm volatile("rsqrt.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x[c]));
      if constexpr (kWithExp) asm volatile("ex2.approx.ftz.f32 %0, %1;" : "=f"(e) : "f"(-x[c]));
      x[c] = (kWithExp ? y + e : y) + 1.0f;  // keeps the chain alive; FADDs run on the FP32 pipe
    }
  }
  float s = 0;
#pragma unroll
  for (int c = 0; c < 8; ++c) s += x[c];
  out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}

// Evaluations per second of device 0 (with_exp: an rsqrt and an ex2 per evaluation).
inline double measure_rsqrt_ceiling(bool with_exp = false) {
  int sms = 0;
  NBKIT_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const int blocks = sms * 8, threads = 256, iterations = 4096;
  cuda::DeviceBuffer<float> out(static_cast<std::size_t>(blocks) * threads);
  cudaEvent_t start, stop;
  NBKIT_CUDA_CHECK(cudaEventCreate(&start));
  NBKIT_CUDA_CHECK(cudaEventCreate(&stop));
  auto kernel = with_exp ? rsqrt_ceiling_kernel<true> : rsqrt_ceiling_kernel<false>;
  kernel<<<blocks, threads>>>(out.data(), iterations);  // warm-up
  NBKIT_CUDA_CHECK_LAUNCH();
  std::vector<float> times;
  for (int r = 0; r < 5; ++r) {
    NBKIT_CUDA_CHECK(cudaEventRecord(start));
    kernel<<<blocks, threads>>>(out.data(), iterations);
    NBKIT_CUDA_CHECK_LAUNCH();
    NBKIT_CUDA_CHECK(cudaEventRecord(stop));
    NBKIT_CUDA_CHECK(cudaEventSynchronize(stop));
    float ms = 0;
    NBKIT_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    times.push_back(ms);
  }
  std::sort(times.begin(), times.end());
  return static_cast<double>(blocks) * threads * iterations * 8 / (times[2] * 1e-3);
}

}  // namespace nbkit::bench
