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

// Random charges of both signs can cancel almost completely at a lattice point (seen: a
// point where sum |term| is 4800 times |V|); there no float32 sum is accurate relative to V.
// Random-input tests therefore bound the error by the map of absolute contributions,
// sum_i |q_i| f(r_i): ||V - V_ref|| <= tolerance * ||V_abs||, with tolerance 1e-6 for
// float32 (per-term error ~5e-7 at most) and 1e-13 for float64.
constexpr double kSingleConditionedTolerance = 1e-6;
constexpr double kDoubleConditionedTolerance = 1e-13;

inline Atoms with_absolute_charges(Atoms atoms) {
  for (double& q : atoms.charge) q = std::fabs(q);
  return atoms;
}

// ||a - b|| / ||scale||
inline double error_relative_to(const std::vector<double>& a, const std::vector<double>& b,
                                const std::vector<double>& scale) {
  double diff = 0, norm = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    diff += (a[i] - b[i]) * (a[i] - b[i]);
    norm += scale[i] * scale[i];
  }
  return std::sqrt(diff / norm);
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
