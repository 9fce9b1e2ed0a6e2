// Bodies in a GPU's memory (ForceEngine::compute_on_device): the caller's arrays read and the
// results written back by the all-pairs and the tree paths alike, with the checks that keep a
// bad input or an overflowed sum from passing silently. Internal to the library.
#pragma once
#include <cuda_runtime.h>

#include "cuda/check.hpp"
#include "cuda/stream.hpp"
#include "nbkit/nbody.hpp"

namespace nbkit::nbody {

// `stream` waits for the work the caller queued on its own stream (DeviceBodies::stream) before
// reading the bodies.
inline void wait_for_producer(const DeviceBodies& b, cudaStream_t stream) {
  cuda::Event ready;
  ready.record(static_cast<cudaStream_t>(b.stream));
  NBKIT_CUDA_CHECK(cudaStreamWaitEvent(stream, ready, 0));
}

// One input value, float32 or float64, widened to float64 (narrowed later as the host path
// narrows its own float64 values, so both paths give the same bits for the same values).
__device__ inline double load_value(const void* p, bool float64, long long index) {
  return float64 ? static_cast<const double*>(p)[index] : static_cast<double>(static_cast<const float*>(p)[index]);
}

// Body i of the caller's arrays; false when its position is not finite or its mass is not
// positive and finite.
__device__ inline bool load_device_body(const DeviceBodies& b, int i, double& x, double& y, double& z, double& m) {
  const long long row = static_cast<long long>(i) * b.position_strides[0], column = b.position_strides[1];
  x = load_value(b.positions, b.positions_float64, row);
  y = load_value(b.positions, b.positions_float64, row + column);
  z = load_value(b.positions, b.positions_float64, row + 2 * column);
  m = load_value(b.masses, b.masses_float64, static_cast<long long>(i) * b.mass_stride);
  return isfinite(x) && isfinite(y) && isfinite(z) && m > 0 && isfinite(m);
}

// The summed components (c * n + k) into the caller's (n, 3) accelerations and (n,) potentials
// (when not null); the sums' entry k belongs to body order[k] when kSorted (the tree's order),
// to body k otherwise. The first body with a result that is not finite goes to *bad (atomicMin).
template <bool kSorted>
__global__ void scatter_results(int n, const unsigned* __restrict__ order, const double* __restrict__ sums,
                                double* __restrict__ accelerations, double* __restrict__ potentials,
                                int* __restrict__ bad) {
  const int k = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (k >= n) return;
  const std::size_t i = kSorted ? order[k] : static_cast<unsigned>(k), m = static_cast<std::size_t>(n);
  const double ax = sums[k], ay = sums[m + k], az = sums[2 * m + k];
  accelerations[3 * i] = ax, accelerations[3 * i + 1] = ay, accelerations[3 * i + 2] = az;
  bool finite = isfinite(ax) && isfinite(ay) && isfinite(az);
  if (potentials) {
    const double phi = sums[3 * m + k];
    potentials[i] = phi;
    finite = finite && isfinite(phi);
  }
  if (!finite) atomicMin(bad, static_cast<int>(i));
}

}  // namespace nbkit::nbody
