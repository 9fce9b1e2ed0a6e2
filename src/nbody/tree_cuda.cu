// The Barnes-Hut tree code on an NVIDIA GPU: the octree built on the device every evaluation and
// walked by groups of bodies, as Bonsai does (Bedorf, Gaburov & Portegies Zwart, J. Comput. Phys.
// 231:2825, 2012), in the layout and with the arithmetic of the CPU tree (tree.hpp).
//
//   build    Morton keys (63 bits), CUB's radix sort (stable: ties stay in body order, as the
//            CPU's sort of (key, index) pairs), then one pass a level: each cell over the leaf
//            size finds its children's ranges of sorted keys by binary search, an exclusive scan
//            places them after the level (so the cells come out in the CPU's breadth-first
//            order, the same tree), then multipoles level by level from the leaves up, float64.
//   walk     one block of 128 threads a group (a cell of at most 128 bodies), a thread a body;
//            the block pops up to 128 cells at a time off a stack in global memory, tests them
//            against the group's box, and places accepted cells, opened leaves and children with
//            block-wide prefix sums, never atomics, so every list has a fixed order and the
//            results are the same bits run after run. Each batch's cells and bodies are staged
//            in shared memory and summed by every thread for its body: float32 within a batch,
//            float64 across batches (float64 throughout for double precision).
//   input    host arrays staged in page-locked memory and copied; or bodies already in this
//            GPU's memory (compute_on_device: CuPy, PyTorch, a GPU integrator), read, checked and
//            bounded on the device (device_bodies.cuh), the results written back there.
// The stack's bound: its levels never decrease from bottom to top, and a level holds at most
// one batch's children (8 x 128), so 22 levels need 22,528 entries.
#include <cub/block/block_scan.cuh>
#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "cuda/check.hpp"
#include "cuda/device_buffer.hpp"
#include "cuda/fast_math.cuh"
#include "cuda/pinned_buffer.hpp"
#include "cuda/primitives.hpp"
#include "cuda/stream.hpp"
#include "nbkit/core/backend.hpp"
#include "nbkit/core/error.hpp"
#include "nbody/device_bodies.cuh"
#include "nbody/forces.hpp"
#include "nbody/gravity.hpp"
#include "nbody/tree.hpp"

namespace nbkit::nbody {

#include "nbody/tree_terms-inl.hpp"

namespace {

constexpr int kWalkThreads = 128;  // a block a group, a thread a body: groups of at most 128
static_assert(kTreeGroupSize <= kWalkThreads, "a group's bodies are a block's threads");
// Resident blocks of the float32 walk an SM: registers capped at 64 a thread (10 and 12 blocks, 51
// and 42 registers, were 4-8% slower on an H100).
constexpr int kWalkBlocksPerSm = 8;
constexpr int kStackCapacity = 8 * kWalkThreads * (kTreeLevels + 1) + kWalkThreads;

// The cells, structure of arrays, on the device.
struct CellArrays {
  cuda::DeviceBuffer<int> begin, end, first_child, children, parent;
  cuda::DeviceBuffer<double> centre_x, centre_y, centre_z, side;
  cuda::DeviceBuffer<double> com_x, com_y, com_z, mass, reach2;
  cuda::DeviceBuffer<double> moment;  // 6 a cell: xx, xy, xz, yy, yz, zz
  std::size_t capacity = 0;
};

// What the kernels read of the tree.
struct TreeView {
  const int *begin, *end, *first_child, *children, *parent;
  const double *com_x, *com_y, *com_z, *mass, *reach2, *moment;
  const double *x, *y, *z, *m;  // bodies in sorted order
};

template <class T>
void grow(cuda::DeviceBuffer<T>& buffer, std::size_t capacity, std::size_t used, cudaStream_t stream) {
  cuda::DeviceBuffer<T> bigger(capacity);
  if (used > 0)
    NBKIT_CUDA_CHECK(cudaMemcpyAsync(bigger.data(), buffer.data(), used * sizeof(T), cudaMemcpyDeviceToDevice, stream));
  buffer = std::move(bigger);
}

void reserve_cells(CellArrays& c, std::size_t capacity, std::size_t used, cudaStream_t stream) {
  if (capacity <= c.capacity) return;
  capacity = std::max(capacity, 2 * c.capacity);
  for (auto* b : {&c.begin, &c.end, &c.first_child, &c.children, &c.parent}) grow(*b, capacity, used, stream);
  for (auto* b : {&c.centre_x, &c.centre_y, &c.centre_z, &c.side, &c.com_x, &c.com_y, &c.com_z, &c.mass, &c.reach2})
    grow(*b, capacity, used, stream);
  grow(c.moment, 6 * capacity, 6 * used, stream);
  c.capacity = capacity;
}

// tree_build.cpp's keys: floor((v - lo) * scale) clamped to the 21-bit range, interleaved x, y, z.
__global__ void morton_keys(int n, const double* __restrict__ x, const double* __restrict__ y,
                            const double* __restrict__ z, double lo_x, double lo_y, double lo_z, double scale,
                            unsigned long long* __restrict__ keys, unsigned* __restrict__ index) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i >= n) return;
  const double cap = static_cast<double>((1 << kTreeLevels) - 1);
  const auto q = [&](double v, double from) {
    return static_cast<unsigned long long>(fmin(fmax(floor((v - from) * scale), 0.0), cap));
  };
  keys[i] = morton_spread(q(x[i], lo_x)) << 2 | morton_spread(q(y[i], lo_y)) << 1 | morton_spread(q(z[i], lo_z));
  index[i] = static_cast<unsigned>(i);
}

__global__ void gather_sorted(int n, const unsigned* __restrict__ order, const double* __restrict__ x,
                              const double* __restrict__ y, const double* __restrict__ z, const double* __restrict__ m,
                              double* __restrict__ sx, double* __restrict__ sy, double* __restrict__ sz,
                              double* __restrict__ sm) {
  const int k = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (k >= n) return;
  const unsigned from = order[k];
  sx[k] = x[from], sy[k] = y[from], sz[k] = z[from], sm[k] = m[from];
}

// Cells [first, last) of one level: how many children each has (0: a leaf) and where their
// ranges of keys start (bounds[8 (c - first) + d]: the end of digit d's range).
__global__ void count_children(int first, int last, int level, int leaf_size, const unsigned long long* __restrict__ keys,
                               const int* __restrict__ begin, const int* __restrict__ end, int* __restrict__ counts,
                               int* __restrict__ bounds) {
  const int c = first + static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (c >= last) return;
  const int b = begin[c], e = end[c];
  int children = 0;
  if (e - b > leaf_size && level < kTreeLevels) {
    const int shift = 3 * (kTreeLevels - 1 - level);
    int from = b;
    for (int d = 0; d < 8; ++d) {
      int lo = from, hi = e;  // first key whose digit exceeds d
      while (lo < hi) {
        const int mid = (lo + hi) / 2;
        if (static_cast<int>((keys[mid] >> shift) & 7) <= d) lo = mid + 1;
        else hi = mid;
      }
      bounds[8 * (c - first) + d] = lo;
      children += lo > from;
      from = lo;
    }
  }
  counts[c - first] = children;
}

__global__ void make_children(int first, int last, int next, const int* __restrict__ counts,
                              const int* __restrict__ offsets, const int* __restrict__ bounds, int* begin, int* end,
                              int* first_child, int* children, int* parent, double* centre_x, double* centre_y,
                              double* centre_z, double* side) {
  const int c = first + static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (c >= last) return;
  const int count = counts[c - first];
  first_child[c] = count > 0 ? next + offsets[c - first] : -1;
  children[c] = count;
  if (count == 0) return;
  const double half = side[c] / 2;
  int from = begin[c], k = next + offsets[c - first];
  for (int d = 0; d < 8; ++d) {
    const int to = bounds[8 * (c - first) + d];
    if (to == from) continue;
    begin[k] = from, end[k] = to, parent[k] = c, first_child[k] = -1, children[k] = 0, side[k] = half;
    centre_x[k] = centre_x[c] + ((d >> 2) & 1 ? 0.5 : -0.5) * half;
    centre_y[k] = centre_y[c] + ((d >> 1) & 1 ? 0.5 : -0.5) * half;
    centre_z[k] = centre_z[c] + (d & 1 ? 0.5 : -0.5) * half;
    ++k, from = to;
  }
}

// tree_build.cpp's groups: below each cell of more than group_size bodies with children, runs of
// its children of at most group_size bodies (or leaves, bodies at one point) merged while the
// run holds at most group_size. Up to 8 runs a cell, to runs[8 c + k] (begin, end).
__global__ void merge_groups(int cells, int group_size, const int* __restrict__ begin, const int* __restrict__ end,
                             const int* __restrict__ first_child, const int* __restrict__ children,
                             int* __restrict__ counts, int2* __restrict__ runs) {
  const int c = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (c >= cells) return;
  int made = 0;
  if (end[c] - begin[c] > group_size && first_child[c] >= 0) {
    int run_begin = 0, run_end = 0;
    const auto flush = [&] {
      if (run_end > run_begin) runs[8 * static_cast<std::size_t>(c) + made++] = make_int2(run_begin, run_end);
      run_begin = run_end = 0;
    };
    for (int k = first_child[c]; k < first_child[c] + children[c]; ++k) {
      const int count = end[k] - begin[k];
      if (count > group_size && first_child[k] >= 0) {
        flush();
        continue;
      }
      if (run_end > run_begin && (run_end - run_begin) + count > group_size) flush();
      if (run_end == run_begin) run_begin = begin[k];
      run_end = end[k];
      if (count > group_size) flush();
    }
    flush();
  }
  counts[c] = made;
}

__global__ void place_groups(int cells, const int* __restrict__ counts, const int* __restrict__ offsets,
                             const int2* __restrict__ runs, int2* __restrict__ groups) {
  const int c = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (c >= cells) return;
  for (int k = 0; k < counts[c]; ++k) groups[offsets[c] + k] = runs[8 * static_cast<std::size_t>(c) + k];
}

// Multipoles of one level's cells: leaves from their bodies, others from their children (tree_build.cpp's
// leaf_multipoles and parent_multipoles, in the same order of sums); then the squared reach of the
// opening criterion, (side / theta + |com - centre|)^2.
__global__ void level_multipoles(int first, int last, double inverse_theta, const double* __restrict__ x,
                                 const double* __restrict__ y, const double* __restrict__ z,
                                 const double* __restrict__ m, const int* __restrict__ begin,
                                 const int* __restrict__ end, const int* __restrict__ first_child,
                                 const int* __restrict__ children, const double* __restrict__ centre_x,
                                 const double* __restrict__ centre_y, const double* __restrict__ centre_z,
                                 const double* __restrict__ side, double* com_x, double* com_y, double* com_z,
                                 double* mass, double* moment, double* __restrict__ reach2) {
  const int c = first + static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (c >= last) return;
  double total = 0, sx = 0, sy = 0, sz = 0, s[6] = {0, 0, 0, 0, 0, 0};
  if (first_child[c] < 0) {
    for (int k = begin[c]; k < end[c]; ++k) total += m[k], sx += m[k] * x[k], sy += m[k] * y[k], sz += m[k] * z[k];
    sx /= total, sy /= total, sz /= total;
    for (int k = begin[c]; k < end[c]; ++k) {
      const double dx = x[k] - sx, dy = y[k] - sy, dz = z[k] - sz, w = m[k];
      s[0] += w * dx * dx, s[1] += w * dx * dy, s[2] += w * dx * dz;
      s[3] += w * dy * dy, s[4] += w * dy * dz, s[5] += w * dz * dz;
    }
  } else {
    const int f = first_child[c], l = f + children[c];
    for (int k = f; k < l; ++k) total += mass[k], sx += mass[k] * com_x[k], sy += mass[k] * com_y[k], sz += mass[k] * com_z[k];
    sx /= total, sy /= total, sz /= total;
    for (int k = f; k < l; ++k) {
      const double dx = com_x[k] - sx, dy = com_y[k] - sy, dz = com_z[k] - sz, w = mass[k];
      s[0] += moment[6 * k] + w * dx * dx, s[1] += moment[6 * k + 1] + w * dx * dy;
      s[2] += moment[6 * k + 2] + w * dx * dz, s[3] += moment[6 * k + 3] + w * dy * dy;
      s[4] += moment[6 * k + 4] + w * dy * dz, s[5] += moment[6 * k + 5] + w * dz * dz;
    }
  }
  com_x[c] = sx, com_y[c] = sy, com_z[c] = sz, mass[c] = total;
  for (int a = 0; a < 6; ++a) moment[6 * c + a] = s[a];
  const double ox = sx - centre_x[c], oy = sy - centre_y[c], oz = sz - centre_z[c];
  const double reach = side[c] * inverse_theta + sqrt(ox * ox + oy * oy + oz * oz);
  reach2[c] = reach * reach;  // infinite for theta 0: never accepted
}

template <class Real>
__device__ __forceinline__ Real fused_multiply_add(Real a, Real b, Real c) {
  if constexpr (sizeof(Real) == 4) return __fmaf_rn(a, b, c);
  else return __fma_rn(a, b, c);
}

template <class Real>
struct Sums {
  Real ax = 0, ay = 0, az = 0, phi = 0;
};

// Four values a shared-memory load.
template <class Real>
struct alignas(4 * sizeof(Real)) Quad {
  Real x, y, z, w;
};

// A body's pull from `count` staged bodies (x, y, z, mass; self: the staged index of the body
// itself, or -1). kPotential: the potential summed too.
template <bool kPotential, class Real>
__device__ __forceinline__ void sum_bodies(const Quad<Real>* tile, int count, Real x, Real y, Real z, Real eps2,
                                           int self, Sums<Real>& s) {
  for (int k = 0; k < count; ++k) {
    const Quad<Real> b = tile[k];
    const Real dx = b.x - x, dy = b.y - y, dz = b.z - z;
    const Real r2 = fused_multiply_add(dx, dx, fused_multiply_add(dy, dy, fused_multiply_add(dz, dz, eps2)));
    const Real u = cuda::reciprocal_sqrt(r2);
    // The self pair adds no acceleration (dx = 0); its mass is masked for the potential only.
    const Real f = gravity_acceleration_factor(b.w, u);
    s.ax = fused_multiply_add(f, dx, s.ax), s.ay = fused_multiply_add(f, dy, s.ay), s.az = fused_multiply_add(f, dz, s.az);
    if constexpr (kPotential) s.phi += gravity_potential_term(k == self ? Real(0) : b.w, u);
  }
}

template <class Real>
struct WalkShared {
  Quad<Real> tile[kWalkThreads];                                 // bodies: x, y, z, mass
  Quad<Real> cell[kWalkThreads], moment_a[kWalkThreads];         // a batch's accepted cells: com, mass;
  Quad<Real> moment_b[kWalkThreads];                             // 3 S: xx, xy, xz, yy; yz, zz, 3/2 tr S
  int range_begin[kWalkThreads], range_offset[kWalkThreads + 1];  // a batch's opened leaves
  double box[kWalkThreads / 32][6];  // each warp's lo x, y, z, hi x, y, z of the group
  int size, group;
};

template <class Real>
__device__ __forceinline__ void fold(const Sums<Real>& s, double& ax, double& ay, double& az, double& phi) {
  ax += static_cast<double>(s.ax), ay += static_cast<double>(s.ay), az += static_cast<double>(s.az);
  phi += static_cast<double>(s.phi);
}

// A batch's placements in one block-wide scan: a thread's accepted cell (bits 0-7), opened
// leaf (8-15), children to push (16-27) and the leaf's bodies (32-63) packed in 64 bits; no
// field's total over 128 threads reaches the next field (128 cells, 128 leaves, 1024 children).
__device__ __forceinline__ unsigned long long pack(int accept, int leaf, int children, int bodies) {
  return static_cast<unsigned long long>(accept) | static_cast<unsigned long long>(leaf) << 8 |
         static_cast<unsigned long long>(children) << 16 | static_cast<unsigned long long>(bodies) << 32;
}
__device__ __forceinline__ int field(unsigned long long packed, int shift, unsigned long long mask) {
  return static_cast<int>((packed >> shift) & mask);
}

// One block walks for one group at a time (a persistent grid taking groups from a counter);
// results to out[c * n + k] for the body at sorted place k, the potential negated.
template <class Real, bool kQuadrupole, bool kPotential>
__global__ void __launch_bounds__(kWalkThreads, sizeof(Real) == 4 ? kWalkBlocksPerSm : 1) walk_groups(TreeView t, int n, const int2* __restrict__ groups,
                                                           int group_count, int* __restrict__ stacks, Real eps2,
                                                           double* __restrict__ out, int* __restrict__ overflow) {
  int* next_group = overflow + 1;  // zeroed with the flag before the launch
  using Scan = cub::BlockScan<unsigned long long, kWalkThreads>;
  __shared__ WalkShared<Real> sh;
  __shared__ typename Scan::TempStorage scan;
  const int tid = static_cast<int>(threadIdx.x);
  int* stack = stacks + static_cast<std::size_t>(blockIdx.x) * kStackCapacity;
  const QuadrupoleConstants<Real> k{Real(2.5), Real(0.5), Real(1) / Real(3)};
  for (;;) {
    // The next group from a counter, not every gridDim-th group: groups differ in cost (their
    // bodies, the cells near them), and fixed shares left blocks idle while others still walked.
    // Step at 67M bodies, theta 0.6, H100: 0.500 -> 0.435 s. The results do not depend on which
    // block walks a group.
    if (tid == 0) sh.group = atomicAdd(next_group, 1);
    __syncthreads();
    const int g = sh.group;
    if (g >= group_count) break;
    const int b0 = groups[g].x, b1 = groups[g].y, count = b1 - b0;
    // The group's box, and its centre as the origin of the float32 differences: each warp's
    // extremes by shuffles, then the warps' in shared memory (one barrier, not one a value).
    double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
    for (int i = tid; i < count; i += kWalkThreads) {
      const double p[3] = {t.x[b0 + i], t.y[b0 + i], t.z[b0 + i]};
      for (int a = 0; a < 3; ++a) lo[a] = fmin(lo[a], p[a]), hi[a] = fmax(hi[a], p[a]);
    }
    for (int offset = 16; offset > 0; offset /= 2)
      for (int a = 0; a < 3; ++a) {
        lo[a] = fmin(lo[a], __shfl_xor_sync(0xffffffffu, lo[a], offset));
        hi[a] = fmax(hi[a], __shfl_xor_sync(0xffffffffu, hi[a], offset));
      }
    if ((tid & 31) == 0)
      for (int a = 0; a < 3; ++a) sh.box[tid / 32][a] = lo[a], sh.box[tid / 32][3 + a] = hi[a];
    __syncthreads();
    double box_lo[3], box_hi[3];
    for (int a = 0; a < 3; ++a) {
      box_lo[a] = sh.box[0][a], box_hi[a] = sh.box[0][3 + a];
      for (int w = 1; w < kWalkThreads / 32; ++w)
        box_lo[a] = fmin(box_lo[a], sh.box[w][a]), box_hi[a] = fmax(box_hi[a], sh.box[w][3 + a]);
    }
    const double origin[3] = {(box_lo[0] + box_hi[0]) / 2, (box_lo[1] + box_hi[1]) / 2, (box_lo[2] + box_hi[2]) / 2};
    // Groups beyond 128 bodies (bodies at one point) walk once for each 128.
    for (int base = 0; base < count; base += kWalkThreads) {
      const int i = base + tid;
      const bool has = i < count;
      // A warp whose threads all lack a body sums nothing: it still stages, scans and syncs with
      // the block. 15% fewer instructions in the walk (8.3e9 -> 7.0e9 at 1M bodies, theta 0.5,
      // Nsight Compute, H100), but not less time alone: the warps with bodies set the pace.
      const bool warp_sums = base + (tid & ~31) < count;
      const int mine = b0 + (has ? i : count - 1);  // a repeated body, not stored
      const Real x = static_cast<Real>(t.x[mine] - origin[0]), y = static_cast<Real>(t.y[mine] - origin[1]),
                 z = static_cast<Real>(t.z[mine] - origin[2]);
      double ax = 0, ay = 0, az = 0, phi = 0;
      // The group's own bodies, a body's pair with itself masked.
      for (int tile = 0; tile < count; tile += kWalkThreads) {
        const int j = tile + tid;
        if (j < count)
          sh.tile[tid] = {static_cast<Real>(t.x[b0 + j] - origin[0]), static_cast<Real>(t.y[b0 + j] - origin[1]),
                          static_cast<Real>(t.z[b0 + j] - origin[2]), static_cast<Real>(t.m[b0 + j])};
        __syncthreads();
        if (warp_sums) {
          Sums<Real> s;
          sum_bodies<kPotential>(sh.tile, min(kWalkThreads, count - tile), x, y, z, eps2, i - tile, s);
          fold(s, ax, ay, az, phi);
        }
        __syncthreads();
      }
      if (tid == 0) stack[0] = 0, sh.size = 1;
      __syncthreads();
      while (sh.size > 0) {
        const int size = sh.size, take = min(size, kWalkThreads), rest = size - take;
        int c = -1, accept = 0, direct = 0, open = 0, cell_begin = 0, first_child = -1;
        double com[3] = {0, 0, 0}, mass = 0;
        if (tid < take) {
          c = stack[rest + tid];
          // The fields the tests and the placements below need, loaded at once: one round trip to
          // memory after the stack's instead of a chain of three (walk -1-2%, H100; the moments
          // of accepted cells come after the scan: loading them here too gained nothing).
          cell_begin = t.begin[c], first_child = t.first_child[c];
          const int cell_end = t.end[c], children = t.children[c];
          const double reach2 = t.reach2[c];
          com[0] = t.com_x[c], com[1] = t.com_y[c], com[2] = t.com_z[c], mass = t.mass[c];
          if (cell_begin < b0 || cell_end > b1) {  // not the group's own (tree.hpp's inside_group)
            double d2 = 0;
            for (int a = 0; a < 3; ++a) {
              const double p = com[a];
              const double gap = p < box_lo[a] ? box_lo[a] - p : (p > box_hi[a] ? p - box_hi[a] : 0.0);
              d2 += gap * gap;
            }
            // A cell of one or two bodies goes pair by pair (tree_cpu.cpp's rule).
            if (cell_end - cell_begin > 2 && d2 > reach2) accept = 1;
            else if (first_child < 0) direct = cell_end - cell_begin;
            else open = children;
          }
        }
        unsigned long long at, total;
        Scan(scan).ExclusiveSum(pack(accept, direct > 0, open, direct), at, total);  // syncs: every entry is read
        const int cell_at = field(at, 0, 0xff), range_at = field(at, 8, 0xff), push_at = field(at, 16, 0xfff);
        const int body_at = field(at, 32, 0xffffffff);
        const int cells_total = field(total, 0, 0xff), ranges_total = field(total, 8, 0xff);
        int pushed_total = field(total, 16, 0xfff);
        const int bodies_total = field(total, 32, 0xffffffff);
        if (rest + pushed_total > kStackCapacity) {
          if (tid == 0) atomicExch(overflow, 1);
          open = 0, pushed_total = 0;
        }
        if (open > 0)
          for (int q = 0; q < open; ++q) stack[rest + push_at + q] = first_child + q;
        if (accept) {
          sh.cell[cell_at] = {static_cast<Real>(com[0] - origin[0]), static_cast<Real>(com[1] - origin[1]),
                              static_cast<Real>(com[2] - origin[2]), static_cast<Real>(mass)};
          if constexpr (kQuadrupole) {
            double moment[6], w[6], trace;
            for (int a = 0; a < 6; ++a) moment[a] = t.moment[6 * static_cast<std::size_t>(c) + a];
            quadrupole_weights(moment, w, trace);
            sh.moment_a[cell_at] = {static_cast<Real>(w[0]), static_cast<Real>(w[1]), static_cast<Real>(w[2]),
                                    static_cast<Real>(w[3])};
            sh.moment_b[cell_at] = {static_cast<Real>(w[4]), static_cast<Real>(w[5]), static_cast<Real>(trace), Real(0)};
          }
        }
        if (direct > 0) sh.range_begin[range_at] = cell_begin, sh.range_offset[range_at] = body_at;
        if (tid == 0) sh.range_offset[ranges_total] = bodies_total, sh.size = rest + pushed_total;
        __syncthreads();
        // The accepted cells.
        if (warp_sums) {
          Sums<Real> s;
          for (int q = 0; q < cells_total; ++q) {  // nvcc's own unrolling beat unroll 1, 2, 4 and two chains of sums
            const Quad<Real> cell = sh.cell[q];
            const Real dx = cell.x - x, dy = cell.y - y, dz = cell.z - z;
            const Real r2 = fused_multiply_add(dx, dx, fused_multiply_add(dy, dy, fused_multiply_add(dz, dz, eps2)));
            const Real u = cuda::reciprocal_sqrt(r2);
            if constexpr (kQuadrupole) {  // monopole and quadrupole in one expression (tree_terms-inl.hpp)
              const Quad<Real> a = sh.moment_a[q], b = sh.moment_b[q];
              Real phi = 0;  // the cell's potential term, kept when asked for
              gravity_cell_terms(dx, dy, dz, u, cell.w, a.x, a.y, a.z, a.w, b.x, b.y, b.z, k, s.ax, s.ay, s.az, phi);
              if constexpr (kPotential) s.phi += phi;
            } else {
              const Real f = gravity_acceleration_factor(cell.w, u);
              s.ax = fused_multiply_add(f, dx, s.ax), s.ay = fused_multiply_add(f, dy, s.ay);
              s.az = fused_multiply_add(f, dz, s.az);
              if constexpr (kPotential) s.phi += gravity_potential_term(cell.w, u);
            }
          }
          fold(s, ax, ay, az, phi);
        }
        // The opened leaves' bodies, a tile at a time.
        for (int tile = 0; tile < bodies_total; tile += kWalkThreads) {
          __syncthreads();  // the previous tile (or the cells) are summed
          const int e = tile + tid;
          if (e < bodies_total) {
            int lo_r = 0, hi_r = ranges_total - 1;  // the last range starting at or before e
            while (lo_r < hi_r) {
              const int mid = (lo_r + hi_r + 1) / 2;
              if (sh.range_offset[mid] <= e) lo_r = mid;
              else hi_r = mid - 1;
            }
            const int j = sh.range_begin[lo_r] + e - sh.range_offset[lo_r];
            sh.tile[tid] = {static_cast<Real>(t.x[j] - origin[0]), static_cast<Real>(t.y[j] - origin[1]),
                            static_cast<Real>(t.z[j] - origin[2]), static_cast<Real>(t.m[j])};
          }
          __syncthreads();
          if (warp_sums) {
            Sums<Real> s;
            sum_bodies<kPotential>(sh.tile, min(kWalkThreads, bodies_total - tile), x, y, z, eps2, -1, s);
            fold(s, ax, ay, az, phi);
          }
        }
        __syncthreads();  // the batch's shared lists are summed before the next batch writes them
      }
      if (has) {
        const int at = b0 + i;
        out[at] = ax, out[static_cast<std::size_t>(n) + at] = ay, out[2 * static_cast<std::size_t>(n) + at] = az;
        if constexpr (kPotential) out[3 * static_cast<std::size_t>(n) + at] = -phi;
      }
      __syncthreads();
    }
  }
}

// Sorted results back to the bodies' order, component-major.
__global__ void unsort(int n, int components, const unsigned* __restrict__ order, const double* __restrict__ sorted,
                       double* __restrict__ out) {
  const int k = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (k >= n) return;
  const unsigned i = order[k];
  for (int c = 0; c < components; ++c) out[static_cast<std::size_t>(c) * n + i] = sorted[static_cast<std::size_t>(c) * n + k];
}

int blocks_for(long long count) { return static_cast<int>((count + 255) / 256); }

}  // namespace

struct GpuTree::State {
  int device = 0, multiprocessors = 1, threads = 1;
  std::string name;
  double softening = 0;
  TreeOptions options;
  int leaf_size = kTreeLeafSize;
  bool double_precision = false;
  std::unique_ptr<cuda::Stream> stream;
  std::unique_ptr<cuda::Event> start, built, stop;
  TreeTimings timings;
  cuda::PinnedBuffer<double> staged, results;
  cuda::DeviceBuffer<double> x, y, z, m, sx, sy, sz, sm, sorted_out, out;
  cuda::DeviceBuffer<unsigned long long> keys, sorted_keys;
  cuda::DeviceBuffer<unsigned> index, order;
  cuda::DeviceBuffer<int> counts, offsets, bounds, stacks, overflow, flags;  // flags: compute_on_device's checks
  cuda::DeviceBuffer<double> bounds_out;  // compute_on_device's bounding box: lo x, y, z, hi x, y, z
  cuda::DeviceBuffer<int2> runs, groups;
  cuda::DeviceBuffer<unsigned char> scratch;
  CellArrays cells;
  double kernel_seconds = 0;
};

GpuTree::GpuTree(const std::vector<int>& gpus, double softening, const TreeOptions& options, bool double_precision,
                 int threads)
    : state_(std::make_unique<State>()) {
  const std::vector<GpuInfo> chosen = resolve_gpus(gpus);
  State& s = *state_;
  s.device = chosen.front().index, s.name = chosen.front().name, s.multiprocessors = chosen.front().multiprocessors;
  s.softening = softening, s.options = options, s.double_precision = double_precision, s.threads = threads;
  s.leaf_size = options.leaf_size > 0 ? options.leaf_size : kTreeLeafSize;
  NBKIT_CUDA_CHECK(cudaSetDevice(s.device));
  s.stream = std::make_unique<cuda::Stream>();
  s.start = std::make_unique<cuda::Event>();
  s.built = std::make_unique<cuda::Event>();
  s.stop = std::make_unique<cuda::Event>();
}

GpuTree::~GpuTree() {
  if (state_) cudaSetDevice(state_->device);  // the buffers are freed on their device
}

namespace {

// Scratch for one CUB call, grown as needed.
void* scratch_for(GpuTree::State& s, std::size_t bytes) {
  if (s.scratch.size() < bytes) s.scratch = cuda::DeviceBuffer<unsigned char>(bytes);
  return s.scratch.data();
}

template <class T>
void ensure(cuda::DeviceBuffer<T>& buffer, std::size_t count) {
  if (buffer.size() < count) buffer = cuda::DeviceBuffer<T>(count);
}

// offsets[k] = counts[0] + ... + counts[k - 1] for k <= count (counts[count] is set to zero), and
// the total, offsets[count], on the host (a synchronisation: the next pass's size).
int exclusive_sum(GpuTree::State& s, cuda::DeviceBuffer<int>& counts, cuda::DeviceBuffer<int>& offsets, int count) {
  const cudaStream_t stream = *s.stream;
  NBKIT_CUDA_CHECK(cudaMemsetAsync(counts.data() + count, 0, sizeof(int), stream));
  std::size_t bytes = 0;
  NBKIT_CUDA_CHECK(cuda::exclusive_sum(nullptr, bytes, counts.data(), offsets.data(), count + 1, stream));
  NBKIT_CUDA_CHECK(cuda::exclusive_sum(scratch_for(s, bytes), bytes, counts.data(), offsets.data(), count + 1, stream));
  int total = 0;
  NBKIT_CUDA_CHECK(cudaMemcpyAsync(&total, offsets.data() + count, sizeof(int), cudaMemcpyDeviceToHost, stream));
  NBKIT_CUDA_CHECK(cudaStreamSynchronize(stream));
  return total;
}

// Builds the tree of the n bodies in s.x..s.m; returns the number of groups (in s.groups).
int build(GpuTree::State& s, int n, const double lo[3], double side) {
  const cudaStream_t stream = *s.stream;
  for (auto* b : {&s.sx, &s.sy, &s.sz, &s.sm}) ensure(*b, n);
  ensure(s.keys, n), ensure(s.sorted_keys, n), ensure(s.index, n), ensure(s.order, n);
  const double scale = static_cast<double>(1 << kTreeLevels) / side;
  morton_keys<<<blocks_for(n), 256, 0, stream>>>(n, s.x.data(), s.y.data(), s.z.data(), lo[0], lo[1], lo[2], scale,
                                                  s.keys.data(), s.index.data());
  NBKIT_CUDA_CHECK_LAUNCH();
  std::size_t bytes = 0;
  NBKIT_CUDA_CHECK(cuda::sort_pairs(nullptr, bytes, s.keys.data(), s.sorted_keys.data(), s.index.data(), s.order.data(),
                                    n, 0, 3 * kTreeLevels, stream));
  NBKIT_CUDA_CHECK(cuda::sort_pairs(scratch_for(s, bytes), bytes, s.keys.data(), s.sorted_keys.data(), s.index.data(),
                                    s.order.data(), n, 0, 3 * kTreeLevels, stream));
  gather_sorted<<<blocks_for(n), 256, 0, stream>>>(n, s.order.data(), s.x.data(), s.y.data(), s.z.data(), s.m.data(),
                                                    s.sx.data(), s.sy.data(), s.sz.data(), s.sm.data());
  NBKIT_CUDA_CHECK_LAUNCH();
  // The root, then a level at a time.
  CellArrays& c = s.cells;
  reserve_cells(c, std::max<std::size_t>(1024, static_cast<std::size_t>(n) / 8), 0, stream);
  {
    const int zero = 0, minus = -1;
    const double centre[3] = {lo[0] + side / 2, lo[1] + side / 2, lo[2] + side / 2};
    c.begin.upload(&zero, 1, stream), c.end.upload(&n, 1, stream), c.parent.upload(&minus, 1, stream);
    c.centre_x.upload(&centre[0], 1, stream), c.centre_y.upload(&centre[1], 1, stream);
    c.centre_z.upload(&centre[2], 1, stream), c.side.upload(&side, 1, stream);
  }
  std::vector<std::pair<int, int>> levels{{0, 1}};
  for (int level = 0;; ++level) {
    const auto [first, last] = levels.back();
    const int width = last - first;
    ensure(s.counts, width + 1), ensure(s.offsets, width + 1), ensure(s.bounds, 8 * static_cast<std::size_t>(width));
    count_children<<<blocks_for(width), 256, 0, stream>>>(first, last, level, s.leaf_size, s.sorted_keys.data(),
                                                          c.begin.data(), c.end.data(), s.counts.data(), s.bounds.data());
    NBKIT_CUDA_CHECK_LAUNCH();
    const int total = exclusive_sum(s, s.counts, s.offsets, width);
    if (static_cast<long long>(last) + total > INT_MAX) throw Error("the tree has more than 2^31 cells");
    reserve_cells(c, static_cast<std::size_t>(last) + total, last, stream);
    make_children<<<blocks_for(width), 256, 0, stream>>>(first, last, last, s.counts.data(), s.offsets.data(),
                                                         s.bounds.data(), c.begin.data(), c.end.data(),
                                                         c.first_child.data(), c.children.data(), c.parent.data(),
                                                         c.centre_x.data(), c.centre_y.data(), c.centre_z.data(),
                                                         c.side.data());
    NBKIT_CUDA_CHECK_LAUNCH();
    if (total == 0) break;
    levels.emplace_back(last, last + total);
  }
  const int cell_count = levels.back().second;
  const double inverse_theta =
      s.options.theta > 0 ? 1 / s.options.theta : std::numeric_limits<double>::infinity();
  for (auto level = levels.rbegin(); level != levels.rend(); ++level) {
    level_multipoles<<<blocks_for(level->second - level->first), 256, 0, stream>>>(
        level->first, level->second, inverse_theta, s.sx.data(), s.sy.data(), s.sz.data(), s.sm.data(),
        c.begin.data(), c.end.data(), c.first_child.data(), c.children.data(), c.centre_x.data(), c.centre_y.data(),
        c.centre_z.data(), c.side.data(), c.com_x.data(), c.com_y.data(), c.com_z.data(), c.mass.data(),
        c.moment.data(), c.reach2.data());
    NBKIT_CUDA_CHECK_LAUNCH();
  }
  const int group_size = std::max(s.leaf_size, kTreeGroupSize);
  ensure(s.counts, cell_count + 1), ensure(s.offsets, cell_count + 1), ensure(s.runs, 8 * static_cast<std::size_t>(cell_count));
  merge_groups<<<blocks_for(cell_count), 256, 0, stream>>>(cell_count, group_size, c.begin.data(), c.end.data(),
                                                           c.first_child.data(), c.children.data(), s.counts.data(),
                                                           s.runs.data());
  NBKIT_CUDA_CHECK_LAUNCH();
  int groups = exclusive_sum(s, s.counts, s.offsets, cell_count);
  if (groups == 0) {  // the root is the one group: n <= group_size, or all bodies at one point
    groups = 1;
    ensure(s.groups, 1);
    const int2 all = make_int2(0, n);
    s.groups.upload(&all, 1, stream);
  } else {
    ensure(s.groups, groups);
    place_groups<<<blocks_for(cell_count), 256, 0, stream>>>(cell_count, s.counts.data(), s.offsets.data(),
                                                             s.runs.data(), s.groups.data());
    NBKIT_CUDA_CHECK_LAUNCH();
  }
  return groups;
}

}  // namespace

namespace {

// The bodies in s.x..s.m (n of them, within the box lo..hi) built into the tree and walked,
// queued on s.stream after s.start: the sorted results in s.sorted_out (component-major, the
// potential negated), the event s.built between build and walk.
void build_and_walk(GpuTree::State& s, int n, const double lo[3], const double hi[3], bool with_potential) {
  const cudaStream_t stream = *s.stream;
  const double extent = std::max({hi[0] - lo[0], hi[1] - lo[1], hi[2] - lo[2]});
  const double side = extent > 0 ? extent : 1.0;
  const int groups = build(s, n, lo, side);
  s.built->record(stream);
  ensure(s.overflow, 2), ensure(s.sorted_out, 4 * static_cast<std::size_t>(n));
  NBKIT_CUDA_CHECK(cudaMemsetAsync(s.overflow.data(), 0, 2 * sizeof(int), stream));  // the flag, the group counter
  const CellArrays& c = s.cells;
  const TreeView view{c.begin.data(), c.end.data(), c.first_child.data(), c.children.data(), c.parent.data(),
                      c.com_x.data(), c.com_y.data(), c.com_z.data(), c.mass.data(), c.reach2.data(),
                      c.moment.data(), s.sx.data(), s.sy.data(), s.sz.data(), s.sm.data()};
  // A persistent grid of the blocks that fit at once, each with its stack.
  auto walk = [&](auto kernel, auto eps2) {
    int per_sm = 0;
    NBKIT_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kWalkThreads, 0));
    const int grid = std::max(1, std::min(groups, std::max(per_sm, 1) * s.multiprocessors));
    ensure(s.stacks, static_cast<std::size_t>(grid) * kStackCapacity);
    kernel<<<grid, kWalkThreads, 0, stream>>>(view, n, s.groups.data(), groups, s.stacks.data(), eps2,
                                              s.sorted_out.data(), s.overflow.data());
  };
  const double eps2 = s.softening * s.softening;
  const bool q = s.options.quadrupole;
  if (s.double_precision) {
    if (with_potential) walk(q ? walk_groups<double, true, true> : walk_groups<double, false, true>, eps2);
    else walk(q ? walk_groups<double, true, false> : walk_groups<double, false, false>, eps2);
  } else {
    const auto e = static_cast<float>(eps2);
    if (with_potential) walk(q ? walk_groups<float, true, true> : walk_groups<float, false, true>, e);
    else walk(q ? walk_groups<float, true, false> : walk_groups<float, false, false>, e);
  }
  NBKIT_CUDA_CHECK_LAUNCH();
}

// After the stream's last step: the walk's overflow flag read, the timings taken.
void finish(GpuTree::State& s, int overflow) {
  s.kernel_seconds = s.stop->seconds_since(*s.start);
  s.timings = {s.built->seconds_since(*s.start), s.stop->seconds_since(*s.built)};
  if (overflow) throw Error("internal error: the GPU tree walk's stack overflowed (please report)");
}

// The caller's bodies in GPU memory, widened to float64 into the tree's input arrays; the first
// body whose position is not finite or whose mass is not positive and finite goes to *bad.
__global__ void unpack_device_bodies(DeviceBodies b, double* __restrict__ x, double* __restrict__ y,
                                     double* __restrict__ z, double* __restrict__ m, int* __restrict__ bad) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i >= b.n) return;
  if (!load_device_body(b, i, x[i], y[i], z[i], m[i])) atomicMin(bad, i);
}

}  // namespace

void GpuTree::compute(const Bodies& bodies, Accelerations& out, bool with_potential) {
  State& s = *state_;
  const std::size_t count = bodies.size();
  out.resize(count);
  out.has_potential = with_potential;
  if (count == 0) return;
  if (count > static_cast<std::size_t>(INT_MAX / 4))
    throw Error("the GPU tree takes at most " + std::to_string(INT_MAX / 4) + " bodies, got " + std::to_string(count));
  const int n = static_cast<int>(count);
  NBKIT_CUDA_CHECK(cudaSetDevice(s.device));
  const cudaStream_t stream = *s.stream;
  // The bodies staged in page-locked memory on all cores, their bounding cube (tree_build.cpp's root) found on the way.
  if (s.staged.size() < 4 * count) s.staged = cuda::PinnedBuffer<double>(4 * count);
  double lo[3], hi[3];
  stage_tree_bodies(bodies, s.staged.data(), lo, hi, s.threads);
  for (auto* b : {&s.x, &s.y, &s.z, &s.m}) ensure(*b, count);
  s.start->record(stream);
  s.x.upload(s.staged.data(), count, stream), s.y.upload(s.staged.data() + count, count, stream);
  s.z.upload(s.staged.data() + 2 * count, count, stream), s.m.upload(s.staged.data() + 3 * count, count, stream);
  build_and_walk(s, n, lo, hi, with_potential);
  ensure(s.out, 4 * count);
  const int components = with_potential ? 4 : 3;
  unsort<<<blocks_for(n), 256, 0, stream>>>(n, components, s.order.data(), s.sorted_out.data(), s.out.data());
  NBKIT_CUDA_CHECK_LAUNCH();
  if (s.results.size() < 4 * count) s.results = cuda::PinnedBuffer<double>(4 * count);
  s.out.download(s.results.data(), components * count, stream);
  s.stop->record(stream);
  int overflow = 0;
  s.overflow.download(&overflow, 1, stream);
  NBKIT_CUDA_CHECK(cudaStreamSynchronize(stream));
  finish(s, overflow);
  unstage_tree_results(s.results.data(), count, with_potential, out, s.threads);
}

void GpuTree::compute_on_device(const DeviceBodies& b) {
  State& s = *state_;
  if (b.device != s.device)
    throw Error("bodies in the memory of GPU " + std::to_string(b.device) + " run on that GPU: pick it with gpus=" +
                std::to_string(b.device) + " (this engine has " + description() + ")");
  if (b.n == 0) return;
  if (b.n > INT_MAX / 4)
    throw Error("the GPU tree takes at most " + std::to_string(INT_MAX / 4) + " bodies, got " + std::to_string(b.n));
  const int n = static_cast<int>(b.n);
  const auto count = static_cast<std::size_t>(n);
  NBKIT_CUDA_CHECK(cudaSetDevice(s.device));
  const cudaStream_t stream = *s.stream;
  wait_for_producer(b, stream);
  for (auto* buffer : {&s.x, &s.y, &s.z, &s.m}) ensure(*buffer, count);
  ensure(s.flags, 2), ensure(s.bounds_out, 6);
  s.start->record(stream);
  const int none[2] = {INT_MAX, INT_MAX};
  s.flags.upload(none, 2, stream);
  unpack_device_bodies<<<blocks_for(n), 256, 0, stream>>>(b, s.x.data(), s.y.data(), s.z.data(), s.m.data(),
                                                          s.flags.data());
  NBKIT_CUDA_CHECK_LAUNCH();
  // The bounding cube as the host path finds it (min and max are exact: the same cube, the same tree).
  const double* axes[3] = {s.x.data(), s.y.data(), s.z.data()};
  for (int a = 0; a < 3; ++a) {
    std::size_t bytes = 0;
    NBKIT_CUDA_CHECK(cuda::reduce_min(nullptr, bytes, axes[a], s.bounds_out.data() + a, n, stream));
    NBKIT_CUDA_CHECK(cuda::reduce_min(scratch_for(s, bytes), bytes, axes[a], s.bounds_out.data() + a, n, stream));
    NBKIT_CUDA_CHECK(cuda::reduce_max(nullptr, bytes, axes[a], s.bounds_out.data() + 3 + a, n, stream));
    NBKIT_CUDA_CHECK(
        cuda::reduce_max(scratch_for(s, bytes), bytes, axes[a], s.bounds_out.data() + 3 + a, n, stream));
  }
  double bounds[6];
  int bad = INT_MAX;
  s.bounds_out.download(bounds, 6, stream);
  s.flags.download(&bad, 1, stream);
  NBKIT_CUDA_CHECK(cudaStreamSynchronize(stream));
  if (bad != INT_MAX)
    throw Error("body " + std::to_string(bad + 1) + ": its position is not finite or its mass is not a positive finite number");
  build_and_walk(s, n, bounds, bounds + 3, b.potentials != nullptr);
  scatter_results<true><<<blocks_for(n), 256, 0, stream>>>(n, s.order.data(), s.sorted_out.data(), b.accelerations,
                                                           b.potentials, s.flags.data() + 1);
  NBKIT_CUDA_CHECK_LAUNCH();
  s.stop->record(stream);
  int overflow = 0;
  s.overflow.download(&overflow, 1, stream);
  NBKIT_CUDA_CHECK(cudaMemcpyAsync(&bad, s.flags.data() + 1, sizeof(int), cudaMemcpyDeviceToHost, stream));
  NBKIT_CUDA_CHECK(cudaStreamSynchronize(stream));
  finish(s, overflow);
  if (bad != INT_MAX)
    throw Error("the acceleration of body " + std::to_string(bad + 1) + " is not finite: the sums overflowed");
}

double GpuTree::last_kernel_seconds() const { return state_->kernel_seconds; }
TreeTimings GpuTree::last_timings() const { return state_->timings; }

std::string GpuTree::description() const {
  return "GPU " + std::to_string(state_->device) + " (" + state_->name + ")";
}

}  // namespace nbkit::nbody
