// Frame maps combined on the GPU (frame_combiner.hpp): min and max, or the exact integer sums of
// exact_moments.hpp, the same arithmetic as the host's FrameMoments, so a trajectory combined on
// the device equals the same frame maps combined on the host bit for bit (and any division of the
// frames among devices or ranks gives the same sums).
#include <cuda_runtime.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "cuda/check.hpp"
#include "cuda/device_buffer.hpp"
#include "maps/exact_moments.hpp"
#include "maps/frame_combiner.hpp"
#include "maps/frame_moments.hpp"
#include "nbkit/core/error.hpp"
#include "nbkit/core/memory.hpp"

namespace nbkit::maps {

namespace {

constexpr int kThreads = 256;

// Points [0, count) of a slab into the accumulators at the same points; frame 1 starts them.
// A value that cannot be summed exactly (not finite, or beyond 2^24) leaves its point's index
// (lattice order, from `first_point`) in `bad` (the smallest such).
__global__ void combine_kernel(const double* __restrict__ frame_map, long long count, long long first_point, int frame,
                               int combine, double* __restrict__ extremes, ExactSum* __restrict__ sums,
                               ExactSquares* __restrict__ squares, unsigned long long* __restrict__ bad) {
  for (long long p = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; p < count;
       p += static_cast<long long>(gridDim.x) * blockDim.x) {
    const double x = frame_map[p];
    bool held = true;
    if (combine == static_cast<int>(Combine::min) || combine == static_cast<int>(Combine::max)) {
      held = isfinite(x);
      extremes[p] = frame == 1 ? x : combine == static_cast<int>(Combine::min) ? fmin(extremes[p], x) : fmax(extremes[p], x);
    } else {
      ExactSum sum = frame == 1 ? ExactSum{} : sums[p];
      if (squares) {
        ExactSquares square = frame == 1 ? ExactSquares{} : squares[p];
        held = accumulate_exact(x, sum, &square);
        squares[p] = square;
      } else {
        held = accumulate_exact(x, sum, nullptr);
      }
      sums[p] = sum;
    }
    if (!held) atomicMin(bad, static_cast<unsigned long long>(first_point + p));
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
    cuda::DeviceBuffer<double> extremes;        // min, max
    cuda::DeviceBuffer<ExactSum> sums;          // avg, stdev
    cuda::DeviceBuffer<ExactSquares> squares;   // stdev
    cuda::DeviceBuffer<unsigned long long> bad;  // the first point that could not be summed
    std::vector<std::pair<std::int64_t, std::int64_t>> slabs;
    bool allocated = false;
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
    on_device.extremes = cuda::DeviceBuffer<double>();
    on_device.sums = cuda::DeviceBuffer<ExactSum>();
    on_device.squares = cuda::DeviceBuffer<ExactSquares>();
    on_device.bad = cuda::DeviceBuffer<unsigned long long>();
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
    if (!on_device->allocated) {  // this device's first slab; the device is current
      std::size_t free_bytes = 0, total_bytes = 0;
      NBKIT_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
      const std::size_t need = FrameMoments::bytes_per_point(state.combine) * points;
      if (need > free_bytes)
        throw Error("GPU " + std::to_string(device) + ": combining frame maps on the device needs " +
                    format_bytes(need) + " for the accumulators but " + format_bytes(free_bytes) + " are free");
      if (state.combine == Combine::min || state.combine == Combine::max)
        on_device->extremes = cuda::DeviceBuffer<double>(points);
      else
        on_device->sums = cuda::DeviceBuffer<ExactSum>(points);
      if (state.combine == Combine::stdev) on_device->squares = cuda::DeviceBuffer<ExactSquares>(points);
      on_device->bad = cuda::DeviceBuffer<unsigned long long>(1);
      const unsigned long long none = ~0ULL;
      NBKIT_CUDA_CHECK(cudaMemcpy(on_device->bad.data(), &none, sizeof none, cudaMemcpyHostToDevice));
      on_device->allocated = true;
    }
    if (state.frame == 1) on_device->slabs.emplace_back(first, last);
  }
  const long long count = static_cast<long long>((last - first) * nz);
  const int blocks = static_cast<int>(std::min<long long>((count + kThreads - 1) / kThreads, 4096));
  const std::int64_t at = first * nz;
  combine_kernel<<<std::max(blocks, 1), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
      device_slab, count, at, state.frame, static_cast<int>(state.combine),
      on_device->extremes.size() ? on_device->extremes.data() + at : nullptr,
      on_device->sums.size() ? on_device->sums.data() + at : nullptr,
      on_device->squares.size() ? on_device->squares.data() + at : nullptr, on_device->bad.data());
  NBKIT_CUDA_CHECK_LAUNCH();
}

void GpuFrameCombiner::download(std::vector<double>& values) {
  State& state = *state_;
  const Lattice& lattice = state.lattice;
  const std::int64_t nz = lattice.dims[2];
  const std::size_t points = static_cast<std::size_t>(lattice.size());
  values.assign(points, 0.0);
  std::int64_t covered = 0;
  for (auto& [device, on_device] : state.devices) {
    NBKIT_CUDA_CHECK(cudaSetDevice(device));
    NBKIT_CUDA_CHECK(cudaDeviceSynchronize());
    unsigned long long bad = 0;
    NBKIT_CUDA_CHECK(cudaMemcpy(&bad, on_device.bad.data(), sizeof bad, cudaMemcpyDeviceToHost));
    if (bad != ~0ULL) {
      const std::int64_t row = static_cast<std::int64_t>(bad) / nz, k = static_cast<std::int64_t>(bad) % nz;
      throw Error("a frame's map at lattice point (" + std::to_string(row / lattice.dims[1]) + ", " +
                  std::to_string(row % lattice.dims[1]) + ", " + std::to_string(k) +
                  ") is not finite or beyond +-2^24, the largest value a trajectory's " + to_string(state.combine) +
                  " sums exactly");
    }
    for (const auto& [first, last] : on_device.slabs) {
      const std::size_t offset = static_cast<std::size_t>(first * nz);
      const std::size_t count = static_cast<std::size_t>((last - first) * nz);
      // The slab's accumulators to the host, finished there as FrameMoments finishes them.
      FrameMoments moments(state.combine, lattice, first, count);
      if (on_device.extremes.size())
        NBKIT_CUDA_CHECK(cudaMemcpy(moments.extremes(), on_device.extremes.data() + offset, count * sizeof(double),
                                    cudaMemcpyDeviceToHost));
      if (on_device.sums.size())
        NBKIT_CUDA_CHECK(cudaMemcpy(moments.sums(), on_device.sums.data() + offset, count * sizeof(ExactSum),
                                    cudaMemcpyDeviceToHost));
      if (on_device.squares.size())
        NBKIT_CUDA_CHECK(cudaMemcpy(moments.squares(), on_device.squares.data() + offset,
                                    count * sizeof(ExactSquares), cudaMemcpyDeviceToHost));
      moments.set_frames(state.frame);
      moments.finish(0, count, values.data() + offset);
      covered += last - first;
    }
  }
  if (covered != lattice.rows())
    throw Error("internal: the devices combined " + std::to_string(covered) + " of " +
                std::to_string(lattice.rows()) + " lattice rows");
}

}  // namespace nbkit::maps
