// MSM's interpolation on the GPU (msm.hpp: GpuInterpolation): V(r) = sum_m e0[m] Phi(r/h - m)
// added to each slab of the short range on its device, before the slab's copy to the host, so
// the long range costs no pass over the host's copy of the map (on the host's 16 cores it was
// 0.11 s of a 1.5-million-atom, 494^3 map). One thread a lattice point: the CPU's sums in the
// CPU's order (the grid's columns collapsed in x and y for each of the point's z stencil
// points, then those weighted along z), float64.
#include <cuda_runtime.h>

#include <chrono>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "cuda/check.hpp"
#include "cuda/device_buffer.hpp"
#include "cuda/stream.hpp"
#include "maps/msm/msm.hpp"
#include "nbkit/core/error.hpp"

namespace nbkit::maps::msm {

namespace {

constexpr int kThreads = 256;

struct Grid {
  long long lo[3], n[3];
};

template <int Width>
__global__ void interpolate_slab(double* __restrict__ slab, long long first_row, long long points, long long ny,
                                 long long nz, const double* __restrict__ potential, Grid grid,
                                 const long long* __restrict__ first_x, const double* __restrict__ weight_x,
                                 const long long* __restrict__ first_y, const double* __restrict__ weight_y,
                                 const long long* __restrict__ first_z, const double* __restrict__ weight_z,
                                 double prefactor) {
  const long long p = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (p >= points) return;
  const long long row = first_row + p / nz, k = p % nz, i = row / ny, j = row % ny;
  const long long x0 = first_x[i] - grid.lo[0], y0 = first_y[j] - grid.lo[1], z0 = first_z[k] - grid.lo[2];
  double column[Width];
  for (int tz = 0; tz < Width; ++tz) column[tz] = 0;
  for (int tx = 0; tx < Width; ++tx)
    for (int ty = 0; ty < Width; ++ty) {
      const double w = weight_x[i * Width + tx] * weight_y[j * Width + ty];
      const double* source = potential + ((x0 + tx) * grid.n[1] + (y0 + ty)) * grid.n[2] + z0;
      for (int tz = 0; tz < Width; ++tz) column[tz] += w * source[tz];
    }
  double v = 0;
  for (int tz = 0; tz < Width; ++tz) v += weight_z[k * Width + tz] * column[tz];
  slab[p] += prefactor * v;
}

}  // namespace

struct GpuInterpolation::State {
  std::shared_future<InterpolationPlan> future;
  struct OnDevice {  // the plan's arrays on one device
    std::unique_ptr<cuda::Stream> upload;  // the arrays' (stream-ordered) allocations and uploads
    cuda::DeviceBuffer<double> potential, weight[3];
    cuda::DeviceBuffer<long long> first[3];
  };
  struct Timing {
    int device;
    std::unique_ptr<cuda::Event> start, stop;
  };
  std::mutex mutex;  // the host threads of several devices
  std::map<int, OnDevice> devices;
  std::vector<Timing> timings;

  // The device's copy, made on first use; uploaded and complete before any thread uses it.
  // Allocated and uploaded on a stream of its own (freed there once every slab is done): the slab
  // stream may hold many slabs queued while the grids were summed, and a copy from pageable
  // memory queued behind them would hold this thread.
  const OnDevice& on(int device) {
    const std::lock_guard<std::mutex> lock(mutex);
    const InterpolationPlan& plan = future.get();  // waits for the grids; rethrows their error
    if ((plan.width != 4 && plan.width != 6) || static_cast<std::int64_t>(plan.potential.size()) != plan.grid.size())
      throw Error("internal: an MSM interpolation plan of the wrong width or grid size");
    auto [it, made] = devices.try_emplace(device);
    if (made) {
      OnDevice& d = it->second;
      d.upload = std::make_unique<cuda::Stream>();
      const cudaStream_t stream = *d.upload;
      d.potential = cuda::DeviceBuffer<double>(plan.potential.size(), stream);
      d.potential.upload(plan.potential.data(), plan.potential.size(), stream);
      for (int ax = 0; ax < 3; ++ax) {
        static_assert(sizeof(long long) == sizeof(std::int64_t));
        d.first[ax] = cuda::DeviceBuffer<long long>(plan.first[ax].size(), stream);
        d.first[ax].upload(reinterpret_cast<const long long*>(plan.first[ax].data()), plan.first[ax].size(), stream);
        d.weight[ax] = cuda::DeviceBuffer<double>(plan.weights[ax].size(), stream);
        d.weight[ax].upload(plan.weights[ax].data(), plan.weights[ax].size(), stream);
      }
      NBKIT_CUDA_CHECK(cudaStreamSynchronize(stream));
    }
    return it->second;
  }
};

GpuInterpolation::GpuInterpolation(std::shared_future<InterpolationPlan> plan) : state_(std::make_unique<State>()) {
  state_->future = std::move(plan);
}

GpuInterpolation::~GpuInterpolation() = default;

void GpuInterpolation::add(int device, std::int64_t first, std::int64_t last, double* device_slab, void* stream_handle) {
  const auto stream = static_cast<cudaStream_t>(stream_handle);
  const State::OnDevice& d = state_->on(device);
  const InterpolationPlan& plan = state_->future.get();
  State::Timing timing{device, std::make_unique<cuda::Event>(), std::make_unique<cuda::Event>()};
  timing.start->record(stream);
  const long long points = (last - first) * plan.nz;
  const Grid grid{{plan.grid.lo[0], plan.grid.lo[1], plan.grid.lo[2]}, {plan.grid.n[0], plan.grid.n[1], plan.grid.n[2]}};
  const auto blocks = static_cast<unsigned>((points + kThreads - 1) / kThreads);
  auto* kernel = plan.width == 6 ? interpolate_slab<6> : interpolate_slab<4>;
  if (points > 0) {
    kernel<<<blocks, kThreads, 0, stream>>>(device_slab, first, points, plan.ny, plan.nz, d.potential.data(), grid,
                                            d.first[0].data(), d.weight[0].data(), d.first[1].data(),
                                            d.weight[1].data(), d.first[2].data(), d.weight[2].data(), plan.prefactor);
    NBKIT_CUDA_CHECK_LAUNCH();
  }
  timing.stop->record(stream);
  const std::lock_guard<std::mutex> lock(state_->mutex);
  state_->timings.push_back(std::move(timing));
}

void GpuInterpolation::wait() const { state_->future.get(); }

bool GpuInterpolation::ready() const {
  return state_->future.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
}

double GpuInterpolation::kernel_seconds() const {
  double seconds = 0;
  for (const State::Timing& t : state_->timings) {
    t.stop->synchronize();
    seconds += t.stop->seconds_since(*t.start);
  }
  return seconds;
}

}  // namespace nbkit::maps::msm
