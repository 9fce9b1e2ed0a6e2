#pragma once
// Running maps in tests: outputs poisoned with NaN before each run, so an unwritten point
// cannot pass.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "nbkit/maps.hpp"

namespace nbkit::test {

// float32 arithmetic with float64 sums: the promise is 1e-5 relative RMS (the foundation
// issue); float64 throughout: sums of up to ~1e4 terms round to ~1e-13.
constexpr double kSingleTolerance = 1e-5;
constexpr double kDoubleTolerance = 1e-12;

inline std::vector<double> run_rows(const Atoms& atoms, const Lattice& lattice, const MapOptions& options,
                                    std::int64_t row_begin, std::int64_t row_end) {
  std::vector<double> out(static_cast<std::size_t>((row_end - row_begin) * lattice.dims[2]),
                          std::numeric_limits<double>::quiet_NaN());
  compute_map_rows(atoms, lattice, options, row_begin, row_end, out.data());
  for (double v : out) EXPECT_TRUE(std::isfinite(v));
  return out;
}

inline std::vector<double> run(const Atoms& atoms, const Lattice& lattice, const MapOptions& options) {
  return run_rows(atoms, lattice, options, 0, lattice.rows());
}

inline MapOptions with(MapMethod method, Backend backend, Precision precision = Precision::single, int threads = 0) {
  MapOptions o;
  o.method = method;
  o.backend = backend;
  o.precision = precision;
  o.threads = threads;
  if (method == MapMethod::mdh) o.dielectric = 78.54;
  return o;
}

}  // namespace nbkit::test
