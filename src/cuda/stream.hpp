#pragma once
// Owning handles for CUDA streams and events: created checked, destroyed on scope exit.
#include <cuda_runtime.h>

#include <utility>

#include "cuda/check.hpp"

namespace nbkit::cuda {

class Stream {
 public:
  Stream() { NBKIT_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking)); }
  // The current device's highest priority (`below` = 0), or that many levels below it (never
  // below the default): its blocks are scheduled before those of lower-priority streams queued
  // on the same device (work that others wait for).
  static Stream high_priority(int below = 0) {
    int least = 0, greatest = 0;
    NBKIT_CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
    return Stream(greatest + below < least ? greatest + below : least);
  }
  ~Stream() {
    if (stream_) cudaStreamDestroy(stream_);
  }
  Stream(Stream&& other) noexcept : stream_(std::exchange(other.stream_, nullptr)) {}
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  Stream& operator=(Stream&&) = delete;
  operator cudaStream_t() const { return stream_; }

 private:
  explicit Stream(int priority) {
    NBKIT_CUDA_CHECK(cudaStreamCreateWithPriority(&stream_, cudaStreamNonBlocking, priority));
  }
  cudaStream_t stream_ = nullptr;
};

class Event {
 public:
  Event() { NBKIT_CUDA_CHECK(cudaEventCreate(&event_)); }
  ~Event() { cudaEventDestroy(event_); }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  operator cudaEvent_t() const { return event_; }
  void record(cudaStream_t stream) { NBKIT_CUDA_CHECK(cudaEventRecord(event_, stream)); }
  void synchronize() { NBKIT_CUDA_CHECK(cudaEventSynchronize(event_)); }
  // Seconds from `start` to this event (both recorded and complete).
  double seconds_since(const Event& start) const {
    float milliseconds = 0;
    NBKIT_CUDA_CHECK(cudaEventElapsedTime(&milliseconds, start.event_, event_));
    return milliseconds * 1e-3;
  }

 private:
  cudaEvent_t event_ = nullptr;
};

}  // namespace nbkit::cuda
