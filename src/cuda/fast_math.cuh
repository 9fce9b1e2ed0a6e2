#pragma once
// Device math every kernel family shares (potential maps, N-body). CUDA code only.
#include <cuda_runtime.h>

namespace nbkit::cuda {

// The hardware reciprocal square root (MUFU.RSQ, ~2^-23 relative error) in float32; the
// flush-to-zero form, so no instructions for denormal inputs (every caller's argument is a
// squared distance bounded away from zero or a lattice distance of at least one spacing).
__device__ __forceinline__ float reciprocal_sqrt(float x) {
  float y;
  asm("rsqrt.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}
__device__ __forceinline__ double reciprocal_sqrt(double x) { return ::rsqrt(x); }

}  // namespace nbkit::cuda
