#pragma once
// The force loops behind nbody::ForceEngine, one per backend. Internal to the library.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "nbkit/nbody.hpp"

namespace nbkit::nbody {

// The bodies i a force loop sums for, [first, last) (a rank's share under mpirun), each against
// every body j. A body's sums do not depend on the range: the same bits whatever the split.
struct Targets {
  std::size_t first = 0, last = static_cast<std::size_t>(-1);  // last clipped to the body count
};

// float64 plain loops over all pairs j != i: the oracle. Only the targets' entries of `out`
// (sized to all bodies) are written.
void accelerations_reference(const Bodies& bodies, double softening, Accelerations& out, Targets targets = {});

// All cores, SIMD over j (Google Highway, run-time dispatch), float32 (float64 sums of
// chunks) or float64. `progress` (may be empty) hears the fraction of bodies i done, from
// one thread, at most ~100 times.
void accelerations_cpu(const Bodies& bodies, double softening, bool double_precision, int threads,
                       Accelerations& out, const std::function<void(double)>& progress = {}, Targets targets = {});
const char* nbody_cpu_target();

struct Octree;
// The tree's leaves and groups (bodies walking the tree together), the same on the CPU and
// the GPU (whose walk gives a group's bodies a block of 128 threads). Measured on
// Plummer spheres of 1e5 and 1e6 bodies (2 cores, AVX-512): leaves/groups of 16/64 bodies ran
// 4.1e5 bodies/s at 1e6, 32/128 5.4e5 with a 99th-percentile error of 4.0e-4 instead of 6.2e-4
// at theta 0.5 (a larger group's box opens more cells for its far bodies); 32/256 gained 8%
// more speed but needs blocks of 256 threads on the GPU.
constexpr int kTreeLeafSize = 32;
constexpr int kTreeGroupSize = 128;
// Barnes-Hut on the CPU (tree_build.cpp, tree_cpu.cpp): builds `tree` (kept by the caller
// so that its memory is reused step to step) and walks it on all cores, SIMD over the lists.
TreeTimings tree_accelerations_cpu(const Bodies& bodies, double softening, const TreeOptions& options,
                                   bool double_precision, int threads, Octree& tree, Accelerations& out,
                                   const std::function<void(double)>& progress = {});

// The GPU path (forces_cuda.cu; no_cuda.cpp in builds without CUDA, where the constructor
// throws): bodies i split over the devices, every device holding all bodies j; device
// buffers and pinned staging memory kept from call to call.
class GpuForces {
 public:
  GpuForces(const std::vector<int>& gpus, double softening, bool double_precision);
  ~GpuForces();
  GpuForces(const GpuForces&) = delete;
  GpuForces& operator=(const GpuForces&) = delete;
  // `targets`: the bodies i summed (a rank's share; the devices split them). Bodies j are split
  // among a device's blocks by how many bodies i it has, which decides how the float64 sums
  // group; `split_as_one_gpu` chooses that split as one GPU holding every body i would, so that
  // any share, on any number of ranks or devices of this model, gives that GPU's bits.
  void compute(const Bodies& bodies, Accelerations& out, bool with_potential, Targets targets = {},
               bool split_as_one_gpu = false);
  void compute_on_device(const DeviceBodies& bodies);  // one device: the arrays'
  double last_kernel_seconds() const;
  std::string description() const;

  struct State;  // the devices' buffers and streams (forces_cuda.cu's helpers take it)

 private:
  std::unique_ptr<State> state_;
};

// Barnes-Hut on one GPU (tree_cuda.cu; no_cuda.cpp without CUDA): the tree built on the device
// each evaluation, walked by groups; the first of `gpus`.
class GpuTree {
 public:
  GpuTree(const std::vector<int>& gpus, double softening, const TreeOptions& options, bool double_precision,
          int threads);  // host threads staging the bodies
  ~GpuTree();
  GpuTree(const GpuTree&) = delete;
  GpuTree& operator=(const GpuTree&) = delete;
  void compute(const Bodies& bodies, Accelerations& out, bool with_potential);
  // Bodies in the memory of this engine's GPU: no host staging, no copies over the bus; the
  // same bits as compute() for the same values.
  void compute_on_device(const DeviceBodies& bodies);
  double last_kernel_seconds() const;  // upload (or the device bodies' unpacking), build, walk and download (CUDA events)
  TreeTimings last_timings() const;
  std::string description() const;

  struct State;

 private:
  std::unique_ptr<State> state_;
};

}  // namespace nbkit::nbody
