#pragma once
// Cluster pairs in tiles of 32 (OpenMM's and GROMACS's layout), kept as a measured baseline.
// Part of the GPU MD engine (engine_cuda.cu, whose comment has the design); included there
// only, one translation unit, split by job as GROMACS's nbnxm splits its GPU code.
#include "md/cuda/patch_pairs.cuh"

namespace nbkit::md {
namespace {

// Cluster pairs in tiles of 32 (the layout of OpenMM's and GROMACS's GPU kernels): clusters
// are 32 consecutive atoms of the cell-sorted order; each cluster's list holds the clusters
// whose bounding boxes come within reach + skin of its own (minimum image), in increasing
// order; a warp takes a cluster, a lane an atom, and each neighbour cluster's 32 atoms pass
// through the lanes by shuffles (no shared memory, no per-pair loads).
template <class Real>
struct ClusterBox {
  Real center[3], half[3];
};

// One warp per cluster: the box of its atoms (packed coordinates, wrapped into the box).
template <class Real>
__global__ void cluster_bounds(int n, int clusters, const typename Packed<Real>::type* __restrict__ packed,
                               ClusterBox<Real>* __restrict__ boxes) {
  const int cluster = (blockIdx.x * blockDim.x + threadIdx.x) / 32, lane = threadIdx.x % 32;
  if (cluster >= clusters) return;
  const int i = min(cluster * 32 + lane, n - 1);  // a short last cluster repeats its last atom
  const auto p = packed[i];
  Real lo[3] = {p.x, p.y, p.z}, hi[3] = {p.x, p.y, p.z};
  for (int offset = 16; offset > 0; offset /= 2)
    for (int a = 0; a < 3; ++a) {
      lo[a] = min(lo[a], __shfl_xor_sync(0xffffffffu, lo[a], offset));
      hi[a] = max(hi[a], __shfl_xor_sync(0xffffffffu, hi[a], offset));
    }
  if (lane == 0)
    for (int a = 0; a < 3; ++a) boxes[cluster].center[a] = Real(0.5) * (lo[a] + hi[a]), boxes[cluster].half[a] = Real(0.5) * (hi[a] - lo[a]);
}

// One thread per cluster: the candidate clusters are those holding atoms of the cells that
// the cluster's box, grown by reach + skin, touches: runs of consecutive cells along x give
// runs of consecutive clusters, merged so that each candidate comes once and in increasing
// order; a candidate whose box is within reach + skin (minimum image) enters the row.
constexpr int kMaxClusterRuns = 64;

template <class Real>
__global__ void build_cluster_list(int n, int clusters, const ClusterBox<Real>* __restrict__ boxes,
                                   const int* __restrict__ cell_start, Geometry g, Real list_cutoff, int capacity,
                                   int* __restrict__ list, int* __restrict__ row_length, int* __restrict__ longest_row) {
  const int ic = blockIdx.x * blockDim.x + threadIdx.x;
  if (ic >= clusters) return;
  const ClusterBox<Real> box = boxes[ic];
  // Cell ranges per axis: [first, last], or every cell once.
  int first[3], count[3];
  for (int a = 0; a < 3; ++a) {
    const double lo = (static_cast<double>(box.center[a]) - box.half[a] - list_cutoff) * g.cells_per_length[a];
    const double hi = (static_cast<double>(box.center[a]) + box.half[a] + list_cutoff) * g.cells_per_length[a];
    first[a] = static_cast<int>(floor(lo));
    count[a] = static_cast<int>(floor(hi)) - first[a] + 1;
    if (count[a] >= g.cells[a]) first[a] = 0, count[a] = g.cells[a];
  }
  int run_first[kMaxClusterRuns], run_last[kMaxClusterRuns];
  int runs = 0;
  bool everything = false;
  for (int oz = 0; oz < count[2] && !everything; ++oz) {
    const int cz = ((first[2] + oz) % g.cells[2] + g.cells[2]) % g.cells[2];
    for (int oy = 0; oy < count[1] && !everything; ++oy) {
      const int cy = ((first[1] + oy) % g.cells[1] + g.cells[1]) % g.cells[1];
      // Along x: one run, or two where the range wraps around the box.
      const int x0 = ((first[0] % g.cells[0]) + g.cells[0]) % g.cells[0];
      const int pieces[2][2] = {{x0, min(g.cells[0] - 1, x0 + count[0] - 1)},
                                {0, x0 + count[0] - 1 - g.cells[0]}};
      for (int piece = 0; piece < 2; ++piece) {
        if (pieces[piece][1] < pieces[piece][0]) continue;
        const int row = (cz * g.cells[1] + cy) * g.cells[0];
        const int begin = cell_start[row + pieces[piece][0]], end = cell_start[row + pieces[piece][1] + 1];
        if (begin == end) continue;
        if (runs == kMaxClusterRuns) {
          everything = true;  // too many runs (a very spread cluster): every cluster is a candidate
          break;
        }
        run_first[runs] = begin / 32, run_last[runs] = (end - 1) / 32;
        ++runs;
      }
    }
  }
  if (everything) runs = 1, run_first[0] = 0, run_last[0] = clusters - 1;
  // Runs by their first cluster (insertion sort; a few dozen at most), then merged.
  for (int r = 1; r < runs; ++r)
    for (int q = r; q > 0 && run_first[q] < run_first[q - 1]; --q) {
      const int f = run_first[q], l = run_last[q];
      run_first[q] = run_first[q - 1], run_last[q] = run_last[q - 1];
      run_first[q - 1] = f, run_last[q - 1] = l;
    }
  const Real reach2 = list_cutoff * list_cutoff;
  const Real length[3] = {Real(g.length[0]), Real(g.length[1]), Real(g.length[2])};
  const Real inverse[3] = {Real(g.inverse_length[0]), Real(g.inverse_length[1]), Real(g.inverse_length[2])};
  int entries = 0, next = 0;  // next: the first cluster not yet considered
  for (int r = 0; r < runs; ++r) {
    for (int jc = max(run_first[r], next); jc <= run_last[r]; ++jc) {
      const ClusterBox<Real> other = boxes[jc];
      Real gap2 = 0;
      for (int a = 0; a < 3; ++a) {
        const Real d = fabs(minimum_image<Real>(other.center[a] - box.center[a], length[a], inverse[a])) -
                       (box.half[a] + other.half[a]);
        if (d > 0) gap2 += d * d;
      }
      if (gap2 >= reach2) continue;
      if (entries < capacity) list[static_cast<std::size_t>(entries) * clusters + ic] = jc;
      ++entries;
    }
    next = max(next, run_last[r] + 1);
  }
  row_length[ic] = entries;
  if (entries > capacity) atomicMax(longest_row, entries);
}

template <class Real, bool Coulomb, bool Energies>
__global__ void __launch_bounds__(kThreads) cluster_pair_forces(int n, int clusters, PatchKernelArguments<Real> a) {
  const PairKernelArguments<Real>& p = a.pair;
  const int ic = (blockIdx.x * blockDim.x + threadIdx.x) / 32, lane = threadIdx.x % 32;
  if (ic >= clusters || p.control->frozen) return;
  const int i = ic * 32 + lane;
  const bool active = i < n;
  const auto pi = p.packed[active ? i : n - 1];
  const LennardJonesCoefficients<Real>* row_parameters = p.parameters + Packed<Real>::type_of(pi) * p.types;
  const Real qi = Coulomb && active ? p.charge[i] : Real(0);
  const int tag_i = a.exclusion_first && active ? a.tag[i] : 0;
  AtomSums<Real, Coulomb, Energies> sums;
  const int length = p.row_length[ic];
  for (int k = 0; k < length; ++k) {
    const int jc = p.list[static_cast<std::size_t>(k) * clusters + ic];
    const int j_mine = min(jc * 32 + lane, n - 1);
    const auto pj_mine = p.packed[j_mine];
    const Real qj_mine = Coulomb ? p.charge[j_mine] : Real(0);
    const int tag_j_mine = a.exclusion_first ? a.tag[j_mine] : 0;
    const int atoms_in_j = min(32, n - jc * 32);
    for (int t = 0; t < atoms_in_j; ++t) {
      const Real xj = __shfl_sync(0xffffffffu, pj_mine.x, t), yj = __shfl_sync(0xffffffffu, pj_mine.y, t),
                 zj = __shfl_sync(0xffffffffu, pj_mine.z, t), wj = __shfl_sync(0xffffffffu, pj_mine.w, t);
      const Real qj = Coulomb ? __shfl_sync(0xffffffffu, qj_mine, t) : Real(0);
      const int tag_j = a.exclusion_first ? __shfl_sync(0xffffffffu, tag_j_mine, t) : 0;
      const int j = jc * 32 + t;
      if (!active || j == i) continue;
      const Separation<Real> d = separation(p, pi, xj, yj, zj);
      if (d.r2 >= p.reach2) continue;
      if (a.exclusion_first && excluded(tag_i, tag_j, a.exclusion_first, a.exclusion_partner)) continue;
      typename Packed<Real>::type typed{};
      typed.w = wj;
      sums.add(p, d, row_parameters[Packed<Real>::type_of(typed)], qi * qj);
    }
  }
  if (active) sums.store(p, i);
}

}  // namespace
}  // namespace nbkit::md
