// The multilevel summation's grid stages on a GPU (msm.hpp: finest_potential_cuda), float64 as
// on the CPU (msm.cpp), each stage the CPU's terms:
// - anterpolation: atoms sorted by the cell of the finest grid their basis stencil starts at
//   (CUB's stable radix sort: input order within a cell), and each grid point summing the atoms
//   of the 2 support cells per axis whose stencils reach it. A gather rather than atomic adds,
//   so that every point sums its atoms in an order fixed by the input: the same bits every run
//   (Hardy, Stone, Schulten, Parallel Computing 35:164, 2009, section 4, map the stages to the
//   GPU the same way, one thread a grid point);
// - restriction and prolongation: one axis at a time, one thread an output point, the CPU's
//   restrict_axis/prolong_axis sums;
// - the lattice cutoff of every level and the top level's all-pairs sum: lattice_cutoff.cuh.
// 1.5 million atoms on a 128^3 finest grid take the host's 16 cores 0.1 s for these stages; here
// the grids never leave the device until the finest potential does.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <vector>

#include "core/clock.hpp"
#include "cuda/check.hpp"
#include "cuda/device_buffer.hpp"
#include "cuda/primitives.hpp"
#include "cuda/stream.hpp"
#include "maps/msm/basis.hpp"
#include "maps/msm/lattice_cutoff.cuh"
#include "maps/msm/msm.hpp"
#include "nbkit/core/error.hpp"

namespace nbkit::maps::msm {

namespace {

constexpr int kThreads = 128;

struct Box {
  long long lo[3], n[3];
};

Box to_box(const GridBox& g) { return {{g.lo[0], g.lo[1], g.lo[2]}, {g.n[0], g.n[1], g.n[2]}}; }

__host__ __device__ inline long long box_points(const Box& b) { return b.n[0] * b.n[1] * b.n[2]; }

// Point p (x slowest) of a box as grid indices.
__device__ inline void box_index(const Box& b, long long p, long long index[3]) {
  index[2] = b.lo[2] + p % b.n[2];
  p /= b.n[2];
  index[1] = b.lo[1] + p % b.n[1];
  index[0] = b.lo[0] + p / b.n[1];
}

__device__ inline long long box_offset(const Box& b, const long long index[3]) {
  return ((index[0] - b.lo[0]) * b.n[1] + (index[1] - b.lo[1])) * b.n[2] + (index[2] - b.lo[2]);
}

__device__ inline long long floor_half(long long a) { return a >= 0 ? a / 2 : -((1 - a) / 2); }
__device__ inline long long ceil_half(long long a) { return -floor_half(-a); }

// Each atom's cell: the first point of its basis stencil along each axis (msm.cpp's
// floor(x / h) - support + 1, the same division), relative to the grid, as one key (x slowest).
__global__ void atom_cells(int n, const double* __restrict__ x, const double* __restrict__ y,
                           const double* __restrict__ z, double h, int support, Box grid,
                           unsigned long long* __restrict__ key, int* __restrict__ index) {
  const int a = blockIdx.x * blockDim.x + threadIdx.x;
  if (a >= n) return;
  const double u[3] = {x[a] / h, y[a] / h, z[a] / h};
  long long cell[3];
  for (int ax = 0; ax < 3; ++ax) cell[ax] = static_cast<long long>(floor(u[ax])) - support + 1 - grid.lo[ax];
  key[a] = static_cast<unsigned long long>((cell[0] * grid.n[1] + cell[1]) * grid.n[2] + cell[2]);
  index[a] = a;
}

// The atoms in key order: coordinates in grid units and coefficients.
__global__ void sorted_atoms(int n, const int* __restrict__ order, const double* __restrict__ x,
                             const double* __restrict__ y, const double* __restrict__ z,
                             const double* __restrict__ coefficient, double h, double* __restrict__ ux,
                             double* __restrict__ uy, double* __restrict__ uz, double* __restrict__ q) {
  const int s = blockIdx.x * blockDim.x + threadIdx.x;
  if (s >= n) return;
  const int a = order[s];
  ux[s] = x[a] / h, uy[s] = y[a] / h, uz[s] = z[a] / h, q[s] = coefficient[a];
}

// start[c]: the first sorted atom whose key is c or more, for c = 0 .. cells.
__global__ void cell_starts(const unsigned long long* __restrict__ keys, int n, long long cells, int* __restrict__ start) {
  const long long c = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c > cells) return;
  int lo = 0, hi = n;
  while (lo < hi) {
    const int mid = lo + (hi - lo) / 2;
    if (keys[mid] < static_cast<unsigned long long>(c)) lo = mid + 1;
    else hi = mid;
  }
  start[c] = lo;
}

// q0[m] = sum_i q_i Phi(u_i - m): the atoms whose stencils start within 2 support - 1 cells
// below m along each axis; along z those cells are consecutive keys, one run of atoms.
template <bool Quintic>
__global__ void anterpolate(Box grid, const int* __restrict__ start, const double* __restrict__ ux,
                            const double* __restrict__ uy, const double* __restrict__ uz,
                            const double* __restrict__ q, double* __restrict__ charge) {
  constexpr int kWidth = Quintic ? 6 : 4;
  const long long k = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  const long long j = blockIdx.y, i = blockIdx.z;
  if (k >= grid.n[2]) return;
  const double gx = static_cast<double>(grid.lo[0] + i), gy = static_cast<double>(grid.lo[1] + j),
               gz = static_cast<double>(grid.lo[2] + k);
  const long long z_first = k - kWidth + 1 > 0 ? k - kWidth + 1 : 0;
  double sum = 0;
  for (long long cx = i - kWidth + 1 > 0 ? i - kWidth + 1 : 0; cx <= i; ++cx)
    for (long long cy = j - kWidth + 1 > 0 ? j - kWidth + 1 : 0; cy <= j; ++cy) {
      const long long base = (cx * grid.n[1] + cy) * grid.n[2];
      const int end = start[base + k + 1];
      for (int a = start[base + z_first]; a < end; ++a)
        sum += (basis_value(Quintic, ux[a] - gx) * basis_value(Quintic, uy[a] - gy)) *
               (q[a] * basis_value(Quintic, uz[a] - gz));
    }
  charge[(i * grid.n[1] + j) * grid.n[2] + k] = sum;
}

// One axis of restriction (msm.cpp's restrict_axis): out[M] = sum_k w[k] in[2M + k].
__global__ void restrict_axis(const double* __restrict__ in, Box in_box, double* __restrict__ out, Box out_box,
                              int axis, const double* __restrict__ w, int half) {
  const long long p = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (p >= box_points(out_box)) return;
  long long index[3];
  box_index(out_box, p, index);
  const long long coarse = index[axis], in_last = in_box.lo[axis] + in_box.n[axis] - 1;
  double sum = 0;
  for (int t = -half; t <= half; ++t) {
    index[axis] = 2 * coarse + t;
    if (index[axis] < in_box.lo[axis] || index[axis] > in_last) continue;
    sum += w[t + half] * in[box_offset(in_box, index)];
  }
  out[p] = sum;
}

// One axis of prolongation (msm.cpp's prolong_axis, the transpose): out[m] = sum_M w[m - 2M] in[M].
__global__ void prolong_axis(const double* __restrict__ in, Box in_box, double* __restrict__ out, Box out_box,
                             int axis, const double* __restrict__ w, int half) {
  const long long p = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (p >= box_points(out_box)) return;
  long long index[3];
  box_index(out_box, p, index);
  const long long fine = index[axis], in_last = in_box.lo[axis] + in_box.n[axis] - 1;
  const long long first = max(ceil_half(fine - half), in_box.lo[axis]), last = min(floor_half(fine + half), in_last);
  double sum = 0;
  for (long long coarse = first; coarse <= last; ++coarse) {
    index[axis] = coarse;
    sum += w[fine - 2 * coarse + half] * in[box_offset(in_box, index)];
  }
  out[p] = sum;
}

__global__ void add_into(double* __restrict__ target, const double* __restrict__ values, long long count) {
  const long long p = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (p < count) target[p] += values[p];
}

unsigned blocks_for(long long count) { return static_cast<unsigned>((count + kThreads - 1) / kThreads); }

// `box` with `axis` taken from `other`.
Box with_axis(Box box, const Box& other, int axis) {
  box.lo[axis] = other.lo[axis];
  box.n[axis] = other.n[axis];
  return box;
}

template <class T>
cuda::DeviceBuffer<T> upload(const std::vector<T>& values, cudaStream_t stream) {
  cuda::DeviceBuffer<T> buffer(values.size(), stream);
  buffer.upload(values.data(), values.size(), stream);
  return buffer;
}

}  // namespace

std::vector<double> finest_potential_cuda(const PreparedAtoms& atoms, const DeviceGridsPlan& plan, Stages& st) {
  using Clock = std::chrono::steady_clock;
  const int levels = static_cast<int>(plan.levels.size());
  if (levels == 0) throw Error("internal: MSM grids without levels");
  if (atoms.size() >= (std::int64_t{1} << 31)) throw Error("MSM on a GPU takes at most 2^31 - 1 atoms");
  const int n = static_cast<int>(atoms.size());
  std::vector<Box> box;
  for (const GridBox& g : plan.levels) {
    if (g.n[0] > 65535 || g.n[1] > 65535 || g.n[2] > (1 << 30))
      throw Error("MSM grid too large for the GPU (more than 65,535 points along x or y)");
    box.push_back(to_box(g));
  }
  const Box& finest = box[0];
  const long long cells = box_points(finest);
  NBKIT_CUDA_CHECK(cudaSetDevice(plan.gpu));
  // The short range's slabs queue on the same GPU meanwhile and wait for these grids to add the
  // interpolation: the grids' blocks go first (high priority), and their buffers are
  // stream-ordered, so that no free waits for the short range's queued kernels.
  const cuda::Stream stream = cuda::Stream::high_priority();

  // Anterpolation.
  auto start = Clock::now();
  std::vector<cuda::DeviceBuffer<double>> charge, potential;
  for (const Box& b : box) {
    charge.emplace_back(static_cast<std::size_t>(box_points(b)), stream);
    potential.emplace_back(static_cast<std::size_t>(box_points(b)), stream);
    NBKIT_CUDA_CHECK(cudaMemsetAsync(potential.back().data(), 0, sizeof(double) * box_points(b), stream));
  }
  {
    const cuda::DeviceBuffer<double> x = upload(atoms.x, stream), y = upload(atoms.y, stream), z = upload(atoms.z, stream),
                                     coefficient = upload(atoms.coefficient, stream);
    cuda::DeviceBuffer<unsigned long long> key(n, stream), sorted_key(n, stream);
    cuda::DeviceBuffer<int> index(n, stream), order(n, stream);
    const int support = plan.interpolation == MsmInterpolation::quintic ? 3 : 2;
    atom_cells<<<blocks_for(n), kThreads, 0, stream>>>(n, x.data(), y.data(), z.data(), plan.spacing, support, finest,
                                                       key.data(), index.data());
    NBKIT_CUDA_CHECK_LAUNCH();
    int end_bit = 1;
    while (end_bit < 64 && (1ULL << end_bit) < static_cast<unsigned long long>(cells)) ++end_bit;
    std::size_t scratch_bytes = 0;
    NBKIT_CUDA_CHECK(cuda::sort_pairs(nullptr, scratch_bytes, key.data(), sorted_key.data(), index.data(), order.data(),
                                      n, 0, end_bit, stream));
    cuda::DeviceBuffer<unsigned char> scratch(std::max<std::size_t>(scratch_bytes, 1), stream);
    NBKIT_CUDA_CHECK(cuda::sort_pairs(scratch.data(), scratch_bytes, key.data(), sorted_key.data(), index.data(),
                                      order.data(), n, 0, end_bit, stream));
    cuda::DeviceBuffer<double> ux(n, stream), uy(n, stream), uz(n, stream), q(n, stream);
    sorted_atoms<<<blocks_for(n), kThreads, 0, stream>>>(n, order.data(), x.data(), y.data(), z.data(),
                                                         coefficient.data(), plan.spacing, ux.data(), uy.data(),
                                                         uz.data(), q.data());
    NBKIT_CUDA_CHECK_LAUNCH();
    cuda::DeviceBuffer<int> starts(static_cast<std::size_t>(cells + 1), stream);
    cell_starts<<<blocks_for(cells + 1), kThreads, 0, stream>>>(sorted_key.data(), n, cells, starts.data());
    NBKIT_CUDA_CHECK_LAUNCH();
    const dim3 grid(blocks_for(finest.n[2]), static_cast<unsigned>(finest.n[1]), static_cast<unsigned>(finest.n[0]));
    auto* kernel = plan.interpolation == MsmInterpolation::quintic ? anterpolate<true> : anterpolate<false>;
    kernel<<<grid, kThreads, 0, stream>>>(finest, starts.data(), ux.data(), uy.data(), uz.data(), q.data(),
                                          charge[0].data());
    NBKIT_CUDA_CHECK_LAUNCH();
    NBKIT_CUDA_CHECK(cudaStreamSynchronize(stream));  // the stage's time
  }
  st.anterpolation = seconds_since(start);

  // Restriction up the levels, x then y then z (the CPU's order). The temporaries hold the
  // largest partly restricted or prolonged grid.
  start = Clock::now();
  long long largest = 1;
  for (int l = 0; l + 1 < levels; ++l) {
    const Box &fine = box[l], &coarse = box[l + 1];
    largest = std::max({largest, box_points(fine), box_points(with_axis(fine, coarse, 0)),
                        box_points(with_axis(with_axis(fine, coarse, 0), coarse, 1)),
                        box_points(with_axis(coarse, fine, 2)), box_points(with_axis(with_axis(coarse, fine, 2), fine, 1))});
  }
  cuda::DeviceBuffer<double> first_temporary(static_cast<std::size_t>(largest), stream),
      second_temporary(static_cast<std::size_t>(largest), stream);
  const cuda::DeviceBuffer<double> transfer = upload(plan.transfer, stream);
  const int half = plan.transfer_half_width;
  for (int l = 0; l + 1 < levels; ++l) {
    const Box &fine = box[l], &coarse = box[l + 1];
    const Box after_x = with_axis(fine, coarse, 0), after_y = with_axis(after_x, coarse, 1);
    restrict_axis<<<blocks_for(box_points(after_x)), kThreads, 0, stream>>>(charge[l].data(), fine, first_temporary.data(),
                                                                             after_x, 0, transfer.data(), half);
    restrict_axis<<<blocks_for(box_points(after_y)), kThreads, 0, stream>>>(
        first_temporary.data(), after_x, second_temporary.data(), after_y, 1, transfer.data(), half);
    restrict_axis<<<blocks_for(box_points(coarse)), kThreads, 0, stream>>>(
        second_temporary.data(), after_y, charge[l + 1].data(), coarse, 2, transfer.data(), half);
    NBKIT_CUDA_CHECK_LAUNCH();
  }
  NBKIT_CUDA_CHECK(cudaStreamSynchronize(stream));
  st.restriction = seconds_since(start);

  // The lattice cutoff at every level but the top.
  start = Clock::now();
  if (levels > 1) {
    const cuda::DeviceBuffer<StencilRow> rows = upload(plan.cutoff_rows, stream);
    const cuda::DeviceBuffer<double> weights = upload(plan.cutoff_weights, stream);
    for (int l = 0; l + 1 < levels; ++l)
      queue_lattice_cutoff(plan.levels[l].n.data(), charge[l].data(), rows.data(), static_cast<int>(plan.cutoff_rows.size()),
                           weights.data(), std::ldexp(1.0, -l), potential[l].data(), false, stream);
    NBKIT_CUDA_CHECK(cudaStreamSynchronize(stream));
  }
  st.lattice_cutoff = seconds_since(start);

  // The top level, all pairs of its points.
  start = Clock::now();
  {
    const cuda::DeviceBuffer<StencilRow> rows = upload(plan.top_rows, stream);
    const cuda::DeviceBuffer<double> weights = upload(plan.top_weights, stream);
    queue_lattice_cutoff(plan.levels.back().n.data(), charge.back().data(), rows.data(),
                         static_cast<int>(plan.top_rows.size()), weights.data(), std::ldexp(1.0, -(levels - 1)),
                         potential.back().data(), false, stream);
    NBKIT_CUDA_CHECK(cudaStreamSynchronize(stream));
  }
  st.top_level = seconds_since(start);

  // Prolongation down the levels, z then y then x (the CPU's order).
  start = Clock::now();
  for (int l = levels - 2; l >= 0; --l) {
    const Box &fine = box[l], &coarse = box[l + 1];
    const Box after_z = with_axis(coarse, fine, 2), after_y = with_axis(after_z, fine, 1);
    prolong_axis<<<blocks_for(box_points(after_z)), kThreads, 0, stream>>>(
        potential[l + 1].data(), coarse, first_temporary.data(), after_z, 2, transfer.data(), half);
    prolong_axis<<<blocks_for(box_points(after_y)), kThreads, 0, stream>>>(
        first_temporary.data(), after_z, second_temporary.data(), after_y, 1, transfer.data(), half);
    prolong_axis<<<blocks_for(box_points(fine)), kThreads, 0, stream>>>(second_temporary.data(), after_y,
                                                                         first_temporary.data(), fine, 0, transfer.data(),
                                                                         half);
    add_into<<<blocks_for(box_points(fine)), kThreads, 0, stream>>>(potential[l].data(), first_temporary.data(),
                                                                     box_points(fine));
    NBKIT_CUDA_CHECK_LAUNCH();
  }
  std::vector<double> finest_potential(static_cast<std::size_t>(cells));
  potential[0].download(finest_potential.data(), finest_potential.size(), stream);
  NBKIT_CUDA_CHECK(cudaStreamSynchronize(stream));
  st.prolongation = seconds_since(start);
  st.levels = levels;
  st.finest_points = cells;
  return finest_potential;
}

}  // namespace nbkit::maps::msm
