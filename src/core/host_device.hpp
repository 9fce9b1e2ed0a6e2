#pragma once
// Marks functions that run on the host and on CUDA devices (the interaction laws).
#if defined(__CUDACC__)
#define NBKIT_HOST_DEVICE __host__ __device__ inline
#else
#define NBKIT_HOST_DEVICE inline
#endif

namespace nbkit {

// a * b rounded on its own, never fused with a following add into one FMA: for device code
// that must give the host's bits (nvcc fuses a multiply and an add by default; the host build,
// for x86-64 without -march, never does).
NBKIT_HOST_DEVICE double mul_rn(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dmul_rn(a, b);
#else
  return a * b;
#endif
}

}  // namespace nbkit
