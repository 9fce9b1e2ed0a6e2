// Trajectory-combined maps (trajectory.hpp).
#include "nbkit/trajectory.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <utility>

#include "maps/frame_combiner.hpp"
#include "maps/frame_moments.hpp"
#include "maps/methods.hpp"
#include "nbkit/core/backend.hpp"
#include "nbkit/core/error.hpp"
#include "nbkit/core/memory.hpp"
#include "nbkit/core/ranks.hpp"

namespace nbkit {

Combine parse_combine(const std::string& name) {
  if (name == "avg" || name == "mean") return Combine::avg;
  if (name == "min") return Combine::min;
  if (name == "max") return Combine::max;
  if (name == "stdev" || name == "std") return Combine::stdev;
  throw Error("unknown --combine '" + name + "': expected avg, min, max or stdev");
}

std::string to_string(Combine combine) {
  switch (combine) {
    case Combine::avg: return "avg";
    case Combine::min: return "min";
    case Combine::max: return "max";
    case Combine::stdev: return "stdev";
  }
  return "?";
}

std::uint64_t combine_bytes_per_point(Combine combine) { return maps::FrameMoments::bytes_per_point(combine); }

namespace maps {

Map combine_frame_maps(Atoms atoms, const Lattice& lattice, const MapOptions& options, Combine combine,
                       const std::function<bool(Atoms&)>& next_frame, const std::function<void(int)>& on_frame,
                       TrajectoryMapStats* stats, bool on_device_if_gpu) {
  const auto start = std::chrono::steady_clock::now();
  const std::size_t points = static_cast<std::size_t>(lattice.size());
  // On a GPU the maps of direct, mdh and cutoff summation stay where they are computed: each
  // frame's slabs folded into accumulators there, one copy to the host at the end. msm sums
  // its long range on the host, so its frames come to the host and are combined here.
  // (The backend resolved by the one rule, nbkit::resolve_backend, as compute_map_rows does.)
  const bool on_device =
      on_device_if_gpu && map_stays_on_device(options.method) && resolve_backend(options.backend) == Backend::cuda;
  // Host memory: the result, plus one frame's map and the accumulators when combined here.
  const std::uint64_t per_point = sizeof(double) + (on_device ? 0 : sizeof(double) + FrameMoments::bytes_per_point(combine));
  check_memory(per_point * points,
               fmt::format("combining frame maps on a {}x{}x{} lattice", lattice.dims[0], lattice.dims[1], lattice.dims[2]));
  Map result;
  result.lattice = lattice;
  result.unit = options.unit;
  std::vector<double> frame(on_device ? 0 : points);
  FrameMoments moments(combine, lattice, 0, on_device ? 0 : points);
  std::unique_ptr<GpuFrameCombiner> combiner = on_device ? std::make_unique<GpuFrameCombiner>(lattice, combine) : nullptr;
  int frames = 0;
  MapStats map_stats;
  while (next_frame(atoms)) {
    ++frames;
    if (on_device) {
      combiner->begin_frame(frames);
      compute_map_on_devices(atoms, lattice, options, combiner.get(), &map_stats);
    } else {
      compute_map_rows(atoms, lattice, options, 0, lattice.rows(), frame.data(), &map_stats);
      moments.add(frame.data());
    }
    if (on_frame) on_frame(frames);
  }
  if (frames == 0) throw Error("the trajectory has no frames in the range asked for");
  if (on_device) {
    combiner->download(result.values);
  } else {
    frame = {};
    result.values.resize(points);
    moments.finish(0, points, result.values.data());
  }
  check_finite_map(lattice, 0, result.values.data(), points, "combined map (" + to_string(combine) + ")");
  if (stats) {
    stats->frames = frames;
    stats->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    stats->last_frame = map_stats;
    stats->combined_on_device = on_device;
  }
  return result;
}

namespace {

// Frames dealt to ranks in proportion to their weights, the same sequence on every rank (smooth
// weighted round robin, as nginx balances its servers): each turn every rank's credit grows by
// its weight, the rank with the most credit (the lowest on a tie) takes the frame and pays the
// total. Equal weights: plain round robin.
class FrameDealer {
 public:
  explicit FrameDealer(const std::vector<double>& weights) : weights_(weights), credit_(weights.size(), 0.0) {
    for (double w : weights_) total_ += w;
  }
  int next() {
    std::size_t best = 0;
    for (std::size_t r = 0; r < weights_.size(); ++r) {
      credit_[r] += weights_[r];
      if (credit_[r] > credit_[best]) best = r;
    }
    credit_[best] -= total_;
    return static_cast<int>(best);
  }

 private:
  std::vector<double> weights_, credit_;
  double total_ = 0;
};

// stream_frame_maps and stream_frame_maps_across: `ranks` null for one process.
void stream_frames(const Ranks* ranks, Atoms atoms, const Lattice& lattice, const MapOptions& options, Combine combine,
                   std::int64_t slab_rows, const std::vector<std::int64_t>& bounds, const std::vector<double>& weights,
                   const std::function<void()>& rewind, const std::function<bool(Atoms&)>& next_frame,
                   const std::function<bool()>& skip_frame, const std::function<void(const MapSlab&)>& consume,
                   const std::function<void(std::int64_t, int)>& on_frame, TrajectoryMapStats* stats) {
  const auto start = std::chrono::steady_clock::now();
  validate(lattice);
  const int rank = ranks ? ranks->rank() : 0, size = ranks ? ranks->size() : 1;
  if (slab_rows < 1) throw Error(fmt::format("a slab needs at least one row, got {}", slab_rows));
  if (bounds.size() != static_cast<std::size_t>(size) + 1 || weights.size() != static_cast<std::size_t>(size) ||
      bounds.front() != 0 || bounds.back() != lattice.rows() || !std::is_sorted(bounds.begin(), bounds.end()))
    throw Error("internal: every rank needs a weight and a range of rows, the ranges covering the lattice in order");
  for (double w : weights)
    if (!(w > 0) || !std::isfinite(w)) throw Error(fmt::format("internal: a rank's weight is {}", w));
  const std::int64_t rows = lattice.rows(), nz = lattice.dims[2];
  slab_rows = std::min(slab_rows, rows);
  const std::size_t values = static_cast<std::size_t>(slab_rows * nz);
  check_memory(static_cast<std::uint64_t>(2 * sizeof(double) + FrameMoments::bytes_per_point(combine)) * values,
               fmt::format("combining frame maps in slabs of {} lattice rows", slab_rows));
  std::vector<double> frame(values), finished(values);
  FrameMoments moments(combine, lattice, 0, values);
  MapStats map_stats;
  int frames = 0;
  for (std::int64_t begin = 0, slab = 1; begin < rows; begin += slab_rows, ++slab) {
    const std::int64_t end = std::min(rows, begin + slab_rows);
    moments.reset(begin, static_cast<std::size_t>((end - begin) * nz));
    rewind();
    FrameDealer dealer(weights);
    int k = 0;
    for (;;) {
      const bool mine = dealer.next() == rank;
      if (!(mine ? next_frame(atoms) : skip_frame())) break;
      ++k;
      if (mine) {
        compute_map_rows(atoms, lattice, options, begin, end, frame.data(), &map_stats);
        moments.add(frame.data());
      }
      if (on_frame) on_frame(slab, k);
    }
    if (k == 0) throw Error("the trajectory has no frames in the range asked for");
    if (slab == 1) frames = k;
    else if (k != frames)
      throw Error(fmt::format("the trajectory gave {} frames when read again, {} the first time", k, frames));
    // This rank's rows of the slab, as offsets into the slab's points.
    const std::int64_t low = std::clamp(bounds[static_cast<std::size_t>(rank)], begin, end),
                       high = std::clamp(bounds[static_cast<std::size_t>(rank) + 1], begin, end);
    if (ranks) {
      std::vector<std::int64_t> pieces(bounds.size());
      for (std::size_t r = 0; r < bounds.size(); ++r) pieces[r] = (std::clamp(bounds[r], begin, end) - begin) * nz;
      moments.merge_across(*ranks, pieces);
    }
    if (high == low) continue;
    const std::size_t count = static_cast<std::size_t>((high - low) * nz);
    moments.finish(static_cast<std::size_t>((low - begin) * nz), count, finished.data());
    maps::check_finite_map(lattice, low, finished.data(), count, "combined map (" + to_string(combine) + ")");
    consume(MapSlab{low, high, finished.data()});
  }
  if (stats) {
    stats->frames = frames;
    stats->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    stats->last_frame = map_stats;
    stats->combined_on_device = false;
  }
}

}  // namespace

}  // namespace maps

Map combine_frame_maps(Atoms atoms, const Lattice& lattice, const MapOptions& options, Combine combine,
                       const std::function<bool(Atoms&)>& next_frame, const std::function<void(int)>& on_frame,
                       TrajectoryMapStats* stats) {
  return maps::combine_frame_maps(std::move(atoms), lattice, options, combine, next_frame, on_frame, stats, true);
}

void stream_frame_maps(Atoms atoms, const Lattice& lattice, const MapOptions& options, Combine combine,
                       std::int64_t slab_rows, const std::function<void()>& rewind,
                       const std::function<bool(Atoms&)>& next_frame, const std::function<void(const MapSlab&)>& consume,
                       const std::function<void(std::int64_t, int)>& on_frame, TrajectoryMapStats* stats) {
  validate(lattice);
  maps::stream_frames(
      nullptr, std::move(atoms), lattice, options, combine, slab_rows, {0, lattice.rows()}, {1.0}, rewind, next_frame,
      [] { return false; }, consume, on_frame, stats);
}

void stream_frame_maps_across(const Ranks& ranks, Atoms atoms, const Lattice& lattice, const MapOptions& options,
                              Combine combine, std::int64_t slab_rows, const std::vector<std::int64_t>& bounds,
                              const std::vector<double>& weights, const std::function<void()>& rewind,
                              const std::function<bool(Atoms&)>& next_frame, const std::function<bool()>& skip_frame,
                              const std::function<void(const MapSlab&)>& consume,
                              const std::function<void(std::int64_t, int)>& on_frame, TrajectoryMapStats* stats) {
  maps::stream_frames(&ranks, std::move(atoms), lattice, options, combine, slab_rows, bounds, weights, rewind,
                      next_frame, skip_frame, consume, on_frame, stats);
}

}  // namespace nbkit
