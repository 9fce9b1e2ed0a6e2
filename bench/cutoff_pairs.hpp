#pragma once
// The in-cutoff pair count of a cutoff map, estimated from sampled lattice points: the
// benchmarks' rate in pairs per second (bench_map_cutoff, bench_map_cutoff_cuda).
#include <cstdint>
#include <random>

#include "nbkit/core/atoms.hpp"
#include "nbkit/core/lattice.hpp"

namespace nbkit::bench {

// Mean number of atoms within `cutoff` of a lattice point, over `samples` random points.
inline double pairs_per_point(const Atoms& atoms, const Lattice& lattice, double cutoff, int samples) {
  std::mt19937_64 rng(5);
  double total = 0;
  for (int s = 0; s < samples; ++s) {
    const Vec3 p = lattice.point(static_cast<std::int64_t>(rng() % lattice.dims[0]),
                                 static_cast<std::int64_t>(rng() % lattice.dims[1]),
                                 static_cast<std::int64_t>(rng() % lattice.dims[2]));
    for (std::size_t n = 0; n < atoms.size(); ++n)
      if (norm(p - atoms.position(n)) < cutoff) total += 1;
  }
  return total / samples;
}

}  // namespace nbkit::bench
