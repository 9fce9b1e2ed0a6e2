// The neighbour list's candidate test in SIMD (Google Highway, run-time dispatch): the build
// spent a quarter of a 2-core run of the 30,677-atom benchmark protein (perf, session 34), most
// of it in its scalar candidate loop, a branch-free test and store per candidate. Here the
// positions come a vector at a time (one array an axis), the squared distances are formed with
// the scalar loop's operations in its order (no fused multiply-add), and the indices within
// reach are written in order from the comparison's mask bits (about a quarter of the
// candidates hit): the same list, entry for entry.
#ifndef NBKIT_MD_NEIGHBOR_SCAN_ONCE
#define NBKIT_MD_NEIGHBOR_SCAN_ONCE
#include <cstdint>
#include <cstring>

#include "md/neighbor_scan_simd.hpp"
#endif

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/md/neighbor_scan_simd.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace nbkit::md::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

std::size_t CandidatesWithin(const double* const binned[3], const CandidateRange* ranges, std::size_t count, double reach2,
                             std::int32_t* out) {
  const hn::ScalableTag<double> d;
  using V = hn::Vec<decltype(d)>;
  const auto lanes = static_cast<std::int64_t>(hn::Lanes(d));
  static_assert(HWY_MAX_BYTES / sizeof(double) <= 64, "a mask's bits fit one word");
  const V limit = hn::Set(d, reach2);
#if HWY_TARGET <= HWY_AVX3
  const hn::Rebind<std::int32_t, decltype(d)> d32;  // the indices, a lane a candidate
  const auto iota = hn::Iota(d32, 0);
#endif
  const double *bx = binned[0], *by = binned[1], *bz = binned[2];
  std::size_t found = 0;
  for (std::size_t r = 0; r < count; ++r) {
    const CandidateRange& range = ranges[r];
    const V sx = hn::Set(d, range.shift[0]), sy = hn::Set(d, range.shift[1]), sz = hn::Set(d, range.shift[2]);
    std::int64_t m = range.begin;
    for (; m + lanes <= range.end; m += lanes) {
      const V dx = hn::Add(hn::LoadU(d, bx + m), sx), dy = hn::Add(hn::LoadU(d, by + m), sy),
              dz = hn::Add(hn::LoadU(d, bz + m), sz);
      const V r2 = hn::Add(hn::Add(hn::Mul(dx, dx), hn::Mul(dy, dy)), hn::Mul(dz, dz));
      std::uint8_t bytes[8] = {0, 0, 0, 0, 0, 0, 0, 0};
      hn::StoreMaskBits(d, hn::Lt(r2, limit), bytes);
#if HWY_TARGET <= HWY_AVX3
      // AVX-512 compresses in one instruction: the hits' indices stored in order, no branch a
      // hit (the bit loop's exits mispredict); a whole vector may be written past the hits,
      // within the caller's room for every candidate.
      const auto index = hn::Add(iota, hn::Set(d32, static_cast<std::int32_t>(m)));
      found += hn::CompressStore(index, hn::LoadMaskBits(d32, bytes), d32, out + found);
#else
      std::uint64_t bits;
      std::memcpy(&bits, bytes, sizeof(bits));
      for (; bits != 0; bits &= bits - 1)
        out[found++] = static_cast<std::int32_t>(m + hwy::Num0BitsBelowLS1Bit_Nonzero64(bits));
#endif
    }
    for (; m < range.end; ++m) {
      const double dx = bx[m] + range.shift[0], dy = by[m] + range.shift[1], dz = bz[m] + range.shift[2];
      out[found] = static_cast<std::int32_t>(m);
      found += dx * dx + dy * dy + dz * dz < reach2;
    }
  }
  return found;
}

}  // namespace nbkit::md::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace nbkit::md {

HWY_EXPORT(CandidatesWithin);

std::size_t candidates_within(const double* const binned[3], const CandidateRange* ranges, std::size_t count,
                              double reach2, std::int32_t* out) {
  return HWY_DYNAMIC_DISPATCH(CandidatesWithin)(binned, ranges, count, reach2, out);
}

}  // namespace nbkit::md
#endif
