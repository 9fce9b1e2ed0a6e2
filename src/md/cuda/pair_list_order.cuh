#pragma once
// The molecular pair list's rows put near entries first (cuda/molecular_pair_list.cu is the one
// includer): a candidate, NBKIT_PAIR_LIST_NEAR_FIRST=1, off by default.
#include <cuda_runtime.h>

#include "md/cuda/pair_list_layout.cuh"

namespace nbkit::md {
namespace {

// Why: the pair sums' lanes each take their own row's entries (listed_pairs), and a warp runs the
// law wherever any of its lanes has a pair within the cutoff, which in the list's order (the 27
// cells, then the atoms within each) is nearly every entry: the law ran 1.007 times an entry for
// 0.548 pairs on bench-input (bench/row_order_model.py). With each row's entries within
// cutoff + 0.5 A at the build first and the rest after (in their order within each part), a warp's
// lanes reach the far ones together, and there, a few steps after the build, almost no lane has
// a pair: the model gives 0.667-0.701 runs an entry (docs/performance.md, session 46).
//
// This pass reorders each row after the build, in place: a warp a row, its listed entries (rows
// longer than kOrderedRowMax keep the list's order) into shared memory, each classed by its
// distance from the packed positions the build used, then written back near ones first. It reads
// and writes the whole list once more; a build that wrote the two parts itself would not. Another
// order of each row's sums: other last bits than without, the same for every build kernel (they
// write the same list) and from run to run.
constexpr int kOrderWarps = 4;
constexpr int kOrderedRowMax = 1024;
constexpr double kNearMargin = 0.5;  // A beyond the cutoff

template <class Real>
__global__ void __launch_bounds__(32 * kOrderWarps)
    near_entries_first(int n, const PositionCharge<Real>* __restrict__ packed, const TypeCell* __restrict__ attributes,
                       Frame<Real> frame, bool offsets, Real near2, int capacity, const int* __restrict__ row_length,
                       int* __restrict__ list) {
  __shared__ unsigned held[kOrderWarps][kOrderedRowMax];
  __shared__ unsigned near_of[kOrderWarps][kOrderedRowMax / 32];  // a ballot a 32 entries
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int t = static_cast<int>(blockIdx.x) * kOrderWarps + warp;
  if (t >= n) return;  // the whole warp
  const int listed = min(row_length[t], capacity);
  if (listed > kOrderedRowMax) return;
  const PositionCharge<Real> pi = packed[t];
  const int cell_i = attributes[t].cell;
  int near = 0;
  for (int base = 0; base < listed; base += 32) {
    const int k = base + lane;
    bool is_near = false;
    if (k < listed) {
      const unsigned entry = static_cast<unsigned>(list[list_index(k, t, n)]);
      held[warp][k] = entry;
      const int j = static_cast<int>(entry & kIndexMask);
      const PositionCharge<Real> pj = packed[j];
      Real d[3];
      const Real ri[3] = {pi.x, pi.y, pi.z}, rj[3] = {pj.x, pj.y, pj.z};
      for (int a = 0; a < 3; ++a)
        d[a] = offsets ? (ri[a] - rj[a]) + Real(cell_offset(entry, a)) * frame.width[a]
                       : axis_separation(frame, a, ri[a], rj[a], cell_i, attributes[j].cell);
      is_near = d[0] * d[0] + d[1] * d[1] + d[2] * d[2] < near2;
    }
    const unsigned ballot = __ballot_sync(0xffffffffu, is_near);
    if (lane == 0) near_of[warp][base / 32] = ballot;
    near += __popc(ballot);
  }
  __syncwarp();
  const unsigned below = (1u << lane) - 1;  // the lanes before this one
  int near_written = 0, far_written = 0;
  for (int base = 0; base < listed; base += 32) {
    const int k = base + lane;
    const unsigned is_near = near_of[warp][base / 32];
    const unsigned valid = listed - base >= 32 ? 0xffffffffu : (1u << (listed - base)) - 1;
    const unsigned far = valid & ~is_near;
    if (k < listed) {
      const bool mine_near = (is_near >> lane) & 1u;
      const int at = mine_near ? near_written + __popc(is_near & below) : near + far_written + __popc(far & below);
      list[list_index(at, t, n)] = static_cast<int>(held[warp][k]);
    }
    near_written += __popc(is_near), far_written += __popc(far);
  }
}

}  // namespace
}  // namespace nbkit::md
