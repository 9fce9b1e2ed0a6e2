#pragma once
// The molecular pair list's sums (cuda/molecular_pair_list.cu is the one includer): each row's
// pairs through the law, and PME's or MSM's corrections of the excluded pairs.
#include <cuda_runtime.h>

#include <type_traits>

#include "md/cuda/molecular_pair_list.cuh"  // PairSums
#include "md/cuda/pair_list_build.cuh"      // walk_row
#include "md/cuda/pair_list_layout.cuh"
#include "md/fast_pair_math.hpp"
#include "md/molecular_pair_constants.hpp"
#include "md/pair_law.hpp"

namespace nbkit::md {
namespace {

template <class Real>
struct PairLaw {
  const Real *c12, *c6;  // the Lennard-Jones table, types x types
  int types;
  Frame<Real> frame;
  Real cutoff2, coulomb_k;
  MolecularPairConstants<Real> k;
  bool offsets;  // the entries carry their cell offsets (offset_code)
  // The list's capacity, and what walk_row needs for the entries of a longer row.
  int capacity;
  Real reach2;
  const int *cell_start, *excluded_first, *excluded;
};

// `lanes` threads (1, 2, 4 or 8, lanes of one warp) per sorted atom t: lane l sums entries l,
// l + lanes, ... of t's row in order, pair_terms-inl.hpp's law in Real, each pair's force, energy
// and virial added in float64 (as OpenMM's mixed precision accumulates); the lanes' sums meet by
// a fixed tree of shuffles, so the order is fixed for a given `lanes` (chosen from the atom count
// alone). Several lanes an atom keep a small system's GPU busy (30,000 atoms on one thread each
// are 0.1 of an H100's resident threads). Half of each pair's energy and virial: each pair is in
// both its atoms' rows. Without `Energies` only the force is summed (the steps between thermo
// rows, as OpenMM computes energies only when asked): float32 laws give the same force bits
// either way; float64 always sums them (evaluate).
//
// `Fast` (float32 PME, the default; NBKIT_PAIR_FAST_LAW=0 turns it off): the law through
// FastFloatPairMath.
//
// `Lean` (NBKIT_PAIR_LEAN_ENTRIES, the fast law's kernels of 2 or more lanes only): fewer
// instructions an entry. At a million atoms the pairs go through ~2e11 entries a second (H200,
// session 42), at ~135 instructions an entry (session 35's count) near the issue rate, so
// instructions are time there. Two cuts, both the same bits by construction:
// - an entry's cell offsets become its shift (offset * width an axis) by one shared-memory load
//   from a table the block makes of the 64 codes, instead of decoding each axis's two bits
//   (shift, mask, the float trick of cell_offset, the multiply-add); the table holds the very
//   products the decoding forms (exact: -width, 0 or width), and a fused multiply-add of an
//   exact product rounds as the addition of it;
// - a round's Ahead entries are found from one pointer that steps a whole number of chunks a
//   round (Ahead * lanes is a multiple of kChunk), at offsets made once, instead of list_index's
//   signed division and 64-bit arithmetic for each (14 of the loop's PTX instructions an entry).
// The PTX of the production kernel's loop (float, 4 ahead, no energies): 757 instructions a
// round of 4 entries with neither, 723 with the table.
template <class Real>
struct alignas(4 * sizeof(Real)) CellShift {
  Real x, y, z, unused;
};

// `RoundSums` (NBKIT_PAIR_ROUND_SUMS=1, the fast law's kernels of 2 or more lanes, Lean or not:
// the same rounds, so the same bits either way; a candidate, off by default): a
// round's Ahead pairs summed in Real first and added to the float64 sums once a round, as
// OpenMM's mixed precision sums a tile's pairs in float32 before its fixed-point totals: 3
// conversions to float64 and 3 float64 adds an entry become 3 fused multiply-adds, and the
// conversions (a quarter-rate unit's, beside the law's rsqrt, exp and three reciprocals) and adds
// come once a round. Other bits than without: each partial sum rounds in float32 (a few pairs,
// relative 6e-8 of their size, against the law's own ~7e-7). H200, one binary (session 46): the
// pairs 0.100 against 0.105 ms a step at 23,534 atoms and 2.583 against 2.715 at 1,073,800.
template <class Real, PairSwitch Switch, PairCoulomb Coulomb, bool Energies, int Ahead, bool Fast = false,
          bool Lean = false, bool RoundSums = false>
__global__ void __launch_bounds__(kThreads)
    listed_pairs(int n, int lanes, const PositionCharge<Real>* __restrict__ packed,
                 const TypeCell* __restrict__ attributes, const int* __restrict__ order, const int* __restrict__ list,
                 const int* __restrict__ row_length, PairLaw<Real> law, PairSums out) {
  __shared__ CellShift<Real> shift_of[Lean ? 64 : 1];
  if constexpr (Lean) {
    if (law.offsets)
      for (int c = static_cast<int>(threadIdx.x); c < 64; c += static_cast<int>(blockDim.x)) {
        const unsigned code = static_cast<unsigned>(c) << kIndexBits;
        shift_of[c] = {Real(cell_offset(code, 0)) * law.frame.width[0], Real(cell_offset(code, 1)) * law.frame.width[1],
                       Real(cell_offset(code, 2)) * law.frame.width[2], Real(0)};
      }
    __syncthreads();
  }
  const int thread = blockIdx.x * blockDim.x + threadIdx.x;
  const int t = thread / lanes, lane = thread % lanes;
  if (t >= n) return;  // whole groups: lanes divides the block
  const std::conditional_t<Fast, FastFloatPairMath, ScalarPairMath<Real>> math;
  const PositionCharge<Real> pi = packed[t];
  const TypeCell ai = attributes[t];
  const Real qi = law.coulomb_k * pi.q;
  const Real* c12 = law.c12 + ai.type * law.types;
  const Real* c6 = law.c6 + ai.type * law.types;
  double sum[6] = {0, 0, 0, 0, 0, 0};  // force x, y, z; Lennard-Jones, Coulomb; virial
  // `into`: the lane's float64 sums, or a round's Real ones (RoundSums).
  auto add_into = [&](auto& into, unsigned entry, const PositionCharge<Real>& pj, int cell_j, Real c12_ij,
                      Real c6_ij) {
    using Sum = std::remove_reference_t<decltype(into[0])>;
    Real dx, dy, dz;
    if (law.offsets) {
      if constexpr (Lean) {
        const CellShift<Real> shift = shift_of[entry >> kIndexBits];
        dx = (pi.x - pj.x) + shift.x, dy = (pi.y - pj.y) + shift.y, dz = (pi.z - pj.z) + shift.z;
      } else {
        dx = (pi.x - pj.x) + Real(cell_offset(entry, 0)) * law.frame.width[0];
        dy = (pi.y - pj.y) + Real(cell_offset(entry, 1)) * law.frame.width[1];
        dz = (pi.z - pj.z) + Real(cell_offset(entry, 2)) * law.frame.width[2];
      }
    } else {
      dx = axis_separation(law.frame, 0, pi.x, pj.x, ai.cell, cell_j);
      dy = axis_separation(law.frame, 1, pi.y, pj.y, ai.cell, cell_j);
      dz = axis_separation(law.frame, 2, pi.z, pj.z, ai.cell, cell_j);
    }
    const Real r2 = dx * dx + dy * dy + dz * dz;
    if (!(r2 < law.cutoff2)) return;  // in the skin
    Real lj, lj_f, coulomb, coulomb_f;
    molecular_pair<Switch, Coulomb>(math, r2, c12_ij, c6_ij, qi * pj.q, law.k, lj, lj_f, coulomb, coulomb_f);
    const Real f = lj_f + coulomb_f;
    into[0] += static_cast<Sum>(f * dx), into[1] += static_cast<Sum>(f * dy), into[2] += static_cast<Sum>(f * dz);
    if constexpr (Energies) {
      into[3] += static_cast<Sum>(lj), into[4] += static_cast<Sum>(coulomb);
      into[5] += static_cast<Sum>(f * r2);
    }
  };
  auto add = [&](unsigned entry, const PositionCharge<Real>& pj, int cell_j, Real c12_ij, Real c6_ij) {
    add_into(sum, entry, pj, cell_j, c12_ij, c6_ij);
  };
  const int length = row_length[t];
  const int listed = min(length, law.capacity);  // a longer row's other entries: walk_row, below
  int k = lane;
  // `Ahead` of a lane's entries at a time: their loads (the entry, then the neighbour's position,
  // type and cell, then its Lennard-Jones pair) are issued together, so that a lane waits once
  // for Ahead pairs' memory. The pairs still add in the row's order: the same bits as one at a
  // time.
  // entry_at(u): where the lane's u-th entry of the round is.
  auto sum_round = [&](auto entry_at) {
    unsigned entry[Ahead];
    int j[Ahead];
#pragma unroll
    for (int u = 0; u < Ahead; ++u) {
      entry[u] = static_cast<unsigned>(__ldg(entry_at(u)));
      j[u] = static_cast<int>(entry[u] & kIndexMask);
    }
    PositionCharge<Real> pj[Ahead];
    TypeCell aj[Ahead];
#pragma unroll
    for (int u = 0; u < Ahead; ++u) pj[u] = packed[j[u]], aj[u] = attributes[j[u]];
    Real c12_ij[Ahead], c6_ij[Ahead];
#pragma unroll
    for (int u = 0; u < Ahead; ++u) c12_ij[u] = __ldg(c12 + aj[u].type), c6_ij[u] = __ldg(c6 + aj[u].type);
    if constexpr (RoundSums) {
      constexpr int kSummed = Energies ? 6 : 3;
      Real round[6] = {0, 0, 0, 0, 0, 0};
#pragma unroll
      for (int u = 0; u < Ahead; ++u) add_into(round, entry[u], pj[u], aj[u].cell, c12_ij[u], c6_ij[u]);
#pragma unroll
      for (int v = 0; v < kSummed; ++v) sum[v] += static_cast<double>(round[v]);
    } else {
#pragma unroll
      for (int u = 0; u < Ahead; ++u) add(entry[u], pj[u], aj[u].cell, c12_ij[u], c6_ij[u]);
    }
  };
  if constexpr (Lean) {
    if ((Ahead * lanes) % kChunk == 0) {
      // A round starts at k = lane + a multiple of kChunk, so its u-th entry (k + u lanes, with
      // lane + (u lanes mod kChunk) < kChunk as lanes divides kChunk) lies u lanes / kChunk
      // chunks further, u lanes mod kChunk along. Every offset < 2^31: n < 2^kIndexBits.
      const int chunk = n * kChunk;  // from a chunk of a row to the row's next chunk
      int step[Ahead];
#pragma unroll
      for (int u = 0; u < Ahead; ++u) step[u] = u * lanes / kChunk * chunk + u * lanes % kChunk;
      const int advance = Ahead * lanes / kChunk * chunk;
      const int* at = list + list_index(k, t, n);
      for (; k + (Ahead - 1) * lanes < listed; k += Ahead * lanes, at += advance)
        sum_round([&](int u) { return at + step[u]; });
    }
  }
  for (; k + (Ahead - 1) * lanes < listed; k += Ahead * lanes)
    sum_round([&](int u) { return list + list_index(k + u * lanes, t, n); });
  for (; k < listed; k += lanes) {
    const unsigned entry = static_cast<unsigned>(__ldg(list + list_index(k, t, n)));
    const int j = static_cast<int>(entry & kIndexMask);
    const TypeCell aj = attributes[j];
    add(entry, packed[j], aj.cell, __ldg(c12 + aj.type), __ldg(c6 + aj.type));
  }
  // Entries past the capacity (a build decided on the device found a longer row; the host grows
  // the list when it next looks): found again from the cells, each lane its own (k % lanes), in
  // the row's order after the listed ones, so the sums are those of a list that held them.
  if (length > listed)
    walk_row(t, listed, packed, attributes, order, law.cell_start, law.frame, law.reach2, law.excluded_first,
             law.excluded, law.offsets, [&](int k, unsigned entry) {
               if (k % lanes != lane) return;
               const int j = static_cast<int>(entry & kIndexMask);
               const TypeCell aj = attributes[j];
               add(entry, packed[j], aj.cell, __ldg(c12 + aj.type), __ldg(c6 + aj.type));
             });
  constexpr int kSummed = Energies ? 6 : 3;
  if (lanes > 1) {
    const int first = (threadIdx.x % 32) / lanes * lanes;
    const unsigned group = (lanes == 32 ? 0xffffffffu : ((1u << lanes) - 1)) << first;
    for (int offset = lanes / 2; offset > 0; offset /= 2)
      for (int v = 0; v < kSummed; ++v) sum[v] += __shfl_down_sync(group, sum[v], offset, lanes);
    if (lane != 0) return;
  }
  const int a = order[t];
  out.force[a] = V3{sum[0], sum[1], sum[2]};
  if constexpr (Energies) {
    out.lennard_jones[a] = 0.5 * sum[3], out.coulomb[a] = 0.5 * sum[4], out.virial[a] = 0.5 * sum[5];
    out.excluded[a] = 0;
  }
}

// With PME or MSM, each excluded pair takes away the part of its Coulomb that the mesh or the
// grids put in (ewald_excluded_pair, msm_excluded_pair), in float64 for either arithmetic: atom
// i walks its own excluded partners after the pairs (same stream), adding to its sums (to its
// force alone without `Energies`). A kernel of its own: inside the pair kernel (tried in session
// 32) its float64 law took the mixed kernel from 39 to 62 registers, the occupancy that the
// million-atom pairs need to hide their gathers (a million-atom run with it was slower, though
// together with another change).
// `Accumulate`: added to the pair sums in `out` (after them, on their stream); otherwise written
// to arrays of their own (out.force, out.virial: the corrections alone), so that they can run on
// the bonded terms' stream beside the pairs and gather_forces adds them in the same order.
template <PairCoulomb Coulomb, bool Energies, bool Accumulate = true>
__global__ void excluded_corrections(int n, const V3* __restrict__ x, const double* __restrict__ charge,
                                     double coulomb_k, Cells g, const int* __restrict__ first,
                                     const int* __restrict__ partner, MolecularPairConstants<double> k, PairSums out) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const ScalarPairMath<double> math;
  const V3 xi = x[i];
  const double qi = coulomb_k * charge[i];
  V3 f{0, 0, 0};
  double energy_sum = 0, virial = 0;
  for (int p = first[i]; p < first[i + 1]; ++p) {
    const int j = partner[p];
    const V3 d0 = xi - x[j];
    const V3 d{nearest(d0.x, g.length[0], g.inverse[0]), nearest(d0.y, g.length[1], g.inverse[1]),
               nearest(d0.z, g.length[2], g.inverse[2])};
    const double r2 = dot(d, d);
    double energy, force_over_r;
    if constexpr (Coulomb == PairCoulomb::ewald)
      ewald_excluded_pair(math, r2, qi * charge[j], k.ewald_alpha, k.ewald_gauss, energy, force_over_r);
    else
      msm_excluded_pair(math, r2, qi * charge[j], k.inverse_cutoff, energy, force_over_r);
    f = f + force_over_r * d;
    energy_sum += energy, virial += force_over_r * r2;
  }
  if constexpr (Accumulate) out.force[i] = out.force[i] + f;
  else out.force[i] = f;
  if constexpr (Energies) {
    out.excluded[i] = 0.5 * energy_sum;
    if constexpr (Accumulate) out.virial[i] += 0.5 * virial;
    else out.virial[i] = 0.5 * virial;
  }
}

}  // namespace
}  // namespace nbkit::md
