#pragma once
// Multilevel summation's long-range part for molecular dynamics (issue 18): the maps' periodic
// grids (src/maps/msm, Hardy's thesis, UIUC 2006; seed 000: MSM "produces continuous forces for
// dynamics") driven from atoms. With k the Coulomb constant over the dielectric:
//   L          = (k/2) sum_i q_i V(x_i),  V(x) = sum_m e0[m] Phi(x/h - m): the grids' sum of
//                g_a between every two charges, each with itself and every periodic image
//                included (charges anterpolated with the same Phi, so L is symmetric);
//   forces     F_i = -k q_i grad V(x_i), the exact gradient of L (Phi is C1);
//   self       -(k/2) sum_i q_i^2 g_a(0), the charges' own smooth part taken back out (what
//                remains of i with its images is Ewald's self term, tin-foil boundaries);
//   virial     -dL/dlambda for the positions and the box scaled by lambda: the anterpolated
//                charges do not change (fractional coordinates), only the grids' spacing, so it
//                is taken by central differences of the grid sum at lambda = 1 +- 1e-5 (two
//                more grid passes; a truncation error ~1e-10 of L).
// The pairs within the cutoff (1/r - g_a) are the pair law's (msm_short_coulomb); the excluded
// and 1-4 pairs' -g_a(r) is molecular_forces.cpp's (msm_excluded_pair). Float64; the grids'
// stages on `threads` threads (OpenMP, fixed orders: the same bits every run). Internal.
#include <array>
#include <cstdint>
#include <vector>

#include "nbkit/core/box.hpp"
#include "nbkit/core/vec3.hpp"

namespace nbkit::md {

struct MsmLongRange {
  double energy = 0, virial = 0;  // L plus the self term; -dL/dlambda
  std::vector<Vec3> force;
};

class MsmCpu {
 public:
  // The grids for `box` (their counts fixed from here on; a box of other edges needs a new one),
  // the splitting at `cutoff` (A), the finest spacing at most `spacing`, cubic or quintic.
  // Throws nbkit::Error for a spacing over cutoff / 2 or a box too elongated for the top grid.
  // `gpu` >= 0: the lattice-cutoff sums (the grids' costly stage) on that GPU (the maps'
  // lattice_cutoff_cuda, float64, the CPU's sums in the CPU's order per point).
  MsmCpu(const PeriodicBox& box, double cutoff, double spacing, bool quintic, int threads, int gpu = -1);
  MsmLongRange evaluate(const std::vector<Vec3>& x, const std::vector<double>& q, const PeriodicBox& box,
                        double coulomb_k) const;
  std::array<std::int64_t, 3> finest() const { return finest_; }

 private:
  double cutoff_, spacing_;
  bool quintic_;
  int threads_, gpu_, halvings_ = 0;
  std::array<std::int64_t, 3> finest_{};
  // The top level's kernel tables for the box and the box scaled by 1 +- 1e-5 (the virial's),
  // filled by the first evaluation: the box's edges are this object's.
  mutable std::array<std::vector<double>, 3> top_;
};

}  // namespace nbkit::md
