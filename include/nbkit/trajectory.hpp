#pragma once
// Time-averaged potential maps over a trajectory (VMD's volmap coulomb -allframes -combine):
// the map of every frame, any method and backend, combined as the frames stream, with
// memory for one frame's map and the accumulators only.
#include <functional>
#include <string>

#include "nbkit/maps.hpp"

namespace nbkit {

enum class Combine { avg, min, max, stdev };
Combine parse_combine(const std::string& name);  // avg, min, max, stdev
std::string to_string(Combine combine);

struct TrajectoryMapStats {
  int frames = 0;
  double seconds = 0;
  MapStats last_frame;  // backend and detail of the maps
  bool combined_on_device = false;  // GPU maps folded together on the GPU (direct, mdh, cutoff)
};

// next_frame(atoms) sets the positions of the next frame in `atoms` (charges and radii
// stay) and returns false after the last one; on_frame(k) is called after frame k (1-based)
// is added. On a GPU the frames' maps (direct, mdh, cutoff) are combined there and copied
// to the host once; msm's are combined on the host. avg and stdev use Welford's running mean (identical frames give the single
// frame's map bit for bit, and a zero stdev); stdev is the population standard deviation.
Map combine_frame_maps(Atoms atoms, const Lattice& lattice, const MapOptions& options, Combine combine,
                       const std::function<bool(Atoms&)>& next_frame, const std::function<void(int)>& on_frame = {},
                       TrajectoryMapStats* stats = nullptr);

}  // namespace nbkit
