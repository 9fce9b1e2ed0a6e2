#pragma once
// A trajectory's frame maps combined on the host, point by point (trajectory.cpp): min and max,
// or the exact sums of exact_moments.hpp for avg and stdev. Several of these (a rank's frames,
// another rank's) merge exactly, so the finished map does not depend on how the frames were
// divided. Internal to the library.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "maps/exact_moments.hpp"
#include "nbkit/core/lattice.hpp"
#include "nbkit/trajectory.hpp"

namespace nbkit {
class Ranks;
}

namespace nbkit::maps {

class FrameMoments {
 public:
  // Accumulators for `points` lattice points, the first of them at row `row_begin` of `lattice`
  // (for the messages), none of the frames added yet.
  FrameMoments(Combine combine, const Lattice& lattice, std::int64_t row_begin, std::size_t points);
  // Bytes a point needs (8 for min and max, 16 for avg, 48 for stdev).
  static std::size_t bytes_per_point(Combine combine);

  // Starts again with no frames, at row `row_begin` (the next slab), `points` points.
  void reset(std::int64_t row_begin, std::size_t points);
  // One more frame's values at the points. Throws nbkit::Error naming the first point whose value
  // is not finite or too large to sum exactly (exact_moments.hpp).
  void add(const double* frame);
  long long frames() const { return frames_; }

  // Every rank's accumulators added (the integer sums) or compared (min, max), exactly, and rank
  // r left with the totals of points [bounds[r], bounds[r+1]) (offsets into these points); the
  // frames counted over all ranks. Collective.
  void merge_across(const Ranks& ranks, const std::vector<std::int64_t>& bounds);

  // The finished values (mean, population standard deviation, min or max) of points
  // [first, first + count) into `out`. Throws when no frame was added anywhere.
  void finish(std::size_t first, std::size_t count, double* out) const;

  // The accumulators themselves (a GPU's copied in by trajectory_cuda.cu), and their frame count.
  double* extremes() { return extremes_.data(); }
  ExactSum* sums() { return sums_.data(); }
  ExactSquares* squares() { return squares_.data(); }
  void set_frames(long long frames) { frames_ = frames; }

 private:
  Combine combine_;
  Lattice lattice_;
  std::int64_t row_begin_ = 0;
  std::size_t points_ = 0;
  long long frames_ = 0;
  std::vector<double> extremes_;  // min, max
  std::vector<ExactSum> sums_;    // avg, stdev
  std::vector<ExactSquares> squares_;  // stdev
};

}  // namespace nbkit::maps
