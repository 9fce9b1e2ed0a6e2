// Trajectory-combined maps (trajectory.hpp).
#include "nbkit/trajectory.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <utility>

#include "maps/frame_combiner.hpp"
#include "maps/methods.hpp"
#include "nbkit/core/backend.hpp"
#include "nbkit/core/error.hpp"
#include "nbkit/core/memory.hpp"

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
  // Host memory: the result (and M2 for stdev), plus one frame's map when combined here.
  const int arrays = (combine == Combine::stdev ? 2 : 1) + (on_device ? 0 : 1);
  check_memory(static_cast<std::uint64_t>(arrays) * points * sizeof(double),
               fmt::format("combining frame maps on a {}x{}x{} lattice", lattice.dims[0], lattice.dims[1], lattice.dims[2]));
  Map result;
  result.lattice = lattice;
  result.unit = options.unit;
  std::vector<double> frame(on_device ? 0 : points), m2(combine == Combine::stdev && !on_device ? points : 0);
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
      if (frames == 1) {
        result.values = frame;
      } else if (combine == Combine::min) {
        for (std::size_t p = 0; p < points; ++p) result.values[p] = std::min(result.values[p], frame[p]);
      } else if (combine == Combine::max) {
        for (std::size_t p = 0; p < points; ++p) result.values[p] = std::max(result.values[p], frame[p]);
      } else {  // Welford: mean += (x - mean) / n, M2 += (x - mean_old)(x - mean_new)
        // (trajectory_cuda.cu does the same operations, each rounded on its own)
        const double inverse = 1.0 / frames;
        for (std::size_t p = 0; p < points; ++p) {
          const double delta = frame[p] - result.values[p];
          result.values[p] += delta * inverse;
          if (combine == Combine::stdev) m2[p] += delta * (frame[p] - result.values[p]);
        }
      }
    }
    if (on_frame) on_frame(frames);
  }
  if (frames == 0) throw Error("the trajectory has no frames in the range asked for");
  if (on_device) combiner->download(result.values, m2);
  if (combine == Combine::stdev)
    for (std::size_t p = 0; p < points; ++p) result.values[p] = std::sqrt(m2[p] / frames);
  check_finite_map(lattice, 0, result.values.data(), points, "combined map (" + to_string(combine) + ")");
  if (stats) {
    stats->frames = frames;
    stats->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    stats->last_frame = map_stats;
    stats->combined_on_device = on_device;
  }
  return result;
}

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
  stream_frame_maps_rows(std::move(atoms), lattice, options, combine, 0, lattice.rows(), slab_rows, rewind, next_frame,
                         consume, on_frame, stats);
}

void stream_frame_maps_rows(Atoms atoms, const Lattice& lattice, const MapOptions& options, Combine combine,
                            std::int64_t row_begin, std::int64_t row_end, std::int64_t slab_rows,
                            const std::function<void()>& rewind, const std::function<bool(Atoms&)>& next_frame,
                            const std::function<void(const MapSlab&)>& consume,
                            const std::function<void(std::int64_t, int)>& on_frame, TrajectoryMapStats* stats) {
  const auto start = std::chrono::steady_clock::now();
  validate(lattice);
  if (slab_rows < 1) throw Error(fmt::format("a slab needs at least one row, got {}", slab_rows));
  if (row_begin < 0 || row_end > lattice.rows() || row_begin > row_end)
    throw Error(fmt::format("rows [{}, {}) are outside the lattice's {} rows", row_begin, row_end, lattice.rows()));
  const std::int64_t rows = row_end, nz = lattice.dims[2];
  slab_rows = std::max<std::int64_t>(1, std::min(slab_rows, row_end - row_begin));
  const std::size_t values = static_cast<std::size_t>(slab_rows * nz);
  const int arrays = combine == Combine::stdev ? 3 : 2;
  check_memory(static_cast<std::uint64_t>(arrays) * values * sizeof(double),
               fmt::format("combining frame maps in slabs of {} lattice rows", slab_rows));
  std::vector<double> result(values), frame(values), m2(combine == Combine::stdev ? values : 0);
  MapStats map_stats;
  int frames = 0;
  for (std::int64_t begin = row_begin, slab = 1; begin < rows; begin += slab_rows, ++slab) {
    const std::int64_t end = std::min(rows, begin + slab_rows);
    const std::size_t points = static_cast<std::size_t>((end - begin) * nz);
    rewind();
    int k = 0;
    std::fill(m2.begin(), m2.end(), 0.0);
    while (next_frame(atoms)) {
      ++k;
      // The same operations as combine_frame_maps on the host (and trajectory_cuda.cu).
      compute_map_rows(atoms, lattice, options, begin, end, k == 1 ? result.data() : frame.data(), &map_stats);
      if (k > 1 && combine == Combine::min) {
        for (std::size_t p = 0; p < points; ++p) result[p] = std::min(result[p], frame[p]);
      } else if (k > 1 && combine == Combine::max) {
        for (std::size_t p = 0; p < points; ++p) result[p] = std::max(result[p], frame[p]);
      } else if (k > 1) {
        const double inverse = 1.0 / k;
        for (std::size_t p = 0; p < points; ++p) {
          const double delta = frame[p] - result[p];
          result[p] += delta * inverse;
          if (combine == Combine::stdev) m2[p] += delta * (frame[p] - result[p]);
        }
      }
      if (on_frame) on_frame(slab, k);
    }
    if (k == 0) throw Error("the trajectory has no frames in the range asked for");
    if (slab == 1) frames = k;
    else if (k != frames)
      throw Error(fmt::format("the trajectory gave {} frames when read again, {} the first time", k, frames));
    if (combine == Combine::stdev)
      for (std::size_t p = 0; p < points; ++p) result[p] = std::sqrt(m2[p] / k);
    maps::check_finite_map(lattice, begin, result.data(), points, "combined map (" + to_string(combine) + ")");
    consume(MapSlab{begin, end, result.data()});
  }
  if (stats) {
    stats->frames = frames;
    stats->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    stats->last_frame = map_stats;
    stats->combined_on_device = false;
  }
}

}  // namespace nbkit
