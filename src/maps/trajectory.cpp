// Trajectory-combined maps (trajectory.hpp).
#include "nbkit/trajectory.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>

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

Map combine_frame_maps(Atoms atoms, const Lattice& lattice, const MapOptions& options, Combine combine,
                       const std::function<bool(Atoms&)>& next_frame, const std::function<void(int)>& on_frame,
                       TrajectoryMapStats* stats) {
  const auto start = std::chrono::steady_clock::now();
  const std::size_t points = static_cast<std::size_t>(lattice.size());
  const int arrays = combine == Combine::stdev ? 3 : 2;  // the frame's map, the mean (and M2)
  check_memory(static_cast<std::uint64_t>(arrays) * points * sizeof(double),
               fmt::format("combining frame maps on a {}x{}x{} lattice", lattice.dims[0], lattice.dims[1], lattice.dims[2]));
  Map result;
  result.lattice = lattice;
  result.unit = options.unit;
  std::vector<double> frame(points), m2(combine == Combine::stdev ? points : 0);
  int frames = 0;
  MapStats map_stats;
  while (next_frame(atoms)) {
    compute_map_rows(atoms, lattice, options, 0, lattice.rows(), frame.data(), &map_stats);
    ++frames;
    if (frames == 1) {
      result.values = frame;
    } else if (combine == Combine::min) {
      for (std::size_t p = 0; p < points; ++p) result.values[p] = std::min(result.values[p], frame[p]);
    } else if (combine == Combine::max) {
      for (std::size_t p = 0; p < points; ++p) result.values[p] = std::max(result.values[p], frame[p]);
    } else {  // Welford: mean += (x - mean) / n, M2 += (x - mean_old)(x - mean_new)
      const double inverse = 1.0 / frames;
      for (std::size_t p = 0; p < points; ++p) {
        const double delta = frame[p] - result.values[p];
        result.values[p] += delta * inverse;
        if (combine == Combine::stdev) m2[p] += delta * (frame[p] - result.values[p]);
      }
    }
    if (on_frame) on_frame(frames);
  }
  if (frames == 0) throw Error("the trajectory has no frames in the range asked for");
  if (combine == Combine::stdev)
    for (std::size_t p = 0; p < points; ++p) result.values[p] = std::sqrt(m2[p] / frames);
  if (stats) {
    stats->frames = frames;
    stats->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    stats->last_frame = map_stats;
  }
  return result;
}

}  // namespace nbkit
