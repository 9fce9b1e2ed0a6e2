#pragma once
// Applying a ConstraintSet (nbkit/md/constraints.hpp) on the host: SETTLE for rigid water,
// SHAKE (positions) and RATTLE (velocities) iterated per cluster for the other distances. Each
// water and each cluster is independent, so they are spread over threads and the positions and
// velocities do not depend on the thread count (the virial, a reported sum, is reduced in the
// threads' order). Atoms are wrapped into the box one by one, so every bond
// vector is taken as the minimum image. Internal; the molecular engine calls it every step.
#include <cstdint>
#include <optional>
#include <vector>

#include "nbkit/core/box.hpp"
#include "nbkit/md/constraints.hpp"

namespace nbkit::md {

// Positions or velocities as the System holds them (structure of arrays).
struct AtomArrays {
  double* x;
  double* y;
  double* z;
};
struct ConstAtomArrays {
  const double* x;
  const double* y;
  const double* z;
};

// The errors of a water SETTLE cannot place and of a cluster SHAKE or RATTLE (`method`) does not
// converge, with its atoms (the host's and the GPU's solvers).
[[noreturn]] void throw_unsettled(const ConstraintSet& set, std::int64_t water);
[[noreturn]] void throw_unconverged(const ConstraintSet& set, const char* method, std::int64_t cluster);

class ConstraintSolver {
 public:
  ConstraintSolver(ConstraintSet set, const std::vector<double>& mass, int threads);

  // Moves `x` (an unconstrained update of `reference`) onto the constraints, each correction
  // along the reference's bond vectors (SHAKE; SETTLE's corrections lie in the reference's
  // water plane). Returns the constraint forces' virial sum_i r_i . m_i dx_i (mass length^2,
  // divide by dt^2 and the units' force-to-acceleration factor for energy). Throws nbkit::Error
  // when a cluster does not converge in 1,000 iterations or a water cannot be placed (a step too
  // long for the forces).
  double constrain_positions(ConstAtomArrays reference, AtomArrays x, const std::optional<PeriodicBox>& box) const;
  // Removes each constraint's relative velocity along its bond at positions `x` (RATTLE's second
  // half; SETTLE's velocity part solved exactly), to a relative position error of tolerance per
  // step `dt`. Returns sum_i r_i . m_i dv_i (mass length^2 / time).
  double constrain_velocities(ConstAtomArrays x, AtomArrays v, const std::optional<PeriodicBox>& box, double dt) const;
  // The largest |r - d| / d over every constraint (and each water's three distances).
  double largest_deviation(ConstAtomArrays x, const std::optional<PeriodicBox>& box) const;

  const ConstraintSet& set() const { return set_; }
  std::int64_t count() const { return set_.count(); }

 private:
  ConstraintSet set_;
  std::vector<double> inverse_mass_;
  std::vector<double> mass_;
  int threads_;
};

}  // namespace nbkit::md
