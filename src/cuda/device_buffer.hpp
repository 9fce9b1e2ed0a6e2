#pragma once
// The one owning device-memory type: a typed cudaMalloc'd array, freed on destruction,
// movable, not copyable. Allocation failures throw nbkit::Error naming the device and size.
// Given a stream, the array is stream-ordered (cudaMallocAsync, cudaFreeAsync on that stream,
// which must outlive the buffer): neither call waits for the device, where cudaFree waits for
// every stream's queued work (two host threads sharing a GPU, such as MSM's grids beside its
// short range, would otherwise wait for each other's kernels at every free). The array is then
// usable on other streams only after an event or synchronisation that follows the allocation.
#include <cuda_runtime.h>

#include <cstddef>
#include <string>
#include <utility>

#include "cuda/check.hpp"
#include "nbkit/core/memory.hpp"

namespace nbkit::cuda {

template <class T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t count) : count_(count) {
    if (count == 0) return;
    check_allocation(cudaMalloc(reinterpret_cast<void**>(&data_), count * sizeof(T)));
  }
  DeviceBuffer(std::size_t count, cudaStream_t stream) : count_(count), stream_(stream), ordered_(true) {
    if (count == 0) return;
    cudaError_t status = cudaMallocAsync(reinterpret_cast<void**>(&data_), count * sizeof(T), stream);
    if (status == cudaErrorNotSupported) {  // a device without memory pools: the plain allocation
      cudaGetLastError();
      ordered_ = false;
      status = cudaMalloc(reinterpret_cast<void**>(&data_), count * sizeof(T));
    }
    check_allocation(status);
  }
  ~DeviceBuffer() { release(); }
  DeviceBuffer(DeviceBuffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)),
        count_(std::exchange(other.count_, 0)),
        stream_(other.stream_),
        ordered_(other.ordered_) {}
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
    if (this != &other) {
      release();
      data_ = std::exchange(other.data_, nullptr);
      count_ = std::exchange(other.count_, 0);
      stream_ = other.stream_;
      ordered_ = other.ordered_;
    }
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  T* data() { return data_; }
  const T* data() const { return data_; }
  std::size_t size() const { return count_; }

  void upload(const T* host, std::size_t count, cudaStream_t stream = nullptr) {
    NBKIT_CUDA_CHECK(cudaMemcpyAsync(data_, host, count * sizeof(T), cudaMemcpyHostToDevice, stream));
  }
  void download(T* host, std::size_t count, cudaStream_t stream = nullptr) const {
    NBKIT_CUDA_CHECK(cudaMemcpyAsync(host, data_, count * sizeof(T), cudaMemcpyDeviceToHost, stream));
  }

 private:
  void check_allocation(cudaError_t status) {
    if (status != cudaSuccess) {
      data_ = nullptr;
      cudaGetLastError();
      int device = -1;
      cudaGetDevice(&device);
      std::size_t free_bytes = 0, total_bytes = 0;
      cudaMemGetInfo(&free_bytes, &total_bytes);
      throw Error("GPU " + std::to_string(device) + ": cannot allocate " + format_bytes(count_ * sizeof(T)) +
                  " (" + format_bytes(free_bytes) + " free): " + cudaGetErrorString(status));
    }
  }
  // No throw from a destructor; a failure here has no remedy.
  void release() noexcept {
    if (!data_) return;
    if (ordered_) cudaFreeAsync(data_, stream_);
    else cudaFree(data_);
    data_ = nullptr;
  }

  T* data_ = nullptr;
  std::size_t count_ = 0;
  cudaStream_t stream_ = nullptr;  // with ordered_: the stream of the allocation and the free
  bool ordered_ = false;
};

}  // namespace nbkit::cuda
