// Density and occupancy maps on the GPUs (maps/density/density.hpp): the rows split among the
// GPUs in contiguous parts, one thread per lattice point running density_terms-inl.hpp's law over
// the binned atoms (float64, the same fixed order as the CPU), slabs of rows copied back as done.
#include <cuda_runtime.h>

#include <algorithm>
#include <memory>

#include "cuda/check.hpp"
#include "cuda/current_device.hpp"
#include "cuda/device_buffer.hpp"
#include "cuda/stream.hpp"
#include "maps/density/density.hpp"
#include "nbkit/core/backend.hpp"

namespace nbkit::maps::density {

namespace {

constexpr int kThreads = 128;
constexpr std::int64_t kSlabPoints = std::int64_t{1} << 24;  // 128 MB of float64 per slab

__global__ void density_points(Cells cells, bool occupancy, double spacing, std::int64_t ny, std::int64_t nz,
                               std::int64_t first_row, std::int64_t count, double* __restrict__ out) {
  const std::int64_t p = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (p >= count) return;
  const std::int64_t row = first_row + p / nz, k = p % nz, i = row / ny, j = row % ny;
  out[p] = density_at(cells, spacing * static_cast<double>(i), spacing * static_cast<double>(j),
                      spacing * static_cast<double>(k), occupancy, [](double v) { return ::exp(v); });
}

template <class T>
cuda::DeviceBuffer<T> copy_up(const std::vector<T>& host, cudaStream_t stream) {
  cuda::DeviceBuffer<T> d(std::max<std::size_t>(host.size(), 1));
  if (!host.empty()) d.upload(host.data(), host.size(), stream);
  return d;
}

struct Device {
  GpuInfo gpu;
  cuda::Stream stream;
  cuda::DeviceBuffer<std::int32_t> start;
  cuda::DeviceBuffer<double> x, y, z, amplitude, exponent, reach2, slab;
  std::int64_t row_begin = 0, row_end = 0;
  double seconds = 0;  // kernels alone
  cuda::Event begin, end;
};

}  // namespace

void density_cuda(const BinnedAtoms& b, bool occupancy, const RowRange& rows, const std::vector<int>& devices,
                  CudaRunInfo* info) {
  const cuda::KeepCurrentDevice keep;
  const std::vector<GpuInfo> gpus = resolve_gpus(devices);
  const Lattice& lattice = *rows.lattice;
  const std::int64_t ny = lattice.dims[1], nz = lattice.dims[2], total = rows.row_end - rows.row_begin;
  const std::int64_t slab_rows = std::max<std::int64_t>(1, kSlabPoints / nz);
  std::vector<std::unique_ptr<Device>> used;
  for (std::size_t g = 0; g < gpus.size(); ++g) {
    NBKIT_CUDA_CHECK(cudaSetDevice(gpus[g].index));
    auto d = std::make_unique<Device>();  // its stream and events on its GPU
    d->gpu = gpus[g];
    d->row_begin = rows.row_begin + total * static_cast<std::int64_t>(g) / static_cast<std::int64_t>(gpus.size());
    d->row_end = rows.row_begin + total * static_cast<std::int64_t>(g + 1) / static_cast<std::int64_t>(gpus.size());
    if (d->row_end == d->row_begin) continue;
    d->start = copy_up(b.start, d->stream);
    d->x = copy_up(b.x, d->stream), d->y = copy_up(b.y, d->stream), d->z = copy_up(b.z, d->stream);
    d->amplitude = copy_up(b.amplitude, d->stream), d->exponent = copy_up(b.exponent, d->stream);
    d->reach2 = copy_up(b.reach2, d->stream);
    d->slab = cuda::DeviceBuffer<double>(static_cast<std::size_t>(std::min(slab_rows, d->row_end - d->row_begin) * nz));
    used.push_back(std::move(d));
  }
  // Slab by slab: every GPU's kernel for its next slab queued first, then the slabs copied down
  // in GPU order (a copy into pageable memory holds the host until it is done).
  std::int64_t done = 0;
  bool more = true;
  for (std::int64_t s = 0; more; ++s) {
    more = false;
    std::vector<std::pair<std::int64_t, std::int64_t>> slab(used.size(), {0, 0});
    for (std::size_t n = 0; n < used.size(); ++n) {
      Device& d = *used[n];
      const std::int64_t first = d.row_begin + s * slab_rows;
      if (first >= d.row_end) continue;
      more = true;
      const std::int64_t last = std::min(d.row_end, first + slab_rows), count = (last - first) * nz;
      slab[n] = {first, last};
      NBKIT_CUDA_CHECK(cudaSetDevice(d.gpu.index));
      Cells cells = b.cells;
      cells.start = d.start.data(), cells.x = d.x.data(), cells.y = d.y.data(), cells.z = d.z.data();
      cells.amplitude = d.amplitude.data(), cells.exponent = d.exponent.data(), cells.reach2 = d.reach2.data();
      d.begin.record(d.stream);
      density_points<<<static_cast<unsigned>((count + kThreads - 1) / kThreads), kThreads, 0, d.stream>>>(
          cells, occupancy, lattice.spacing, ny, nz, first, count, d.slab.data());
      NBKIT_CUDA_CHECK_LAUNCH();
      d.end.record(d.stream);
    }
    for (std::size_t n = 0; n < used.size(); ++n) {
      const auto [first, last] = slab[n];
      if (first == last) continue;
      Device& d = *used[n];
      NBKIT_CUDA_CHECK(cudaSetDevice(d.gpu.index));
      d.slab.download(rows.out + (first - rows.row_begin) * nz, static_cast<std::size_t>((last - first) * nz), d.stream);
      NBKIT_CUDA_CHECK(cudaStreamSynchronize(d.stream));
      float ms = 0;
      NBKIT_CUDA_CHECK(cudaEventElapsedTime(&ms, d.begin, d.end));
      d.seconds += ms * 1e-3;
      done += last - first;
      if (rows.progress && *rows.progress) (*rows.progress)(static_cast<double>(done) / static_cast<double>(total));
    }
  }
  if (info) {
    for (const auto& d : used) {
      info->devices.push_back(d->gpu.index);
      info->device_names.push_back(d->gpu.name);
      info->kernel_seconds = std::max(info->kernel_seconds, d->seconds);
    }
  }
  for (auto& d : used) {  // each device's buffers freed on that device
    cudaSetDevice(d->gpu.index);
    d.reset();
  }
}

}  // namespace nbkit::maps::density
