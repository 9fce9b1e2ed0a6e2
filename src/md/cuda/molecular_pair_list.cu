// The molecular pair list and its pair sums on one GPU (molecular_pair_list.cuh has the design).
#include "md/cuda/molecular_pair_list.cuh"

#include <cub/device/device_radix_sort.cuh>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "cuda/check.hpp"
#include "cuda/device_buffer.hpp"
#include "cuda/pinned_buffer.hpp"
#include "cuda/stream.hpp"
#include "md/cuda/cell_starts.cuh"
#include "md/fast_pair_math.hpp"
#include "md/molecular_pair_constants.hpp"
#include "md/pair_law.hpp"
#include "nbkit/core/error.hpp"

namespace nbkit::md {

namespace {

using cuda::DeviceBuffer;
using V3 = Vector3<double>;
constexpr int kThreads = 128;
constexpr int kRowThreads = 32;  // build_rows_by_cell: one warp per 32 atoms of a home cell

int blocks(std::int64_t n) { return static_cast<int>((n + kThreads - 1) / kThreads); }

// A sorted atom as the pair kernel reads it: its position relative to the centre of the cell it
// was binned into at the last build, and its charge, one 16- or 32-byte load. Relative to its
// cell, a float32 position keeps ~1e-6 A whatever the box's size (wrapped into a box of 250 A it
// would keep 1.5e-5 A, and each force ~1e-5 of itself); a pair's separation adds the two cells'
// distance, a small whole number of cell widths (axis_separation).
template <class Real>
struct alignas(4 * sizeof(Real)) PositionCharge {
  Real x, y, z, q;
};

// The box and its cells: cells[a] = floor(length / (cutoff + skin)), at least 1 and at most
// 1023 (10 bits an axis in TypeCell). Along an axis of 3 or more cells a pair within reach lies
// in neighbouring cells; along a shorter one every cell is searched (the minimum image still
// picks each pair's nearest copy: edges >= 2 cutoffs). (Cells of half the reach, tried in session
// 32 with the warp-per-row build below, each row of up to five cells swept as one run, halved its
// candidates but made it slower at 30,695 atoms and at a million; why was not profiled.)
constexpr int kMaxCellsPerAxis = 1023;
struct Cells {
  double length[3], inverse[3], per_length[3];
  int count[3];
  int total() const { return count[0] * count[1] * count[2]; }
};

// A sorted atom's Lennard-Jones type and its cell's coordinates (x | y << 10 | z << 20): one
// 8-byte load per neighbour beside its position.
struct alignas(8) TypeCell {
  int type, cell;
};

// The box and cells in the pair kernels' arithmetic.
template <class Real>
struct Frame {
  Real width[3], length[3], inverse[3];
  int count[3];
};

template <class Real>
Frame<Real> frame_of(const Cells& g) {
  Frame<Real> f{};
  for (int a = 0; a < 3; ++a) {
    f.width[a] = Real(g.length[a] / g.count[a]), f.length[a] = Real(g.length[a]), f.inverse[a] = Real(g.inverse[a]);
    f.count[a] = g.count[a];
  }
  return f;
}

__device__ inline double wrapped(double v, double length, double inverse) {
  const double w = v - length * floor(v * inverse);
  return w < length ? w : 0.0;  // v a hair below a multiple of the length rounds up to it
}

template <class Real>
__device__ inline Real nearest(Real d, Real length, Real inverse) {
  return minimum_image(ScalarPairMath<Real>{}, d, length, inverse);
}

__device__ inline int cell_axis(int cell, int axis) { return (cell >> (10 * axis)) & kMaxCellsPerAxis; }

// r_i - r_j along one axis from cell-relative positions: the cells' distance taken the short way
// round (|dc| <= 1 for any pair within reach along an axis of 3 or more cells, so it adds at most
// one cell width's rounding), then the minimum image (a no-op there; along a shorter axis it
// picks the nearest copy).
template <class Real>
__device__ inline Real axis_separation(const Frame<Real>& f, int axis, Real ri, Real rj, int ci, int cj) {
  int dc = cell_axis(ci, axis) - cell_axis(cj, axis);
  const int n = f.count[axis];
  if (2 * dc > n) dc -= n;
  else if (2 * dc < -n) dc += n;
  return nearest((ri - rj) + Real(dc) * f.width[axis], f.length[axis], f.inverse[axis]);
}

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
__global__ void bin_atoms(int n, const V3* __restrict__ x, Cells g, int sub_bits, unsigned* __restrict__ key,
                          int* __restrict__ index) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const double v[3] = {x[i].x, x[i].y, x[i].z};
  int c[3], sub[3];
  for (int a = 0; a < 3; ++a) {
    const double u = wrapped(v[a], g.length[a], g.inverse[a]) * g.per_length[a];  // in cell widths
    c[a] = min(g.count[a] - 1, static_cast<int>(u));
    sub[a] = min(3, max(0, static_cast<int>((u - c[a]) * 4)));
  }
  const unsigned cell = static_cast<unsigned>((c[2] * g.count[1] + c[1]) * g.count[0] + c[0]);
  key[i] = sub_bits ? cell << sub_bits | morton_4x4x4(sub[0], sub[1], sub[2]) : cell;
  index[i] = i;
}

// At a build: each sorted atom's type and cell.
__global__ void sorted_attributes(int n, const int* __restrict__ order, const int* __restrict__ type,
                                  const unsigned* __restrict__ sorted_key, int sub_bits, Cells g,
                                  TypeCell* __restrict__ out) {
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= n) return;
  const int key = static_cast<int>(sorted_key[t] >> sub_bits);
  const int cx = key % g.count[0], cy = key / g.count[0] % g.count[1], cz = key / g.count[0] / g.count[1];
  out[t] = {type[order[t]], cx | cy << 10 | cz << 20};
}

// Every evaluation: the sorted atoms' positions relative to their cells' centres (in float64,
// the minimum image, then rounded to Real) and their charges.
template <class Real>
__global__ void pack(int n, const V3* __restrict__ x, const double* __restrict__ charge, const int* __restrict__ order,
                     const TypeCell* __restrict__ attributes, Cells g, PositionCharge<Real>* __restrict__ packed) {
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= n) return;
  const int a = order[t], cell = attributes[t].cell;
  const V3 p = x[a];
  const double v[3] = {p.x, p.y, p.z};
  Real r[3];
  for (int axis = 0; axis < 3; ++axis) {
    const double centre = (cell_axis(cell, axis) + 0.5) * g.length[axis] / g.count[axis];
    r[axis] = Real(nearest(v[axis] - centre, g.length[axis], g.inverse[axis]));
  }
  packed[t] = {r[0], r[1], r[2], Real(charge[a])};
}

// The build's atom groups: kGroup consecutive sorted atoms of one cell (a cell's atoms from its
// first, the last group part full), compact by the sub-cell order (bin_atoms). Group g's
// bounding box, in the cell-relative frame of the packed positions and in float32 rounded
// outward (so it holds its atoms in either precision), goes to lo[g], hi[g] (g its first
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
                             int sub_bits, const int* __restrict__ cell_start, float4* __restrict__ lo,
                             float4* __restrict__ hi) {
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= n) return;
  const int cell = static_cast<int>(sorted_key[t] >> sub_bits);
  const int begin = cell_start[cell];
  if ((t - begin) % kGroup != 0) return;
  const int end = min(t + kGroup, cell_start[cell + 1]);
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

// The largest squared displacement since the list was built (minimum image: a wrap is no move),
// as float bits (non-negative floats order as their bits do); a warp's maximum, then one atomic
// into out[0]. The checks take two words in turn: each zeroes the other for the next (the last
// check read it back before this one started), so no memset goes before it.
__global__ void largest_displacement(int n, const V3* __restrict__ x, const V3* __restrict__ built, Cells g,
                                     unsigned* __restrict__ out, unsigned* __restrict__ next) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i == 0) *next = 0;
  unsigned bits = 0;
  if (i < n) {
    const V3 d = x[i] - built[i];
    const double dx = nearest(d.x, g.length[0], g.inverse[0]), dy = nearest(d.y, g.length[1], g.inverse[1]),
                 dz = nearest(d.z, g.length[2], g.inverse[2]);
    bits = __float_as_uint(static_cast<float>(dx * dx + dy * dy + dz * dz));
  }
  for (int offset = 16; offset > 0; offset /= 2) bits = max(bits, __shfl_xor_sync(0xffffffffu, bits, offset));
  if (threadIdx.x % 32 == 0 && bits) atomicMax(out, bits);
}

// Entry k of row t in a list of n rows whose entries come in chunks of kChunk, one 32-byte
// sector: chunk k / kChunk of every row, then the next chunk. The build writes a row's chunk
// whole (two 16-byte stores): written entry by entry, a million-atom list cost 36 ms a build on
// an H100, every 4-byte store a read-modify-write of its sector in DRAM (Nsight Compute: 30 GB
// of DRAM traffic for 2.2 GB of list; session 24).
constexpr int kChunk = 8;
__device__ inline std::size_t list_index(int k, int t, int n) {
  return (static_cast<std::size_t>(k / kChunk) * n + t) * kChunk + k % kChunk;
}

// A list entry: the neighbour's sorted index in its low kIndexBits bits, and, where every axis has
// 3 or more cells and the offsets are on (the default; NBKIT_PAIR_LIST_OFFSETS=0 turns them off),
// the raw cell offset of the neighbour's cell from the row's, home minus neighbour, +1 in two bits
// an axis (x, y, z) above.
// With it the pair kernel forms r_i - r_j as the build does, (p_i - p_j) + offset * width, with
// no cell arithmetic and no minimum image: the same bits for every pair within the cutoff (the
// offset is the wrapped cell distance the kernel otherwise computes, an exact multiple of
// -1, 0 or 1 widths, and the minimum image leaves any |r| < L / 2 as it is; a pair it would have
// moved, possible only along an axis of 3 cells, is at least a cell width less the skin away
// in either image, beyond the cutoff, and skipped either way).
constexpr int kIndexBits = 26;
constexpr unsigned kIndexMask = (1u << kIndexBits) - 1;
__device__ inline unsigned offset_code(int ox, int oy, int oz) {
  return (static_cast<unsigned>(ox + 1) | static_cast<unsigned>(oy + 1) << 2 | static_cast<unsigned>(oz + 1) << 4)
         << kIndexBits;
}
// The entry's cell offset along `axis` (-1, 0 or 1, exactly): 1.5 * 2^23 + bits, less 1.5 * 2^23 + 1,
// in float arithmetic (no integer-to-float conversion, a quarter-rate instruction).
__device__ inline float cell_offset(unsigned entry, int axis) {
  const unsigned bits = (entry >> (kIndexBits + 2 * axis)) & 3u;
  return __uint_as_float(0x4B400000u + bits) - 12582913.0f;
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
// (the constructor's `build`): a lane per row suits a million atoms, a warp per group of rows
// (or, with fewer than 3 cells along an axis, a warp per row) 30,000.
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
// registers for twice the warps, each candidate loaded once for 4 rows.
constexpr int kGroupWarps = 4;
template <class Real, int Rows>
__global__ void __launch_bounds__(32 * kGroupWarps)
    build_rows_by_group(int n, const PositionCharge<Real>* __restrict__ packed, const int* __restrict__ order,
                        const int* __restrict__ cell_start, Cells g, Frame<Real> f, Real reach2,
                        const int* __restrict__ excluded_first, const int* __restrict__ excluded, int capacity,
                        int* __restrict__ list, int* __restrict__ row_length, int* __restrict__ longest,
                        bool offsets, const float4* __restrict__ group_lo, const float4* __restrict__ group_hi,
                        float group_reach2) {
  static_assert(kGroup % Rows == 0);
  constexpr int kParts = kGroup / Rows;            // a group's warps
  __shared__ int staged[kGroupWarps][Rows][64];  // a row's unwritten entries: < 32 from before, 32 new
  __shared__ int row_atom[kGroupWarps][Rows];      // the rows' topology indices (exclusions' search)
  const int lane = static_cast<int>(threadIdx.x % 32), warp = static_cast<int>(threadIdx.x / 32);
  const unsigned below = (1u << lane) - 1;
  const int home = blockIdx.x;
  const int home_begin = cell_start[home], home_end = cell_start[home + 1];
  const int c[3] = {home % g.count[0], home / g.count[0] % g.count[1], home / g.count[0] / g.count[1]};
  for (int unit = blockIdx.y * kGroupWarps + warp;; unit += gridDim.y * kGroupWarps) {
    const int group = home_begin + unit / kParts * kGroup;  // its box's slot
    const int first = group + unit % kParts * Rows;         // the warp's first row
    if (group >= home_end) break;
    if (first >= home_end) continue;  // the part-full last group has no such rows
    const int rows = min(Rows, home_end - first);
    // The rows: positions, the spans of their excluded partners, and their entries so far (of
    // which min(count, capacity) / 32 * 32 are in the list: a round adds at most 32, and 32
    // staged ones are written at once).
    Real px[Rows], py[Rows], pz[Rows];
    int lowest[Rows], highest[Rows], count[Rows];
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
    const float4 home_lo = group_lo[group], home_hi = group_hi[group];
    const float hl[3] = {home_lo.x, home_lo.y, home_lo.z}, hh[3] = {home_hi.x, home_hi.y, home_hi.z};
    // Distance from the group's box to the face shared with the neighbour cell at raw along a.
    auto gap = [&](int a, int raw) -> float {
      if (raw == c[a]) return 0.0f;
      const float half = 0.5f * static_cast<float>(f.width[a]);
      const float d = raw < c[a] ? hl[a] + half : half - hh[a];
      return fmaxf(d, 0.0f);
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
          for (int base = begin; base < end; base += 32 * kGroup) {
            const int other = base + lane * kGroup;
            bool near = false;
            if (other < end) {  // the two boxes' distance, the neighbour's shifted into this cell's frame
              const float4 l = group_lo[other], h = group_hi[other];
              const float dx = fmaxf(fmaxf(hl[0] - (h.x - fx), (l.x - fx) - hh[0]), 0.0f);
              const float dy = fmaxf(fmaxf(hl[1] - (h.y - fy), (l.y - fy) - hh[1]), 0.0f);
              const float dz = fmaxf(fmaxf(hl[2] - (h.z - fz), (l.z - fz) - hh[2]), 0.0f);
              near = dx * dx + dy * dy + dz * dz < group_reach2;
            }
            // The passing groups, lowest first, four a round: lane l takes atom l % 8 of the
            // (l / 8)-th remaining one.
            unsigned pass = __ballot_sync(0xffffffffu, near);
            const int which = lane / kGroup;
            while (pass) {
              const unsigned p1 = pass & (pass - 1), p2 = p1 & (p1 - 1), p3 = p2 & (p2 - 1);
              const unsigned mine = which == 0 ? pass : which == 1 ? p1 : which == 2 ? p2 : p3;
              pass = p3 & (p3 - 1);
              const int j = mine ? base + (__ffs(mine) - 1) * kGroup + lane % kGroup : end;
              const bool valid = j < end;
              PositionCharge<Real> pj{};
              int atom_j = -1;
              if (valid) pj = packed[j], atom_j = order[j];
              // The rows' tests first, all eight independent of one another (the warp is latency
              // bound otherwise: a row's ballot and staging wait on its test); bit r: row r.
              unsigned in = 0, check = 0;
#pragma unroll
              for (int r = 0; r < Rows; ++r) {
                if (r >= rows) break;  // the whole warp
                const Real dx = (px[r] - pj.x) + sx, dy = (py[r] - pj.y) + sy, dz = (pz[r] - pj.z) + sz;
                const bool within = valid && j != first + r && dx * dx + dy * dy + dz * dz < reach2;
                in |= static_cast<unsigned>(within) << r;
                check |= static_cast<unsigned>(within && atom_j >= lowest[r] && atom_j <= highest[r]) << r;
              }
              // Excluded partners, searched only where the candidate lies in a row's span (rare).
              if (__any_sync(0xffffffffu, check != 0))
                for (unsigned m = check; m; m &= m - 1) {
                  const int r = __ffs(m) - 1;
                  if (is_excluded(atom[r], atom_j, excluded_first, excluded)) in &= ~(1u << r);
                }
#pragma unroll
              for (int r = 0; r < Rows; ++r) {
                if (r >= rows) break;
                const bool hit = (in >> r) & 1u;
                const unsigned hits = __ballot_sync(0xffffffffu, hit);
                if (hits == 0) continue;
                int* stage = staged[warp][r];
                const int written = min(count[r], capacity) / 32 * 32;
                const int k = count[r] + __popc(hits & below);
                if (hit && k < capacity) stage[k - written] = static_cast<int>(static_cast<unsigned>(j) | code);
                count[r] += __popc(hits);
                if (min(count[r], capacity) - written < 32) continue;
                __syncwarp();  // 32 staged entries: four whole chunks to the list
                list[list_index(written + lane, first + r, n)] = stage[lane];
                const int rest = stage[32 + lane];
                __syncwarp();
                stage[lane] = rest;
              }
            }
          }
        }
      }
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

template <class Real>
struct PairLaw {
  const Real *c12, *c6;  // the Lennard-Jones table, types x types
  int types;
  Frame<Real> frame;
  Real cutoff2, coulomb_k;
  MolecularPairConstants<Real> k;
  bool offsets;  // the entries carry their cell offsets (offset_code)
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
template <class Real, PairSwitch Switch, PairCoulomb Coulomb, bool Energies, int Ahead, bool Fast = false>
__global__ void __launch_bounds__(kThreads)
    listed_pairs(int n, int lanes, const PositionCharge<Real>* __restrict__ packed,
                 const TypeCell* __restrict__ attributes, const int* __restrict__ order, const int* __restrict__ list,
                 const int* __restrict__ row_length, PairLaw<Real> law, PairSums out) {
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
  auto add = [&](unsigned entry, const PositionCharge<Real>& pj, int cell_j, Real c12_ij, Real c6_ij) {
    Real dx, dy, dz;
    if (law.offsets) {
      dx = (pi.x - pj.x) + Real(cell_offset(entry, 0)) * law.frame.width[0];
      dy = (pi.y - pj.y) + Real(cell_offset(entry, 1)) * law.frame.width[1];
      dz = (pi.z - pj.z) + Real(cell_offset(entry, 2)) * law.frame.width[2];
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
    sum[0] += static_cast<double>(f * dx), sum[1] += static_cast<double>(f * dy), sum[2] += static_cast<double>(f * dz);
    if constexpr (Energies) {
      sum[3] += static_cast<double>(lj), sum[4] += static_cast<double>(coulomb);
      sum[5] += static_cast<double>(f * r2);
    }
  };
  const int length = row_length[t];
  int k = lane;
  // `Ahead` of a lane's entries at a time: their loads (the entry, then the neighbour's position,
  // type and cell, then its Lennard-Jones pair) are issued together, so that a lane waits once
  // for Ahead pairs' memory. The pairs still add in the row's order: the same bits as one at a
  // time.
  for (; k + (Ahead - 1) * lanes < length; k += Ahead * lanes) {
    unsigned entry[Ahead];
    int j[Ahead];
#pragma unroll
    for (int u = 0; u < Ahead; ++u) {
      entry[u] = static_cast<unsigned>(__ldg(list + list_index(k + u * lanes, t, n)));
      j[u] = static_cast<int>(entry[u] & kIndexMask);
    }
    PositionCharge<Real> pj[Ahead];
    TypeCell aj[Ahead];
#pragma unroll
    for (int u = 0; u < Ahead; ++u) pj[u] = packed[j[u]], aj[u] = attributes[j[u]];
    Real c12_ij[Ahead], c6_ij[Ahead];
#pragma unroll
    for (int u = 0; u < Ahead; ++u) c12_ij[u] = __ldg(c12 + aj[u].type), c6_ij[u] = __ldg(c6 + aj[u].type);
#pragma unroll
    for (int u = 0; u < Ahead; ++u) add(entry[u], pj[u], aj[u].cell, c12_ij[u], c6_ij[u]);
  }
  for (; k < length; k += lanes) {
    const unsigned entry = static_cast<unsigned>(__ldg(list + list_index(k, t, n)));
    const int j = static_cast<int>(entry & kIndexMask);
    const TypeCell aj = attributes[j];
    add(entry, packed[j], aj.cell, __ldg(c12 + aj.type), __ldg(c6 + aj.type));
  }
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
template <PairCoulomb Coulomb, bool Energies>
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
  out.force[i] = out.force[i] + f;
  if constexpr (Energies) {
    out.excluded[i] = 0.5 * energy_sum;
    out.virial[i] += 0.5 * virial;
  }
}

template <class T>
DeviceBuffer<T> upload(const std::vector<T>& host) {
  DeviceBuffer<T> b(host.size());
  if (!host.empty()) b.upload(host.data(), host.size());
  return b;
}

template <class Real>
std::vector<Real> converted(const std::vector<double>& v) {
  return std::vector<Real>(v.begin(), v.end());
}

// A switch from the environment: unset or empty gives `otherwise`, 0 is off, 1 is on, anything
// else refused.
bool env_switch(const char* name, bool otherwise) {
  const char* value = std::getenv(name);
  if (!value || !*value) return otherwise;
  const std::string v = value;
  if (v != "0" && v != "1") throw Error(std::string(name) + " is \"" + v + "\": expected 0 or 1");
  return v == "1";
}

}  // namespace

ExcludedRows excluded_rows(const Topology& t) {
  std::vector<std::vector<int>> partners(t.size());
  for (const auto& [a, b] : t.exclusions) partners[a].push_back(b), partners[b].push_back(a);
  ExcludedRows rows;
  rows.first.assign(t.size() + 1, 0);
  for (std::size_t i = 0; i < t.size(); ++i) {
    std::sort(partners[i].begin(), partners[i].end());
    rows.partner.insert(rows.partner.end(), partners[i].begin(), partners[i].end());
    rows.first[i + 1] = static_cast<int>(rows.partner.size());
  }
  return rows;
}

struct MolecularPairListGpu::State {
  int n = 0;
  NonbondedSettings settings;
  bool single = false;
  double skin = 0;
  cudaStream_t stream = nullptr;
  int types = 0;
  DeviceBuffer<int> type, excluded_first, excluded;
  DeviceBuffer<double> charge;
  DeviceBuffer<float> c12f, c6f;
  DeviceBuffer<double> c12d, c6d;
  // The list: built at the first evaluation, again when an atom has moved half the skin or the
  // box's edges change.
  std::array<double, 3> edges{};
  Cells cells{};
  DeviceBuffer<unsigned> key, sorted_key, moved;
  DeviceBuffer<int> index, order, cell_start, list, row_length, longest;
  DeviceBuffer<TypeCell> attributes;
  DeviceBuffer<unsigned char> sort_scratch;
  DeviceBuffer<PositionCharge<float>> packed_f;
  DeviceBuffer<PositionCharge<double>> packed_d;
  DeviceBuffer<V3> built;
  int capacity = 0;  // a multiple of kChunk
  int lanes = 1;     // threads per atom in the pair kernel (listed_pairs)
  // The build's kernel: build_rows_by_group (where every axis has 3 or more cells and the groups
  // are on; else by row), build_rows_by_row, build_rows_by_cell.
  enum class Build { group, row, cell } build = Build::group;
  bool offsets_wanted = true;  // entries with cell offsets (offset_code); NBKIT_PAIR_LIST_OFFSETS=0: not
  bool offsets = false;        // the list's entries have them (wanted, and 3 or more cells an axis)
  bool fast_law = true;        // mixed precision's PME pairs by FastFloatPairMath; NBKIT_PAIR_FAST_LAW=0: not
  // Atoms sorted by sub-cell within each cell (bin_atoms), which the build by group needs;
  // NBKIT_PAIR_LIST_GROUPS=0: not, and the build by group falls back to a warp a row (session 34's
  // order, list and bits).
  bool groups_wanted = true;
  int sub_bits = 0;     // the sort key's sub-cell bits (kSubcellBits or 0)
  bool groups = false;  // this list's build is by group (wanted, sub-cells, 3 or more cells an axis)
  int group_rows = 4;   // rows a warp in the build by group (NBKIT_PAIR_LIST_GROUP_ROWS=4|8)
  DeviceBuffer<float4> group_lo, group_hi;
  std::int64_t builds = 0;
  bool rebuild_next = false;  // asked for (checkpoints)
  // The check's stream, the event it waits for (the positions final on the main stream) and
  // the largest displacement's bits read back to page-locked memory.
  cuda::Stream check_stream;
  cuda::Event positions_ready;
  cuda::PinnedBuffer<unsigned> moved_host{1};
  std::int64_t checks = 0;  // started so far: moved[checks % 2] is the next check's word, zero
  bool check_started = false;
  std::unique_ptr<std::array<cuda::Event, 3>> events;
  void mark(int k) {
    if (!events) events = std::make_unique<std::array<cuda::Event, 3>>();
    (*events)[static_cast<std::size_t>(k)].record(stream);
  }

  double reach() const {
    // Mixed precision: a margin of 1e-3 A on the list's reach, far beyond float32's rounding of
    // the cell-relative positions and separations (~1e-6 A), so no pair within the cutoff is
    // left out by a list built in float32.
    return settings.cutoff + skin + (single ? 1e-3 : 0.0);
  }

  template <class Real>
  PositionCharge<Real>* packed();

  template <class Real>
  void build_list();
  void rebuild(const V3* x, const PeriodicBox& box);
  bool must_rebuild(const PeriodicBox& box) const;  // whatever the atoms did
  void start_check(const V3* x);
  bool needs_rebuild(const V3* x, const PeriodicBox& box);
  template <class Real, bool Energies>
  void sum_pairs(const V3* x, const PairSums& out);
};

template <>
PositionCharge<float>* MolecularPairListGpu::State::packed<float>() {
  return packed_f.data();
}
template <>
PositionCharge<double>* MolecularPairListGpu::State::packed<double>() {
  return packed_d.data();
}

MolecularPairListGpu::MolecularPairListGpu(const Topology& t, const NonbondedSettings& settings, bool single,
                                           double skin, cudaStream_t stream)
    : state_(std::make_unique<State>()) {
  State& s = *state_;
  if (!settings.periodic()) throw Error("the GPU's pair list serves periodic systems");
  // An entry keeps its neighbour's index in kIndexBits bits (offset_code). 2^26 atoms' rows would
  // need ~170 GB of list at the usual ~600 entries a row, more than any one GPU holds.
  if (t.size() > std::size_t{kIndexMask} + 1)
    throw Error("the GPU's pair list holds at most " + std::to_string(kIndexMask + 1) + " atoms (" +
                std::to_string(t.size()) + " given)");
  if (!(skin >= 0) || !std::isfinite(skin)) throw Error("the neighbour skin must not be negative");
  s.n = static_cast<int>(t.size());
  s.settings = settings, s.single = single, s.skin = skin, s.stream = stream;
  s.types = t.lj_types;
  s.type = upload(std::vector<int>(t.lj_type.begin(), t.lj_type.end()));
  s.charge = upload(t.charge);
  if (single) s.c12f = upload(converted<float>(t.c12)), s.c6f = upload(converted<float>(t.c6));
  else s.c12d = upload(t.c12), s.c6d = upload(t.c6);
  const ExcludedRows rows = excluded_rows(t);
  s.excluded_first = upload(rows.first), s.excluded = upload(rows.partner);
  // Lanes per atom: enough threads for ~2^18 in all (an H100 holds 270,336 resident), at most 8.
  while (s.lanes < 8 && static_cast<std::int64_t>(s.n) * s.lanes < (std::int64_t{1} << 18)) s.lanes *= 2;
  // The build: a warp per group of rows below the same 2^18 atoms, a lane per row above
  // (measured on an H100 at 30,695 atoms, a warp a row faster, and 1,074,325, by cell faster;
  // nothing between; on an H200 at 30,677 the warp a group faster than a warp a row: session 35).
  // NBKIT_PAIR_LIST_BUILD=group, row or cell picks one (tests, A/B runs): all write the same list.
  s.build = s.n < (1 << 18) ? State::Build::group : State::Build::cell;
  if (const char* pick = std::getenv("NBKIT_PAIR_LIST_BUILD"); pick && *pick) {
    const std::string p = pick;
    if (p != "group" && p != "row" && p != "cell")
      throw Error("NBKIT_PAIR_LIST_BUILD is \"" + p +
                  "\": expected group, row or cell (or unset: by the atom count)");
    s.build = p == "group" ? State::Build::group : p == "row" ? State::Build::row : State::Build::cell;
  }
  // Both on unless switched off (A/B runs, tests). Measured on an H200 at 30,677 atoms (session
  // 34, docs/performance.md): the pairs 0.180 ms a step without either, 0.157 with the offsets
  // (the same bits), 0.146 with the fast law, 0.125 with both.
  s.offsets_wanted = env_switch("NBKIT_PAIR_LIST_OFFSETS", true);
  s.fast_law = env_switch("NBKIT_PAIR_FAST_LAW", true);
  s.groups_wanted = env_switch("NBKIT_PAIR_LIST_GROUPS", true);
  if (const char* rows = std::getenv("NBKIT_PAIR_LIST_GROUP_ROWS"); rows && *rows) {
    const std::string r = rows;
    if (r != "4" && r != "8") throw Error("NBKIT_PAIR_LIST_GROUP_ROWS is \"" + r + "\": expected 4 or 8");
    s.group_rows = r == "8" ? 8 : 4;
  }
  const std::size_t n = t.size();
  s.key = DeviceBuffer<unsigned>(n), s.sorted_key = DeviceBuffer<unsigned>(n), s.moved = DeviceBuffer<unsigned>(2);
  s.index = DeviceBuffer<int>(n), s.order = DeviceBuffer<int>(n), s.attributes = DeviceBuffer<TypeCell>(n);
  s.row_length = DeviceBuffer<int>(n), s.longest = DeviceBuffer<int>(1);
  s.built = DeviceBuffer<V3>(n);
  NBKIT_CUDA_CHECK(cudaMemsetAsync(s.moved.data(), 0, 2 * sizeof(unsigned), stream));  // before any check (its event)
  if (single) s.packed_f = DeviceBuffer<PositionCharge<float>>(n);
  else s.packed_d = DeviceBuffer<PositionCharge<double>>(n);
  std::size_t bytes = 0;
  NBKIT_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, bytes, s.key.data(), s.sorted_key.data(), s.index.data(),
                                                   s.order.data(), s.n, 0, 32, stream));
  s.sort_scratch = DeviceBuffer<unsigned char>(std::max<std::size_t>(bytes, 1));
}

MolecularPairListGpu::~MolecularPairListGpu() = default;

std::int64_t MolecularPairListGpu::builds() const { return state_->builds; }
void MolecularPairListGpu::rebuild_next() { state_->rebuild_next = true; }
int MolecularPairListGpu::capacity() const { return state_->capacity; }

bool MolecularPairListGpu::State::must_rebuild(const PeriodicBox& box) const {
  const std::array<double, 3> now{box.length(0), box.length(1), box.length(2)};
  return builds == 0 || now != edges || skin == 0 || rebuild_next;
}

// The check on its own stream, after everything queued on the main stream so far (the positions'
// last writers); `built` was last written on the main stream before that too.
void MolecularPairListGpu::State::start_check(const V3* x) {
  positions_ready.record(stream);
  NBKIT_CUDA_CHECK(cudaStreamWaitEvent(check_stream, positions_ready, 0));
  unsigned* word = moved.data() + checks % 2;
  largest_displacement<<<blocks(n), kThreads, 0, check_stream>>>(n, x, built.data(), cells, word,
                                                                 moved.data() + (checks + 1) % 2);
  ++checks;
  NBKIT_CUDA_CHECK_LAUNCH();
  NBKIT_CUDA_CHECK(
      cudaMemcpyAsync(moved_host.data(), word, sizeof(unsigned), cudaMemcpyDeviceToHost, check_stream));
  check_started = true;
}

bool MolecularPairListGpu::State::needs_rebuild(const V3* x, const PeriodicBox& box) {
  if (must_rebuild(box)) return check_started = false, true;
  if (!check_started) start_check(x);
  check_started = false;
  NBKIT_CUDA_CHECK(cudaStreamSynchronize(check_stream));
  const unsigned bits = moved_host.data()[0];
  float largest2 = 0;
  static_assert(sizeof(bits) == sizeof(largest2));
  std::memcpy(&largest2, &bits, sizeof(bits));
  return !(static_cast<double>(largest2) <= 0.25 * skin * skin);
}

template <class Real>
void MolecularPairListGpu::State::build_list() {
  NBKIT_CUDA_CHECK(cudaMemsetAsync(longest.data(), 0, sizeof(int), stream));
  const Real reach2 = Real(reach() * reach());
  const int total = cells.total();
  if (groups) {
    // The boxes' tests a millimetre wider than the reach: far beyond float32's rounding of the
    // boxes (rounded outward) and of the shifts (~1e-6 A), so they never drop an atom within reach.
    const float group_reach = static_cast<float>(reach() + 1e-3);
    // Warps for the mean cell's groups and half as many more (a fuller cell's warps take several).
    auto launch = [&](auto kernel, int parts) {
      const int per_cell = (n / total + kGroup - 1) / kGroup * parts;
      const dim3 grid(total, std::min(65535, (per_cell + per_cell / 2 + kGroupWarps) / kGroupWarps));
      kernel<<<grid, 32 * kGroupWarps, 0, stream>>>(n, packed<Real>(), order.data(), cell_start.data(), cells,
                                                    frame_of<Real>(cells), reach2, excluded_first.data(),
                                                    excluded.data(), capacity, list.data(), row_length.data(),
                                                    longest.data(), offsets, group_lo.data(), group_hi.data(),
                                                    group_reach * group_reach);
    };
    if (group_rows == 8) launch(build_rows_by_group<Real, 8>, 1);
    else launch(build_rows_by_group<Real, 4>, 2);
  } else if (build != Build::cell) {
    build_rows_by_row<Real><<<(n + kRowWarps - 1) / kRowWarps, 32 * kRowWarps, 0, stream>>>(
        n, packed<Real>(), attributes.data(), order.data(), cell_start.data(), cells, frame_of<Real>(cells), reach2,
        excluded_first.data(), excluded.data(), capacity, list.data(), row_length.data(), longest.data(), offsets);
  } else {
    // Groups of 32 per cell: the mean cell's count, and one more for fuller cells (a fuller one's
    // warps take several groups each).
    const dim3 grid(total, std::min(65535, (n / total + kRowThreads - 1) / kRowThreads + 1));
    build_rows_by_cell<Real><<<grid, kRowThreads, 0, stream>>>(
        n, packed<Real>(), attributes.data(), order.data(), cell_start.data(), cells, frame_of<Real>(cells), reach2,
        excluded_first.data(), excluded.data(), capacity, list.data(), row_length.data(), longest.data(), offsets);
  }
  NBKIT_CUDA_CHECK_LAUNCH();
}

void MolecularPairListGpu::State::rebuild(const V3* x, const PeriodicBox& box) {
  edges = {box.length(0), box.length(1), box.length(2)};
  const double r = reach();
  for (int a = 0; a < 3; ++a) {
    cells.length[a] = edges[static_cast<std::size_t>(a)], cells.inverse[a] = 1 / cells.length[a];
    cells.count[a] = std::clamp(static_cast<int>(std::floor(cells.length[a] / r)), 1, kMaxCellsPerAxis);
    cells.per_length[a] = cells.count[a] * cells.inverse[a];
  }
  const int total = cells.total();
  const bool stencil_everywhere = cells.count[0] >= 3 && cells.count[1] >= 3 && cells.count[2] >= 3;
  offsets = offsets_wanted && stencil_everywhere;
  int bits = 1;
  while ((std::int64_t{1} << bits) < total) ++bits;
  // The sub-cell order where the build is by group, and for every build below 2^18 atoms (so that
  // a forced build by row or cell writes the same list as the build by group); above, the build
  // by cell keeps session 34's order (the sub-cells were not measured there).
  const bool sub_order = groups_wanted && (build == Build::group || n < (1 << 18));
  sub_bits = sub_order && bits + kSubcellBits <= 32 ? kSubcellBits : 0;
  bits += sub_bits;
  groups = sub_bits != 0 && build == Build::group && stencil_everywhere;
  if (groups && group_lo.size() < static_cast<std::size_t>(n))
    group_lo = DeviceBuffer<float4>(n), group_hi = DeviceBuffer<float4>(n);
  if (cell_start.size() < static_cast<std::size_t>(total) + 1) cell_start = DeviceBuffer<int>(total + 1);
  bin_atoms<<<blocks(n), kThreads, 0, stream>>>(n, x, cells, sub_bits, key.data(), index.data());
  NBKIT_CUDA_CHECK_LAUNCH();
  std::size_t bytes = sort_scratch.size();
  NBKIT_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(sort_scratch.data(), bytes, key.data(), sorted_key.data(),
                                                   index.data(), order.data(), n, 0, bits, stream));
  cell_starts<<<blocks(total + 1), kThreads, 0, stream>>>(n, total, sorted_key.data(), cell_start.data(), sub_bits);
  NBKIT_CUDA_CHECK_LAUNCH();
  sorted_attributes<<<blocks(n), kThreads, 0, stream>>>(n, order.data(), type.data(), sorted_key.data(), sub_bits,
                                                        cells, attributes.data());
  NBKIT_CUDA_CHECK_LAUNCH();
  NBKIT_CUDA_CHECK(cudaMemcpyAsync(built.data(), x, sizeof(V3) * n, cudaMemcpyDeviceToDevice, stream));
  // A capacity of at most n entries a row (every other atom), in whole chunks.
  auto fit = [&](int entries) { return (std::min(n, entries) + kChunk - 1) / kChunk * kChunk; };
  auto pack_and_build = [&](auto real) {
    using Real = decltype(real);
    pack<Real><<<blocks(n), kThreads, 0, stream>>>(n, x, charge.data(), order.data(), attributes.data(), cells,
                                                   packed<Real>());
    NBKIT_CUDA_CHECK_LAUNCH();
    if (groups) {
      group_bounds<Real><<<blocks(n), kThreads, 0, stream>>>(n, packed<Real>(), sorted_key.data(), sub_bits,
                                                             cell_start.data(), group_lo.data(), group_hi.data());
      NBKIT_CUDA_CHECK_LAUNCH();
    }
    if (capacity == 0) {
      // First build: room for the pairs within reach at the box's mean density, with a quarter
      // more for denser regions (a protein's packing); a longer row grows the list below.
      const double density = n / (edges[0] * edges[1] * edges[2]);
      const double expected = density * 4.0 / 3.0 * 3.14159265358979323846 * r * r * r;
      capacity = fit(static_cast<int>(std::ceil(1.25 * expected)) + 32);
      list = DeviceBuffer<int>(static_cast<std::size_t>(capacity) * n);
    }
    build_list<Real>();
    int needed = 0;
    longest.download(&needed, 1, stream);
    NBKIT_CUDA_CHECK(cudaStreamSynchronize(stream));
    if (needed > capacity) {  // a row did not fit: the list grows (10% more) and is built again
      capacity = fit(needed + needed / 10 + 32);
      list = DeviceBuffer<int>();
      list = DeviceBuffer<int>(static_cast<std::size_t>(capacity) * n);
      build_list<Real>();
    }
  };
  if (single) pack_and_build(float{});
  else pack_and_build(double{});
  ++builds;
  rebuild_next = false;
}

template <class Real, bool Energies>
void MolecularPairListGpu::State::sum_pairs(const V3* x, const PairSums& out) {
  PairSwitch switched;
  PairCoulomb coulomb;
  const MolecularPairConstants<double> k = molecular_pair_constants(settings, switched, coulomb);
  PairLaw<Real> law{};
  law.c12 = single ? reinterpret_cast<const Real*>(c12f.data()) : reinterpret_cast<const Real*>(c12d.data());
  law.c6 = single ? reinterpret_cast<const Real*>(c6f.data()) : reinterpret_cast<const Real*>(c6d.data());
  law.types = types;
  law.frame = frame_of<Real>(cells);
  law.cutoff2 = Real(settings.cutoff * settings.cutoff);
  law.coulomb_k = Real(settings.coulomb_k());
  law.offsets = offsets;
  // The fast law where asked for and its erfc series reaches every pair (fast_pair_math.hpp).
  const bool fast = fast_law && single && coulomb == PairCoulomb::ewald &&
                    k.ewald_alpha * settings.cutoff <= kScaledErfcFloatTop;
  law.k = {Real(k.k_rf),          Real(k.c_rf),    Real(k.switch_distance), Real(k.switch_distance2),
           Real(k.inverse_switch_width), Real(k.cutoff2), Real(k.charmm_inverse_denominator),
           Real(k.ewald_alpha),   Real(k.ewald_gauss), Real(k.inverse_cutoff)};
  with_law(switched, coulomb, [&](auto sw, auto c) {
    auto launch = [&](auto kernel) {
      kernel<<<blocks(static_cast<std::int64_t>(n) * lanes), kThreads, 0, stream>>>(
          n, lanes, packed<Real>(), attributes.data(), order.data(), list.data(), row_length.data(), law, out);
      NBKIT_CUDA_CHECK_LAUNCH();
    };
    constexpr PairSwitch S = decltype(sw)::value;
    constexpr PairCoulomb C = decltype(c)::value;
    // Entries a lane loads at a time (listed_pairs' Ahead). Measured on an H200 at 30,677 atoms
    // (8 lanes an atom; session 33, docs/performance.md): the pairs 0.190 ms a step at 1, 0.177
    // at 2 and 4 (mixed kernel 40 -> 64 registers), 0.188 at 8 (91). A million atoms (a lane an
    // atom, where session 32 found the kernel needs its occupancy) keep 1: 4 was not measured
    // there.
    if constexpr (sizeof(Real) == 4 && C == PairCoulomb::ewald) {
      if (fast) {
        if (lanes == 1) launch(listed_pairs<Real, S, C, Energies, 1, true>);
        else launch(listed_pairs<Real, S, C, Energies, 4, true>);
        return;
      }
    }
    if (lanes == 1) launch(listed_pairs<Real, S, C, Energies, 1>);
    else launch(listed_pairs<Real, S, C, Energies, 4>);
  });
  auto corrections = [&](auto kernel) {
    kernel<<<blocks(n), kThreads, 0, stream>>>(n, x, charge.data(), settings.coulomb_k(), cells, excluded_first.data(),
                                               excluded.data(), k, out);
    NBKIT_CUDA_CHECK_LAUNCH();
  };
  if (coulomb == PairCoulomb::ewald) corrections(excluded_corrections<PairCoulomb::ewald, Energies>);
  if (coulomb == PairCoulomb::msm) corrections(excluded_corrections<PairCoulomb::msm, Energies>);
}

void MolecularPairListGpu::start_check(const V3* x, const PeriodicBox& box) {
  State& s = *state_;
  if (s.n == 0 || s.must_rebuild(box)) return;
  s.start_check(x);
}

void MolecularPairListGpu::forget_check() { state_->check_started = false; }

void MolecularPairListGpu::evaluate(const V3* x, const PeriodicBox& box, const PairSums& out, bool energies) {
  State& s = *state_;
  if (s.n == 0) return;  // no atoms, no pairs (and no empty launches)
  s.mark(0);
  // The positions packed in the last build's order before the host waits for the check: the
  // pairs then start as soon as the answer (most often "keep the list") is known. A rebuild
  // packs again in its new order.
  if (!s.must_rebuild(box)) {
    if (s.single) {
      pack<float><<<blocks(s.n), kThreads, 0, s.stream>>>(s.n, x, s.charge.data(), s.order.data(),
                                                           s.attributes.data(), s.cells, s.packed_f.data());
    } else {
      pack<double><<<blocks(s.n), kThreads, 0, s.stream>>>(s.n, x, s.charge.data(), s.order.data(),
                                                            s.attributes.data(), s.cells, s.packed_d.data());
    }
    NBKIT_CUDA_CHECK_LAUNCH();
  }
  if (s.needs_rebuild(x, box)) s.rebuild(x, box);
  s.mark(1);
  // float64 always sums its energies: its kernel without them gave forces that differed in the
  // last bits (nvcc fuses the float64 multiply-adds of the two variants differently; measured
  // on an H100 in session 24), and float64 runs are the checks, not the production runs. The
  // mixed kernels give the same bits either way (Constraints.GpuStepsWithoutEnergiesChangeNoBit).
  if (s.single) energies ? s.sum_pairs<float, true>(x, out) : s.sum_pairs<float, false>(x, out);
  else s.sum_pairs<double, true>(x, out);
  s.mark(2);
}

MolecularPairListGpu::Seconds MolecularPairListGpu::phase_seconds() {
  State& s = *state_;
  if (!s.events) return {0, 0};
  auto& e = *s.events;
  e[2].synchronize();
  return {e[1].seconds_since(e[0]), e[2].seconds_since(e[1])};
}

}  // namespace nbkit::md
