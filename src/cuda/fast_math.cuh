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

// The same on the FP32 pipe, for loops whose only limit is the special-function unit (16
// results a clock per SM against the FP32 pipe's 128 operations): the integer seed of
// "fast inverse square root" (0x5f3759df - bits/2, Lomont's constant 0x5f375a86; relative error
// 3.4e-2) and three Newton-Raphson steps y (3/2 - x/2 y^2), which square it each time (1.8e-3,
// 4.6e-6, 3e-11 in exact arithmetic): the float32 rounding of the steps is left, within a few
// ulp, like MUFU.RSQ's ~2^-23. Twelve operations (two integer); x must be positive and
// normal, as every caller's squared distance is.
__device__ __forceinline__ float reciprocal_sqrt_fp32_pipe(float x) {
  float y = __int_as_float(0x5f375a86 - (__float_as_int(x) >> 1));
  const float half_x = 0.5f * x;
#pragma unroll
  for (int step = 0; step < 3; ++step) y *= fmaf(-half_x, y * y, 1.5f);
  return y;
}

}  // namespace nbkit::cuda
