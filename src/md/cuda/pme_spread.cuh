#pragma once
// PME's spread of one atom's charge onto the mesh, on the device, written once: cuda/pme.cu's
// spread kernel and the Langevin-middle step in one launch (cuda/constraints.cu), which spreads
// its atoms where their positions become final (PmeGpu::spread_ahead) call it, and the gather
// uses its splines. Internal to the CUDA build.
#include <cuda_runtime.h>

#include <cstdint>

#include "md/bonded_law.hpp"  // Vector3
#include "md/bspline.hpp"

namespace nbkit::md {

struct PmeMesh {
  int k[3];
  double scale[3], lo[3];  // mesh points per A, the box's low corner
};

// What a kernel needs to spread the atoms onto PME's fixed-point mesh (PmeGpu::spread_ahead);
// `mesh` null: nothing to spread.
struct PmeSpreadTarget {
  PmeMesh m{};
  double fixed_scale = 0;
  unsigned long long* mesh = nullptr;
  const double* charge = nullptr;
  int order = 0;
};

// An atom's first mesh point along axis a (floor(u), u in [0, K)) and its B-splines.
__device__ inline int pme_splines(const PmeMesh& m, int order, int a, double x, double* value, double* derivative) {
  double u = (x - m.lo[a]) * m.scale[a];
  u -= m.k[a] * floor(u / m.k[a]);
  // A position not finite, or so far out (a run blowing up) that the reduction above loses it
  // (|u| beyond 2^53 / K), lands at mesh point 0 rather than outside the mesh: such a step's
  // forces or constraints are reported (the device's flags); before this its mesh writes went
  // out of bounds (compute-sanitizer, Constraints.RefusesWhatItCannotRun). u = K from rounding
  // gives the same points and weights as u = 0.
  if (!(u >= 0 && u < m.k[a])) u = 0;
  const double cell = floor(u);
  bspline_weights(order, u - cell, value, derivative);
  return static_cast<int>(cell);
}

__device__ inline int pme_wrap(int k, int size) { return k < 0 ? k + size : (k >= size ? k - size : k); }

// Atom i adds q M(u1) M(u2) M(u3) to its order^3 mesh points, as 64-bit fixed point (two's
// complement in an unsigned atomic add: negative values wrap and sum correctly). `Order` lanes
// share an atom, lane j2 taking the points base[2] - j2 of each of its order^2 rows, so that one
// atomic instruction of a warp adds to 32 / Order runs of Order neighbouring words (a few
// sectors) instead of 32 words in 32 places. With a thread an atom the spread was half of PME's
// time; this way it is 22-33% faster on an H100 (docs/performance.md, session 31).
template <int Order>
__device__ inline void pme_spread_atom(int i, int j2, const Vector3<double>* x, const double* q, const PmeMesh& m,
                                       double fixed_scale, unsigned long long* mesh) {
  double t[3][Order], d[3][Order];
  int base[3];
  const Vector3<double> p = x[i];
  base[0] = pme_splines(m, Order, 0, p.x, t[0], d[0]);
  base[1] = pme_splines(m, Order, 1, p.y, t[1], d[1]);
  base[2] = pme_splines(m, Order, 2, p.z, t[2], d[2]);
  // The products in the order of a thread per atom (the same bits as before).
  const double charge = q[i] * fixed_scale;
  double weight2 = 0;  // t[2][j2], picked without indexing the array (which would go to local memory)
  for (int k = 0; k < Order; ++k)
    if (k == j2) weight2 = t[2][k];
  const int c = pme_wrap(base[2] - j2, m.k[2]);
  for (int j0 = 0; j0 < Order; ++j0) {
    const int a = pme_wrap(base[0] - j0, m.k[0]);
    for (int j1 = 0; j1 < Order; ++j1) {
      const int b = pme_wrap(base[1] - j1, m.k[1]);
      const double w = charge * t[0][j0] * t[1][j1];
      atomicAdd(mesh + (static_cast<std::int64_t>(a) * m.k[1] + b) * m.k[2] + c,
                static_cast<unsigned long long>(__double2ll_rn(w * weight2)));
    }
  }
}

}  // namespace nbkit::md
