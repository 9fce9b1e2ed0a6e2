// A trajectory's frame maps combined on the host (frame_moments.hpp).
#include "maps/frame_moments.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "nbkit/core/error.hpp"
#include "nbkit/core/ranks.hpp"

namespace nbkit::maps {

namespace {

void add_sums(const void* in, void* inout, std::size_t n) {
  const auto* a = static_cast<const ExactSum*>(in);
  auto* b = static_cast<ExactSum*>(inout);
  for (std::size_t p = 0; p < n; ++p) add_exact(b[p], a[p]);
}

void add_squares(const void* in, void* inout, std::size_t n) {
  const auto* a = static_cast<const ExactSquares*>(in);
  auto* b = static_cast<ExactSquares*>(inout);
  for (std::size_t p = 0; p < n; ++p) add_exact(b[p], a[p]);
}

void keep_min(const void* in, void* inout, std::size_t n) {
  const auto* a = static_cast<const double*>(in);
  auto* b = static_cast<double*>(inout);
  for (std::size_t p = 0; p < n; ++p) b[p] = std::min(b[p], a[p]);
}

void keep_max(const void* in, void* inout, std::size_t n) {
  const auto* a = static_cast<const double*>(in);
  auto* b = static_cast<double*>(inout);
  for (std::size_t p = 0; p < n; ++p) b[p] = std::max(b[p], a[p]);
}

}  // namespace

FrameMoments::FrameMoments(Combine combine, const Lattice& lattice, std::int64_t row_begin, std::size_t points)
    : combine_(combine), lattice_(lattice) {
  reset(row_begin, points);
}

std::size_t FrameMoments::bytes_per_point(Combine combine) {
  switch (combine) {
    case Combine::min:
    case Combine::max: return sizeof(double);
    case Combine::avg: return sizeof(ExactSum);
    case Combine::stdev: return sizeof(ExactSum) + sizeof(ExactSquares);
  }
  return 0;
}

void FrameMoments::reset(std::int64_t row_begin, std::size_t points) {
  row_begin_ = row_begin, points_ = points, frames_ = 0;
  // min and max start from the infinities, which every finite value replaces exactly: a rank
  // with no frames merges as nothing.
  if (combine_ == Combine::min) extremes_.assign(points, HUGE_VAL);
  if (combine_ == Combine::max) extremes_.assign(points, -HUGE_VAL);
  if (combine_ == Combine::avg || combine_ == Combine::stdev) sums_.assign(points, ExactSum{});
  if (combine_ == Combine::stdev) squares_.assign(points, ExactSquares{});
}

void FrameMoments::add(const double* frame) {
  if (frames_ >= kExactMaxFrames)
    throw Error(fmt::format("a trajectory map combines at most {} frames (the exact sums' range)", kExactMaxFrames));
  const std::int64_t n = static_cast<std::int64_t>(points_);
  std::int64_t bad = -1;
  if (combine_ == Combine::min || combine_ == Combine::max) {
    double* e = extremes_.data();
    const bool low = combine_ == Combine::min;
    std::int64_t first_bad = n;  // in the same pass: a value that is not finite
#pragma omp parallel for schedule(static) reduction(min : first_bad) if (n > (1 << 18))
    for (std::int64_t p = 0; p < n; ++p) {
      e[p] = low ? std::min(e[p], frame[p]) : std::max(e[p], frame[p]);
      if (!std::isfinite(frame[p])) first_bad = std::min(first_bad, p);
    }
    if (first_bad < n) bad = first_bad;
  } else {
    ExactSum* s = sums_.data();
    ExactSquares* q = squares_.empty() ? nullptr : squares_.data();
    // Two loops, so that avg's has no test for the squares. A point that cannot be held is
    // left out and named below; the accumulators are then not used.
    std::int64_t first_bad = n;
    if (q) {
#pragma omp parallel for schedule(static) reduction(min : first_bad) if (n > (1 << 16))
      for (std::int64_t p = 0; p < n; ++p)
        if (!accumulate_exact(frame[p], s[p], q + p)) first_bad = std::min(first_bad, p);
    } else {
#pragma omp parallel for schedule(static) reduction(min : first_bad) if (n > (1 << 16))
      for (std::int64_t p = 0; p < n; ++p)
        if (!accumulate_exact(frame[p], s[p], nullptr)) first_bad = std::min(first_bad, p);
    }
    if (first_bad < n) bad = first_bad;
  }
  if (bad >= 0) {
    const std::int64_t row = row_begin_ + bad / lattice_.dims[2];
    const std::int64_t i = row / lattice_.dims[1], j = row % lattice_.dims[1], k = bad % lattice_.dims[2];
    throw Error(fmt::format("frame {}'s map is {} at lattice point ({}, {}, {}): {}", frames_ + 1, frame[bad], i, j, k,
                            std::isfinite(frame[bad])
                                ? fmt::format("beyond +-{:g}, the largest value a trajectory's {} sums exactly",
                                              kExactLimit, to_string(combine_))
                                : std::string("the sums overflowed")));
  }
  ++frames_;
}

void FrameMoments::merge_across(const Ranks& ranks, const std::vector<std::int64_t>& bounds) {
  if (!extremes_.empty())
    ranks.reduce_pieces(extremes_.data(), sizeof(double), bounds, combine_ == Combine::min ? keep_min : keep_max);
  if (!sums_.empty()) ranks.reduce_pieces(sums_.data(), sizeof(ExactSum), bounds, add_sums);
  if (!squares_.empty()) ranks.reduce_pieces(squares_.data(), sizeof(ExactSquares), bounds, add_squares);
  frames_ = static_cast<long long>(ranks.all_sum(static_cast<double>(frames_)));
}

void FrameMoments::finish(std::size_t first, std::size_t count, double* out) const {
  if (frames_ == 0) throw Error("the trajectory has no frames in the range asked for");
  const std::int64_t n = static_cast<std::int64_t>(count);
  const long long frames = frames_;
  if (!extremes_.empty()) {
    std::copy_n(extremes_.begin() + static_cast<std::ptrdiff_t>(first), count, out);
  } else if (squares_.empty()) {
#pragma omp parallel for schedule(static) if (n > (1 << 16))
    for (std::int64_t p = 0; p < n; ++p) out[p] = exact_mean(sums_[first + static_cast<std::size_t>(p)], frames);
  } else {
#pragma omp parallel for schedule(static) if (n > (1 << 16))
    for (std::int64_t p = 0; p < n; ++p) {
      const std::size_t at = first + static_cast<std::size_t>(p);
      out[p] = exact_stdev(sums_[at], squares_[at], frames);
    }
  }
}

}  // namespace nbkit::maps
