// Frame maps combined on the GPU (frame_combiner.hpp). The same arithmetic as the host loop
// of trajectory.cpp, operation for operation, with every product and sum rounded on its own
// (__dmul_rn, __dadd_rn: no fused multiply-add), so a trajectory combined on the device
// equals the same frame maps combined on the host bit for bit.
#include <cuda_runtime.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "cuda/check.hpp"
#include "cuda/device_buffer.hpp"
#include "maps/frame_combiner.hpp"
#include "nbkit/core/error.hpp"
#include "nbkit/core/memory.hpp"

namespace nbkit::maps {

namespace {

constexpr int kThreads = 256;

// Points [0, count) of a slab into the accumulators at the same points. frame 1 copies.
__global__ void combine_kernel(const double* __restrict__ frame_map, long long count, int frame, int combine,
                               double inverse_frames, double* __restrict__ values, double* __restrict__ m2) {
  for (long long p = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; p < count;
       p += static_cast<long long>(gridDim.x) * blockDim.x) {
    const double x = frame_map[p];
    if (frame == 1) {
      values[p] = x;
      if (m2) m2[p] = 0;
    } else if (combine == static_cast<int>(Combine::min)) {
      values[p] = fmin(values[p], x);
    } else if (combine == static_cast<int>(Combine::max)) {
      values[p] = fmax(values[p], x);
    } else {  // Welford, as trajectory.cpp: mean += (x - mean) / n, M2 += (x - mean_old)(x - mean_new)
      const double delta = __dsub_rn(x, values[p]);
      const double mean = __dadd_rn(values[p], __dmul_rn(delta, inverse_frames));
      values[p] = mean;
      if (m2) m2[p] = __dadd_rn(m2[p], __dmul_rn(delta, __dsub_rn(x, mean)));
    }
  }
}

}  // namespace

struct GpuFrameCombiner::State {
  Lattice lattice;
  Combine combine = Combine::avg;
  int frame = 0;
  // Per device: accumulators for the whole lattice (a device touches only its shares) and the
  // slabs of rows it computed in the first frame (every frame has the same shares).
  struct OnDevice {
    cuda::DeviceBuffer<double> values, m2;
    std::vector<std::pair<std::int64_t, std::int64_t>> slabs;
  };
  std::mutex mutex;  // guards `devices` while host threads of several devices look up theirs
  std::map<int, OnDevice> devices;
};

GpuFrameCombiner::GpuFrameCombiner(const Lattice& lattice, Combine combine) : state_(std::make_unique<State>()) {
  state_->lattice = lattice;
  state_->combine = combine;
}

GpuFrameCombiner::~GpuFrameCombiner() {
  // Each device's buffers freed with that device current; the caller's device restored.
  int current = 0;
  if (cudaGetDevice(&current) != cudaSuccess) return;
  for (auto& [device, on_device] : state_->devices) {
    if (cudaSetDevice(device) != cudaSuccess) continue;
    on_device.values = cuda::DeviceBuffer<double>();
    on_device.m2 = cuda::DeviceBuffer<double>();
  }
  cudaSetDevice(current);
}

void GpuFrameCombiner::begin_frame(int frame) { state_->frame = frame; }

void GpuFrameCombiner::consume(int device, std::int64_t first, std::int64_t last, const double* device_slab,
                               void* stream) {
  State& state = *state_;
  const std::int64_t nz = state.lattice.dims[2];
  const std::size_t points = static_cast<std::size_t>(state.lattice.size());
  State::OnDevice* on_device = nullptr;
  {
    // Under the lock: a device listed twice (--gpus 0,0) has two host threads sharing it.
    const std::lock_guard<std::mutex> lock(state.mutex);
    on_device = &state.devices[device];
    if (on_device->values.size() == 0) {  // this device's first slab; the device is current
      std::size_t free_bytes = 0, total_bytes = 0;
      NBKIT_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
      const std::size_t arrays = state.combine == Combine::stdev ? 2 : 1;
      const std::size_t need = arrays * points * sizeof(double);
      if (need > free_bytes)
        throw Error("GPU " + std::to_string(device) + ": combining frame maps on the device needs " +
                    format_bytes(need) + " for the accumulators but " + format_bytes(free_bytes) + " are free");
      on_device->values = cuda::DeviceBuffer<double>(points);
      if (state.combine == Combine::stdev) on_device->m2 = cuda::DeviceBuffer<double>(points);
    }
    if (state.frame == 1) on_device->slabs.emplace_back(first, last);
  }
  const long long count = static_cast<long long>((last - first) * nz);
  const int blocks = static_cast<int>(std::min<long long>((count + kThreads - 1) / kThreads, 4096));
  double* m2 = state.combine == Combine::stdev ? on_device->m2.data() + first * nz : nullptr;
  combine_kernel<<<std::max(blocks, 1), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
      device_slab, count, state.frame, static_cast<int>(state.combine), 1.0 / state.frame,
      on_device->values.data() + first * nz, m2);
  NBKIT_CUDA_CHECK_LAUNCH();
}

void GpuFrameCombiner::download(std::vector<double>& values, std::vector<double>& m2) {
  State& state = *state_;
  const std::int64_t nz = state.lattice.dims[2];
  const std::size_t points = static_cast<std::size_t>(state.lattice.size());
  values.assign(points, 0.0);
  m2.assign(state.combine == Combine::stdev ? points : 0, 0.0);
  std::int64_t covered = 0;
  for (auto& [device, on_device] : state.devices) {
    NBKIT_CUDA_CHECK(cudaSetDevice(device));
    for (const auto& [first, last] : on_device.slabs) {
      const std::size_t offset = static_cast<std::size_t>(first * nz);
      const std::size_t count = static_cast<std::size_t>((last - first) * nz);
      NBKIT_CUDA_CHECK(cudaMemcpy(values.data() + offset, on_device.values.data() + offset, count * sizeof(double),
                                  cudaMemcpyDeviceToHost));
      if (!m2.empty())
        NBKIT_CUDA_CHECK(cudaMemcpy(m2.data() + offset, on_device.m2.data() + offset, count * sizeof(double),
                                    cudaMemcpyDeviceToHost));
      covered += last - first;
    }
  }
  if (covered != state.lattice.rows())
    throw Error("internal: the devices combined " + std::to_string(covered) + " of " +
                std::to_string(state.lattice.rows()) + " lattice rows");
}

}  // namespace nbkit::maps
