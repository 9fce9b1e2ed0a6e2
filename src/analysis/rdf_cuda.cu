// g(r) on the GPUs (rdf_gpus.hpp): one thread per group-A atom (A sorted by cell, so that a
// warp's atoms read the same cells of B), the pair loop of rdf_pairs-inl.hpp, a block's counts in
// a shared-memory histogram added into the GPU's 64-bit one at the end (Levine, Stone and
// Kohlmeyer 2011, section 3: per-block histograms merged once). Integer counts, so the result
// does not depend on the order threads finish in, nor on how A is split among GPUs.
#include <cuda_runtime.h>

#include <algorithm>
#include <string>

#include "analysis/rdf_gpus.hpp"
#include "cuda/check.hpp"
#include "cuda/device_buffer.hpp"
#include "cuda/stream.hpp"
#include "nbkit/core/backend.hpp"
#include "nbkit/core/error.hpp"

namespace nbkit::analysis::detail {

namespace {

constexpr int kThreads = 128;
// Shared histograms while a block's counts fit 32 bits (kThreads atoms, each paired with at most
// every B atom) and the bins fit the shared memory; else each pair adds to the GPU's histogram.
constexpr int kMostSharedBins = 12288;

__global__ void count_pairs(PairGrid grid, BinRule rule, const double* __restrict__ ax, const double* __restrict__ ay,
                            const double* __restrict__ az, const std::int32_t* __restrict__ a_cell,
                            const std::int32_t* __restrict__ a_atom, const std::int32_t* __restrict__ a_group,
                            std::int64_t na, bool shared_bins, unsigned long long* __restrict__ histogram,
                            unsigned long long* __restrict__ distances) {
  extern __shared__ unsigned int local[];
  if (shared_bins) {
    for (int k = threadIdx.x; k < rule.bins; k += blockDim.x) local[k] = 0;
    __syncthreads();
  }
  const std::int64_t p = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  std::uint64_t tested = 0;
  if (p < na) {
    const double x[3] = {ax[p], ay[p], az[p]};
    const int c[3] = {a_cell[3 * p], a_cell[3 * p + 1], a_cell[3 * p + 2]};
    tested = count_neighbours(grid, rule, x, c, a_atom[p], a_group ? a_group[p] : -1, [&](int k) {
      if (shared_bins)
        atomicAdd(&local[k], 1u);
      else
        atomicAdd(&histogram[k], 1ull);
    });
  }
  if (tested) atomicAdd(distances, static_cast<unsigned long long>(tested));
  if (shared_bins) {
    __syncthreads();
    for (int k = threadIdx.x; k < rule.bins; k += blockDim.x)
      if (local[k]) atomicAdd(&histogram[k], static_cast<unsigned long long>(local[k]));
  }
}

template <class T>
void upload(cuda::DeviceBuffer<T>& buffer, const T* host, std::size_t count, cudaStream_t stream) {
  if (buffer.size() < count) buffer = cuda::DeviceBuffer<T>(std::max<std::size_t>(count, buffer.size() * 3 / 2));
  if (count) buffer.upload(host, count, stream);
}

}  // namespace

struct RdfGpus::State {
  struct Device {
    int index = 0;
    std::string name;
    cuda::Stream stream;
    cuda::DeviceBuffer<double> edges, bx, by, bz, ax, ay, az;
    cuda::DeviceBuffer<std::int32_t> start, b_atom, b_group, a_cell, a_atom, a_group;
    cuda::DeviceBuffer<unsigned long long> histogram, distances;  // distances: 1
    explicit Device(const GpuInfo& gpu) : index(gpu.index), name(gpu.name) {}
  };
  std::vector<std::unique_ptr<Device>> devices;
  int bins = 0;
};

RdfGpus::RdfGpus(const std::vector<int>& gpus, const std::vector<double>& edges) : state_(std::make_unique<State>()) {
  int previous = 0;
  NBKIT_CUDA_CHECK(cudaGetDevice(&previous));
  state_->bins = static_cast<int>(edges.size()) - 1;
  for (const GpuInfo& gpu : resolve_gpus(gpus)) {
    NBKIT_CUDA_CHECK(cudaSetDevice(gpu.index));
    auto d = std::make_unique<State::Device>(gpu);
    upload(d->edges, edges.data(), edges.size(), d->stream);
    d->histogram = cuda::DeviceBuffer<unsigned long long>(state_->bins);
    d->distances = cuda::DeviceBuffer<unsigned long long>(1);
    NBKIT_CUDA_CHECK(cudaMemsetAsync(d->histogram.data(), 0, sizeof(unsigned long long) * state_->bins, d->stream));
    NBKIT_CUDA_CHECK(cudaMemsetAsync(d->distances.data(), 0, sizeof(unsigned long long), d->stream));
    state_->devices.push_back(std::move(d));
  }
  cudaSetDevice(previous);
}

RdfGpus::~RdfGpus() {
  if (!state_) return;
  for (auto& d : state_->devices) {  // each buffer freed on its own device
    cudaSetDevice(d->index);
    d.reset();
  }
}

std::string RdfGpus::detail() const {
  const auto& d = state_->devices;
  return d.empty() ? "" : d.front()->name + " x" + std::to_string(d.size());
}

std::uint64_t RdfGpus::count(const FrameArrays& f, const BinRule& rule, std::uint64_t* histogram) {
  int previous = 0;
  NBKIT_CUDA_CHECK(cudaGetDevice(&previous));
  const std::int64_t na = static_cast<std::int64_t>(f.ax.size());
  const std::int64_t devices = static_cast<std::int64_t>(state_->devices.size());
  const bool shared_bins = rule.bins <= kMostSharedBins && static_cast<double>(kThreads) * f.bx.size() < 4.0e9;
  // Group A in contiguous parts, one per GPU; every GPU gets all of B.
  for (std::int64_t n = 0; n < devices; ++n) {
    State::Device& d = *state_->devices[n];
    NBKIT_CUDA_CHECK(cudaSetDevice(d.index));
    const std::int64_t first = na * n / devices, last = na * (n + 1) / devices, count = last - first;
    upload(d.start, f.start.data(), f.start.size(), d.stream);
    upload(d.bx, f.bx.data(), f.bx.size(), d.stream);
    upload(d.by, f.by.data(), f.by.size(), d.stream);
    upload(d.bz, f.bz.data(), f.bz.size(), d.stream);
    upload(d.b_atom, f.b_atom.data(), f.b_atom.size(), d.stream);
    upload(d.b_group, f.b_group.data(), f.b_group.size(), d.stream);
    upload(d.ax, f.ax.data() + first, count, d.stream);
    upload(d.ay, f.ay.data() + first, count, d.stream);
    upload(d.az, f.az.data() + first, count, d.stream);
    upload(d.a_cell, f.a_cell.data() + 3 * first, 3 * count, d.stream);
    upload(d.a_atom, f.a_atom.data() + first, count, d.stream);
    upload(d.a_group, f.a_group.data() + first, count, d.stream);
    if (count == 0) continue;
    PairGrid grid = f.grid;
    grid.start = d.start.data(), grid.x = d.bx.data(), grid.y = d.by.data(), grid.z = d.bz.data();
    grid.atom = d.b_atom.data();
    grid.group = f.b_group.empty() ? nullptr : d.b_group.data();
    BinRule device_rule = rule;
    device_rule.edges = d.edges.data();
    const auto blocks = static_cast<unsigned>((count + kThreads - 1) / kThreads);
    count_pairs<<<blocks, kThreads, shared_bins ? sizeof(unsigned int) * rule.bins : 0, d.stream>>>(
        grid, device_rule, d.ax.data(), d.ay.data(), d.az.data(), d.a_cell.data(), d.a_atom.data(),
        f.b_group.empty() ? nullptr : d.a_group.data(), count, shared_bins, d.histogram.data(), d.distances.data());
    NBKIT_CUDA_CHECK_LAUNCH();
  }
  // The frame's counts, GPU by GPU in order (integers: the order changes nothing but is fixed).
  std::uint64_t distances = 0;
  std::vector<unsigned long long> part(rule.bins);
  for (auto& d : state_->devices) {
    NBKIT_CUDA_CHECK(cudaSetDevice(d->index));
    unsigned long long tested = 0;
    d->histogram.download(part.data(), part.size(), d->stream);
    d->distances.download(&tested, 1, d->stream);
    NBKIT_CUDA_CHECK(cudaStreamSynchronize(d->stream));
    NBKIT_CUDA_CHECK(cudaMemsetAsync(d->histogram.data(), 0, sizeof(unsigned long long) * rule.bins, d->stream));
    NBKIT_CUDA_CHECK(cudaMemsetAsync(d->distances.data(), 0, sizeof(unsigned long long), d->stream));
    for (int k = 0; k < rule.bins; ++k) histogram[k] += part[k];
    distances += tested;
  }
  cudaSetDevice(previous);
  return distances;
}

}  // namespace nbkit::analysis::detail
