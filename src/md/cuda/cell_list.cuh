#pragma once
// The list rebuild: atoms wrapped, binned and sorted by cell, packed, and the Verlet list built.
// Part of the GPU MD engine (engine_cuda.cu, whose comment has the design); included there
// only, one translation unit, split by job as GROMACS's nbnxm splits its GPU code.
#include "md/cuda/cell_starts.cuh"
#include "md/cuda/integrate.cuh"

namespace nbkit::md {
namespace {

// ---- the list rebuild ----------------------------------------------------------------------

// Wraps every atom into the box (the host's rule, same bits) and gives it its cell's index.
__global__ void wrap_and_bin(int n, Atoms a, Geometry g, unsigned* __restrict__ cell, int* __restrict__ index) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  double* coordinate[3] = {a.x, a.y, a.z};
  int c[3];
  for (int axis = 0; axis < 3; ++axis) {
    const double v = wrap_coordinate(coordinate[axis][i], g.lo[axis], g.length[axis]);
    coordinate[axis][i] = v;
    c[axis] = min(g.cells[axis] - 1, max(0, static_cast<int>((v - g.lo[axis]) * g.cells_per_length[axis])));
  }
  cell[i] = static_cast<unsigned>((c[2] * g.cells[1] + c[1]) * g.cells[0] + c[0]);
  index[i] = i;
}

template <class T>
__global__ void gather(int n, const int* __restrict__ order, const T* __restrict__ from, T* __restrict__ to) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) to[i] = from[order[i]];
}

template <class Real>
__global__ void pack(int n, Atoms a, Geometry g, typename Packed<Real>::type* __restrict__ packed,
                     double* __restrict__ built_x, double* __restrict__ built_y, double* __restrict__ built_z) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  packed[i] = Packed<Real>::make(a.x[i] - g.lo[0], a.y[i] - g.lo[1], a.z[i] - g.lo[2], a.type[i]);
  built_x[i] = a.x[i], built_y[i] = a.y[i], built_z[i] = a.z[i];
}

// Is the pair (tag_i, tag_j) on the exclusion list? Rows by original atom index, sorted.
__device__ inline bool excluded(int tag_i, int tag_j, const int* __restrict__ first, const int* __restrict__ partner) {
  for (int k = first[tag_i]; k < first[tag_i + 1]; ++k)
    if (partner[k] == tag_j) return true;
  return false;
}

// Row i of the full list: every atom j != i of the 27 (fewer in a box 2 cells wide) cells
// around i's own within list_cutoff (reach + skin), exclusions removed, in the stencil's
// order and each cell's. A row longer than `capacity` writes its first `capacity` entries and
// reports its length. One block of 32 threads per home cell, a thread per home atom (the
// patch kernel's layout): each neighbouring cell's atoms pass through shared memory once for
// all the home cell's atoms, so no thread of a warp runs other cells' loops than its
// neighbours' (a thread per atom diverges wherever a warp spans two cells: 1.82 ms against
// 1.65 ms for 1M atoms of in.lj on an H100).
// Along an axis of 3 or more cells each neighbour cell is one image: its atoms are moved by
// the box length where the stencil wraps (no minimum image per candidate), and a cell whose
// nearest face is beyond the list cutoff from atom i is skipped by that atom. Axes of 2
// cells take the minimum image and every cell.
constexpr int kListThreads = 32;

template <class Real>
__global__ void __launch_bounds__(kListThreads)
    build_list(int n, const typename Packed<Real>::type* __restrict__ packed, const int* __restrict__ cell_start,
               Geometry g, Real list_cutoff2, const int* __restrict__ tag, const int* __restrict__ exclusion_first,
               const int* __restrict__ exclusion_partner, int capacity, int* __restrict__ list,
               int* __restrict__ row_length, int* __restrict__ longest_row) {
  using Position = typename Packed<Real>::type;
  __shared__ Position tile[kListThreads];
  __shared__ int tile_tag[kListThreads];
  const int home = blockIdx.x;
  const int home_begin = cell_start[home], home_end = cell_start[home + 1];
  const Real length[3] = {Real(g.length[0]), Real(g.length[1]), Real(g.length[2])};
  const Real inverse[3] = {Real(g.inverse_length[0]), Real(g.inverse_length[1]), Real(g.inverse_length[2])};
  const int c[3] = {home % g.cells[0], home / g.cells[0] % g.cells[1], home / g.cells[0] / g.cells[1]};
  int first_offset[3];
  bool whole[3];
  Real width[3];
  for (int axis = 0; axis < 3; ++axis) {
    first_offset[axis] = g.cells[axis] >= 3 ? -1 : 0;  // offsets 0, 1 along an axis of 2 cells
    whole[axis] = g.cells[axis] >= 3;
    width[axis] = Real(g.length[axis] / g.cells[axis]);
  }
  auto shift = [&](int axis, int raw) -> Real {
    return raw < 0 ? -length[axis] : (raw >= g.cells[axis] ? length[axis] : Real(0));
  };
  for (int home_base = home_begin; home_base < home_end; home_base += kListThreads) {
    const int i = home_base + threadIdx.x;
    const bool active = i < home_end;
    const Position pi = packed[active ? i : home_begin];
    const int my_tag = exclusion_first && active ? tag[i] : 0;
    const Real position[3] = {pi.x, pi.y, pi.z};
    Real inside[3];
    for (int axis = 0; axis < 3; ++axis) inside[axis] = position[axis] - Real(c[axis]) * width[axis];
    auto gap = [&](int axis, int offset) -> Real {
      if (!whole[axis] || offset == 0) return Real(0);
      const Real d = offset < 0 ? inside[axis] : width[axis] - inside[axis];
      return d > Real(0) ? d : Real(0);
    };
    int count = 0;
    for (int oz = first_offset[2]; oz <= 1; ++oz) {
      const int cz = (c[2] + oz + g.cells[2]) % g.cells[2];
      const Real gz = gap(2, oz), sz = shift(2, c[2] + oz);
      for (int oy = first_offset[1]; oy <= 1; ++oy) {
        const int cy = (c[1] + oy + g.cells[1]) % g.cells[1];
        const Real gy = gap(1, oy), sy = shift(1, c[1] + oy);
        for (int ox = first_offset[0]; ox <= 1; ++ox) {
          const int cx = (c[0] + ox + g.cells[0]) % g.cells[0];
          const Real gx = gap(0, ox), sx = shift(0, c[0] + ox);
          const bool near = active && gx * gx + gy * gy + gz * gz < list_cutoff2;  // else the whole cell is too far
          const int cell = (cz * g.cells[1] + cy) * g.cells[0] + cx;
          const int end = cell_start[cell + 1];
          for (int base = cell_start[cell]; base < end; base += kListThreads) {
            const int tile_count = min(kListThreads, end - base);
            __syncthreads();  // the previous tile is no longer read
            if (static_cast<int>(threadIdx.x) < tile_count) {
              tile[threadIdx.x] = packed[base + threadIdx.x];
              if (exclusion_first) tile_tag[threadIdx.x] = tag[base + threadIdx.x];
            }
            __syncthreads();
            if (!near) continue;
            for (int k = 0; k < tile_count; ++k) {
              const Position pj = tile[k];
              const Real dx = whole[0] ? (pj.x + sx) - pi.x : minimum_image<Real>(pj.x - pi.x, length[0], inverse[0]);
              const Real dy = whole[1] ? (pj.y + sy) - pi.y : minimum_image<Real>(pj.y - pi.y, length[1], inverse[1]);
              const Real dz = whole[2] ? (pj.z + sz) - pi.z : minimum_image<Real>(pj.z - pi.z, length[2], inverse[2]);
              const int j = base + k;
              if (dx * dx + dy * dy + dz * dz >= list_cutoff2 || j == i) continue;
              if (exclusion_first && excluded(my_tag, tile_tag[k], exclusion_first, exclusion_partner)) continue;
              if (count < capacity) list[static_cast<std::size_t>(count) * n + i] = j;
              ++count;
            }
          }
        }
      }
    }
    if (!active) continue;
    row_length[i] = count;
    if (count > capacity) atomicMax(longest_row, count);
  }
}

}  // namespace
}  // namespace nbkit::md
