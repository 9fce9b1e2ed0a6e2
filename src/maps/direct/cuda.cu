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
//   per evaluation: the MUFU pipe is the only limit (~4.17e12/s on an H100/H200).
// - Accuracy as on the CPU (cpu.cpp): coordinates in lattice units with each atom's x, y, z
//   split into an integer lattice index and a residual, so distances are exact to float32
//   rounding of the distance itself; float32 sums over a tile of atoms, float64 across tiles.
// - Padding instead of branches: a row's last thread computes up to P-1 points past the row
//   end and does not store them.
// - Several GPUs: one host thread per device takes slabs of rows from a shared counter
//   (the slides' dynamic distribution); every point is computed the same way on any device,
//   so the result does not depend on how slabs fall.
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <string>
#include <thread>
#include <type_traits>
#include <variant>
#include <vector>


#include "cuda/check.hpp"
#include "cuda/device_buffer.hpp"
#include "maps/direct/direct.hpp"
#include "nbkit/core/backend.hpp"
#include "nbkit/core/memory.hpp"
#include "nbkit/maps.hpp"

namespace nbkit::maps {

namespace {

constexpr int kBlock = 128;  // threads per block = atoms per shared-memory tile

// One atom: {x index, x residual, y index, y residual} and {z index, z residual,
// coefficient, unused}, lattice units.
template <class Real>
struct alignas(4 * sizeof(Real)) Quad {
  Real a, b, c, d;
};

template <class Real>
struct DeviceMath {
  __host__ __device__ Real set(double v) const { return static_cast<Real>(v); }
  __host__ __device__ Real exp(Real v) const {
#ifdef __CUDA_ARCH__
    if constexpr (std::is_same_v<Real, float>) return __expf(v);
    else return ::exp(v);
#else
    return std::exp(v);
#endif
  }
};

__device__ __forceinline__ float reciprocal_sqrt(float x) {
  float y;
  asm("rsqrt.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));  // MUFU.RSQ, ~2^-23 relative error
  return y;
}
__device__ __forceinline__ double reciprocal_sqrt(double x) { return ::rsqrt(x); }

template <class Real, class Law, int P>
__global__ void __launch_bounds__(kBlock) direct_sum_kernel(const Quad<Real>* __restrict__ atoms, int natoms,
                                                            Law law, Real singular_r2, long long row_begin,
                                                            long long row_end, int ny, int nz, int chunks_per_row,
                                                            double prefactor, double* __restrict__ out) {
  __shared__ Quad<Real> tile[2 * kBlock];
  const long long thread = static_cast<long long>(blockIdx.x) * kBlock + threadIdx.x;
  const long long row = row_begin + thread / chunks_per_row;
  const int k0 = static_cast<int>(thread % chunks_per_row) * P;
  const bool active = row < row_end;
  const Real i = active ? static_cast<Real>(row / ny) : Real(0);
  const Real j = active ? static_cast<Real>(row % ny) : Real(0);
  const Real k = static_cast<Real>(k0);
  const DeviceMath<Real> math;
  double sum[P];
#pragma unroll
  for (int p = 0; p < P; ++p) sum[p] = 0;

  for (int base = 0; base < natoms; base += kBlock) {
    const int count = min(kBlock, natoms - base);
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
      const Real dz0 = (k - zc.a) - zc.b;
#pragma unroll
      for (int p = 0; p < P; ++p) {
        const Real dz = dz0 + static_cast<Real>(p);
        const Real r2 = dz * dz + dxy2;
        // An atom on top of the point is left out (nbkit::singular_distance).
        const Real rinv = r2 > singular_r2 ? reciprocal_sqrt(r2) : Real(0);
        acc[p] += maps::law_term(law, math, zc.c, r2, rinv);
      }
    }
#pragma unroll
    for (int p = 0; p < P; ++p) sum[p] += static_cast<double>(acc[p]);
  }
  if (!active) return;
  double* row_out = out + (row - row_begin) * nz;
#pragma unroll
  for (int p = 0; p < P; ++p)
    if (k0 + p < nz) row_out[k0 + p] = prefactor * sum[p];
}

// The law in lattice units (lengths measured in spacings).
CoulombLaw in_lattice_units(const CoulombLaw& law, double) { return law; }
DebyeHuckelLaw in_lattice_units(const DebyeHuckelLaw& law, double spacing) {
  return DebyeHuckelLaw{law.kappa * spacing};
}

template <class Real>
std::vector<Quad<Real>> atoms_in_lattice_units(const PreparedAtoms& atoms, double spacing) {
  std::vector<Quad<Real>> quads(2 * static_cast<std::size_t>(atoms.size()));
  for (std::int64_t n = 0; n < atoms.size(); ++n) {
    double index[3], residual[3];
    const double coordinate[3] = {atoms.x[n] / spacing, atoms.y[n] / spacing, atoms.z[n] / spacing};
    for (int a = 0; a < 3; ++a) {
      index[a] = std::nearbyint(coordinate[a]);
      residual[a] = coordinate[a] - index[a];
    }
    quads[2 * n] = {static_cast<Real>(index[0]), static_cast<Real>(residual[0]), static_cast<Real>(index[1]),
                    static_cast<Real>(residual[1])};
    quads[2 * n + 1] = {static_cast<Real>(index[2]), static_cast<Real>(residual[2]),
                        static_cast<Real>(atoms.coefficient[n] / spacing), Real(0)};
  }
  return quads;
}

// Rows per slab: ~2e11 evaluations (tens of milliseconds on one GPU, so several GPUs balance
// and progress moves), at least enough threads to fill the device, at most what fits.
std::int64_t plan_slab_rows(std::int64_t total_rows, std::int64_t nz, std::int64_t natoms, int chunks_per_row,
                            int device_count, std::size_t free_bytes) {
  if (const char* forced = std::getenv("NBKIT_CUDA_SLAB_ROWS")) {  // tests: force many slabs
    return std::clamp<std::int64_t>(std::atoll(forced), 1, total_rows);
  }
  const double target_evaluations = 2e11;
  std::int64_t rows = static_cast<std::int64_t>(target_evaluations / (static_cast<double>(nz) * natoms));
  const std::int64_t fill_rows = (132LL * 16 * kBlock) / chunks_per_row + 1;
  rows = std::max(rows, fill_rows);
  // Several devices balance better with at least 8 slabs each.
  if (device_count > 1) rows = std::min(rows, std::max<std::int64_t>(1, total_rows / (8 * device_count)));
  // Half of the free memory at most, and at most 4M rows (32 MiB per point along z).
  const std::int64_t memory_rows =
      static_cast<std::int64_t>(free_bytes / 2 / (sizeof(double) * static_cast<std::size_t>(nz)));
  rows = std::min({rows, memory_rows, std::int64_t{1} << 22});
  return std::clamp<std::int64_t>(rows, 1, total_rows);
}

template <class Real, class Law>
void run_device(int device, const std::vector<Quad<Real>>& quads, const Law& law, const RowRange& rows,
                std::atomic<std::int64_t>& next_row, int device_count, std::mutex& progress_mutex,
                std::atomic<std::int64_t>& rows_done, double& kernel_seconds) {
  NBKIT_CUDA_CHECK(cudaSetDevice(device));
  const Lattice& lattice = *rows.lattice;
  const std::int64_t ny = lattice.dims[1], nz = lattice.dims[2];
  const int natoms = static_cast<int>(quads.size() / 2);
  const int points_per_thread = nz >= 8 ? 8 : 1;
  const int chunks_per_row = static_cast<int>((nz + points_per_thread - 1) / points_per_thread);

  cuda::DeviceBuffer<Quad<Real>> device_atoms(quads.size());
  device_atoms.upload(quads.data(), quads.size());
  std::size_t free_bytes = 0, total_bytes = 0;
  NBKIT_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  const std::int64_t total_rows = rows.row_end - rows.row_begin;
  const std::int64_t slab_rows = plan_slab_rows(total_rows, nz, natoms, chunks_per_row, device_count, free_bytes);
  if (static_cast<std::size_t>(slab_rows) * nz * sizeof(double) > free_bytes)
    throw Error("GPU " + std::to_string(device) + ": a slab of one lattice row needs " +
                format_bytes(nz * sizeof(double)) + " but only " + format_bytes(free_bytes) + " are free");
  cuda::DeviceBuffer<double> device_out(static_cast<std::size_t>(slab_rows * nz));
  cudaStream_t stream;
  NBKIT_CUDA_CHECK(cudaStreamCreate(&stream));
  cudaEvent_t start, stop;
  NBKIT_CUDA_CHECK(cudaEventCreate(&start));
  NBKIT_CUDA_CHECK(cudaEventCreate(&stop));
  const Law lattice_law = in_lattice_units(law, lattice.spacing);
  const Real singular_r2 =
      static_cast<Real>(singular_distance * singular_distance / (lattice.spacing * lattice.spacing));
  const std::int64_t total = rows.row_end - rows.row_begin;
  try {
    while (true) {
      const std::int64_t first = rows.row_begin + next_row.fetch_add(slab_rows);
      if (first >= rows.row_end) break;
      const std::int64_t last = std::min(rows.row_end, first + slab_rows);
      const long long threads = static_cast<long long>(last - first) * chunks_per_row;
      const unsigned blocks = static_cast<unsigned>((threads + kBlock - 1) / kBlock);
      NBKIT_CUDA_CHECK(cudaEventRecord(start, stream));
      if (points_per_thread == 8)
        direct_sum_kernel<Real, Law, 8><<<blocks, kBlock, 0, stream>>>(
            device_atoms.data(), natoms, lattice_law, singular_r2, first, last, static_cast<int>(ny),
            static_cast<int>(nz), chunks_per_row, rows.prefactor, device_out.data());
      else
        direct_sum_kernel<Real, Law, 1><<<blocks, kBlock, 0, stream>>>(
            device_atoms.data(), natoms, lattice_law, singular_r2, first, last, static_cast<int>(ny),
            static_cast<int>(nz), chunks_per_row, rows.prefactor, device_out.data());
      NBKIT_CUDA_CHECK_LAUNCH();
      NBKIT_CUDA_CHECK(cudaEventRecord(stop, stream));
      device_out.download(rows.out + (first - rows.row_begin) * nz, static_cast<std::size_t>((last - first) * nz),
                          stream);
      NBKIT_CUDA_CHECK(cudaStreamSynchronize(stream));
      float milliseconds = 0;
      NBKIT_CUDA_CHECK(cudaEventElapsedTime(&milliseconds, start, stop));
      kernel_seconds += milliseconds * 1e-3;
      const std::int64_t done = rows_done.fetch_add(last - first) + (last - first);
      if (rows.progress && *rows.progress) {
        const std::lock_guard<std::mutex> lock(progress_mutex);
        (*rows.progress)(static_cast<double>(done) / total);
      }
    }
  } catch (...) {
    cudaStreamDestroy(stream);
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
    throw;
  }
  NBKIT_CUDA_CHECK(cudaEventDestroy(start));
  NBKIT_CUDA_CHECK(cudaEventDestroy(stop));
  NBKIT_CUDA_CHECK(cudaStreamDestroy(stream));
}

template <class Real, class Law>
void run_devices(const PreparedAtoms& atoms, const Law& law, const RowRange& rows, const std::vector<int>& devices,
                 CudaRunInfo* info) {
  const std::vector<Quad<Real>> quads = atoms_in_lattice_units<Real>(atoms, rows.lattice->spacing);
  std::atomic<std::int64_t> next_row{0}, rows_done{0};
  std::mutex progress_mutex;
  std::vector<std::exception_ptr> errors(devices.size());
  std::vector<double> kernel_seconds(devices.size(), 0.0);
  std::vector<std::thread> workers;
  for (std::size_t d = 0; d < devices.size(); ++d)
    workers.emplace_back([&, d] {
      try {
        run_device<Real, Law>(devices[d], quads, law, rows, next_row, static_cast<int>(devices.size()),
                              progress_mutex, rows_done, kernel_seconds[d]);
      } catch (...) {
        errors[d] = std::current_exception();
        next_row.store(rows.row_end - rows.row_begin);  // stop the others early
      }
    });
  for (auto& worker : workers) worker.join();
  for (const auto& error : errors)
    if (error) std::rethrow_exception(error);
  if (info) {
    info->kernel_seconds = *std::max_element(kernel_seconds.begin(), kernel_seconds.end());
    info->devices = devices;
  }
}

}  // namespace

void direct_cuda(const PreparedAtoms& atoms, const MapLaw& law, const RowRange& rows, bool double_precision,
                 const std::vector<int>& requested_devices, CudaRunInfo* info) {
  std::string why;
  const std::vector<GpuInfo> gpus = list_gpus(&why);
  if (gpus.empty()) throw Error("--backend cuda: " + why);
  std::vector<int> devices = requested_devices;
  if (devices.empty())
    for (const auto& gpu : gpus) devices.push_back(gpu.index);
  for (int device : devices)
    if (device < 0 || device >= static_cast<int>(gpus.size()))
      throw Error("--gpus: there is no GPU " + std::to_string(device) + " (this machine has " +
                  std::to_string(gpus.size()) + ")");
  if (atoms.size() > (std::int64_t{1} << 30)) throw Error("more than 2^30 atoms are not supported on the GPU");
  if (info) {
    info->device_names.clear();
    for (int device : devices) info->device_names.push_back(gpus[device].name);
  }
  std::visit(
      [&](const auto& the_law) {
        using Law = std::decay_t<decltype(the_law)>;
        if (double_precision) run_devices<double, Law>(atoms, the_law, rows, devices, info);
        else run_devices<float, Law>(atoms, the_law, rows, devices, info);
      },
      law);
}

}  // namespace nbkit::maps
