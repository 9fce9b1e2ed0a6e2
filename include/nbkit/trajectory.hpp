#pragma once
// Time-averaged potential maps over a trajectory (VMD's volmap coulomb -allframes -combine):
// the map of every frame, any method and backend, combined as the frames stream, with
// memory for one frame's map and the accumulators only.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "nbkit/maps.hpp"

namespace nbkit {

class Ranks;

enum class Combine { avg, min, max, stdev };
Combine parse_combine(const std::string& name);  // avg, min, max, stdev
std::string to_string(Combine combine);

// Bytes a lattice point's accumulators take while frames are combined (8 for min and max, 16
// for avg's exact sum, 48 for stdev's sums of values and squares), besides the maps themselves.
std::uint64_t combine_bytes_per_point(Combine combine);

struct TrajectoryMapStats {
  int frames = 0;
  double seconds = 0;
  MapStats last_frame;  // backend and detail of the maps
  bool combined_on_device = false;  // GPU maps folded together on the GPU (direct, mdh, cutoff)
};

// next_frame(atoms) sets the positions of the next frame in `atoms` (charges and radii
// stay) and returns false after the last one; on_frame(k) is called after frame k (1-based)
// is added. On a GPU the frames' maps (direct, mdh, cutoff) are combined there and copied
// to the host once; msm's are combined on the host. avg and stdev are exact integer sums of the
// values rounded to 2^-80 (src/maps/exact_moments.hpp says why and what range they hold): the
// result does not depend on how frames are divided among GPUs or ranks, identical frames give
// the single frame's map bit for bit (values of 2^-28 and more) and a zero stdev; stdev is the
// population standard deviation. Values beyond +-2^24 are refused (nbkit::Error).
Map combine_frame_maps(Atoms atoms, const Lattice& lattice, const MapOptions& options, Combine combine,
                       const std::function<bool(Atoms&)>& next_frame, const std::function<void(int)>& on_frame = {},
                       TrajectoryMapStats* stats = nullptr);

// The combined map of a trajectory too large to hold, a slab of `slab_rows` lattice rows at a
// time: for each slab the frames are read again (`rewind()` starts them over, then
// `next_frame` as above), the slab's maps combined on the host as combine_frame_maps combines
// them, and the finished slab handed to `consume`, in order. The values are
// combine_frame_maps', bit for bit, for any slab_rows. Why the frames are read again rather
// than each slab's accumulators kept on disk: reading costs slabs x the trajectory (12 bytes an
// atom a frame), spilling would move frames x the map (16 bytes a point a frame, read and
// written) through the disk; for a map that needs slabs the first is far smaller (a 2048^3 map
// in 20 slabs over 1,000 frames of a million atoms: 240 GB read against 137 TB moved).
// on_frame(slab, frame) after each frame of each slab (both 1-based); memory: a slab's map, its
// finished values and the accumulators (FrameMoments: 8 to 48 bytes a point).
void stream_frame_maps(Atoms atoms, const Lattice& lattice, const MapOptions& options, Combine combine,
                       std::int64_t slab_rows, const std::function<void()>& rewind,
                       const std::function<bool(Atoms&)>& next_frame, const std::function<void(const MapSlab&)>& consume,
                       const std::function<void(std::int64_t, int)>& on_frame = {},
                       TrajectoryMapStats* stats = nullptr);
// The same for a job of several ranks (mpirun; issue 22): the frames dealt among the ranks in
// proportion to `weights` (each rank's speed, the same vector on every rank), each rank computing
// its frames' maps of the slab, the ranks' exact sums merged (Ranks::reduce_pieces, any order
// gives the same bits), and rank r handed the finished rows [bounds[r], bounds[r+1]) of each
// slab, in order (none: nothing handed on). Every rank reads every frame: skip_frame() passes
// over one this rank does not compute. `slab_rows` must be the same on every rank. The values
// are one process's (stream_frame_maps'), bit for bit, for any rank count.
void stream_frame_maps_across(const Ranks& ranks, Atoms atoms, const Lattice& lattice, const MapOptions& options,
                              Combine combine, std::int64_t slab_rows, const std::vector<std::int64_t>& bounds,
                              const std::vector<double>& weights, const std::function<void()>& rewind,
                              const std::function<bool(Atoms&)>& next_frame, const std::function<bool()>& skip_frame,
                              const std::function<void(const MapSlab&)>& consume,
                              const std::function<void(std::int64_t, int)>& on_frame = {},
                              TrajectoryMapStats* stats = nullptr);

}  // namespace nbkit
