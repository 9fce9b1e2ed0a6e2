#pragma once
// The neighbour list's candidate test in SIMD (neighbor_scan_simd.cpp): a row's candidate ranges
// a vector at a time, the hits written in order. Internal to the library.
#include <cstddef>
#include <cstdint>

namespace nbkit::md {

// Candidates [begin, end) of the binned positions, their separation from the row's atom being
// binned[a][m] + shift[a] (the cell's image offset less the atom's position).
struct CandidateRange {
  std::int64_t begin, end;
  double shift[3];
};

// Writes to `out`, in order, every m of the ranges (in order) with dx^2 + dy^2 + dz^2 < reach2,
// summed as ((dx dx + dy dy) + dz dz) without fused multiply-adds, the scalar loop's arithmetic;
// returns how many. `out` has room for every candidate.
std::size_t candidates_within(const double* const binned[3], const CandidateRange* ranges, std::size_t count, double reach2,
                              std::int32_t* out);

}  // namespace nbkit::md
