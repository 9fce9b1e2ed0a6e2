// Cutoff summation on NVIDIA GPUs, on one or several devices (seed 000, "Short-Range
// Cutoff Summation" to "Cutoff Summation Observations"; Rodrigues, Hardy, Stone, Schulten,
// Hwu, Computing Frontiers 2008), with the overflow problem of fixed-depth bins removed.
//
// Design:
// - The lattice is cut into regions of 8 x 8 x 8 points; a thread block owns one region,
//   each of its 64 threads one column of the region's 8 points along z (unroll-and-jam:
//   dx^2 + dy^2 once per atom for the 8), each warp a 4 x 8 patch of the region's columns.
// - Atoms are hashed into bins of one region's size, aligned with the regions, and stored
//   sorted by bin with an offset array (CSR): a bin holds any number of atoms, so dense
//   clusters never overflow and no atom goes to the CPU. Bins along x are contiguous, so
//   the bins within the cutoff of a region form a few runs of consecutive atoms.
// - The runs come from a neighbour-offset table computed once on the host (the slides'
//   precomputed neighbourhood, identical for every region because bins align with
//   regions): for each (dy, dz) bin offset within the cutoff, the range of dx offsets.
// - A block streams the atoms of its runs through a filter: an atom is kept only if it is
//   within the cutoff of the region's box (one test per atom and region, not per point).
//   Kept atoms are compacted, in run order, into a shared-memory list with their squared
//   distance along z to the region; when the list is full the threads sum it for their
//   points. A warp skips an atom beyond the cutoff of its whole 4 x 8 x 8 box (every lane's
//   dx^2 + dy^2 plus that z distance): ~62% of the pairs a warp then evaluates lie within
//   the cutoff, where whole bins would give ~30% and the region's box ~56%.
// - Why these shapes (issue 24, item 2): the loop is bound by issue slots, 7 a pair with
//   cutcp (dz, r^2, rsqrt, the law's 3, the sum; 6 to 11 for the other laws) plus ~17 an atom
//   (loads, dx, dy, the test, dz0; SASS on sm_90), so 8 points a thread pay the atom's share
//   half as often as 4 did, for the same share of pairs within the cutoff (a 4 x 4 x 8 box
//   culled in x, y only, as before, keeps 62% too). Measured: 1.07-1.22x with cutcp, but 14%
//   slower with taylor3 (docs/performance.md, session 27).
// - Arithmetic as in the direct kernel (cuda.cu): lattice units, exact integer/residual
//   coordinates, one hardware rsqrt per pair, float32 sums over one list of atoms and
//   float64 across lists; atoms that may sit on a lattice point go through a second,
//   checked pass. The list order depends only on the input, so the bits do not depend on
//   slabs, devices or the GPU model.
// (No fmt here: its compile-time format strings do not pass through nvcc.)
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "cuda/check.hpp"
#include "cuda/device_buffer.hpp"
#include "cuda/primitives.hpp"
#include "maps/device_atoms.cuh"
#include "maps/device_input.cuh"
#include "maps/gpu_slabs.cuh"
#include "maps/kernels.hpp"
#include "nbkit/core/error.hpp"
#include "nbkit/core/memory.hpp"
#include "nbkit/maps.hpp"

namespace nbkit::maps {

namespace {

using gpu::Quad;

constexpr int kRegion = 8;                           // lattice points along each edge of a region
constexpr int kThreads = kRegion * kRegion;          // a block: the region's 8 x 8 columns, a thread each
constexpr int kPoints = kRegion;                     // points along z per thread
constexpr int kWarps = kThreads / 32;
// Atoms gathered in shared memory before summing (8 KB in float32: shared memory allows ~26
// blocks an SM, registers ~18, so the list never limits occupancy).
constexpr int kListCapacity = 256;

// Sizes the kernel needs, in lattice points, regions and bins.
struct CutoffGrid {
  int nx = 0, ny = 0, nz = 0;            // lattice points
  int regions[3] = {0, 0, 0};            // regions along x, y, z
  int bins[3] = {0, 0, 0};               // bins along x, y, z: the regions plus `margin` on each side
  int margin = 0;                        // bins before region 0 along each axis
};

// Exclusive prefix sum over the block of one int per thread; `total` gets the sum. Every
// thread must call it (it synchronizes the block).
__device__ __forceinline__ int block_exclusive_scan(int value, int* warp_sums, int& total) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  int inclusive = value;
#pragma unroll
  for (int offset = 1; offset < 32; offset <<= 1) {
    const int below = __shfl_up_sync(0xffffffffu, inclusive, offset);
    if (lane >= offset) inclusive += below;
  }
  if (lane == 31) warp_sums[warp] = inclusive;
  __syncthreads();
  int before = 0;
  total = 0;
#pragma unroll
  for (int w = 0; w < kWarps; ++w) {
    const int s = warp_sums[w];
    before += w < warp ? s : 0;
    total += s;
  }
  __syncthreads();  // warp_sums is free again
  return before + inclusive - value;
}

// Distance along one axis from a coordinate (index + residual, lattice units) to the
// region's points [lo, lo + kRegion - 1]; 0 inside.
template <class Real>
__device__ __forceinline__ Real gap_to_region(Real lo, Real index, Real residual) {
  const Real below = (lo - index) - residual;
  const Real above = (index - (lo + Real(kRegion - 1))) + residual;
  return max(Real(0), max(below, above));
}

// Sums the atoms of the bins within the cutoff of each region for the region's points and
// stores scale * sum for the rows [first_row, last_row) to out (or adds it, kAccumulate).
// Blocks cover the regions with x index >= region_x_first, z fastest. kCheckSingular leaves
// out atoms within singular distance of a point.
template <class Real, class Law, bool kCheckSingular, bool kAccumulate>
__global__ void __launch_bounds__(kThreads)
    cutoff_sum_kernel(CutoffGrid grid, const Quad<Real>* __restrict__ atoms, const int* __restrict__ bin_start,
                      const int4* __restrict__ neighbour_runs, int run_count, Law law, Real singular_r2,
                      Real filter_r2, int region_x_first, long long first_row, long long last_row, double scale,
                      double* __restrict__ out) {
  __shared__ Quad<Real> list[2 * kListCapacity];
  __shared__ int run_first[kThreads], run_offset[kThreads];
  __shared__ int warp_sums[kWarps];
  const int t = threadIdx.x;

  const int region_z = blockIdx.x % grid.regions[2];
  const int region_y = (blockIdx.x / grid.regions[2]) % grid.regions[1];
  const int region_x = region_x_first + static_cast<int>(blockIdx.x / (grid.regions[2] * grid.regions[1]));
  // A warp owns 4 x 8 columns of the region, a lane one column's 8 points: a compact
  // footprint, so that whole warps skip atoms beyond the cutoff of all their points.
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int i = region_x * kRegion + warp * 4 + (lane >> 3);
  const int j = region_y * kRegion + (lane & 7);
  const int k0 = region_z * kRegion;
  const Real lo_x = static_cast<Real>(region_x * kRegion), lo_y = static_cast<Real>(region_y * kRegion),
             lo_z = static_cast<Real>(region_z * kRegion);
  const Real point_x = static_cast<Real>(i), point_y = static_cast<Real>(j), point_z = static_cast<Real>(k0);
  const gpu::DeviceMath<Real> math;

  double sum[kPoints];
#pragma unroll
  for (int p = 0; p < kPoints; ++p) sum[p] = 0;

  auto sum_list = [&](int count) {
    Real acc[kPoints];
#pragma unroll
    for (int p = 0; p < kPoints; ++p) acc[p] = 0;
    for (int a = 0; a < count; ++a) {
      const Quad<Real> xy = list[2 * a], zc = list[2 * a + 1];
      const Real dx = (point_x - xy.a) - xy.b, dy = (point_y - xy.c) - xy.d;  // first subtractions exact
      const Real dxy2 = dx * dx + dy * dy;
      // zc.d: the atom's squared distance along z to the region's points, so every term of
      // this atom is zero here when dxy2 + zc.d reaches the filter's reach (a little beyond
      // the cutoff, so rounding never skips a term the law keeps).
      if (dxy2 + zc.d >= filter_r2) continue;
      const Real dz0 = (point_z - zc.a) - zc.b;
#pragma unroll
      for (int p = 0; p < kPoints; ++p) {
        const Real dz = dz0 + static_cast<Real>(p);
        const Real r2 = dz * dz + dxy2;
        const Real term = maps::law_term(law, math, zc.c, r2, gpu::reciprocal_sqrt(r2));
        if constexpr (kCheckSingular) acc[p] += r2 > singular_r2 ? term : Real(0);  // nbkit::singular_distance
        else acc[p] += term;
      }
    }
#pragma unroll
    for (int p = 0; p < kPoints; ++p) sum[p] += static_cast<double>(acc[p]);
  };

  int listed = 0;  // the same in every thread
  for (int batch = 0; batch < run_count; batch += kThreads) {
    // One neighbour run per thread: its first atom and length.
    int first = 0, length = 0;
    if (batch + t < run_count) {
      const int4 run = neighbour_runs[batch + t];  // dy, dz, dx_first, dx_last
      const int row = ((region_z + run.y + grid.margin) * grid.bins[1] + (region_y + run.x + grid.margin)) *
                      grid.bins[0] + region_x + grid.margin;
      first = bin_start[row + run.z];
      length = bin_start[row + run.w + 1] - first;
    }
    int candidates = 0;
    const int offset = block_exclusive_scan(length, warp_sums, candidates);
    run_first[t] = first;
    run_offset[t] = offset;
    __syncthreads();
    const int runs_here = min(kThreads, run_count - batch);
    for (int c0 = 0; c0 < candidates; c0 += kThreads) {
      const int c = c0 + t;
      bool keep = false;
      Quad<Real> xy{}, zc{};
      if (c < candidates) {
        int lo = 0, hi = runs_here - 1;  // the last run starting at or before c (never empty)
        while (lo < hi) {
          const int mid = (lo + hi + 1) >> 1;
          if (run_offset[mid] <= c) lo = mid;
          else hi = mid - 1;
        }
        const int atom = run_first[lo] + (c - run_offset[lo]);
        xy = atoms[2 * atom];
        zc = atoms[2 * atom + 1];
        const Real gx = gap_to_region(lo_x, xy.a, xy.b), gy = gap_to_region(lo_y, xy.c, xy.d),
                   gz = gap_to_region(lo_z, zc.a, zc.b);
        zc.d = gz * gz;  // unused by the atom: the list carries the z distance to the warps
        keep = gx * gx + gy * gy + zc.d < filter_r2;
      }
      int kept = 0;
      const int position = block_exclusive_scan(keep ? 1 : 0, warp_sums, kept);
      if (keep) {
        list[2 * (listed + position)] = xy;
        list[2 * (listed + position) + 1] = zc;
      }
      listed += kept;
      if (listed > kListCapacity - kThreads) {  // no room for another full round
        __syncthreads();
        sum_list(listed);
        __syncthreads();
        listed = 0;
      }
    }
    __syncthreads();  // run_first and run_offset are rewritten by the next batch
  }
  if (listed > 0) {
    __syncthreads();
    sum_list(listed);
  }

  if (i >= grid.nx || j >= grid.ny) return;
  const long long row = static_cast<long long>(i) * grid.ny + j;
  if (row < first_row || row >= last_row) return;
  double* row_out = out + (row - first_row) * grid.nz;
#pragma unroll
  for (int p = 0; p < kPoints; ++p)
    if (k0 + p < grid.nz) {
      if constexpr (kAccumulate) row_out[k0 + p] += scale * sum[p];
      else row_out[k0 + p] = scale * sum[p];
    }
}

// Regions, bins and the neighbour-offset table of one lattice and cutoff.
struct CutoffLayout {
  CutoffGrid grid;
  double reach = 0;              // lattice units: atoms farther than this from a region's box are left out
  std::vector<int4> neighbour_runs;
  std::int64_t bin_count() const {
    return static_cast<std::int64_t>(grid.bins[0]) * grid.bins[1] * grid.bins[2];
  }
};

// Distance in lattice units along one axis from a region's points [0, kRegion - 1] to the
// bin `offset` bins away, which holds coordinates [kRegion offset, kRegion (offset + 1)).
double bin_gap(int offset) {
  if (offset > 0) return kRegion * offset - (kRegion - 1);
  if (offset < 0) return -kRegion * offset - kRegion;
  return 0;
}

CutoffLayout layout_for(const Lattice& lattice, double cutoff) {
  CutoffLayout layout;
  const double cutoff_units = cutoff / lattice.spacing;
  // A little beyond the cutoff, so that float32 rounding of the filter never drops an atom
  // the law keeps; atoms kept beyond the cutoff add exactly zero.
  layout.reach = cutoff_units * (1 + 1e-6) + 1e-3;
  if (layout.reach > 1e5)
    throw Error("cutoff summation on the GPU: the cutoff is " + std::to_string(cutoff_units) +
                " lattice spacings; use at most 100,000 (or the CPU)");
  CutoffGrid& grid = layout.grid;
  for (int a = 0; a < 3; ++a)
    if (lattice.dims[a] > (std::int64_t{1} << 30))
      throw Error("cutoff summation on the GPU: lattices of more than 2^30 points along an axis are not supported");
  grid.nx = static_cast<int>(lattice.dims[0]);
  grid.ny = static_cast<int>(lattice.dims[1]);
  grid.nz = static_cast<int>(lattice.dims[2]);
  grid.margin = static_cast<int>(std::ceil(layout.reach / kRegion)) + 1;
  std::int64_t bins = 1;
  for (int a = 0; a < 3; ++a) {
    grid.regions[a] = static_cast<int>((lattice.dims[a] + kRegion - 1) / kRegion);
    grid.bins[a] = grid.regions[a] + 2 * grid.margin;
    bins *= grid.bins[a];
  }
  if (bins >= (std::int64_t{1} << 31) - 1)
    throw Error("cutoff summation on the GPU: " + std::to_string(bins) + " bins of " +
                std::to_string(kRegion * lattice.spacing) + " A are too many; use a coarser lattice or the CPU");
  const double reach2 = layout.reach * layout.reach;
  for (int dz = -grid.margin; dz <= grid.margin; ++dz)
    for (int dy = -grid.margin; dy <= grid.margin; ++dy) {
      const double yz2 = bin_gap(dy) * bin_gap(dy) + bin_gap(dz) * bin_gap(dz);
      int first = grid.margin + 1, last = -grid.margin - 1;
      for (int dx = -grid.margin; dx <= grid.margin; ++dx)
        if (bin_gap(dx) * bin_gap(dx) + yz2 < reach2) first = std::min(first, dx), last = std::max(last, dx);
      if (first <= last) layout.neighbour_runs.push_back(make_int4(dy, dz, first, last));
    }
  return layout;
}

// The bin of an atom at x, y, z (Angstrom from the lattice's origin), or -1 when it lies beyond
// the reach of every lattice point; float64 with no operation a compiler could fuse.
__device__ inline int bin_of(double x, double y, double z, double spacing, const CutoffGrid& grid, double reach2) {
  const double u[3] = {x / spacing, y / spacing, z / spacing};
  const int points[3] = {grid.nx, grid.ny, grid.nz};
  double gap2 = 0;
  int bin[3];
  for (int a = 0; a < 3; ++a) {
    const double upper = static_cast<double>(points[a] - 1);
    const double g = u[a] < 0 ? -u[a] : (u[a] > upper ? u[a] - upper : 0.0);
    gap2 += mul_rn(g, g);
    const double b = floor(u[a] / kRegion) + grid.margin, last = static_cast<double>(grid.bins[a] - 1);
    bin[a] = static_cast<int>(b < 0.0 ? 0.0 : (b > last ? last : b));
  }
  if (!(gap2 < reach2)) return -1;  // beyond the cutoff of every point
  return (bin[2] * grid.bins[1] + bin[1]) * grid.bins[0] + bin[0];
}

// One binned set of atoms on the GPU that binned them: the atoms in bin order, two quads each,
// and bin b's atoms [bin_start[b], bin_start[b + 1]).
template <class Real>
struct BinsSource {
  gpu::Source<Quad<Real>> atoms;
  gpu::Source<int> bin_start;  // empty: no atoms in the set
  int size = 0;
};

// One binned set of atoms as a device reads it: where they were binned, or a copy.
template <class Real>
struct DeviceBins {
  typename gpu::Source<Quad<Real>>::View atoms;
  typename gpu::Source<int>::View bin_start;
  int size = 0;
  DeviceBins(const BinsSource<Real>& source, int device)
      : atoms(source.atoms.on(device)), bin_start(source.bin_start.on(device)), size(source.size) {}
};

// Atoms binned on one GPU: a key per atom (its bin, or bin_count + bin for those that may sit
// on a lattice point, or 2 bin_count for those beyond reach of every point), a stable radix
// sort of the atoms by key (so a bin keeps the input's order, and the sums' order depends on
// the input alone), each bin's start found by binary search, and the atoms split in their
// sorted places.
// The arrays come from the scratch cache (cuda/scratch_buffer.hpp; each call synchronises its
// streams before they go, and a kept LatticeBins frees them with their GPU current): mapping and
// unmapping them took a call on Parboil's input ~0.3 ms of its 3.6 (CUPTI trace, session 45).
template <class Real>
struct DeviceBinned {
  int device = 0;
  cuda::ScratchBuffer atoms;                      // the regular set's quads, then the on-lattice set's
  cuda::ScratchBuffer regular_start, on_lattice_start;  // bins + 1 ints each
  std::size_t starts = 0;                         // bins + 1
  int regular = 0, on_lattice = 0;                // atoms in each set
  const Quad<Real>* quads() const { return reinterpret_cast<const Quad<Real>*>(atoms.data()); }
  BinsSource<Real> regular_source() const {
    return {{quads(), 2 * static_cast<std::size_t>(regular), device},
            {reinterpret_cast<const int*>(regular_start.data()), starts, device}, regular};
  }
  BinsSource<Real> on_lattice_source() const {
    if (on_lattice == 0) return {};  // the usual case: no second pass
    return {{quads() + 2 * static_cast<std::size_t>(regular), 2 * static_cast<std::size_t>(on_lattice), device},
            {reinterpret_cast<const int*>(on_lattice_start.data()), starts, device}, on_lattice};
  }
};

template <class Real>
__global__ void bin_key_kernel(long long count, double spacing, CutoffGrid grid, double reach2,
                               unsigned bin_count, const double* __restrict__ x, const double* __restrict__ y,
                               const double* __restrict__ z, const double* __restrict__ coefficient,
                               unsigned* __restrict__ key, int* __restrict__ atom) {
  const long long n = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (n >= count) return;
  const int bin = bin_of(x[n], y[n], z[n], spacing, grid, reach2);
  Quad<Real> xy, zc;
  bool singular = false;
  gpu::split_atom(x[n], y[n], z[n], coefficient[n], spacing, xy, zc, singular);
  key[n] = bin < 0 ? 2 * bin_count : static_cast<unsigned>(bin) + (singular ? bin_count : 0u);
  atom[n] = static_cast<int>(n);
}

__device__ __forceinline__ int lower_bound(const unsigned* keys, int count, unsigned value) {
  int lo = 0, hi = count;
  while (lo < hi) {
    const int mid = (lo + hi) >> 1;
    if (keys[mid] < value) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

// Bin b's first atom in each set (b = bin_count: the set's end), from the sorted keys.
__global__ void bin_start_kernel(int count, unsigned bin_count, const unsigned* __restrict__ keys,
                                 int* __restrict__ regular_start, int* __restrict__ on_lattice_start) {
  const long long b = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (b > bin_count) return;
  const int regular_total = lower_bound(keys, count, bin_count);
  regular_start[b] = lower_bound(keys, count, static_cast<unsigned>(b));
  on_lattice_start[b] = lower_bound(keys, count, bin_count + static_cast<unsigned>(b)) - regular_total;
}

template <class Real>
__global__ void binned_split_kernel(int kept, double spacing, const int* __restrict__ atom,
                                    const double* __restrict__ x, const double* __restrict__ y,
                                    const double* __restrict__ z, const double* __restrict__ coefficient,
                                    Quad<Real>* __restrict__ out) {
  const int p = blockIdx.x * blockDim.x + threadIdx.x;
  if (p >= kept) return;
  const int n = atom[p];
  bool unused = false;
  gpu::split_atom(x[n], y[n], z[n], coefficient[n], spacing, out[2 * p], out[2 * p + 1], unused);
}

template <class Real>
DeviceBinned<Real> bin_on_device(const gpu::AtomColumns& prepared, const Lattice& lattice,
                                 const CutoffLayout& layout) {
  DeviceBinned<Real> out;
  out.device = prepared.device;
  const std::int64_t n = prepared.count;
  if (n > (std::int64_t{1} << 30)) throw Error("more than 2^30 atoms are not supported on the GPU");
  const std::int64_t bins = layout.bin_count();
  if (2 * bins >= (std::int64_t{1} << 32))  // the sort's keys (layout_for refuses as many already)
    throw Error("cutoff summation on the GPU: " + std::to_string(bins) + " bins are too many");
  const auto bin_count = static_cast<unsigned>(bins);
  const auto count = static_cast<int>(n);
  // The sort's buffers from the scratch cache (done with at the synchronisation below): a map's
  // calls repeat, and mapping and unmapping device memory for them cost each call ~0.1 ms.
  const auto atoms_count = static_cast<std::size_t>(n);
  cuda::ScratchBuffer key_storage = gpu::scratch_of<unsigned>(atoms_count),
                      sorted_key_storage = gpu::scratch_of<unsigned>(atoms_count),
                      atom_storage = gpu::scratch_of<int>(atoms_count),
                      sorted_atom_storage = gpu::scratch_of<int>(atoms_count);
  auto* key = gpu::scratch_as<unsigned>(key_storage);
  auto* sorted_key = gpu::scratch_as<unsigned>(sorted_key_storage);
  auto* atom = gpu::scratch_as<int>(atom_storage);
  auto* sorted_atom = gpu::scratch_as<int>(sorted_atom_storage);
  cuda::ScratchBuffer scratch;  // the sort's; here, so that it goes back only after the synchronisation
  if (n > 0) {
    bin_key_kernel<Real><<<gpu::blocks_for(n), gpu::kPrepareThreads>>>(
        n, lattice.spacing, layout.grid, layout.reach * layout.reach, bin_count, prepared.x.data(), prepared.y.data(),
        prepared.z.data(), prepared.charge.data(), key, atom);
    NBKIT_CUDA_CHECK_LAUNCH();
    int end_bit = 1;
    while (end_bit < 32 && (std::uint64_t{1} << end_bit) <= 2 * static_cast<std::uint64_t>(bin_count)) ++end_bit;
    std::size_t bytes = 0;
    NBKIT_CUDA_CHECK(cuda::sort_pairs(nullptr, bytes, key, sorted_key, atom, sorted_atom, count, 0, end_bit));
    scratch = gpu::scratch_of<unsigned char>(bytes);
    NBKIT_CUDA_CHECK(cuda::sort_pairs(gpu::scratch_as<unsigned char>(scratch), bytes, key, sorted_key, atom,
                                      sorted_atom, count, 0, end_bit));
  }
  out.starts = static_cast<std::size_t>(bins) + 1;
  out.regular_start = gpu::scratch_of<int>(out.starts);
  out.on_lattice_start = gpu::scratch_of<int>(out.starts);
  int* regular_start = gpu::scratch_as<int>(out.regular_start);
  int* on_lattice_start = gpu::scratch_as<int>(out.on_lattice_start);
  bin_start_kernel<<<gpu::blocks_for(bins + 1), gpu::kPrepareThreads>>>(count, bin_count, sorted_key, regular_start,
                                                                         on_lattice_start);
  NBKIT_CUDA_CHECK_LAUNCH();
  NBKIT_CUDA_CHECK(cudaMemcpy(&out.regular, regular_start + bins, sizeof(int), cudaMemcpyDeviceToHost));
  NBKIT_CUDA_CHECK(cudaMemcpy(&out.on_lattice, on_lattice_start + bins, sizeof(int), cudaMemcpyDeviceToHost));
  const int kept = out.regular + out.on_lattice;
  out.atoms = gpu::scratch_of<Quad<Real>>(2 * static_cast<std::size_t>(kept));
  if (kept > 0) {
    binned_split_kernel<Real><<<gpu::blocks_for(kept), gpu::kPrepareThreads>>>(
        kept, lattice.spacing, sorted_atom, prepared.x.data(), prepared.y.data(), prepared.z.data(),
        prepared.charge.data(), gpu::scratch_as<Quad<Real>>(out.atoms));
    NBKIT_CUDA_CHECK_LAUNCH();
  }
  NBKIT_CUDA_CHECK(cudaDeviceSynchronize());  // the other GPUs copy from it next
  return out;
}

template <class Real, class Law, bool kCheckSingular, bool kAccumulate>
void launch(const CutoffLayout& layout, const DeviceBins<Real>& bins, const cuda::DeviceBuffer<int4>& runs,
            const Law& law, Real singular_r2, std::int64_t first, std::int64_t last, double scale, double* out,
            cudaStream_t stream) {
  const CutoffGrid& grid = layout.grid;
  const int region_x_first = static_cast<int>(first / grid.ny / kRegion);
  const int region_x_last = static_cast<int>((last - 1) / grid.ny / kRegion);
  const long long blocks =
      static_cast<long long>(region_x_last - region_x_first + 1) * grid.regions[1] * grid.regions[2];
  if (blocks > 0x7fffffffLL) throw Error("cutoff summation on the GPU: too many regions in one slab");
  const Real filter_r2 = static_cast<Real>(layout.reach * layout.reach);
  cutoff_sum_kernel<Real, Law, kCheckSingular, kAccumulate><<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(
      grid, bins.atoms.data, bins.bin_start.data, runs.data(), static_cast<int>(runs.size()), law, singular_r2,
      filter_r2, region_x_first, first, last, scale, out);
  NBKIT_CUDA_CHECK_LAUNCH();
}

// Rows per slab: whole layers of regions (kRegion x-planes), about 8 waves of blocks (so
// that copies overlap kernels on big lattices and several GPUs balance), at most a third
// of free memory per slab buffer.
std::int64_t cutoff_slab_rows(const CutoffLayout& layout, std::int64_t total_rows, int device_count,
                              int resident_blocks, std::size_t free_bytes) {
  const CutoffGrid& grid = layout.grid;
  const std::int64_t layer_rows = static_cast<std::int64_t>(kRegion) * grid.ny;
  if (const char* forced = std::getenv("NBKIT_CUDA_SLAB_ROWS"))  // tests: force many slabs
    return std::clamp<std::int64_t>(std::atoll(forced), 1, total_rows);
  const std::int64_t blocks_per_layer = static_cast<std::int64_t>(grid.regions[1]) * grid.regions[2];
  std::int64_t layers = std::max<std::int64_t>(1, 8 * static_cast<std::int64_t>(resident_blocks) / blocks_per_layer);
  std::int64_t rows = layers * layer_rows;
  if (device_count > 1) rows = std::min(rows, std::max(layer_rows, total_rows / (8 * device_count)));
  const std::int64_t row_bytes = static_cast<std::int64_t>(sizeof(double)) * grid.nz;
  const std::int64_t affordable = static_cast<std::int64_t>(free_bytes / 3) / row_bytes;
  if (affordable < std::min(layer_rows, total_rows))
    throw Error("GPU: a layer of " + std::to_string(layer_rows) + " lattice rows needs " +
                format_bytes(static_cast<std::uint64_t>(3 * layer_rows * row_bytes)) + " but only " +
                format_bytes(free_bytes) + " are free");
  rows = std::min(rows, affordable);
  rows = std::max<std::int64_t>(layer_rows, rows / layer_rows * layer_rows);
  return std::clamp<std::int64_t>(rows, 1, total_rows);
}

template <class Real, class Law>
double run_device(const gpu::Worker& worker, const BinsSource<Real>& regular, const BinsSource<Real>& on_lattice,
                  const CutoffLayout& layout, const Law& law, gpu::SharedRows& shared) {
  const int device = worker.device;
  const RowRange& rows = shared.rows();
  const Lattice& lattice = *rows.lattice;
  const DeviceBins<Real> regular_bins(regular, device), on_lattice_bins(on_lattice, device);
  cuda::DeviceBuffer<int4> runs(layout.neighbour_runs.size());
  runs.upload(layout.neighbour_runs.data(), layout.neighbour_runs.size());

  int sms = 0, blocks_per_sm = 0;
  NBKIT_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  NBKIT_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
      &blocks_per_sm, cutoff_sum_kernel<Real, Law, false, false>, kThreads, 0));
  std::size_t free_bytes = 0, total_bytes = 0;
  NBKIT_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  const std::int64_t slab_rows = cutoff_slab_rows(layout, shared.total(), shared.device_count(),
                                                  sms * std::max(blocks_per_sm, 1), free_bytes);
  const Law lattice_law = gpu::in_lattice_units(law, lattice.spacing);
  const Real singular_r2 =
      static_cast<Real>(singular_distance * singular_distance / (lattice.spacing * lattice.spacing));
  // The smallest slab the scheduler cuts (the last ones): a wave of blocks in whole layers of
  // regions, so no slab leaves most SMs idle (one layer of Parboil's lattice is 256 blocks).
  const std::int64_t layer_rows = kRegion * lattice.dims[1];
  const std::int64_t blocks_per_layer = static_cast<std::int64_t>(layout.grid.regions[1]) * layout.grid.regions[2];
  const std::int64_t wave_layers =
      (static_cast<std::int64_t>(sms) * std::max(blocks_per_sm, 1) + blocks_per_layer - 1) / blocks_per_layer;
  return gpu::run_slabs(shared, worker, slab_rows, std::min<std::int64_t>(slab_rows, wave_layers * layer_rows),
                        [&](std::int64_t first, std::int64_t last, double* out, cudaStream_t stream) {
                          launch<Real, Law, false, false>(layout, regular_bins, runs, lattice_law, singular_r2, first,
                                                          last, rows.prefactor, out, stream);
                          if (on_lattice_bins.size > 0)
                            launch<Real, Law, true, true>(layout, on_lattice_bins, runs, lattice_law, singular_r2,
                                                          first, last, rows.prefactor, out, stream);
                        });
}

// Every device's share of the rows, from the binned atoms on one GPU.
template <class Real, class Law>
void run_binned(const BinsSource<Real>& regular, const BinsSource<Real>& on_lattice, const CutoffLayout& layout,
                const Law& law, const RowRange& rows, const std::vector<int>& devices, CudaRunInfo* info) {
  gpu::SharedRows shared(rows, devices);
  const std::vector<double> kernel_seconds = gpu::on_each_device(devices, shared, [&](const gpu::Worker& worker) {
    return run_device<Real, Law>(worker, regular, on_lattice, layout, law, shared);
  });
  if (info) info->kernel_seconds = *std::max_element(kernel_seconds.begin(), kernel_seconds.end());
}

// The atoms binned for the whole lattice: the same for every slab of a streamed map, so kept
// between them (RowRange::keep) on the GPU that binned them.
template <class Real>
struct LatticeBins : KeptWork {
  double cutoff = 0;
  CutoffLayout layout;
  DeviceBinned<Real> binned;
  ~LatticeBins() override {  // freed with their GPU current, whichever thread ends the stream
    int previous = 0;
    if (cudaGetDevice(&previous) != cudaSuccess) return;
    cudaSetDevice(binned.device);
    binned = DeviceBinned<Real>{};
    cudaSetDevice(previous);
  }
};

// The atoms imaged (periodic box), prepared and binned on the first GPU listed (GPU arrays: on
// theirs), or the bins kept from an earlier slab of the same stream.
template <class Real, class Law>
void run_devices(const MapAtoms& input, const std::optional<Vec3>& periodic_box, const Law& law, const RowRange& rows,
                 const std::vector<int>& devices, CudaRunInfo* info) {
  const gpu::KeepCurrentDevice keep;
  std::unique_ptr<KeptWork>* kept = rows.keep ? &rows.keep->cutoff_bins : nullptr;
  const LatticeBins<Real>* bins = nullptr;
  if (kept && *kept)
    if (const auto* k = dynamic_cast<const LatticeBins<Real>*>(kept->get()); k && k->cutoff == law.cutoff) bins = k;
  std::unique_ptr<LatticeBins<Real>> made;
  if (!bins) {
    made = std::make_unique<LatticeBins<Real>>();
    made->cutoff = law.cutoff;
    made->layout = layout_for(*rows.lattice, law.cutoff);
    gpu::AtomColumns atoms = gpu::atom_columns(input, devices.front());
    if (periodic_box) atoms = gpu::periodic_images_on_device(atoms, *periodic_box, *rows.lattice, law.cutoff);
    gpu::prepare_on_device(atoms, *rows.lattice, law);
    made->binned = bin_on_device<Real>(atoms, *rows.lattice, made->layout);
    bins = made.get();
  }
  run_binned<Real, Law>(bins->binned.regular_source(), bins->binned.on_lattice_source(), bins->layout, law, rows,
                        devices, info);
  if (made && kept) *kept = std::move(made);
}

}  // namespace

void cutoff_cuda(const MapAtoms& atoms, const std::optional<Vec3>& periodic_box, const CutoffMapLaw& law,
                 const RowRange& rows, bool double_precision, const std::vector<int>& requested_devices,
                 CudaRunInfo* info) {
  const std::vector<int> devices = gpu::resolve_devices(requested_devices, info);
  std::visit(
      [&](const auto& the_law) {
        using Law = std::decay_t<decltype(the_law)>;
        if (double_precision) run_devices<double, Law>(atoms, periodic_box, the_law, rows, devices, info);
        else run_devices<float, Law>(atoms, periodic_box, the_law, rows, devices, info);
      },
      law);
}

}  // namespace nbkit::maps
