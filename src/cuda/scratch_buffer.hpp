#pragma once
// Device memory for a call's work buffers (the maps' slab buffers, the direct sum's partial
// sums), kept between calls: cudaMalloc and cudaFree of a small map's ~200 MB of them cost
// ~0.5 ms of its 13.5 ms end to end on an H100 (measured: 34 MB 0.13 ms, 134 MB 0.19 ms a
// pair; cudaFree also waits for the whole device). A ScratchBuffer takes a buffer of the
// current device from a process-wide cache and gives it back when destroyed, unless an
// exception is unwinding (queued kernels may still use it: it is freed, which waits for them).
// The owner must be done with it on the device by then (its stream synchronised). The cache
// keeps at most kCachedBytes (or a sixteenth of the device's memory) a device, the oldest
// buffers freed first; it lives until the process ends (never destroyed, so no cudaFree runs
// after the CUDA runtime has gone at exit). A wrapper of DeviceBuffer, not a second
// device-buffer type.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <exception>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

#include "cuda/check.hpp"
#include "cuda/device_buffer.hpp"

namespace nbkit::cuda {

class ScratchBuffer {
 public:
  static constexpr std::size_t kCachedBytes = std::size_t{512} << 20;

  ScratchBuffer() = default;
  explicit ScratchBuffer(std::size_t count) {
    if (count == 0) return;
    NBKIT_CUDA_CHECK(cudaGetDevice(&device_));
    {
      Cache& c = cache();
      const std::lock_guard<std::mutex> lock(c.mutex);
      auto& kept = c.free[device_];
      // The smallest that fits, if at most twice the request (a small map keeps no 1 GB buffer).
      auto best = kept.end();
      for (auto it = kept.begin(); it != kept.end(); ++it)
        if (it->size() >= count && it->size() <= 2 * count && (best == kept.end() || it->size() < best->size()))
          best = it;
      if (best != kept.end()) {
        buffer_ = std::move(*best);
        kept.erase(best);
        c.bytes[device_] -= buffer_.size() * sizeof(double);
        return;
      }
    }
    buffer_ = DeviceBuffer<double>(count);
  }
  ~ScratchBuffer() { give_back(); }
  ScratchBuffer(ScratchBuffer&& other) noexcept
      : buffer_(std::move(other.buffer_)), device_(other.device_), unwinding_(other.unwinding_) {}
  ScratchBuffer& operator=(ScratchBuffer&& other) noexcept {
    if (this != &other) {
      give_back();
      buffer_ = std::move(other.buffer_);
      device_ = other.device_;
      unwinding_ = other.unwinding_;
    }
    return *this;
  }
  ScratchBuffer(const ScratchBuffer&) = delete;
  ScratchBuffer& operator=(const ScratchBuffer&) = delete;

  // Bytes the cache holds for the current device (tests).
  static std::size_t cached_bytes() {
    int device = 0;
    NBKIT_CUDA_CHECK(cudaGetDevice(&device));
    Cache& c = cache();
    const std::lock_guard<std::mutex> lock(c.mutex);
    return c.bytes[device];
  }

  double* data() { return buffer_.data(); }
  const double* data() const { return buffer_.data(); }
  std::size_t size() const { return buffer_.size(); }

 private:
  struct Cache {
    std::mutex mutex;
    std::map<int, std::vector<DeviceBuffer<double>>> free;  // oldest first
    std::map<int, std::size_t> bytes, limit;
  };
  static Cache& cache() {
    static Cache* c = new Cache;  // never destroyed: see above
    return *c;
  }
  void give_back() noexcept {
    if (!buffer_.data()) return;
    if (std::uncaught_exceptions() > unwinding_) {  // freed (cudaFree waits for the kernels)
      buffer_ = DeviceBuffer<double>();
      return;
    }
    Cache& c = cache();
    const std::lock_guard<std::mutex> lock(c.mutex);
    auto [limit, made] = c.limit.try_emplace(device_, kCachedBytes);
    if (made) {
      std::size_t free_bytes = 0, total_bytes = 0;
      if (cudaMemGetInfo(&free_bytes, &total_bytes) == cudaSuccess)
        limit->second = std::min(kCachedBytes, total_bytes / 16);
      else
        cudaGetLastError();
    }
    if (buffer_.size() * sizeof(double) > limit->second) {  // alone over the bound: freed
      buffer_ = DeviceBuffer<double>();
      return;
    }
    auto& kept = c.free[device_];
    std::size_t& bytes = c.bytes[device_];
    bytes += buffer_.size() * sizeof(double);
    kept.push_back(std::move(buffer_));
    while (bytes > limit->second && !kept.empty()) {  // the oldest go (with this device current: cudaFree)
      bytes -= kept.front().size() * sizeof(double);
      kept.erase(kept.begin());
    }
  }

  DeviceBuffer<double> buffer_;
  int device_ = 0;
  int unwinding_ = std::uncaught_exceptions();  // exceptions in flight when made
};

}  // namespace nbkit::cuda
