#pragma once
// The one owning device-memory type: a typed cudaMalloc'd array, freed on destruction,
// movable, not copyable. Allocation failures throw nbkit::Error naming the device and size.
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
    const cudaError_t status = cudaMalloc(reinterpret_cast<void**>(&data_), count * sizeof(T));
    if (status != cudaSuccess) {
      cudaGetLastError();
      int device = -1;
      cudaGetDevice(&device);
      std::size_t free_bytes = 0, total_bytes = 0;
      cudaMemGetInfo(&free_bytes, &total_bytes);
      throw Error("GPU " + std::to_string(device) + ": cannot allocate " + format_bytes(count * sizeof(T)) +
                  " (" + format_bytes(free_bytes) + " free): " + cudaGetErrorString(status));
    }
  }
  ~DeviceBuffer() {
    if (data_) cudaFree(data_);  // no throw from a destructor; a failure here has no remedy
  }
  DeviceBuffer(DeviceBuffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), count_(std::exchange(other.count_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
    if (this != &other) {
      if (data_) cudaFree(data_);
      data_ = std::exchange(other.data_, nullptr);
      count_ = std::exchange(other.count_, 0);
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
  T* data_ = nullptr;
  std::size_t count_ = 0;
};

}  // namespace nbkit::cuda
