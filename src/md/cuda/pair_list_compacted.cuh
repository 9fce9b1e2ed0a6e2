#pragma once
// The molecular pair list's sums with the law's work compacted (cuda/molecular_pair_list.cu is
// the one includer): the production kernel (float32 PME through the fast law, 2 or more lanes an
// atom) without the lanes that idle while others of their warp evaluate the law.
#include <cuda_runtime.h>

#include "md/cuda/pair_list_sums.cuh"

namespace nbkit::md {
namespace {

// Why: listed_pairs' lanes each take their own row's entries, and a lane whose entry lies in the
// skin skips the law while the rest of its warp evaluates it: the warp pays for the law at each
// of a lane's entries where any of its 32 lanes has a pair within the cutoff, which is all of
// them. About 55% of a row's entries lie within the cutoff ((9 / 11)^3 with a 2 A skin), so half
// the law's issue slots were idle lanes (a count over bench-input's 30,680 atoms in the kernel's
// order: the law ran 1.008 times an entry for 0.550 pairs; bench/compacted_pairs_model.py).
//
// Here each lane first finds which of its next kCompactAhead entries are within the cutoff (the
// entry, the neighbour's position, type and cell loaded together as in listed_pairs) and puts
// those pairs in a queue of its own in shared memory (their separation, r^2, qi qj and the
// neighbour's type); then the warp evaluates the law one pair a lane at a time while at least
// kQueueLanes of its 32 lanes hold one, or sooner where a lane's queue could not take another
// round. The model above gives the law 0.68 runs an entry with a queue of 8 (0.64 with 12 or
// more: 8 keeps the block's shared memory at 25 KB, so the registers still bound the occupancy).
//
// The same bits as listed_pairs' Lean kernel: each lane takes the same entries in the same order,
// forms each separation and r^2 by the same expressions (entry_separation, squared), and sums
// its pairs in the order it queued them, which is its entries' order; a row's entries past the
// list's capacity and the lanes' meeting are listed_pairs' (walk_row, write_row_sums).
// MolecularGpu.PairListOffsetsGiveTheSameBits holds the two to it (NBKIT_PAIR_COMPACT=0).
constexpr int kCompactAhead = 4;  // a lane's entries a round (listed_pairs' Ahead)
constexpr int kQueueDepth = 8;    // pairs a lane's queue holds (a power of 2)
constexpr int kQueueLanes = 24;   // the law runs while at least this many of a warp's lanes hold a pair

template <PairSwitch Switch, PairCoulomb Coulomb, bool Energies>
__global__ void __launch_bounds__(kThreads)
    compacted_pairs(int n, int lanes, const PositionCharge<float>* __restrict__ packed,
                    const TypeCell* __restrict__ attributes, const int* __restrict__ order,
                    const int* __restrict__ list, const int* __restrict__ row_length, PairLaw<float> law,
                    PairSums out) {
  constexpr int Ahead = kCompactAhead, Depth = kQueueDepth, kWarps = kThreads / 32;
  static_assert((Depth & (Depth - 1)) == 0 && Depth >= Ahead, "a queue takes a whole round");
  __shared__ CellShift<float> shift_of[64];
  // Queue slot s of a warp's lane l at [warp][s][l]: a warp's 32 lanes read one slot as one
  // contiguous row (no bank conflicts beyond the width's own).
  __shared__ float4 queued_separation[kWarps][Depth][32];  // dx, dy, dz, r^2
  __shared__ float2 queued_pair[kWarps][Depth][32];        // qi qj, the neighbour's type (its bits)
  fill_shifts(law, shift_of);
  const int thread = blockIdx.x * blockDim.x + threadIdx.x;
  const int t = thread / lanes, lane = thread % lanes;
  const int warp = static_cast<int>(threadIdx.x) / 32, me = static_cast<int>(threadIdx.x) % 32;
  // No early return: every lane of a warp takes part in its votes. Whole groups: lanes divides
  // the block, so a row's lanes are all here or all not.
  const bool here = t < n;
  const int row = here ? t : 0;
  const FastFloatPairMath math;
  const PositionCharge<float> pi = packed[row];
  const TypeCell ai = attributes[row];
  const float qi = law.coulomb_k * pi.q;
  const float* c12 = law.c12 + ai.type * law.types;
  const float* c6 = law.c6 + ai.type * law.types;
  double sum[6] = {0, 0, 0, 0, 0, 0};  // sum_pair's
  const int length = here ? row_length[t] : 0;
  const int listed = min(length, law.capacity);  // a longer row's other entries: walk_row, below
  int head = 0, held = 0;                         // the queue: its first slot, its pairs
  float4* const my_separation = &queued_separation[warp][0][me];  // slot s at [32 s]
  float2* const my_pair = &queued_pair[warp][0][me];
  auto evaluate_next = [&] {
    const float4 d = my_separation[32 * head];
    const float2 p = my_pair[32 * head];
    const int type = __float_as_int(p.y);
    sum_pair<Switch, Coulomb, Energies>(math, law.k, d.w, d.x, d.y, d.z, __ldg(c12 + type), __ldg(c6 + type), p.x,
                                        sum);
    head = (head + 1) & (Depth - 1), --held;
  };
  // A round's u-th entry lies u lanes / kChunk chunks and u lanes mod kChunk along from its first
  // (listed_pairs' Lean stepping: lanes >= 2, so Ahead * lanes is a multiple of kChunk).
  const int chunk = n * kChunk;
  int step[Ahead];
#pragma unroll
  for (int u = 0; u < Ahead; ++u) step[u] = u * lanes / kChunk * chunk + u * lanes % kChunk;
  const int advance = Ahead * lanes / kChunk * chunk;
  const int* at = list + list_index(lane, row, n);
  for (int k = lane; __any_sync(0xffffffffu, k < listed); k += Ahead * lanes) {
    if (k < listed) {
      unsigned entry[Ahead];
      bool listed_u[Ahead];
#pragma unroll
      for (int u = 0; u < Ahead; ++u) {
        listed_u[u] = k + u * lanes < listed;
        entry[u] = listed_u[u] ? static_cast<unsigned>(__ldg(at + step[u])) : 0u;
      }
      PositionCharge<float> pj[Ahead];
      TypeCell aj[Ahead];
#pragma unroll
      for (int u = 0; u < Ahead; ++u) {
        const int j = static_cast<int>(entry[u] & kIndexMask);
        pj[u] = packed[j], aj[u] = attributes[j];
      }
#pragma unroll
      for (int u = 0; u < Ahead; ++u) {
        float dx, dy, dz;
        entry_separation<float, true>(law, shift_of, entry[u], pi, ai.cell, pj[u], aj[u].cell, dx, dy, dz);
        const float r2 = squared(dx, dy, dz);
        if (listed_u[u] && r2 < law.cutoff2) {
          const int slot = (head + held) & (Depth - 1);
          my_separation[32 * slot] = make_float4(dx, dy, dz, r2);
          my_pair[32 * slot] = make_float2(qi * pj[u].q, __int_as_float(aj[u].type));
          ++held;
        }
      }
      at += advance;
    }
    // Each lane's own slots: its writes and reads need no barrier (the same thread).
    for (;;) {
      const unsigned holding = __ballot_sync(0xffffffffu, held > 0);
      if (__popc(holding) < kQueueLanes && !__any_sync(0xffffffffu, held > Depth - Ahead)) break;
      if (held > 0) evaluate_next();
    }
  }
  while (__any_sync(0xffffffffu, held > 0))
    if (held > 0) evaluate_next();
  if (!here) return;
  // Entries past the capacity: listed_pairs' walk, after the listed ones.
  if (length > listed)
    walk_row(t, listed, packed, attributes, order, law.cell_start, law.frame, law.reach2, law.excluded_first,
             law.excluded, law.offsets, [&](int k, unsigned entry) {
               if (k % lanes != lane) return;
               const int j = static_cast<int>(entry & kIndexMask);
               const TypeCell aj = attributes[j];
               sum_entry<Switch, Coulomb, Energies, true>(math, law, shift_of, entry, pi, ai.cell, qi, packed[j],
                                                          aj.cell, __ldg(c12 + aj.type), __ldg(c6 + aj.type), sum);
             });
  write_row_sums<Energies>(sum, lanes, lane, order, t, out);
}

}  // namespace
}  // namespace nbkit::md
