// MSM's lattice-cutoff sums on a GPU (msm.hpp; Hardy, Stone, Schulten, Parallel Computing
// 35:164 (2009), section 4: the lattice cutoff is the long range's costliest part and maps to
// the GPU as a 3-D convolution). One thread per grid point, z fastest so that a warp reads 32
// consecutive charges for each weight; the stencil's rows of non-zero weights in the same
// order as the CPU's convolve(), float64 throughout.
#include <algorithm>
#include <vector>

#include "cuda/check.hpp"
#include "cuda/device_buffer.hpp"
#include "cuda/stream.hpp"
#include "maps/msm/lattice_cutoff.cuh"
#include "maps/msm/msm.hpp"
#include "nbkit/core/error.hpp"

namespace nbkit::maps::msm {

namespace {

constexpr int kThreads = 128;

__device__ inline int wrap(int i, int n) {
  i %= n;
  return i < 0 ? i + n : i;
}

template <bool Periodic>
__global__ void convolve_level(int nx, int ny, int nz, const double* __restrict__ charge,
                               const StencilRow* __restrict__ rows, int row_count, const double* __restrict__ weights,
                               double scale, double* __restrict__ potential) {
  const int k = blockIdx.x * blockDim.x + threadIdx.x;
  const int j = blockIdx.y, i = blockIdx.z;
  if (k >= nz) return;
  double sum = 0;
  for (int r = 0; r < row_count; ++r) {
    const StencilRow row = rows[r];
    int si = i + row.dx, sj = j + row.dy;
    if (Periodic) {
      si = wrap(si, nx), sj = wrap(sj, ny);
    } else if (si < 0 || si >= nx || sj < 0 || sj >= ny) {
      continue;  // the same for the whole block
    }
    const double* line = charge + (static_cast<std::size_t>(si) * ny + sj) * nz;
    const double* w = weights + row.weight_offset - row.dz_first;
    if (Periodic) {
      for (int dz = row.dz_first; dz <= row.dz_last; ++dz) sum += w[dz] * line[wrap(k + dz, nz)];
    } else {
      const int first = max(row.dz_first, -k), last = min(row.dz_last, nz - 1 - k);
      for (int dz = first; dz <= last; ++dz) sum += w[dz] * line[k + dz];
    }
  }
  potential[(static_cast<std::size_t>(i) * ny + j) * nz + k] += scale * sum;
}

}  // namespace

void queue_lattice_cutoff(const std::int64_t n[3], const double* charge, const StencilRow* rows, int row_count,
                          const double* weights, double scale, double* potential, bool periodic, cudaStream_t stream) {
  if (n[0] > 65535 || n[1] > 65535 || n[2] > (1 << 30)) throw Error("MSM grid too large for the GPU lattice cutoff");
  const dim3 grid(static_cast<unsigned>((n[2] + kThreads - 1) / kThreads), static_cast<unsigned>(n[1]),
                  static_cast<unsigned>(n[0]));
  auto* kernel = periodic ? convolve_level<true> : convolve_level<false>;
  kernel<<<grid, kThreads, 0, stream>>>(static_cast<int>(n[0]), static_cast<int>(n[1]), static_cast<int>(n[2]), charge,
                                        rows, row_count, weights, scale, potential);
  NBKIT_CUDA_CHECK_LAUNCH();
}

void lattice_cutoff_cuda(int gpu, const std::vector<StencilRow>& rows, const std::vector<double>& weights,
                         const std::vector<LevelGrids>& levels, bool periodic) {
  NBKIT_CUDA_CHECK(cudaSetDevice(gpu));
  cuda::Stream stream;
  cuda::DeviceBuffer<StencilRow> device_rows(rows.size());
  cuda::DeviceBuffer<double> device_weights(weights.size());
  device_rows.upload(rows.data(), rows.size(), stream);
  device_weights.upload(weights.data(), weights.size(), stream);
  std::size_t largest = 0;
  for (const LevelGrids& level : levels)
    largest = std::max(largest, static_cast<std::size_t>(level.n[0] * level.n[1] * level.n[2]));
  cuda::DeviceBuffer<double> charge(largest), potential(largest);
  for (const LevelGrids& level : levels) {
    const std::size_t points = static_cast<std::size_t>(level.n[0] * level.n[1] * level.n[2]);
    charge.upload(level.charge, points, stream);
    potential.upload(level.potential, points, stream);
    queue_lattice_cutoff(level.n, charge.data(), device_rows.data(), static_cast<int>(rows.size()),
                         device_weights.data(), level.scale, potential.data(), periodic, stream);
    potential.download(level.potential, points, stream);
    NBKIT_CUDA_CHECK(cudaStreamSynchronize(stream));  // the host grids are reused by the next level
  }
}

}  // namespace nbkit::maps::msm
