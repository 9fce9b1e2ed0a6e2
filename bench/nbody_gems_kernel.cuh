#pragma once
// The peer: the design of NVIDIA's CUDA sample nbody (GPU Gems 3 ch. 31, Nyland, Harris,
// Prins; seed 002), re-implemented here to be measured in the same run: one body per
// thread, 256-body tiles of float4 {x, y, z, m} in shared memory, rsqrtf, the tile loop
// unrolled, N / 256 blocks (N must be a multiple of 256, as in the sample).
#include <cuda_runtime.h>

#include <algorithm>
#include <vector>

#include "cuda/check.hpp"
#include "cuda/device_buffer.hpp"

namespace nbkit::bench {

constexpr int kGemsBlock = 256;

__device__ __forceinline__ float3 gems_interaction(float4 bi, float4 bj, float3 ai, float eps2) {
  float3 r;
  r.x = bj.x - bi.x;
  r.y = bj.y - bi.y;
  r.z = bj.z - bi.z;
  const float dist_sqr = r.x * r.x + r.y * r.y + r.z * r.z + eps2;
  const float inv_dist = rsqrtf(dist_sqr);
  const float inv_dist_cube = inv_dist * inv_dist * inv_dist;
  const float s = bj.w * inv_dist_cube;
  ai.x += r.x * s;
  ai.y += r.y * s;
  ai.z += r.z * s;
  return ai;
}

__global__ void __launch_bounds__(kGemsBlock) gems_kernel(const float4* __restrict__ pos, float4* __restrict__ acc,
                                                          int n, float eps2) {
  __shared__ float4 tile[kGemsBlock];
  const int i = blockIdx.x * kGemsBlock + threadIdx.x;
  const float4 bi = pos[i];
  float3 a = {0, 0, 0};
  for (int t = 0; t < n / kGemsBlock; ++t) {
    tile[threadIdx.x] = pos[t * kGemsBlock + threadIdx.x];
    __syncthreads();
#pragma unroll 128
    for (int k = 0; k < kGemsBlock; ++k) a = gems_interaction(bi, tile[k], a, eps2);
    __syncthreads();
  }
  acc[i] = make_float4(a.x, a.y, a.z, 0);
}

// Median seconds of one force evaluation of the sample's design over `positions` (x, y, z, m).
inline double time_gems_kernel(const std::vector<float>& positions, float eps2, int repeats) {
  const int n = static_cast<int>(positions.size() / 4);
  cuda::DeviceBuffer<float4> pos(n), acc(n);
  NBKIT_CUDA_CHECK(cudaMemcpy(pos.data(), positions.data(), positions.size() * sizeof(float), cudaMemcpyHostToDevice));
  cudaEvent_t start, stop;
  NBKIT_CUDA_CHECK(cudaEventCreate(&start));
  NBKIT_CUDA_CHECK(cudaEventCreate(&stop));
  std::vector<float> times;
  for (int r = 0; r <= repeats; ++r) {  // the first one warms up
    NBKIT_CUDA_CHECK(cudaEventRecord(start));
    gems_kernel<<<n / kGemsBlock, kGemsBlock>>>(pos.data(), acc.data(), n, eps2);
    NBKIT_CUDA_CHECK_LAUNCH();
    NBKIT_CUDA_CHECK(cudaEventRecord(stop));
    NBKIT_CUDA_CHECK(cudaEventSynchronize(stop));
    float ms = 0;
    NBKIT_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    if (r > 0) times.push_back(ms);
  }
  NBKIT_CUDA_CHECK(cudaEventDestroy(start));
  NBKIT_CUDA_CHECK(cudaEventDestroy(stop));
  std::sort(times.begin(), times.end());
  return times[times.size() / 2] * 1e-3;
}

}  // namespace nbkit::bench
