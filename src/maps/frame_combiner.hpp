#pragma once
// The maps of a trajectory's frames combined on the GPUs that compute them (trajectory.cpp;
// issue 8): each device keeps the accumulators of its share of the lattice, each frame's
// slabs are folded in as soon as the map kernels have written them, and only the combined
// map crosses to the host, once, at the end. trajectory_cuda.cu; builds without CUDA throw.
// Internal to the library.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "maps/kernels.hpp"
#include "nbkit/core/lattice.hpp"
#include "nbkit/trajectory.hpp"

namespace nbkit::maps {

// compute_map_rows for the whole lattice, with the GPU backend's slabs going to `sink`
// instead of the host (maps.cpp). Direct, mdh and cutoff maps (msm's long range is summed
// on the host: it throws); the backend must resolve to cuda. The atoms on the host or in a
// GPU's memory (kernels.hpp's MapAtoms).
void compute_map_on_devices(const MapAtoms& atoms, const Lattice& lattice, const MapOptions& options,
                            DeviceSlabSink* sink, MapStats* stats);

// Throws nbkit::Error naming the first non-finite value of `count` values that start at row
// `row_begin` of `lattice` (its point and coordinates) and how many more there are: no NaN or
// infinity leaves the library as a map. `what`: "direct map (single)".
// `span` (if given) receives the values' minimum and maximum, found in the same pass.
void check_finite_map(const Lattice& lattice, std::int64_t row_begin, const double* values, std::size_t count,
                      const std::string& what, std::pair<double, double>* span = nullptr);

// combine_frame_maps (trajectory.hpp), the frames combined on the host even on a GPU when
// on_device_if_gpu is false (tests and benchmarks compare the two).
Map combine_frame_maps(Atoms atoms, const Lattice& lattice, const MapOptions& options, Combine combine,
                       const std::function<bool(Atoms&)>& next_frame, const std::function<void(int)>& on_frame,
                       TrajectoryMapStats* stats, bool on_device_if_gpu);

class GpuFrameCombiner final : public DeviceSlabSink {
 public:
  GpuFrameCombiner(const Lattice& lattice, Combine combine);
  ~GpuFrameCombiner() override;
  GpuFrameCombiner(const GpuFrameCombiner&) = delete;
  GpuFrameCombiner& operator=(const GpuFrameCombiner&) = delete;
  // Before the map of frame `frame` (1, 2, ...) is computed.
  void begin_frame(int frame);
  void consume(int device, std::int64_t first, std::int64_t last, const double* device_slab, void* stream) override;
  // The combined map, lattice order (finished on the host from the devices' accumulators, as
  // FrameMoments finishes its own). Every row must have been computed by some device.
  void download(std::vector<double>& values);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace nbkit::maps
