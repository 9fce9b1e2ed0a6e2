#pragma once
// Page-locked host memory (cudaMallocHost), so that copies to and from several GPUs run
// asynchronously from one host thread. Owning, movable, not copyable; host memory, so not
// a second device-buffer type. Only .cu files include this header.
#include <cuda_runtime.h>

#include <cstddef>
#include <string>
#include <utility>

#include "cuda/check.hpp"
#include "nbkit/core/memory.hpp"

namespace nbkit::cuda {

template <class T>
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  explicit PinnedBuffer(std::size_t count) : count_(count) {
    if (count == 0) return;
    const cudaError_t status = cudaMallocHost(reinterpret_cast<void**>(&data_), count * sizeof(T));
    if (status != cudaSuccess) {
      cudaGetLastError();
      throw Error("cannot allocate " + format_bytes(count * sizeof(T)) + " of page-locked host memory: " +
                  cudaGetErrorString(status));
    }
  }
  ~PinnedBuffer() {
    if (data_) cudaFreeHost(data_);
  }
  PinnedBuffer(PinnedBuffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), count_(std::exchange(other.count_, 0)) {}
  PinnedBuffer& operator=(PinnedBuffer&& other) noexcept {
    if (this != &other) {
      if (data_) cudaFreeHost(data_);
      data_ = std::exchange(other.data_, nullptr);
      count_ = std::exchange(other.count_, 0);
    }
    return *this;
  }
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;

  T* data() { return data_; }
  const T* data() const { return data_; }
  std::size_t size() const { return count_; }
  T& operator[](std::size_t i) { return data_[i]; }

 private:
  T* data_ = nullptr;
  std::size_t count_ = 0;
};

}  // namespace nbkit::cuda
