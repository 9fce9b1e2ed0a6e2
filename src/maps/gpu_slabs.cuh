#pragma once
// Lattice rows on one or several GPUs, for any map kernel (direct summation in cuda.cu,
// cutoff summation in cutoff_cuda.cu): one host thread per device (the slides' multi-GPU
// design, seed 000 "Multi-GPU DCS"), each taking slabs of rows from a shared counter
// (dynamic distribution), every slab computed into one of two device buffers so that the
// copy of one slab to the host overlaps the next slab's kernels (more buffers while a slab
// term waits for its input: run_slabs). A kernel computes a point
// the same way whichever slab or device holds it, so results never depend on the split.
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "cuda/check.hpp"
#include "cuda/current_device.hpp"
#include "core/parallel_copy.hpp"
#include "cuda/device_buffer.hpp"
#include "cuda/pinned_buffer.hpp"
#include "cuda/scratch_buffer.hpp"
#include "cuda/stream.hpp"
#include "maps/kernels.hpp"
#include "nbkit/core/backend.hpp"
#include "nbkit/core/error.hpp"

namespace nbkit::maps::gpu {

// The requested device indices, checked, or every GPU of the machine (nbkit::resolve_gpus);
// fills info's device list and names.
inline std::vector<int> resolve_devices(const std::vector<int>& requested, CudaRunInfo* info) {
  std::vector<int> devices;
  if (info) info->device_names.clear();
  for (const GpuInfo& gpu : resolve_gpus(requested)) {
    devices.push_back(gpu.index);
    if (info) info->device_names.push_back(gpu.name);
  }
  if (info) info->devices = devices;
  return devices;
}

// One host thread's device: its CUDA index and its place in the request's device list (a
// device may be listed twice: two threads, two places).
struct Worker {
  int device = 0;
  int ordinal = 0;
};

// The rows of one request, shared by the host threads of all devices.
class SharedRows {
 public:
  SharedRows(const RowRange& rows, const std::vector<int>& devices)
      : rows_(rows), device_count_(static_cast<int>(devices.size())), own_next_(devices.size(), -1) {}
  const RowRange& rows() const { return rows_; }
  int device_count() const { return device_count_; }
  std::int64_t total() const { return rows_.row_end - rows_.row_begin; }

  // Guided self-scheduling: slabs of slab_rows (a multiple of step_rows, counted from
  // row_begin) first, smaller ones (never under step_rows) as the end nears, so several
  // GPUs finish together, and so one GPU's last slab, whose copy to the host follows the
  // last kernels with nothing left to overlap it, is short: at most half of what is left
  // (a whole 268 MB map of 10,000 atoms in two slabs left 13 ms of copy after 96 ms of
  // kernels, an H200's end to end at 0.87 of its kernels). False when no rows are left.
  // With a device sink, a worker takes slabs only from its fixed share (the rows cut in equal parts, in the order of the
  // device list), so a point meets every frame on the same device.
  bool take(const Worker& worker, std::int64_t slab_rows, std::int64_t step_rows, std::int64_t& first,
            std::int64_t& last) {
    if (rows_.device_sink) {
      const auto ordinal = static_cast<std::size_t>(worker.ordinal);
      // Shares in whole layers of 8 x-planes (the cutoff kernel's regions), the same on any
      // device model (step_rows is not: it follows each device's occupancy).
      const std::int64_t layer = 8 * rows_.lattice->dims[1];
      const auto share_start = [&](std::size_t d) {
        return d >= own_next_.size() ? total() : total() * static_cast<std::int64_t>(d) / device_count_ / layer * layer;
      };
      std::int64_t& next = own_next_.at(ordinal);
      if (next < 0) next = share_start(ordinal);
      const std::int64_t end = share_start(ordinal + 1);
      if (next >= end || stopped_.load()) return false;
      first = rows_.row_begin + next;
      last = rows_.row_begin + std::min(end, next + slab_rows);
      next = last - rows_.row_begin;
      return true;
    }
    std::int64_t taken = next_.load();
    while (taken < total()) {
      const std::int64_t want =
          std::min(slab_rows, std::max(step_rows, (total() - taken) / (2 * device_count_) / step_rows * step_rows));
      if (next_.compare_exchange_weak(taken, taken + want)) {
        first = rows_.row_begin + taken;
        last = std::min(rows_.row_end, first + want);
        return true;
      }
    }
    return false;
  }
  void finished(std::int64_t count) {
    const std::int64_t done = done_.fetch_add(count) + count;
    if (rows_.progress && *rows_.progress) {
      const std::lock_guard<std::mutex> lock(progress_mutex_);
      (*rows_.progress)(static_cast<double>(done) / static_cast<double>(total()));
    }
  }
  void stop() {  // after an error: the other devices stop early
    next_.store(total());
    stopped_.store(true);
  }

 private:
  const RowRange& rows_;
  int device_count_;
  std::vector<std::int64_t> own_next_;  // device sink: each device's next row, from 0; -1: not started
  std::atomic<std::int64_t> next_{0}, done_{0};
  std::atomic<bool> stopped_{false};
  std::mutex progress_mutex_;
};

// One device's loop over slabs of at most slab_rows rows. queue_slab(first, last,
// device_out, stream) queues the kernels that write rows [first, last) to device_out
// (row-major, nz values a row). The slab then goes to the host, or to the request's device
// sink on the same stream. Returns the seconds the kernels took (CUDA events).
template <class QueueSlab>
double run_slabs(SharedRows& shared, const Worker& worker, std::int64_t slab_rows, std::int64_t step_rows,
                 QueueSlab&& queue_slab) {
  const RowRange& rows = shared.rows();
  const std::int64_t nz = rows.lattice->dims[2];
  // The caller's uploads went through the legacy default stream, with which the
  // non-blocking streams below do not synchronize: wait for them, or the first kernels
  // could read atoms still in flight (seen under load: wrong sums, different bits).
  NBKIT_CUDA_CHECK(cudaStreamSynchronize(cudaStreamLegacy));
  // Two slab buffers: the kernels of one slab are queued before the previous slab's result
  // is copied to the host (a copy to pageable memory holds the host thread until it is
  // done), so the copy overlaps the next slab's computation. While a slab term is not ready
  // (msm: its grids, summed on another host thread of the same GPU for 40-60 ms of a 1.5
  // million atom map), more buffers are taken, up to a quarter of the free memory, and slabs
  // queued on them, the term added to each once it is ready: the GPU keeps summing the short
  // range meanwhile instead of holding one slab (which left msm at grids + short range).
  struct Slot {
    cuda::ScratchBuffer out;  // kept between calls (cuda/scratch_buffer.hpp)
    cuda::Event start, kernels_done, term_start, stop;
    std::int64_t first = 0, last = 0;
    bool term_pending = false;  // queued before the term was ready: term and sink not yet queued
  };
  const cuda::Stream compute, copy;
  // The terms of slabs queued before the term was ready, each after its slab's kernels: on a
  // stream of their own, of high priority, so that they and the slabs' copies need not wait for
  // the slabs queued after them (all of a 1 GB map's short range, whose copy then followed it).
  std::optional<cuda::Stream> late_terms;
  const std::size_t slab_points = static_cast<std::size_t>(slab_rows * nz);
  std::vector<std::unique_ptr<Slot>> slots;
  auto new_slot = [&] {
    slots.push_back(std::make_unique<Slot>());
    slots.back()->out = cuda::ScratchBuffer(slab_points);
    return slots.back().get();
  };
  // Deferral's limit: at most this many slots, each only while a quarter of the free memory
  // holds another (the term's own work needs the rest). A slot's buffer is allocated without
  // waiting for the device (cudaMalloc does not; cudaFree, which would, runs at the end, or the
  // buffer goes back to the cache of scratch buffers).
  constexpr std::size_t kMostSlots = 64;
  auto can_defer = [&] {
    if (!rows.slab_term || slots.size() >= kMostSlots || rows.slab_term->ready()) return false;
    std::size_t free_bytes = 0, total_bytes = 0;
    NBKIT_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
    return slab_points * sizeof(double) <= free_bytes / 4;
  };
  // A slab for the host goes through page-locked staging in chunks: each chunk's copy runs at
  // the bus's rate (one to pageable memory ran at 8-12 GB/s, the driver staging it through one
  // core) while several cores move the previous chunk into the caller's array, and all of it
  // while the GPU computes the next slab; where page-locked memory cannot be had, the copy goes
  // to pageable memory directly. Two chunks' staging, a chunk an eighth of the largest slab, 2 to
  // 32 MB: the last slab's copy follows the last kernels with nothing to hide it, and as one chunk
  // its bus copy and its copy into the caller's array ran one after the other (a 10 MB slab of
  // Parboil's cutoff map: 0.32 + 0.27 ms of a 3.6 ms call; CUPTI trace, H200, session 45).
  constexpr std::size_t kStagingChunk = std::size_t{1} << 22, kLeastChunk = std::size_t{1} << 18;  // doubles
  const std::size_t chunk =
      std::min<std::size_t>(slab_points, std::clamp<std::size_t>(slab_points / 8, kLeastChunk, kStagingChunk));
  std::unique_ptr<cuda::PinnedStaging> staging;
  if (!rows.device_sink) try {
      staging = std::make_unique<cuda::PinnedStaging>(2 * chunk);
    } catch (const Error&) {
      staging.reset();
    }
  double kernel_seconds = 0;
  // The term and the sink of a slab whose kernels are queued, then the event the copy waits for.
  auto finish_queue = [&](Slot& slot) {
    cudaStream_t stream = compute;
    if (slot.term_pending) {
      if (!late_terms) late_terms.emplace(cuda::Stream::high_priority());
      stream = *late_terms;
      NBKIT_CUDA_CHECK(cudaStreamWaitEvent(stream, slot.kernels_done, 0));
    }
    slot.term_start.record(stream);
    if (rows.slab_term) rows.slab_term->add(worker.device, slot.first, slot.last, slot.out.data(), stream);
    if (rows.device_sink) rows.device_sink->consume(worker.device, slot.first, slot.last, slot.out.data(), stream);
    slot.stop.record(stream);
    // What the compute stream queues from now on (the slot's next slab) follows the term.
    if (slot.term_pending) NBKIT_CUDA_CHECK(cudaStreamWaitEvent(compute, slot.stop, 0));
    slot.term_pending = false;
  };
  auto copy_out = [&](Slot& slot) {
    auto count_done = [&] {
      kernel_seconds += slot.kernels_done.seconds_since(slot.start) + slot.stop.seconds_since(slot.term_start);
      shared.finished(slot.last - slot.first);
    };
    if (rows.device_sink) {  // consumed on the compute stream already: wait for it to pass
      slot.stop.synchronize();
      count_done();
      return;
    }
    NBKIT_CUDA_CHECK(cudaStreamWaitEvent(copy, slot.stop, 0));
    double* target = rows.out + (slot.first - rows.row_begin) * nz;
    const auto count = static_cast<std::size_t>((slot.last - slot.first) * nz);
    if (!staging) {
      NBKIT_CUDA_CHECK(cudaMemcpyAsync(target, slot.out.data(), count * sizeof(double), cudaMemcpyDeviceToHost, copy));
      NBKIT_CUDA_CHECK(cudaStreamSynchronize(copy));
    } else {
      auto fetch = [&](std::size_t from, int half) {  // chunk at `from` into one half of the staging
        const std::size_t n = std::min(chunk, count - from);
        NBKIT_CUDA_CHECK(cudaMemcpyAsync(staging->data() + half * chunk, slot.out.data() + from, n * sizeof(double),
                                         cudaMemcpyDeviceToHost, copy));
      };
      fetch(0, 0);
      for (std::size_t done = 0, half = 0; done < count; done += chunk, half ^= 1) {
        NBKIT_CUDA_CHECK(cudaStreamSynchronize(copy));
        if (done + chunk < count) fetch(done + chunk, static_cast<int>(half ^ 1));
        parallel_copy(target + done, staging->data() + half * chunk, std::min(chunk, count - done));
      }
    }
    count_done();
  };
  // Slabs whose kernels are queued, not yet copied, oldest first. A slot is reused only after
  // its slab's copy (the oldest), so with two slots one slab's copy overlaps the next one's
  // kernels, and with more (deferral) the GPU stays as many slabs ahead once the term is ready.
  std::deque<Slot*> queued;
  auto finish_pending = [&] {  // the terms of slabs queued before the term was ready, in order
    for (Slot* slot : queued)
      if (slot->term_pending) finish_queue(*slot);
  };
  std::int64_t first = 0, last = 0;
  while (shared.take(worker, slab_rows, step_rows, first, last)) {
    Slot* slot = nullptr;
    if (slots.size() < 2 || can_defer()) {
      slot = new_slot();
    } else {
      finish_pending();  // waits for the term if it is not ready
      slot = queued.front();
      queued.pop_front();
      copy_out(*slot);
    }
    slot->first = first;
    slot->last = last;
    slot->start.record(compute);
    queue_slab(first, last, slot->out.data(), static_cast<cudaStream_t>(compute));
    slot->kernels_done.record(compute);
    if (rows.slab_term && !rows.slab_term->ready()) {
      slot->term_pending = true;
    } else {
      finish_pending();
      finish_queue(*slot);
    }
    queued.push_back(slot);
  }
  finish_pending();
  for (Slot* slot : queued) copy_out(*slot);  // every slot's work done: its buffer may be reused
  return kernel_seconds;
}

// work(Worker) on one host thread per listed device; every device's kernel seconds, or the first
// error, rethrown after all threads are joined.
template <class Work>
std::vector<double> on_each_device(const std::vector<int>& devices, SharedRows& shared, Work&& work) {
  if (devices.size() == 1) {  // on the calling thread: a thread made per call, and its OpenMP team
                              // for the slabs' copies, cost a small map ~0.1-0.5 ms
    const cuda::KeepCurrentDevice keep;
    NBKIT_CUDA_CHECK(cudaSetDevice(devices.front()));
    return {work(Worker{devices.front(), 0})};
  }
  std::vector<std::exception_ptr> errors(devices.size());
  std::vector<double> kernel_seconds(devices.size(), 0.0);
  std::vector<std::thread> workers;
  for (std::size_t d = 0; d < devices.size(); ++d)
    workers.emplace_back([&, d] {
      try {
        NBKIT_CUDA_CHECK(cudaSetDevice(devices[d]));
        kernel_seconds[d] = work(Worker{devices[d], static_cast<int>(d)});
      } catch (...) {
        errors[d] = std::current_exception();
        shared.stop();
      }
    });
  for (auto& worker : workers) worker.join();
  for (const auto& error : errors)
    if (error) std::rethrow_exception(error);
  return kernel_seconds;
}

}  // namespace nbkit::maps::gpu
