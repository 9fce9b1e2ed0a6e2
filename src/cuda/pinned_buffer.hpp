#pragma once
// Page-locked host memory (cudaMallocHost), so that copies to and from several GPUs run
// asynchronously from one host thread. Owning, movable, not copyable; host memory, so not
// a second device-buffer type. Only .cu files include this header.
#include <cuda_runtime.h>

#include <cstddef>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

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

// A page-locked staging buffer of at least `count` doubles, taken from a process-wide cache
// and given back to it on destruction (cudaMallocHost of a slab's tens of megabytes costs
// milliseconds; repeated maps and a trajectory's frames reuse the buffers). The cache keeps at
// most kCachedBytes; it lives until the process ends (never destroyed, so no cudaFreeHost runs
// after the CUDA runtime has gone at exit). Throws nbkit::Error where page-locked memory
// cannot be had: the caller copies through pageable memory then.
class PinnedStaging {
 public:
  static constexpr std::size_t kCachedBytes = std::size_t{512} << 20;
  explicit PinnedStaging(std::size_t count) {
    {
      Cache& c = cache();
      const std::lock_guard<std::mutex> lock(c.mutex);
      for (std::size_t i = 0; i < c.free.size(); ++i)
        if (c.free[i].size() >= count) {
          buffer_ = std::move(c.free[i]);
          c.free.erase(c.free.begin() + static_cast<std::ptrdiff_t>(i));
          c.bytes -= buffer_.size() * sizeof(double);
          return;
        }
    }
    buffer_ = PinnedBuffer<double>(count);
  }
  ~PinnedStaging() {
    Cache& c = cache();
    const std::lock_guard<std::mutex> lock(c.mutex);
    const std::size_t bytes = buffer_.size() * sizeof(double);
    if (bytes > 0 && c.bytes + bytes <= kCachedBytes) {
      c.bytes += bytes;
      c.free.push_back(std::move(buffer_));
    }
  }
  PinnedStaging(const PinnedStaging&) = delete;
  PinnedStaging& operator=(const PinnedStaging&) = delete;
  double* data() { return buffer_.data(); }

 private:
  struct Cache {
    std::mutex mutex;
    std::vector<PinnedBuffer<double>> free;
    std::size_t bytes = 0;
  };
  static Cache& cache() {
    static Cache* c = new Cache;  // NOLINT: deliberately never destroyed (see above)
    return *c;
  }
  PinnedBuffer<double> buffer_;
};

}  // namespace nbkit::cuda
