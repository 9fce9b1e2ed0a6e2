#pragma once
// The pair loop of g(r), written once for the CPU threads (rdf.cpp) and the CUDA kernel
// (rdf_cuda.cu): one group-A atom against group B's atoms in the 27 cells around it, each
// distance binned by numpy.histogram's rule. Float64 throughout, with the multiplies and adds
// kept apart (no FMA contraction on either side), so a GPU counts every pair in the bin the CPU
// does: the histograms are equal, not close.
#include <cmath>
#include <cstdint>

#include "core/host_device.hpp"

#ifdef __CUDA_ARCH__  // the device pass: intrinsics that are never fused
#define NBKIT_RDF_MUL(a, b) __dmul_rn(a, b)
#define NBKIT_RDF_ADD(a, b) __dadd_rn(a, b)
#define NBKIT_RDF_DIV(a, b) __ddiv_rn(a, b)
#define NBKIT_RDF_FLOOR(a) ::floor(a)
#else
#define NBKIT_RDF_MUL(a, b) ((a) * (b))
#define NBKIT_RDF_ADD(a, b) ((a) + (b))
#define NBKIT_RDF_DIV(a, b) ((a) / (b))
#define NBKIT_RDF_FLOOR(a) std::floor(a)
#endif

namespace nbkit::analysis::detail {

// Group B of one frame sorted into cells: fractional cells of the periodic cell (edge vectors
// `edge`), or boxes over B's extent without one. Plain pointers: host or device memory.
struct PairGrid {
  bool periodic = false;
  int n[3] = {1, 1, 1};
  double edge[3][3] = {};     // a, b, c (periodic)
  double inverse[3][3] = {};  // rows: fractional coordinate k = inverse[k] . x (periodic)
  double lo[3] = {}, width[3] = {1, 1, 1};  // the boxes' lower corner and edges (not periodic)
  double reach = 0;  // at least the size of any coordinate of a position or origin the pair loop forms
  const std::int32_t* start = nullptr;  // cells + 1
  const double *x = nullptr, *y = nullptr, *z = nullptr;  // B, wrapped into the cell when periodic
  const std::int32_t* atom = nullptr;
  const std::int32_t* group = nullptr;  // B's residue or molecule; null: no exclusion
};

// The flat cell of position (x, y, z), and the position wrapped into the periodic cell (as it is
// without one) in w: the host's sort (rdf.cpp) and the GPUs' (rdf_cuda.cu) place every atom
// alike, to the bit, so both count the same pairs.
NBKIT_HOST_DEVICE int place_in_cell(const PairGrid& g, double x, double y, double z, double w[3]) {
  const double p[3] = {x, y, z};
  int c[3];
  if (g.periodic) {
    double f[3];
    for (int k = 0; k < 3; ++k) {
      f[k] = NBKIT_RDF_ADD(NBKIT_RDF_ADD(NBKIT_RDF_MUL(g.inverse[k][0], x), NBKIT_RDF_MUL(g.inverse[k][1], y)),
                           NBKIT_RDF_MUL(g.inverse[k][2], z));
      f[k] -= NBKIT_RDF_FLOOR(f[k]);
      if (f[k] >= 1) f[k] = 0;  // -1e-17 - floor(...) rounds to 1
      const int ck = static_cast<int>(NBKIT_RDF_MUL(f[k], static_cast<double>(g.n[k])));
      c[k] = ck < g.n[k] - 1 ? ck : g.n[k] - 1;
    }
    for (int a = 0; a < 3; ++a)
      w[a] = NBKIT_RDF_ADD(NBKIT_RDF_ADD(NBKIT_RDF_MUL(f[0], g.edge[0][a]), NBKIT_RDF_MUL(f[1], g.edge[1][a])),
                           NBKIT_RDF_MUL(f[2], g.edge[2][a]));
  } else {
    for (int k = 0; k < 3; ++k) {
      // Clamped before the conversion: a group-A atom may lie far outside B's boxes.
      const double v = NBKIT_RDF_FLOOR(NBKIT_RDF_DIV(p[k] - g.lo[k], g.width[k]));
      c[k] = v < 0 ? 0 : (v > g.n[k] - 1 ? g.n[k] - 1 : static_cast<int>(v));
      w[k] = p[k];
    }
  }
  return (c[0] * g.n[1] + c[1]) * g.n[2] + c[2];
}

struct BinRule {
  double rmin, rmax, rmin2, rmax2, scale;  // scale = bins / (rmax - rmin)
  int bins;
  const double* edges;  // bins + 1, numpy.linspace's
};

// numpy.histogram's bin for d in [rmin, rmax]: the scaled index, moved by one where the edges
// disagree with the scaling's rounding; rmax falls in the last bin.
NBKIT_HOST_DEVICE int bin_of(double d, const BinRule& rule) {
  int k = static_cast<int>(NBKIT_RDF_MUL(d - rule.rmin, rule.scale));
  if (k >= rule.bins) k = rule.bins - 1;
  if (d < rule.edges[k])
    --k;
  else if (k != rule.bins - 1 && d >= rule.edges[k + 1])
    ++k;
  return k;
}

// The three cell coordinates of flat cell index f ((c0 n1 + c1) n2 + c2).
NBKIT_HOST_DEVICE void cell_coordinates(const PairGrid& g, std::int32_t f, int c[3]) {
  c[2] = f % g.n[2];
  c[1] = (f / g.n[2]) % g.n[1];
  c[0] = f / (g.n[2] * g.n[1]);
}

// The neighbouring cell c + o (o in {-1, 0, 1}^3) of an atom at x (wrapped as B is) in cell c:
// its flat index, and the origin its B atoms are measured from (x less the periodic shift that
// brings the cell next to c); -1 where the grid has no such cell (no cell: off its edge).
NBKIT_HOST_DEVICE int neighbour_cell(const PairGrid& g, const double x[3], const int c[3], const int o[3],
                                     double origin[3]) {
  int cell[3];
  for (int a = 0; a < 3; ++a) origin[a] = x[a];  // B's image is position + shift: d = position - (x - shift)
  for (int k = 0; k < 3; ++k) {
    const int v = c[k] + o[k];
    if (g.periodic) {
      // (cell, shift) pairs are distinct for any n >= 1, so no image is visited twice even
      // where a cell is one or two cell-list cells across.
      const int s = v < 0 ? -1 : (v >= g.n[k] ? 1 : 0);
      cell[k] = v - s * g.n[k];
      if (s != 0)
        for (int a = 0; a < 3; ++a) origin[a] = s > 0 ? origin[a] - g.edge[k][a] : origin[a] + g.edge[k][a];
    } else {
      if (v < 0 || v >= g.n[k]) return -1;
      cell[k] = v;
    }
  }
  return (cell[0] * g.n[1] + cell[1]) * g.n[2] + cell[2];
}

// The squared distance from `origin` to B's atom in slot s, float64 without fused operations.
NBKIT_HOST_DEVICE double squared_distance(const PairGrid& g, std::int32_t s, const double origin[3]) {
  const double dx = g.x[s] - origin[0], dy = g.y[s] - origin[1], dz = g.z[s] - origin[2];
  return NBKIT_RDF_ADD(NBKIT_RDF_ADD(NBKIT_RDF_MUL(dx, dx), NBKIT_RDF_MUL(dy, dy)), NBKIT_RDF_MUL(dz, dz));
}

// Whether a squared distance may be in range (the cheap test every candidate takes).
NBKIT_HOST_DEVICE bool maybe_in_range(double r2, const BinRule& rule) { return !(r2 > rule.rmax2 || r2 < rule.rmin2); }

// The bin of a squared distance that maybe_in_range passed, or -1 when its root is out of range.
NBKIT_HOST_DEVICE int bin_of_squared(double r2, const BinRule& rule) {
#ifdef __CUDA_ARCH__
  const double r = ::sqrt(r2);
#else
  const double r = std::sqrt(r2);
#endif
  if (r > rule.rmax || r < rule.rmin) return -1;
  return bin_of(r, rule);
}

// Group-A atom `atom` (group `group`, -1: none) at x (wrapped as B is) in cell c, against the B
// atoms of the neighbouring cell c + o: every pair within [rmin, rmax] goes to add(bin); returns
// the distances computed (pairs of an atom with itself, or within one excluded group, are not
// computed). The GPU kernel walks the same cells with these helpers, its threads sharing out
// the in-range pairs' binning; the counts are the same.
template <class Add>
NBKIT_HOST_DEVICE std::uint64_t count_in_cell(const PairGrid& g, const BinRule& rule, const double x[3],
                                              const int c[3], const int o[3], std::int32_t atom, std::int32_t group,
                                              Add&& add) {
  double origin[3];
  const int f = neighbour_cell(g, x, c, o, origin);
  if (f < 0) return 0;
  std::uint64_t distances = 0;
  for (std::int32_t s = g.start[f]; s < g.start[f + 1]; ++s) {
    if (g.atom[s] == atom || (g.group && g.group[s] == group)) continue;
    ++distances;
    const double r2 = squared_distance(g, s, origin);
    if (!maybe_in_range(r2, rule)) continue;
    const int k = bin_of_squared(r2, rule);
    if (k >= 0) add(k);
  }
  return distances;
}

// The same atom against all 27 neighbouring cells.
template <class Add>
NBKIT_HOST_DEVICE std::uint64_t count_neighbours(const PairGrid& g, const BinRule& rule, const double x[3],
                                                 const int c[3], std::int32_t atom, std::int32_t group, Add&& add) {
  std::uint64_t distances = 0;
  for (int ox = -1; ox <= 1; ++ox)
    for (int oy = -1; oy <= 1; ++oy)
      for (int oz = -1; oz <= 1; ++oz) {
        const int o[3] = {ox, oy, oz};
        distances += count_in_cell(g, rule, x, c, o, atom, group, add);
      }
  return distances;
}

}  // namespace nbkit::analysis::detail
