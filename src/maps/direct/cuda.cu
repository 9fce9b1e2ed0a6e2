// Direct summation on NVIDIA GPUs, on one or several devices. (No fmt here: its
// compile-time format strings do not pass through nvcc.)
//
// Design (seed 000, "DCS CUDA" slides; Stone et al., J Comp Chem 28:2618, 2007; then past
// them on Hopper, ../shared/PERFORMANCE.md "Lessons"):
// - The whole lattice in one launch per slab of rows (no plane-per-launch), so every SM is
//   busy; a thread owns P consecutive points of one row (unroll-and-jam over z): each atom,
//   once read, serves P evaluations, and dx^2 + dy^2 is computed once per atom for them.
// - Atoms stream through shared memory in tiles of one block's width, read as 16-byte
//   broadcasts; any atom count works, with no constant-memory limit and no host stalls.
// - One rsqrt.approx (the special-function unit, MUFU.RSQ) and three float32 operations
//   per evaluation: the MUFU pipe is the limit (~4.15e12/s on an H100/H200), so Coulomb maps
//   take one rsqrt in 8 on the FP32 pipe instead (cuda::reciprocal_sqrt_fp32_pipe), where
//   the issue slots allow it (kFp32PipeRsqrt).
// - Accuracy as on the CPU (cpu.cpp): coordinates in lattice units with each atom's x, y, z
//   split into an integer lattice index and a residual, so distances are exact to float32
//   rounding of the distance itself; float32 sums over a tile of atoms, float64 across tiles.
// - Padding instead of branches: a row's last thread computes up to P-1 points past the row
//   end and does not store them. No test for an atom on top of a lattice point in the hot
//   loop: the few atoms within singular_distance of a lattice point go through a second,
//   checked pass that adds their share.
// - Small lattices with many atoms split the atoms into segments (a second grid dimension)
//   so that the launch has enough blocks to keep every SM busy to the end; the segments'
//   sums are added in a fixed order by a reduction kernel. The segment count depends only
//   on the input, so results do not depend on slabs, devices or GPU model.
// - Several GPUs: one host thread per device takes slabs of rows from a shared counter
//   (the slides' dynamic distribution); every point is computed the same way on any device,
//   so the result does not depend on how slabs fall.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "cuda/check.hpp"
#include "cuda/device_buffer.hpp"
#include "cuda/scratch_buffer.hpp"
#include "cuda/stream.hpp"
#include "maps/device_atoms.cuh"
#include "maps/device_input.cuh"
#include "maps/kernels.hpp"
#include "maps/gpu_slabs.cuh"
#include "nbkit/core/backend.hpp"
#include "nbkit/core/memory.hpp"
#include "nbkit/maps.hpp"

namespace nbkit::maps {

namespace {

constexpr int kBlock = 128;  // threads per block = atoms per shared-memory tile
// Points a thread (unroll-and-jam over z): 16 where the row allows (plan_for). Measured on an
// H100 (session 23, 512x512x128, 100k atoms): 8 points 3.70e12 evaluations/s (89.6% of the
// rsqrt ceiling), 16 points 3.88e12 (94.1%), 32 points (128 registers) no faster.
constexpr int kPointsPerThread = 16;

using gpu::Quad;
using gpu::DeviceMath;
using gpu::reciprocal_sqrt;
using gpu::in_lattice_units;

// Whether point p of a thread's P takes its reciprocal square root on the FP32 pipe
// (kFp32Pipe): every 8th, so threads of 8 and 16 points compute each point alike.
template <bool kFp32Pipe>
__device__ constexpr bool on_fp32_pipe(int p) {
  return kFp32Pipe && p % 8 == 7;
}

// Sums atoms [segment * atoms_per_segment, ...) (segment = blockIdx.y) for P points of a
// row per thread and stores scale * sum to out[segment * segment_stride + point] (or adds
// it, kAccumulate). kCheckSingular leaves out atoms within singular distance of a point.
template <class Real, class Law, int P, bool kFp32Pipe, bool kCheckSingular, bool kAccumulate>
__global__ void __launch_bounds__(kBlock)
    direct_sum_kernel(const Quad<Real>* __restrict__ atoms, int natoms, int atoms_per_segment, Law law,
                      Real singular_r2, long long row_begin, long long row_end, int ny, int nz, int chunks_per_row,
                      double scale, double* __restrict__ out, long long segment_stride) {
  __shared__ Quad<Real> tile[2 * kBlock];
  const long long thread = static_cast<long long>(blockIdx.x) * kBlock + threadIdx.x;
  const long long row = row_begin + thread / chunks_per_row;
  const int k0 = static_cast<int>(thread % chunks_per_row) * P;
  const bool active = row < row_end;
  const Real i = active ? static_cast<Real>(row / ny) : Real(0);
  const Real j = active ? static_cast<Real>(row % ny) : Real(0);
  // dz from the thread's first point's z, and from every 8th point's after it (k0 + 8 h,
  // exact): dz = (k0 + 8 h - z_index) - z_residual + (p - 8 h) stays within 8 lattice units of
  // the exactly computed start, so its rounding stays that of a distance under 8 spacings.
  constexpr int kBases = P >= 8 ? P / 8 : 1;
  Real k_base[kBases];
#pragma unroll
  for (int b = 0; b < kBases; ++b) k_base[b] = static_cast<Real>(k0 + 8 * b);
  const int first_atom = blockIdx.y * atoms_per_segment;
  const int last_atom = min(natoms, first_atom + atoms_per_segment);
  const DeviceMath<Real> math;
  double sum[P];
#pragma unroll
  for (int p = 0; p < P; ++p) sum[p] = 0;

  for (int base = first_atom; base < last_atom; base += kBlock) {
    const int count = min(kBlock, last_atom - base);
    __syncthreads();  // the previous tile is no longer read
    if (threadIdx.x < count) {
      tile[2 * threadIdx.x] = atoms[2 * (base + threadIdx.x)];
      tile[2 * threadIdx.x + 1] = atoms[2 * (base + threadIdx.x) + 1];
    }
    __syncthreads();
    if (!active) continue;
    Real acc[P];
#pragma unroll
    for (int p = 0; p < P; ++p) acc[p] = 0;
    for (int a = 0; a < count; ++a) {
      const Quad<Real> xy = tile[2 * a], zc = tile[2 * a + 1];
      const Real dx = (i - xy.a) - xy.b, dy = (j - xy.c) - xy.d;  // first subtractions exact
      const Real dxy2 = dx * dx + dy * dy;
      Real dz_base[kBases];
#pragma unroll
      for (int b = 0; b < kBases; ++b) dz_base[b] = (k_base[b] - zc.a) - zc.b;
#pragma unroll
      for (int p = 0; p < P; ++p) {
        const Real dz = dz_base[p / 8] + static_cast<Real>(p % 8);
        const Real r2 = dz * dz + dxy2;
        Real rinv;
        if (on_fp32_pipe<kFp32Pipe>(p)) rinv = cuda::reciprocal_sqrt_fp32_pipe(r2);  // folded once unrolled
        else rinv = reciprocal_sqrt(r2);
        if constexpr (kCheckSingular) rinv = r2 > singular_r2 ? rinv : Real(0);  // nbkit::singular_distance
        acc[p] += maps::law_term(law, math, zc.c, r2, rinv);
      }
    }
#pragma unroll
    for (int p = 0; p < P; ++p) sum[p] += static_cast<double>(acc[p]);
  }
  if (!active) return;
  double* row_out = out + blockIdx.y * segment_stride + (row - row_begin) * nz;
#pragma unroll
  for (int p = 0; p < P; ++p)
    if (k0 + p < nz) {
      if constexpr (kAccumulate) row_out[k0 + p] += scale * sum[p];
      else row_out[k0 + p] = scale * sum[p];
    }
}

// out[i] = scale * sum over segments s of partial[s * count + i], s in order.
__global__ void reduce_segments_kernel(const double* __restrict__ partial, int segments, long long count, double scale,
                                       double* __restrict__ out) {
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    double total = 0;
    for (int s = 0; s < segments; ++s) total += partial[s * count + i];
    out[i] = scale * total;
  }
}

// How the lattice is cut: points per thread, atom segments (from the input alone, so the
// bits never depend on the device), and rows per slab.
struct Plan {
  int points_per_thread = kPointsPerThread;
  int chunks_per_row = 1;
  int segments = 1;
  int atoms_per_segment = 1;
};

Plan plan_for(const Lattice& lattice, std::int64_t rows, std::int64_t natoms) {
  Plan plan;
  const std::int64_t nz = lattice.dims[2];
  // 16 points a thread where that pads the rows no more than 8 would (a row of 24 takes 8s);
  // a thread's points are computed the same way either way (direct_sum_kernel), so this
  // changes no bits.
  const std::int64_t padded16 = (nz + 15) / 16 * 16, padded8 = (nz + 7) / 8 * 8;
  plan.points_per_thread = nz < 8 ? 1 : padded16 <= padded8 ? kPointsPerThread : 8;
  plan.chunks_per_row = static_cast<int>((nz + plan.points_per_thread - 1) / plan.points_per_thread);
  const std::int64_t blocks = (rows * plan.chunks_per_row + kBlock - 1) / kBlock;
  // Enough blocks to fill the GPU to the end: >= 32768 (about 25 waves of a 132-SM GPU).
  const std::int64_t for_fill = (32768 + blocks - 1) / blocks;
  // Short blocks, so the last wave is short and several GPUs finish together: up to 8
  // segments of >= 16384 atoms.
  const std::int64_t for_balance = std::min<std::int64_t>(8, natoms / 16384);
  // Segments of >= 2048 atoms, at most 64.
  plan.segments = static_cast<int>(
      std::clamp<std::int64_t>(std::min<std::int64_t>(std::max(for_fill, for_balance), natoms / 2048), 1, 64));
  if (natoms == 0) {  // every atom sits on a lattice point: only the checked pass runs
    plan.atoms_per_segment = kBlock;
    return plan;
  }
  const std::int64_t per_segment = (natoms + plan.segments - 1) / plan.segments;
  plan.atoms_per_segment = static_cast<int>(((per_segment + kBlock - 1) / kBlock) * kBlock);  // whole tiles
  plan.segments = static_cast<int>(std::max<std::int64_t>(1, (natoms + plan.atoms_per_segment - 1) / plan.atoms_per_segment));
  return plan;
}

// Rows per slab: ~2e11 evaluations (tens of milliseconds, so several GPUs balance and the
// progress bar moves), at least 8 waves of blocks, at most a third of free memory.
std::int64_t plan_slab_rows(const Plan& plan, std::int64_t total_rows, std::int64_t nz, std::int64_t natoms,
                            int device_count, int resident_blocks, std::size_t free_bytes) {
  if (const char* forced = std::getenv("NBKIT_CUDA_SLAB_ROWS"))  // tests: force many slabs
    return std::clamp<std::int64_t>(std::atoll(forced), 1, total_rows);
  std::int64_t rows = static_cast<std::int64_t>(2e11 / (static_cast<double>(nz) * std::max<std::int64_t>(natoms, 1)));
  const std::int64_t wave_rows =
      std::max<std::int64_t>(1, static_cast<std::int64_t>(resident_blocks) * kBlock / plan.chunks_per_row / plan.segments);
  rows = std::max(rows, 8 * wave_rows);
  if (device_count > 1) rows = std::min(rows, std::max<std::int64_t>(wave_rows, total_rows / (8 * device_count)));
  rows = (rows + wave_rows - 1) / wave_rows * wave_rows;  // whole waves
  const std::size_t bytes_per_row = sizeof(double) * static_cast<std::size_t>(nz) * (plan.segments + 2);
  rows = std::min<std::int64_t>(rows, static_cast<std::int64_t>(free_bytes / 3 / bytes_per_row));
  return std::clamp<std::int64_t>(rows, 1, total_rows);
}

template <class Real, class Law, int P, bool kFp32Pipe, bool kCheckSingular, bool kAccumulate>
void launch(const Plan& plan, int segments, const Quad<Real>* atoms, int natoms, const Law& law, Real singular_r2,
            std::int64_t first, std::int64_t last, const Lattice& lattice, double scale, double* out,
            std::int64_t segment_stride, cudaStream_t stream) {
  const long long threads = static_cast<long long>(last - first) * plan.chunks_per_row;
  const dim3 blocks(static_cast<unsigned>((threads + kBlock - 1) / kBlock), static_cast<unsigned>(segments));
  direct_sum_kernel<Real, Law, P, kFp32Pipe, kCheckSingular, kAccumulate><<<blocks, kBlock, 0, stream>>>(
      atoms, natoms, segments == 1 ? natoms : plan.atoms_per_segment, law, singular_r2, first, last,
      static_cast<int>(lattice.dims[1]), static_cast<int>(lattice.dims[2]), plan.chunks_per_row, scale, out,
      segment_stride);
  NBKIT_CUDA_CHECK_LAUNCH();
}

template <class Real, class Law, int P, bool kFp32Pipe>
void run_slab(const Plan& plan, const typename gpu::Source<Quad<Real>>::View& regular,
              const typename gpu::Source<Quad<Real>>::View& on_lattice, const Law& law, Real singular_r2, std::int64_t first,
              std::int64_t last, const Lattice& lattice, double prefactor, cuda::ScratchBuffer& partial,
              double* out, cudaStream_t stream) {
  const int regular_atoms = static_cast<int>(regular.size / 2);
  const long long points = static_cast<long long>(last - first) * lattice.dims[2];
  if (plan.segments == 1) {
    launch<Real, Law, P, kFp32Pipe, false, false>(plan, 1, regular.data, regular_atoms, law, singular_r2, first,
                                                  last, lattice, prefactor, out, 0, stream);
  } else {
    launch<Real, Law, P, kFp32Pipe, false, false>(plan, plan.segments, regular.data, regular_atoms, law,
                                                  singular_r2, first, last, lattice, 1.0, partial.data(), points,
                                                  stream);
    const int blocks = static_cast<int>(std::min<long long>((points + 255) / 256, 65535));
    reduce_segments_kernel<<<blocks, 256, 0, stream>>>(partial.data(), plan.segments, points, prefactor, out);
    NBKIT_CUDA_CHECK_LAUNCH();
  }
  if (on_lattice.size > 0)
    launch<Real, Law, P, false, true, true>(plan, 1, on_lattice.data, static_cast<int>(on_lattice.size / 2),
                                            law, singular_r2, first, last, lattice, prefactor, out, 0, stream);
}

// Whether one reciprocal square root in 8 goes to the FP32 pipe (on_fp32_pipe): Coulomb in
// float32. Measured on an H100 (session 23, 512x512x128, 100k atoms, 16 points a thread): none
// 3.88e12 evaluations/s, 1 in 8 3.95e12 (95% of the MUFU ceiling), 3 in 16 3.85e12: the loop is
// then issue-bound (16 points an atom: 102 instructions with 14 MUFU against 80 with 16);
// the float32 error on the bundled proteins the same to two digits (1a63 7.2e-7 -> 7.3e-7, hca
// 1.39e-6 -> 1.40e-6). Debye-Hueckel: none; its exp already fills the FP32 pipe's slack
// (1.63e12 with none, 1.57e12 with 1 in 8).
template <class Real, class Law>
constexpr bool kFp32PipeRsqrt = std::is_same_v<Real, float> && std::is_same_v<Law, CoulombLaw>;

// Calls f(points) with the plan's points a thread as an integral constant.
template <class F>
void with_points(const Plan& plan, F&& f) {
  using std::integral_constant;
  if (plan.points_per_thread == kPointsPerThread) return f(integral_constant<int, kPointsPerThread>{});
  if (plan.points_per_thread == 8) return f(integral_constant<int, 8>{});
  return f(integral_constant<int, 1>{});
}

// One device's share: the atoms copied there once from the GPU that split them, then slabs of
// whole waves of rows.
template <class Real, class Law>
double run_device(const gpu::Worker& worker, const gpu::Source<Quad<Real>>& regular_atoms,
                  const gpu::Source<Quad<Real>>& on_lattice_atoms, const Plan& plan, const Law& law,
                  gpu::SharedRows& shared) {
  const int device = worker.device;
  const RowRange& rows = shared.rows();
  const Lattice& lattice = *rows.lattice;
  const std::int64_t nz = lattice.dims[2];
  const typename gpu::Source<Quad<Real>>::View regular = regular_atoms.on(device),
                                               on_lattice = on_lattice_atoms.on(device);

  int sms = 0, blocks_per_sm = 0;
  NBKIT_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  with_points(plan, [&](auto points) {
    NBKIT_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
        &blocks_per_sm, direct_sum_kernel<Real, Law, points(), kFp32PipeRsqrt<Real, Law>, false, false>, kBlock,
        0));
  });
  std::size_t free_bytes = 0, total_bytes = 0;
  NBKIT_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  const std::int64_t slab_rows =
      plan_slab_rows(plan, shared.total(), nz, static_cast<std::int64_t>(regular.size / 2),
                     shared.device_count(), sms * std::max(blocks_per_sm, 1), free_bytes);
  const std::size_t slab_points = static_cast<std::size_t>(slab_rows * nz);
  if (slab_points * sizeof(double) * (plan.segments + 2) > free_bytes)
    throw Error("GPU " + std::to_string(device) + ": one lattice row needs " +
                format_bytes(nz * sizeof(double) * (plan.segments + 2)) + " but only " + format_bytes(free_bytes) +
                " are free");
  cuda::ScratchBuffer partial(plan.segments > 1 ? slab_points * plan.segments : 0);  // kept between calls
  const Law lattice_law = in_lattice_units(law, lattice.spacing);
  const Real singular_r2 =
      static_cast<Real>(singular_distance * singular_distance / (lattice.spacing * lattice.spacing));
  // Slabs in whole waves of blocks, so no slab ends on a partial wave.
  const std::int64_t wave_rows = std::max<std::int64_t>(
      1, static_cast<std::int64_t>(sms) * std::max(blocks_per_sm, 1) * kBlock / plan.chunks_per_row / plan.segments);
  return gpu::run_slabs(shared, worker, slab_rows, wave_rows,
                        [&](std::int64_t first, std::int64_t last, double* out, cudaStream_t stream) {
                          with_points(plan, [&](auto points) {
                            run_slab<Real, Law, points(), kFp32PipeRsqrt<Real, Law>>(
                                plan, regular, on_lattice, lattice_law, singular_r2, first, last, lattice,
                                rows.prefactor, partial, out, stream);
                          });
                        });
}

// Every device's share of the rows, from the atoms split on one GPU.
template <class Real, class Law>
void run_split(const gpu::Source<Quad<Real>>& regular, const gpu::Source<Quad<Real>>& on_lattice, const Law& law,
               const RowRange& rows, const std::vector<int>& devices, CudaRunInfo* info) {
  const Plan plan = plan_for(*rows.lattice, rows.lattice->rows(), static_cast<std::int64_t>(regular.size / 2));
  gpu::SharedRows shared(rows, devices);
  const std::vector<double> kernel_seconds = gpu::on_each_device(devices, shared, [&](const gpu::Worker& worker) {
    return run_device<Real, Law>(worker, regular, on_lattice, plan, law, shared);
  });
  if (info) {
    info->kernel_seconds = *std::max_element(kernel_seconds.begin(), kernel_seconds.end());
    info->segments = plan.segments;
  }
}

// The atoms checked, prepared and split on the first GPU listed (GPU arrays: on theirs).
template <class Real, class Law>
void run_devices(const MapAtoms& input, const Law& law, const RowRange& rows, const std::vector<int>& devices,
                 CudaRunInfo* info) {
  const gpu::KeepCurrentDevice keep;
  const gpu::SplitAtoms<Real> split = [&] {  // the columns freed once split
    gpu::AtomColumns atoms = gpu::atom_columns(input, devices.front());
    gpu::prepare_on_device(atoms, *rows.lattice, law);
    return gpu::split_on_device<Real>(atoms, rows.lattice->spacing);
  }();
  run_split<Real, Law>(split.regular_source(), split.on_lattice_source(), law, rows, devices, info);
}

}  // namespace

void direct_cuda(const MapAtoms& atoms, const MapLaw& law, const RowRange& rows, bool double_precision,
                 const std::vector<int>& requested_devices, CudaRunInfo* info) {
  const std::vector<int> devices = gpu::resolve_devices(requested_devices, info);
  if (atoms.size() > (std::int64_t{1} << 30)) throw Error("more than 2^30 atoms are not supported on the GPU");
  std::visit(
      [&](const auto& the_law) {
        using Law = std::decay_t<decltype(the_law)>;
        if (double_precision) run_devices<double, Law>(atoms, the_law, rows, devices, info);
        else run_devices<float, Law>(atoms, the_law, rows, devices, info);
      },
      law);
}

}  // namespace nbkit::maps
