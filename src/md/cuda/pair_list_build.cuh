#pragma once
// The molecular pair list's build (cuda/molecular_pair_list.cu is the one includer): atoms binned
// into cells and sub-cells, packed, grouped, the check of how far they moved, and the three
// kernels that write the rows (by cell, by row, by group).
#include <cuda_runtime.h>

#include "md/cuda/pair_list_layout.cuh"

namespace nbkit::md {
namespace {

// Each atom's cell (x fastest) and its index, the sort's values. With kSubcellBits, the key's low
// bits are the atom's place among 4 x 4 x 4 sub-cells of its cell in Morton order, so that each
// cell's atoms come sorted into compact groups of a few sub-cells (the build's atom groups,
// kGroup; GROMACS's nbnxm and OpenMM sort for the same reason).
constexpr int kSubcellBits = 6;
__device__ inline unsigned morton_4x4x4(int sx, int sy, int sz) {
  unsigned m = 0;
  for (int b = 0; b < 2; ++b)
    m |= ((sx >> b) & 1u) << (3 * b) | ((sy >> b) & 1u) << (3 * b + 1) | ((sz >> b) & 1u) << (3 * b + 2);
  return m;
}
__device__ inline unsigned atom_key(const V3& p, const Cells& g, int sub_bits) {
  const double v[3] = {p.x, p.y, p.z};
  int c[3], sub[3];
  for (int a = 0; a < 3; ++a) {
    const double u = wrapped(v[a], g.length[a], g.inverse[a]) * g.per_length[a];  // in cell widths
    c[a] = min(g.count[a] - 1, static_cast<int>(u));
    sub[a] = min(3, max(0, static_cast<int>((u - c[a]) * 4)));
  }
  const unsigned cell = static_cast<unsigned>((c[2] * g.count[1] + c[1]) * g.count[0] + c[0]);
  return sub_bits ? cell << sub_bits | morton_4x4x4(sub[0], sub[1], sub[2]) : cell;
}
__global__ void bin_atoms(int n, const V3* __restrict__ x, Cells g, int sub_bits, unsigned* __restrict__ key,
                          int* __restrict__ index) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  key[i] = atom_key(x[i], g, sub_bits);
  index[i] = i;
}

// The same order by counting (where the keys are sub-cells, few enough: MolecularPairListGpu's
// `counting`): each key's atoms counted (`rank`: an atom's place among its key's, in the
// order the atomics came), the counts' exclusive sum (cub's scan) the keys' starts, each atom
// put at its key's start plus its rank, then each key's few atoms (~2 at 30,000 atoms: 4 x 4 x 4
// sub-cells of a cell the reach wide) put in index order by one thread. So the order is the
// radix sort's (by key, then by index: that sort is stable over indices 0..n-1), whatever order
// the atomics came in, and the sorted keys and cell starts are the same too.
__global__ void bin_and_count(int n, const V3* __restrict__ x, Cells g, int sub_bits, unsigned* __restrict__ key,
                              int* __restrict__ count, int* __restrict__ rank) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const unsigned k = atom_key(x[i], g, sub_bits);
  key[i] = k;
  rank[i] = atomicAdd(&count[k], 1);
}
__global__ void place_by_key(int n, const unsigned* __restrict__ key, const int* __restrict__ start,
                             const int* __restrict__ rank, int* __restrict__ order, unsigned* __restrict__ sorted_key) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const unsigned k = key[i];
  const int at = start[k] + rank[i];
  order[at] = i, sorted_key[at] = k;
}
// At a build: each sorted atom's type and cell.
__device__ inline TypeCell sorted_attribute(int atom, unsigned sorted_key, const int* __restrict__ type, int sub_bits,
                                            const Cells& g) {
  const int key = static_cast<int>(sorted_key >> sub_bits);
  const int cx = key % g.count[0], cy = key / g.count[0] % g.count[1], cz = key / g.count[0] / g.count[1];
  return {type[atom], cx | cy << 10 | cz << 20};
}
__global__ void sorted_attributes(int n, const int* __restrict__ order, const int* __restrict__ type,
                                  const unsigned* __restrict__ sorted_key, int sub_bits, Cells g,
                                  TypeCell* __restrict__ out) {
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= n) return;
  out[t] = sorted_attribute(order[t], sorted_key[t], type, sub_bits, g);
}

// Every evaluation: the sorted atoms' positions relative to their cells' centres (in float64,
// the minimum image, then rounded to Real) and their charges.
template <class Real>
__device__ inline PositionCharge<Real> packed_atom(const V3& p, double charge, int cell, const Cells& g) {
  const double v[3] = {p.x, p.y, p.z};
  Real r[3];
  for (int axis = 0; axis < 3; ++axis) {
    const double centre = (cell_axis(cell, axis) + 0.5) * g.length[axis] / g.count[axis];
    r[axis] = Real(nearest(v[axis] - centre, g.length[axis], g.inverse[axis]));
  }
  return {r[0], r[1], r[2], Real(charge)};
}
template <class Real>
__global__ void pack(int n, const V3* __restrict__ x, const double* __restrict__ charge, const int* __restrict__ order,
                     const TypeCell* __restrict__ attributes, Cells g, PositionCharge<Real>* __restrict__ packed) {
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= n) return;
  const int a = order[t];
  packed[t] = packed_atom<Real>(x[a], charge[a], attributes[t].cell, g);
}

// The counting sort's last kernel, a thread a key (0 .. keys, keys = cells << sub_bits): its
// atoms by index (insertion: a few each), where the key is a cell's first (or `keys`, the end)
// the cell's start, then for its atoms what sorted_attributes, pack and the copy of the build's
// positions (`built`, where not null) would write after a radix sort: the same values, three
// graph nodes fewer in a rebuild.
template <class Real>
__global__ void order_keys_and_pack(int keys, const int* __restrict__ start, int sub_bits, int* __restrict__ order,
                                    int* __restrict__ cell_start, const unsigned* __restrict__ sorted_key,
                                    const int* __restrict__ type, const V3* __restrict__ x,
                                    const double* __restrict__ charge, Cells g, TypeCell* __restrict__ attributes,
                                    PositionCharge<Real>* __restrict__ packed, V3* __restrict__ built) {
  const int k = blockIdx.x * blockDim.x + threadIdx.x;
  if (k > keys) return;
  if ((k & ((1 << sub_bits) - 1)) == 0) cell_start[k >> sub_bits] = start[k];
  if (k == keys) return;
  const int begin = start[k], end = start[k + 1];
  for (int i = begin + 1; i < end; ++i) {
    const int v = order[i];
    int j = i - 1;
    while (j >= begin && order[j] > v) order[j + 1] = order[j], --j;
    order[j + 1] = v;
  }
  for (int t = begin; t < end; ++t) {
    const int a = order[t];
    const TypeCell attribute = sorted_attribute(a, sorted_key[t], type, sub_bits, g);
    attributes[t] = attribute;
    const V3 p = x[a];
    packed[t] = packed_atom<Real>(p, charge[a], attribute.cell, g);
    if (built) built[a] = p;
  }
}

// The build's atom groups: kGroup consecutive sorted atoms of one cell (a cell's atoms from its
// first, the last group part full), compact by the sub-cell order (bin_atoms); their boxes are
// those of `unit` consecutive atoms (kGroup, or half a group: build_rows_by_group's Unit). Unit
// u's bounding box, in the cell-relative frame of the packed positions and in float32 rounded
// outward (so it holds its atoms in either precision), goes to lo[u], hi[u] (u its first
// atom's sorted index; other slots are not read). Boxes of ~5.6 x 4.6 x 3.6 A at 30,000 atoms (a
// count over uniform atoms; docs/performance.md, session 35); the build by group tests them
// before their atoms.
constexpr int kGroup = 8;
__device__ inline float round_down(float v) { return v; }
__device__ inline float round_up(float v) { return v; }
__device__ inline float round_down(double v) { return __double2float_rd(v); }
__device__ inline float round_up(double v) { return __double2float_ru(v); }
template <class Real>
__global__ void group_bounds(int n, const PositionCharge<Real>* __restrict__ packed, const unsigned* __restrict__ sorted_key,
                             int sub_bits, const int* __restrict__ cell_start, int unit, float4* __restrict__ lo,
                             float4* __restrict__ hi) {
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= n) return;
  const int cell = static_cast<int>(sorted_key[t] >> sub_bits);
  const int begin = cell_start[cell];
  if ((t - begin) % unit != 0) return;
  const int end = min(t + unit, cell_start[cell + 1]);
  PositionCharge<Real> p = packed[t];
  Real low[3] = {p.x, p.y, p.z}, high[3] = {p.x, p.y, p.z};
  for (int j = t + 1; j < end; ++j) {
    p = packed[j];
    low[0] = min(low[0], p.x), low[1] = min(low[1], p.y), low[2] = min(low[2], p.z);
    high[0] = max(high[0], p.x), high[1] = max(high[1], p.y), high[2] = max(high[2], p.z);
  }
  lo[t] = make_float4(round_down(low[0]), round_down(low[1]), round_down(low[2]), 0.0f);
  hi[t] = make_float4(round_up(high[0]), round_up(high[1]), round_up(high[2]), 0.0f);
}

// The rebuilds the device decides (MolecularPairListGpu's device check, the default): how many,
// and the longest row any of them found (the host grows the list when it next reads this).
struct ListControl {
  unsigned long long builds;
  int longest;
  int unused;
};

// The device's decision: the largest squared displacement since the build (float bits in
// *moved) against (skin / 2)^2, the host's own test, so the same steps rebuild; the word zeroed
// for the next check and, for a rebuild, `longest` zeroed for its build and the build counted.
struct Decide {
  double quarter_skin2;
  int* longest;
  ListControl* control;
  cudaGraphConditionalHandle rebuild;
  unsigned* ticket;  // largest_displacement's blocks done (the last one decides and zeroes it)
};
__device__ inline void decide(unsigned* moved, const Decide& d) {
  const float largest2 = __uint_as_float(atomicExch(moved, 0u));
  const bool build = !(static_cast<double>(largest2) <= d.quarter_skin2);
  if (build) *d.longest = 0, ++d.control->builds;
  cudaGraphSetConditional(d.rebuild, build ? 1u : 0u);
}

// The largest squared displacement since the list was built (minimum image: a wrap is no move),
// as float bits (non-negative floats order as their bits do); a warp's maximum, then one atomic
// into out[0]. The host's checks take two words in turn: each zeroes the other for the next (the
// last check read it back before this one started), so no memset goes before it.
// With `decider` (inside a step's graph): the last block to finish decides (the threadfence
// reduction of the CUDA samples: each block's maxima in before its ticket), so no kernel of its
// own sits between the check and the conditional node. At 23,534 atoms on an H200 (session 38's
// timeline) decide_rebuild started ~12 us after the check and ran ~7 us, behind the spread's and
// the corrections' blocks, every step.
__global__ void largest_displacement(int n, const V3* __restrict__ x, const V3* __restrict__ built, Cells g,
                                     unsigned* __restrict__ out, unsigned* __restrict__ next, bool decider,
                                     Decide d) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i == 0 && !decider) *next = 0;
  unsigned bits = 0;
  if (i < n) {
    const V3 r = x[i] - built[i];
    const double dx = nearest(r.x, g.length[0], g.inverse[0]), dy = nearest(r.y, g.length[1], g.inverse[1]),
                 dz = nearest(r.z, g.length[2], g.inverse[2]);
    bits = __float_as_uint(static_cast<float>(dx * dx + dy * dy + dz * dz));
  }
  for (int offset = 16; offset > 0; offset /= 2) bits = max(bits, __shfl_xor_sync(0xffffffffu, bits, offset));
  if (threadIdx.x % 32 == 0 && bits) atomicMax(out, bits);
  if (!decider) return;
  __syncthreads();  // the block's maxima are in
  if (threadIdx.x != 0) return;
  __threadfence();
  if (atomicAdd(d.ticket, 1u) != gridDim.x - 1) return;
  __threadfence();  // every block's maxima are in
  *d.ticket = 0;
  decide(out, d);
}

// Where the check did not decide (the decision's own small graph, outside a step's): first in
// the decision's graph, after the check.
__global__ void decide_rebuild(unsigned* __restrict__ moved, Decide d) { decide(moved, d); }

// Last in a rebuild the device decided: the longest row so far, for the host.
__global__ void note_build(const int* __restrict__ longest, ListControl* __restrict__ control) {
  control->longest = max(control->longest, *longest);
}

// Is (a, b) (topology indices) an excluded pair? Row a, sorted.
__device__ inline bool is_excluded(int a, int b, const int* __restrict__ first, const int* __restrict__ partner) {
  for (int k = first[a]; k < first[a + 1]; ++k) {
    const int p = partner[k];
    if (p >= b) return p == b;
  }
  return false;
}

// The list's rows: those of every sorted atom t, each every sorted atom j != t within reach
// (cutoff + skin, minimum image) and not excluded, in the order of the cells searched (z, y, x
// from the lowest neighbour) and of the atoms within each. Three kernels write the same list,
// entry for entry (tests/md/molecular_test.cpp holds them to it), and the atom count picks one
// (the constructor's `build`): a warp per group of rows at every size since session 41 (or, with
// fewer than 3 cells along an axis, a warp per row); a lane per row (by cell) was a million
// atoms' build up to then and stays for tests and A/B runs (NBKIT_PAIR_LIST_BUILD=cell).
//
// A lane per row (build_rows_by_cell): a warp per 32 atoms
// of a home cell (blockIdx.x the cell, blockIdx.y the first group of 32, gridDim.y groups apart),
// a lane per atom: each searched cell's atoms pass through shared memory once for the warp's 32
// (the Lennard-Jones engine's layout, cell_list.cuh; a warp per whole cell left an H100's SMs
// idle: 6 ms a build for 30,000 atoms in 125 cells). A cell whose nearest face is beyond reach
// from atom t is skipped by that atom. At 30,000 atoms its ~1,300 warps, each through 27 cells
// one candidate at a time, leave an H100 mostly idle.
//
// Both: a row longer than `capacity` keeps its first `capacity` entries; every row's length goes
// to `longest`, so the host can grow the list. Layout: rows in chunks of kChunk entries
// (list_index), so that the lanes sharing a row in the pair kernel read consecutive words.
template <class Real>
__global__ void __launch_bounds__(kRowThreads)
    build_rows_by_cell(int n, const PositionCharge<Real>* __restrict__ packed, const TypeCell* __restrict__ attributes,
               const int* __restrict__ order, const int* __restrict__ cell_start, Cells g, Frame<Real> f,
               Real reach2, const int* __restrict__ excluded_first, const int* __restrict__ excluded, int capacity,
               int* __restrict__ list, int* __restrict__ row_length, int* __restrict__ longest, bool offsets) {
  __shared__ PositionCharge<Real> tile[kRowThreads];
  __shared__ int tile_atom[kRowThreads], tile_cell[kRowThreads];
  __shared__ int pending[kRowThreads][kChunk + 1];  // each lane's unwritten chunk (+1: no bank conflicts)
  int* mine = pending[threadIdx.x];
  // Row t's chunk c from `mine` (entries past the row's length are never read).
  auto write_chunk = [&](int t, int c) {
    int4* to = reinterpret_cast<int4*>(list + list_index(c * kChunk, t, n));
    to[0] = make_int4(mine[0], mine[1], mine[2], mine[3]);
    to[1] = make_int4(mine[4], mine[5], mine[6], mine[7]);
  };
  const int home = blockIdx.x;
  const int home_begin = cell_start[home], home_end = cell_start[home + 1];
  const int c[3] = {home % g.count[0], home / g.count[0] % g.count[1], home / g.count[0] / g.count[1]};
  const int home_cell = c[0] | c[1] << 10 | c[2] << 20;
  int lo[3], hi[3];
  const bool stencil_everywhere = g.count[0] >= 3 && g.count[1] >= 3 && g.count[2] >= 3;
  for (int a = 0; a < 3; ++a) {
    const bool stencil = g.count[a] >= 3;
    lo[a] = stencil ? c[a] - 1 : 0, hi[a] = stencil ? c[a] + 1 : g.count[a] - 1;
  }
  for (int home_base = home_begin + blockIdx.y * kRowThreads; home_base < home_end;
       home_base += kRowThreads * gridDim.y) {
    const int t = home_base + threadIdx.x;
    const bool active = t < home_end;
    const PositionCharge<Real> pi = packed[active ? t : home_begin];
    const int atom_i = order[active ? t : home_begin];
    // The span of atom i's excluded partners (sorted): a candidate outside it needs no search
    // (most candidates: other molecules).
    const int first_excluded = excluded_first[atom_i], end_excluded = excluded_first[atom_i + 1];
    const int lowest = first_excluded < end_excluded ? excluded[first_excluded] : 1;
    const int highest = first_excluded < end_excluded ? excluded[end_excluded - 1] : 0;
    const Real position[3] = {pi.x, pi.y, pi.z};
    // Distance from atom t to the face shared with the neighbour cell at offset o along axis a
    // (its position is relative to its cell's centre).
    auto gap = [&](int a, int raw) -> Real {
      if (g.count[a] < 3 || raw == c[a]) return Real(0);
      const Real inside = position[a] + Real(0.5) * f.width[a];
      const Real d = raw < c[a] ? inside : f.width[a] - inside;
      return d > Real(0) ? d : Real(0);
    };
    int count = 0;
    for (int rz = lo[2]; rz <= hi[2]; ++rz) {
      const int cz = (rz + g.count[2]) % g.count[2];
      const Real gz = gap(2, rz);
      for (int ry = lo[1]; ry <= hi[1]; ++ry) {
        const int cy = (ry + g.count[1]) % g.count[1];
        const Real gy = gap(1, ry);
        for (int rx = lo[0]; rx <= hi[0]; ++rx) {
          const int cx = (rx + g.count[0]) % g.count[0];
          const Real gx = gap(0, rx);
          const bool near = active && gx * gx + gy * gy + gz * gz < reach2;
          const int cell = (cz * g.count[1] + cy) * g.count[0] + cx;
          // Along axes of 3 or more cells every atom of this cell is the same whole number of
          // cell widths away (the raw offset, the short way round by construction), so r_i - r_j
          // is (p_i - p_j) + that shift with no image to pick: once per cell, not per pair.
          const Real shift[3] = {Real(c[0] - rx) * f.width[0], Real(c[1] - ry) * f.width[1],
                                 Real(c[2] - rz) * f.width[2]};
          const unsigned code = offsets ? offset_code(c[0] - rx, c[1] - ry, c[2] - rz) : 0u;
          const int end = cell_start[cell + 1];
          for (int base = cell_start[cell]; base < end; base += kRowThreads) {
            const int tile_count = min(kRowThreads, end - base);
            __syncthreads();  // the previous tile is no longer read
            if (static_cast<int>(threadIdx.x) < tile_count) {
              tile[threadIdx.x] = packed[base + threadIdx.x];
              tile_atom[threadIdx.x] = order[base + threadIdx.x];
              tile_cell[threadIdx.x] = attributes[base + threadIdx.x].cell;
            }
            __syncthreads();
            if (!near) continue;
            for (int k = 0; k < tile_count; ++k) {
              const int j = base + k;
              if (j == t) continue;
              Real dx, dy, dz;
              if (stencil_everywhere) {
                dx = (pi.x - tile[k].x) + shift[0], dy = (pi.y - tile[k].y) + shift[1];
                dz = (pi.z - tile[k].z) + shift[2];
              } else {
                dx = axis_separation(f, 0, pi.x, tile[k].x, home_cell, tile_cell[k]);
                dy = axis_separation(f, 1, pi.y, tile[k].y, home_cell, tile_cell[k]);
                dz = axis_separation(f, 2, pi.z, tile[k].z, home_cell, tile_cell[k]);
              }
              if (!(dx * dx + dy * dy + dz * dz < reach2)) continue;
              const int atom_j = tile_atom[k];
              if (atom_j >= lowest && atom_j <= highest && is_excluded(atom_i, atom_j, excluded_first, excluded))
                continue;
              if (count < capacity) {
                mine[count % kChunk] = static_cast<int>(static_cast<unsigned>(j) | code);
                if (count % kChunk == kChunk - 1) write_chunk(t, count / kChunk);
              }
              ++count;
            }
          }
        }
      }
    }
    if (!active) continue;
    if (count < capacity && count % kChunk != 0) write_chunk(t, count / kChunk);  // the last, part full
    row_length[t] = count;
    atomicMax(longest, count);
  }
}

// A warp per row (build_rows_by_row), a lane per candidate: 32 consecutive atoms of a searched
// cell are tested at once and the hits kept in their order by a ballot; a cell whose nearest face
// is beyond reach is skipped by the whole warp. 30,695 atoms are 30,695 warps: the list's phase
// went from 0.134 to 0.074 ms a step on an H100 (session 32; a build every ~7 steps). But each
// warp loads its own candidates (32 x 16 bytes a step of its loop, ~110 steps a row),
// presumably from L2 once an SM's L1 holds other blocks' cells: at 1,074,325 atoms the step
// slowed from 35.6 to 31.1-31.5 ns/day (two variants of it; one also carried a slower pair
// kernel), where the lane per row loads each tile once for 32 rows. The hits wait in shared memory until a
// chunk is whole, then 8 lanes write its 32-byte sector.
constexpr int kRowWarps = 8;
template <class Real>
__global__ void __launch_bounds__(32 * kRowWarps)
    build_rows_by_row(int n, const PositionCharge<Real>* __restrict__ packed, const TypeCell* __restrict__ attributes,
                      const int* __restrict__ order, const int* __restrict__ cell_start, Cells g, Frame<Real> f,
                      Real reach2, const int* __restrict__ excluded_first, const int* __restrict__ excluded,
                      int capacity, int* __restrict__ list, int* __restrict__ row_length, int* __restrict__ longest,
                      bool offsets) {
  // A row's entries not yet written: fewer than kChunk left from before, and up to 32 new.
  __shared__ int staged[kRowWarps][kChunk + 32];
  const int lane = static_cast<int>(threadIdx.x % 32), warp = static_cast<int>(threadIdx.x / 32);
  const int t = blockIdx.x * kRowWarps + warp;
  if (t >= n) return;  // the whole warp
  int* stage = staged[warp];
  const unsigned below = (1u << lane) - 1;
  const PositionCharge<Real> pi = packed[t];
  const int home_cell = attributes[t].cell;
  const int atom_i = order[t];
  // The span of atom i's excluded partners (sorted): a candidate outside it needs no search.
  const int first_excluded = excluded_first[atom_i], end_excluded = excluded_first[atom_i + 1];
  const int lowest = first_excluded < end_excluded ? excluded[first_excluded] : 1;
  const int highest = first_excluded < end_excluded ? excluded[end_excluded - 1] : 0;
  const int c[3] = {cell_axis(home_cell, 0), cell_axis(home_cell, 1), cell_axis(home_cell, 2)};
  int lo[3], hi[3];
  const bool stencil_everywhere = g.count[0] >= 3 && g.count[1] >= 3 && g.count[2] >= 3;
  for (int a = 0; a < 3; ++a) {
    const bool stencil = g.count[a] >= 3;
    lo[a] = stencil ? c[a] - 1 : 0, hi[a] = stencil ? c[a] + 1 : g.count[a] - 1;
  }
  const Real position[3] = {pi.x, pi.y, pi.z};
  // As build_rows_by_cell's gap.
  auto gap = [&](int a, int raw) -> Real {
    if (g.count[a] < 3 || raw == c[a]) return Real(0);
    const Real inside = position[a] + Real(0.5) * f.width[a];
    const Real d = raw < c[a] ? inside : f.width[a] - inside;
    return d > Real(0) ? d : Real(0);
  };
  int count = 0;    // the row's entries found so far (the same in every lane)
  int written = 0;  // those in the list (whole chunks)
  for (int rz = lo[2]; rz <= hi[2]; ++rz) {
    const int cz = (rz + g.count[2]) % g.count[2];
    const Real gz = gap(2, rz);
    for (int ry = lo[1]; ry <= hi[1]; ++ry) {
      const int cy = (ry + g.count[1]) % g.count[1];
      const Real gy = gap(1, ry);
      for (int rx = lo[0]; rx <= hi[0]; ++rx) {
        const int cx = (rx + g.count[0]) % g.count[0];
        const Real gx = gap(0, rx);
        if (!(gx * gx + gy * gy + gz * gz < reach2)) continue;
        const int cell = (cz * g.count[1] + cy) * g.count[0] + cx;
        const Real shift[3] = {Real(c[0] - rx) * f.width[0], Real(c[1] - ry) * f.width[1],
                               Real(c[2] - rz) * f.width[2]};
        const unsigned code = offsets ? offset_code(c[0] - rx, c[1] - ry, c[2] - rz) : 0u;
        const int end = cell_start[cell + 1];
        for (int base = cell_start[cell]; base < end; base += 32) {
          const int j = base + lane;
          bool hit = false;
          if (j < end && j != t) {
            const PositionCharge<Real> pj = packed[j];
            Real dx, dy, dz;
            if (stencil_everywhere) {  // the same arithmetic as build_rows_by_cell's, so the same rows
              dx = (pi.x - pj.x) + shift[0], dy = (pi.y - pj.y) + shift[1], dz = (pi.z - pj.z) + shift[2];
            } else {
              const int cell_j = attributes[j].cell;
              dx = axis_separation(f, 0, pi.x, pj.x, home_cell, cell_j);
              dy = axis_separation(f, 1, pi.y, pj.y, home_cell, cell_j);
              dz = axis_separation(f, 2, pi.z, pj.z, home_cell, cell_j);
            }
            if (dx * dx + dy * dy + dz * dz < reach2) {
              const int atom_j = order[j];
              hit = !(atom_j >= lowest && atom_j <= highest && is_excluded(atom_i, atom_j, excluded_first, excluded));
            }
          }
          const unsigned hits = __ballot_sync(0xffffffffu, hit);
          if (hits == 0) continue;
          const int k = count + __popc(hits & below);
          if (hit && k < capacity) stage[k - written] = static_cast<int>(static_cast<unsigned>(j) | code);
          count += __popc(hits);
          const int kept = min(count, capacity) - written;  // staged entries
          const int whole = kept / kChunk * kChunk;
          if (whole == 0) continue;
          __syncwarp();
          if (lane < whole) list[list_index(written + lane, t, n)] = stage[lane];
          const int rest = lane < kept - whole ? stage[whole + lane] : 0;
          __syncwarp();
          if (lane < kept - whole) stage[lane] = rest;
          written += whole;
        }
      }
    }
  }
  __syncwarp();
  // The last chunk, part full.
  if (lane < min(count, capacity) - written) list[list_index(written + lane, t, n)] = stage[lane];
  if (lane == 0) {
    row_length[t] = count;
    atomicMax(longest, count);
  }
}

// Row t's entries again, from the cells, for its entries past the list's capacity: a row longer
// than the list was sized for (a region denser than at the last growth) when the build was
// decided on the device, where no host is waiting to grow the list and build it again. The
// pair sums call it for such rows only, `visit(k, entry)` for each entry k >= first, in the
// row's order; the entries are the builds', bit for bit: the same cells in the same order, the
// same separations (build_rows_by_row's arithmetic; the build by group's is the same) and the
// same test, and no cell skipped by a face's distance (that only saves work: every atom of the
// searched cells is tested here).
template <class Real, class Visit>
__device__ void walk_row(int t, int first, const PositionCharge<Real>* __restrict__ packed,
                         const TypeCell* __restrict__ attributes, const int* __restrict__ order,
                         const int* __restrict__ cell_start, const Frame<Real>& f, Real reach2,
                         const int* __restrict__ excluded_first, const int* __restrict__ excluded, bool offsets,
                         Visit&& visit) {
  const PositionCharge<Real> pi = packed[t];
  const int home_cell = attributes[t].cell;
  const int atom_i = order[t];
  const int first_excluded = excluded_first[atom_i], end_excluded = excluded_first[atom_i + 1];
  const int lowest = first_excluded < end_excluded ? excluded[first_excluded] : 1;
  const int highest = first_excluded < end_excluded ? excluded[end_excluded - 1] : 0;
  const int c[3] = {cell_axis(home_cell, 0), cell_axis(home_cell, 1), cell_axis(home_cell, 2)};
  int lo[3], hi[3];
  const bool stencil_everywhere = f.count[0] >= 3 && f.count[1] >= 3 && f.count[2] >= 3;
  for (int a = 0; a < 3; ++a) {
    const bool stencil = f.count[a] >= 3;
    lo[a] = stencil ? c[a] - 1 : 0, hi[a] = stencil ? c[a] + 1 : f.count[a] - 1;
  }
  int k = 0;
  for (int rz = lo[2]; rz <= hi[2]; ++rz) {
    const int cz = (rz + f.count[2]) % f.count[2];
    for (int ry = lo[1]; ry <= hi[1]; ++ry) {
      const int cy = (ry + f.count[1]) % f.count[1];
      for (int rx = lo[0]; rx <= hi[0]; ++rx) {
        const int cx = (rx + f.count[0]) % f.count[0];
        const int cell = (cz * f.count[1] + cy) * f.count[0] + cx;
        const Real shift[3] = {Real(c[0] - rx) * f.width[0], Real(c[1] - ry) * f.width[1],
                               Real(c[2] - rz) * f.width[2]};
        const unsigned code = offsets ? offset_code(c[0] - rx, c[1] - ry, c[2] - rz) : 0u;
        const int end = cell_start[cell + 1];
        for (int j = cell_start[cell]; j < end; ++j) {
          if (j == t) continue;
          const PositionCharge<Real> pj = packed[j];
          Real dx, dy, dz;
          if (stencil_everywhere) {
            dx = (pi.x - pj.x) + shift[0], dy = (pi.y - pj.y) + shift[1], dz = (pi.z - pj.z) + shift[2];
          } else {
            const int cell_j = attributes[j].cell;
            dx = axis_separation(f, 0, pi.x, pj.x, home_cell, cell_j);
            dy = axis_separation(f, 1, pi.y, pj.y, home_cell, cell_j);
            dz = axis_separation(f, 2, pi.z, pj.z, home_cell, cell_j);
          }
          if (!(dx * dx + dy * dy + dz * dz < reach2)) continue;
          const int atom_j = order[j];
          if (atom_j >= lowest && atom_j <= highest && is_excluded(atom_i, atom_j, excluded_first, excluded)) continue;
          if (k >= first) visit(k, static_cast<unsigned>(j) | code);
          ++k;
        }
      }
    }
  }
}

// A warp per group of rows (build_rows_by_group; kGroup consecutive atoms of one cell, the groups
// of group_bounds), a lane per candidate, where every axis has 3 or more cells. Each candidate is
// loaded once for the group's rows, not once a row, and tested first by its group's box: the
// warp tests up to 32 of a neighbour cell's groups' boxes against its own group's box (a lane a
// box), then the atoms of those that come within reach, four groups (32 atoms) a round in the
// cell's order, each atom against each of the rows. A row's entries are thus the same and in the
// same order as build_rows_by_row's and build_rows_by_cell's (the boxes' test, a millimetre wider
// than the reach, only skips atoms beyond it; the tests hold the builds to the same list). By a
// count of uniform atoms at 30,000 (docs/performance.md, session 35): ~78 rounds for a group's 8
// rows where the warp a row takes ~97 steps for each row. The hits of a row wait in shared memory
// until 32 are whole (four chunks), then the warp writes them. Measured on an H200 at 30,677
// atoms (session 35): 170 million instructions a build against 270-294 million by row, but no
// faster with 8 rows a warp (Nsight Compute: 428 us against 432-463, 25% occupancy); with 4 the
// list's phase 0.071 ms a step against 0.076 with 8 in the same call (by row: 0.077-0.079 in two
// other calls).
//
// `Rows` rows a warp (8: a whole group; 4: half a group, each half testing the group's box):
// with 8, 112 registers leave a quarter of an H200's warp slots filled and the warps wait on
// their own arithmetic (Nsight Compute, session 35: 0.59 issued a scheduler); 4 halves the rows'
// registers for twice the warps, each candidate loaded once for 4 rows. 2 rows a warp (twice
// the warps again) measured slower on an H200 (session 40: the list's phase 0.067 ms a step
// against 0.064, DHFR's size) and went; 8 rows 0.074.
constexpr int kGroupWarps = 4;
// `Queued` (NBKIT_PAIR_LIST_GROUP_QUEUE; measured in session 41: +1.6% at DHFR's size, the build
// 361.7 against 377.1 us at 30,671 atoms): the passing groups (units, below) of all the searched
// cells go through one queue a warp (a ring of kGroupQueue entries in shared memory, each its
// unit's first atom, size and cell), taken a round's worth at a time across the cells' ends, so
// that no round is left part-empty at each cell's end (~10 passing groups a cell at DHFR's size:
// 3 rounds of 4 for 2.5 rounds' work, 81 rounds a row group where 68 do). Each lane looks its
// candidate's shift up by its unit's cell; the rows' entries come in the same order (the cells'
// and units' order is the queue's), so the same list.
constexpr int kGroupQueue = 64;  // at most 7 waiting + 32 a box round
static_assert((kGroupQueue & (kGroupQueue - 1)) == 0, "the queue's ring is indexed by a mask");
// The queued build's shift and entry bits of each of the 27 stencil cells (raw - home = -1, 0, 1
// an axis; index ((oz + 1) * 3 + oy + 1) * 3 + ox + 1), made once a block: a lane looks its
// candidate's up in shared memory rather than dividing its cell's index by 3 and 9 and
// converting the offsets every round (~20 of a round's ~350 instructions, Nsight Compute's SASS
// counts, session 41).
template <class Real>
struct StencilShift {
  Real x, y, z;
  unsigned code;
};
// `Unit` (NBKIT_PAIR_LIST_UNIT=4|8; queued builds only, the others 8): the atoms a box stands for,
// on both sides. With 4, a warp of 4 rows tests its own 4 atoms' box rather than its whole
// group's, against the neighbours' boxes of 4 atoms, and a round takes 8 of them: a count over
// DHFR's sorted atoms (23,534; 11 A reach; 789 half groups) gave 2,306 candidates a warp with
// 8-atom boxes on both sides, 1,842 with the warp's own box, 1,447 with 4-atom boxes on both
// (-37% rounds), for twice the boxes to test (a cell's ~34 instead of ~17: two box rounds a
// cell where one did). The same list: boxes only skip atoms beyond reach.
template <class Real, int Rows, bool Queued = false, int Unit = kGroup>
__global__ void __launch_bounds__(32 * kGroupWarps)
    build_rows_by_group(int n, const PositionCharge<Real>* __restrict__ packed, const int* __restrict__ order,
                        const int* __restrict__ cell_start, Cells g, Frame<Real> f, Real reach2,
                        const int* __restrict__ excluded_first, const int* __restrict__ excluded, int capacity,
                        int* __restrict__ list, int* __restrict__ row_length, int* __restrict__ longest,
                        bool offsets, const float4* __restrict__ group_lo, const float4* __restrict__ group_hi,
                        float group_reach2) {
  static_assert(kGroup % Rows == 0);
  static_assert(Unit == kGroup || (Queued && kGroup % Unit == 0 && (Unit & (Unit - 1)) == 0));
  constexpr int kParts = kGroup / Rows;            // a group's warps
  constexpr int kTaken = 32 / Unit;                // units a round
  __shared__ int staged[kGroupWarps][Rows][64];  // a row's unwritten entries: < 32 from before, 32 new
  __shared__ int row_atom[kGroupWarps][Rows];      // the rows' topology indices (exclusions' search)
  // Queued: each entry the unit's first atom | (size - 1) << 21 | cell (0..26, z y x) << 24.
  __shared__ int queue[Queued ? kGroupWarps : 1][Queued ? kGroupQueue : 1];
  __shared__ StencilShift<Real> stencil_shift[Queued ? 27 : 1];
  if constexpr (Queued) {
    for (int k = static_cast<int>(threadIdx.x); k < 27; k += static_cast<int>(blockDim.x)) {
      const int ox = k % 3 - 1, oy = k / 3 % 3 - 1, oz = k / 9 - 1;
      // The cell loop's r_i - r_j = (p_i - p_j) + shift, with shift = (home - raw) * width.
      stencil_shift[k] = {Real(-ox) * f.width[0], Real(-oy) * f.width[1], Real(-oz) * f.width[2],
                          offsets ? offset_code(-ox, -oy, -oz) : 0u};
    }
    __syncthreads();
  }
  const int lane = static_cast<int>(threadIdx.x % 32), warp = static_cast<int>(threadIdx.x / 32);
  const unsigned below = (1u << lane) - 1;
  const int home = blockIdx.x;
  const int home_begin = cell_start[home], home_end = cell_start[home + 1];
  const int c[3] = {home % g.count[0], home / g.count[0] % g.count[1], home / g.count[0] / g.count[1]};
  for (int task = blockIdx.y * kGroupWarps + warp;; task += gridDim.y * kGroupWarps) {
    const int group = home_begin + task / kParts * kGroup;
    const int first = group + task % kParts * Rows;  // the warp's first row
    if (group >= home_end) break;
    if (first >= home_end) continue;  // the part-full last group has no such rows
    const int rows = min(Rows, home_end - first);
    // The rows: positions, the spans of their excluded partners, and their entries so far (of
    // which min(count, capacity) / 32 * 32 are in the list: a round adds at most 32, and 32
    // staged ones are written at once).
    Real px[Rows], py[Rows], pz[Rows];
    int lowest[Rows], highest[Rows], count[Rows];
    // The rows that exist (the others repeat the last one's position and are masked off).
    const unsigned row_mask = (1u << rows) - 1u;
    int* const atom = row_atom[warp];
#pragma unroll
    for (int r = 0; r < Rows; ++r) {
      const int t = first + min(r, rows - 1);
      const PositionCharge<Real> p = packed[t];
      px[r] = p.x, py[r] = p.y, pz[r] = p.z;
      const int a = order[t];
      if (lane == 0) atom[r] = a;
      const int e0 = excluded_first[a], e1 = excluded_first[a + 1];
      lowest[r] = e0 < e1 ? excluded[e0] : 1, highest[r] = e0 < e1 ? excluded[e1 - 1] : 0;
      count[r] = 0;
    }
    __syncwarp();
    // The rows' box: the union of the boxes of the units they lie in. Rows <= Unit: one unit's
    // (the group's with 8-atom units; with 4 rows and 4-atom units the warp's own); 8 rows and
    // 4-atom units: the group's two halves'.
    const int first_unit = Rows < Unit ? group : first;
    float4 home_lo = group_lo[first_unit], home_hi = group_hi[first_unit];
    if constexpr (Rows > Unit) {
      static_assert(Rows == 2 * Unit);
      if (first + Unit < home_end) {
        const float4 l = group_lo[first + Unit], h = group_hi[first + Unit];
        home_lo = make_float4(fminf(home_lo.x, l.x), fminf(home_lo.y, l.y), fminf(home_lo.z, l.z), 0.0f);
        home_hi = make_float4(fmaxf(home_hi.x, h.x), fmaxf(home_hi.y, h.y), fmaxf(home_hi.z, h.z), 0.0f);
      }
    }
    const float hl[3] = {home_lo.x, home_lo.y, home_lo.z}, hh[3] = {home_hi.x, home_hi.y, home_hi.z};
    // Distance from the rows' box to the face shared with the neighbour cell at raw along a.
    auto gap = [&](int a, int raw) -> float {
      if (raw == c[a]) return 0.0f;
      const float half = 0.5f * static_cast<float>(f.width[a]);
      const float d = raw < c[a] ? hl[a] + half : half - hh[a];
      return fmaxf(d, 0.0f);
    };
    // One round: lane l's candidate j (valid: it exists) at shift (sx, sy, sz) from this cell's
    // frame, entry bits `code`, tested against each row, the hits staged in lane order.
    auto round = [&](int j, bool valid, Real sx, Real sy, Real sz, unsigned code) {
      PositionCharge<Real> pj{};
      int atom_j = -1;
      if (valid) pj = packed[j], atom_j = order[j];
      // The rows' tests first, all independent of one another (the warp is latency bound
      // otherwise: a row's ballot and staging wait on its test), without branches: every row
      // is tested (a missing row repeats the last one) and the bits masked after; bit r: row r.
      unsigned in = 0, span = 0;
#pragma unroll
      for (int r = 0; r < Rows; ++r) {
        const Real dx = (px[r] - pj.x) + sx, dy = (py[r] - pj.y) + sy, dz = (pz[r] - pj.z) + sz;
        const bool within = (dx * dx + dy * dy + dz * dz < reach2) & (j != first + r);
        in |= static_cast<unsigned>(within) << r;
        span |= static_cast<unsigned>((atom_j >= lowest[r]) & (atom_j <= highest[r])) << r;
      }
      in &= valid ? row_mask : 0u;
      // Excluded partners, searched only where the candidate lies in a row's span (rare).
      const unsigned check = in & span;
      if (__any_sync(0xffffffffu, check != 0))
        for (unsigned m = check; m; m &= m - 1) {
          const int r = __ffs(m) - 1;
          if (is_excluded(atom[r], atom_j, excluded_first, excluded)) in &= ~(1u << r);
        }
      // The rows' ballots together, and nothing more where no lane hit any row (a fifth to a
      // third of the rounds by the SASS counts, session 41: each row's ballot came out empty in
      // 35% of them, and the rows of a unit are close).
      unsigned hits[Rows], any = 0;
#pragma unroll
      for (int r = 0; r < Rows; ++r) hits[r] = __ballot_sync(0xffffffffu, (in & (1u << r)) != 0), any |= hits[r];
      if (any == 0) return;
#pragma unroll
      for (int r = 0; r < Rows; ++r) {
        if (hits[r] == 0) continue;  // every round of a missing row
        const bool hit = (in & (1u << r)) != 0;
        int* stage = staged[warp][r];
        const int written = min(count[r], capacity) & ~31;  // count >= 0: a multiple of 32 below
        const int k = count[r] + __popc(hits[r] & below);
        if (hit && k < capacity) stage[k - written] = static_cast<int>(static_cast<unsigned>(j) | code);
        count[r] += __popc(hits[r]);
        if (min(count[r], capacity) - written < 32) continue;
        __syncwarp();  // 32 staged entries: four whole chunks to the list
        list[list_index(written + lane, first + r, n)] = stage[lane];
        const int rest = stage[32 + lane];
        __syncwarp();
        stage[lane] = rest;
        // Every lane's move done before any lane stages into those slots in a later round (the
        // next round's ballots converge the warp, but only __syncwarp orders shared memory
        // between lanes: compute-sanitizer's racecheck flagged the write after write, session 42).
        __syncwarp();
      }
    };
    // Queued: rounds of the queue's units head .. head + taken - 1, lane l taking atom l % Unit of
    // the (l / Unit)-th; its cell's shift from the block's table.
    int head = 0, tail = 0;
    auto queued_round = [&](int taken) {
      const int which = lane / Unit;
      const int e = which < taken ? queue[warp][(head + which) & (kGroupQueue - 1)] : 0;
      const int start = e & ((1 << 21) - 1), size = ((e >> 21) & 7) + 1;
      const StencilShift<Real> shift = stencil_shift[e >> 24];
      const bool valid = which < taken && lane % Unit < size;
      round(valid ? start + lane % Unit : 0, valid, shift.x, shift.y, shift.z, shift.code);
      head += taken;
    };
    for (int rz = c[2] - 1; rz <= c[2] + 1; ++rz) {
      const int cz = rz < 0 ? rz + g.count[2] : rz >= g.count[2] ? rz - g.count[2] : rz;
      const float gz = gap(2, rz);
      for (int ry = c[1] - 1; ry <= c[1] + 1; ++ry) {
        const int cy = ry < 0 ? ry + g.count[1] : ry >= g.count[1] ? ry - g.count[1] : ry;
        const float gy = gap(1, ry);
        for (int rx = c[0] - 1; rx <= c[0] + 1; ++rx) {
          const int cx = rx < 0 ? rx + g.count[0] : rx >= g.count[0] ? rx - g.count[0] : rx;
          const float gx = gap(0, rx);
          if (!(gx * gx + gy * gy + gz * gz < group_reach2)) continue;
          const int cell = (cz * g.count[1] + cy) * g.count[0] + cx;
          // As build_rows_by_row's: r_i - r_j = (p_i - p_j) + shift, the same arithmetic.
          const Real sx = Real(c[0] - rx) * f.width[0], sy = Real(c[1] - ry) * f.width[1],
                     sz = Real(c[2] - rz) * f.width[2];
          const unsigned code = offsets ? offset_code(c[0] - rx, c[1] - ry, c[2] - rz) : 0u;
          const float fx = static_cast<float>(sx), fy = static_cast<float>(sy), fz = static_cast<float>(sz);
          const int begin = cell_start[cell], end = cell_start[cell + 1];
          for (int base = begin; base < end; base += 32 * Unit) {
            const int other = base + lane * Unit;
            bool near = false;
            if (other < end) {  // the two boxes' distance, the neighbour's shifted into this cell's frame
              const float4 l = group_lo[other], h = group_hi[other];
              const float dx = fmaxf(fmaxf(hl[0] - (h.x - fx), (l.x - fx) - hh[0]), 0.0f);
              const float dy = fmaxf(fmaxf(hl[1] - (h.y - fy), (l.y - fy) - hh[1]), 0.0f);
              const float dz = fmaxf(fmaxf(hl[2] - (h.z - fz), (l.z - fz) - hh[2]), 0.0f);
              near = dx * dx + dy * dy + dz * dz < group_reach2;
            }
            unsigned pass = __ballot_sync(0xffffffffu, near);
            if constexpr (Queued) {
              // The passing units onto the queue in the cell's order, then whole rounds off it.
              if (near) {
                const int size = min(Unit, end - other);
                const int stencil = ((rz - c[2] + 1) * 3 + (ry - c[1] + 1)) * 3 + (rx - c[0] + 1);
                queue[warp][(tail + __popc(pass & below)) & (kGroupQueue - 1)] =
                    other | (size - 1) << 21 | stencil << 24;
              }
              tail += __popc(pass);
              __syncwarp();
              while (tail - head >= kTaken) queued_round(kTaken);
              __syncwarp();
              continue;
            }
            // The passing groups, lowest first, four a round: lane l takes atom l % 8 of the
            // (l / 8)-th remaining one.
            const int which = lane / kGroup;
            while (pass) {
              const unsigned p1 = pass & (pass - 1), p2 = p1 & (p1 - 1), p3 = p2 & (p2 - 1);
              const unsigned mine = which == 0 ? pass : which == 1 ? p1 : which == 2 ? p2 : p3;
              pass = p3 & (p3 - 1);
              const int j = mine ? base + (__ffs(mine) - 1) * kGroup + lane % kGroup : end;
              round(j, j < end, sx, sy, sz, code);
            }
          }
        }
      }
    }
    if constexpr (Queued) {
      if (tail > head) queued_round(tail - head);  // the last, part full
    }
    __syncwarp();
#pragma unroll
    for (int r = 0; r < Rows; ++r) {
      if (r >= rows) break;
      // The last entries, fewer than 32.
      const int written = min(count[r], capacity) / 32 * 32;
      if (lane < min(count[r], capacity) - written) list[list_index(written + lane, first + r, n)] = staged[warp][r][lane];
      if (lane == 0) {
        row_length[first + r] = count[r];
        atomicMax(longest, count[r]);
      }
    }
    __syncwarp();
  }
}

}  // namespace
}  // namespace nbkit::md
