#pragma once
// The molecular pair list's data as its kernels share them (cuda/molecular_pair_list.cu is the one
// includer): the sorted atoms' packed positions and attributes, the box's cells, the list's
// chunked layout and its entries' bits.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "md/bonded_law.hpp"  // Vector3
#include "md/pair_law.hpp"

namespace nbkit::md {
namespace {

using V3 = Vector3<double>;
constexpr int kThreads = 128;
constexpr int kRowThreads = 32;  // build_rows_by_cell: one warp per 32 atoms of a home cell

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

}  // namespace
}  // namespace nbkit::md
