// compute_map_on_device (maps.hpp): the GPU slabs copied into the caller's device array as the
// map kernels write them, each checked finite there, so the lattice never visits the host.
#include <cuda_runtime.h>

#include <climits>
#include <map>
#include <mutex>
#include <string>

#include "cuda/check.hpp"
#include "cuda/device_buffer.hpp"
#include "maps/device_input.cuh"
#include "maps/frame_combiner.hpp"
#include "maps/methods.hpp"
#include "nbkit/core/error.hpp"
#include "nbkit/maps.hpp"

namespace nbkit::maps {

namespace {

constexpr int kThreads = 256;

// The first of `count` values (at `base` in the whole lattice) that is not finite, into *first.
__global__ void first_nonfinite(const double* __restrict__ values, long long count, long long base,
                                unsigned long long* __restrict__ first) {
  for (long long p = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; p < count;
       p += static_cast<long long>(gridDim.x) * blockDim.x)
    if (!isfinite(values[p])) atomicMin(first, static_cast<unsigned long long>(base + p));
}

class CopyToDevice final : public DeviceSlabSink {
 public:
  CopyToDevice(const Lattice& lattice, int device, double* values) : lattice_(lattice), device_(device), values_(values) {}

  void consume(int device, std::int64_t first, std::int64_t last, const double* slab, void* stream_handle) override {
    const auto stream = static_cast<cudaStream_t>(stream_handle);
    const std::int64_t nz = lattice_.dims[2];
    const long long count = (last - first) * nz;
    unsigned long long* flag = flag_on(device, stream);
    const int blocks = static_cast<int>(std::min<long long>((count + kThreads - 1) / kThreads, 4096));
    first_nonfinite<<<blocks, kThreads, 0, stream>>>(slab, count, first * nz, flag);
    NBKIT_CUDA_CHECK_LAUNCH();
    double* target = values_ + first * nz;
    const std::size_t bytes = sizeof(double) * static_cast<std::size_t>(count);
    if (device == device_)
      NBKIT_CUDA_CHECK(cudaMemcpyAsync(target, slab, bytes, cudaMemcpyDeviceToDevice, stream));
    else
      NBKIT_CUDA_CHECK(cudaMemcpyPeerAsync(target, device_, slab, device, bytes, stream));
  }

  // After every device's work: the first value that is not finite (ULLONG_MAX: none).
  unsigned long long first_bad() {
    unsigned long long first = ULLONG_MAX;
    for (auto& [device, flag] : flags_) {
      NBKIT_CUDA_CHECK(cudaSetDevice(device));
      NBKIT_CUDA_CHECK(cudaDeviceSynchronize());
      unsigned long long v = ULLONG_MAX;
      flag.download(&v, 1);
      first = std::min(first, v);
    }
    return first;
  }

 private:
  unsigned long long* flag_on(int device, cudaStream_t stream) {
    const std::lock_guard<std::mutex> lock(mutex_);
    auto [it, made] = flags_.try_emplace(device);
    if (made) {
      it->second = cuda::DeviceBuffer<unsigned long long>(1);
      const unsigned long long none = ULLONG_MAX;
      it->second.upload(&none, 1, stream);
    }
    return it->second.data();
  }
  Lattice lattice_;
  int device_;
  double* values_;
  std::mutex mutex_;  // host threads of several devices
  std::map<int, cuda::DeviceBuffer<unsigned long long>> flags_;
};

}  // namespace

}  // namespace nbkit::maps

namespace nbkit {

namespace {

void map_into_device(const maps::MapAtoms& atoms, const Lattice& lattice, const MapOptions& options, int device,
                     double* values, MapStats* stats) {
  validate(lattice);
  if (!map_stays_on_device(options.method))
    throw Error("maps into GPU memory: method " + to_string(options.method) +
                " finishes its rows on the host; use direct, mdh or cutoff");
  if (resolve_backend(options.backend) != Backend::cuda)
    throw Error("maps into GPU memory need the cuda backend (backend \"" + to_string(options.backend) + "\" runs elsewhere)");
  if (!values) throw Error("maps into GPU memory: no output array");
  const maps::gpu::KeepCurrentDevice keep;
  maps::CopyToDevice sink(lattice, device, values);
  maps::compute_map_on_devices(atoms, lattice, options, &sink, stats);
  const unsigned long long bad = sink.first_bad();
  if (bad != ULLONG_MAX) {
    const auto ny = static_cast<unsigned long long>(lattice.dims[1]), nz = static_cast<unsigned long long>(lattice.dims[2]);
    const auto i = bad / (ny * nz), j = bad / nz % ny, k = bad % nz;
    throw Error("the map's value at lattice point (" + std::to_string(i) + ", " + std::to_string(j) + ", " +
                std::to_string(k) + ") is not finite");
  }
}

}  // namespace

void compute_map_on_device(const Atoms& atoms, const Lattice& lattice, const MapOptions& options, int device,
                           double* values, MapStats* stats) {
  map_into_device(atoms, lattice, options, device, values, stats);
}

void compute_map_on_device(const DeviceAtomArrays& atoms, const Lattice& lattice, const MapOptions& options,
                           int device, double* values, MapStats* stats) {
  map_into_device(atoms, lattice, options, device, values, stats);
}

}  // namespace nbkit

namespace nbkit::maps {

PinnedHostRange::PinnedHostRange(void* data, std::size_t bytes) {
  int devices = 0;
  if (bytes == 0 || cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    cudaGetLastError();
    return;
  }
  if (cudaHostRegister(data, bytes, cudaHostRegisterPortable) == cudaSuccess) data_ = data;
  else cudaGetLastError();  // pageable, as before: slower copies, the same values
}

PinnedHostRange::~PinnedHostRange() {
  if (data_) cudaHostUnregister(data_);
}

}  // namespace nbkit::maps
