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
#else
#define NBKIT_RDF_MUL(a, b) ((a) * (b))
#define NBKIT_RDF_ADD(a, b) ((a) + (b))
#endif

namespace nbkit::analysis::detail {

// Group B of one frame sorted into cells: fractional cells of the periodic cell (edge vectors
// `edge`), or boxes over B's extent without one. Plain pointers: host or device memory.
struct PairGrid {
  bool periodic = false;
  int n[3] = {1, 1, 1};
  double edge[3][3] = {};  // a, b, c (periodic)
  const std::int32_t* start = nullptr;  // cells + 1
  const double *x = nullptr, *y = nullptr, *z = nullptr;  // B, wrapped into the cell when periodic
  const std::int32_t* atom = nullptr;
  const std::int32_t* group = nullptr;  // B's residue or molecule; null: no exclusion
};

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

// Group-A atom `atom` (group `group`, -1: none) at x (wrapped as B is) in cell c: every pair with
// a B atom within [rmin, rmax] goes to add(bin); returns the distances computed.
template <class Add>
NBKIT_HOST_DEVICE std::uint64_t count_neighbours(const PairGrid& g, const BinRule& rule, const double x[3],
                                                 const int c[3], std::int32_t atom, std::int32_t group, Add&& add) {
  std::uint64_t distances = 0;
  for (int ox = -1; ox <= 1; ++ox)
    for (int oy = -1; oy <= 1; ++oy)
      for (int oz = -1; oz <= 1; ++oz) {
        const int o[3] = {ox, oy, oz};
        int cell[3];
        double origin[3] = {x[0], x[1], x[2]};  // B's image is position + shift: d = position - (x - shift)
        bool inside = true;
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
            inside = inside && v >= 0 && v < g.n[k];
            cell[k] = v;
          }
        }
        if (!inside) continue;
        const int f = (cell[0] * g.n[1] + cell[1]) * g.n[2] + cell[2];
        for (std::int32_t s = g.start[f]; s < g.start[f + 1]; ++s) {
          const std::int32_t j = g.atom[s];
          if (j == atom || (g.group && g.group[s] == group)) continue;
          ++distances;
          const double dx = g.x[s] - origin[0], dy = g.y[s] - origin[1], dz = g.z[s] - origin[2];
          const double r2 = NBKIT_RDF_ADD(NBKIT_RDF_ADD(NBKIT_RDF_MUL(dx, dx), NBKIT_RDF_MUL(dy, dy)), NBKIT_RDF_MUL(dz, dz));
          if (r2 > rule.rmax2 || r2 < rule.rmin2) continue;
#ifdef __CUDA_ARCH__
          const double r = ::sqrt(r2);
#else
          const double r = std::sqrt(r2);
#endif
          if (r > rule.rmax || r < rule.rmin) continue;
          add(bin_of(r, rule));
        }
      }
  return distances;
}

}  // namespace nbkit::analysis::detail
