// SETTLE, SHAKE and RATTLE on the host (constraint_solver.hpp).
#include "md/constraint_solver.hpp"

#include <fmt/format.h>
#include <omp.h>

#include <algorithm>
#include <cmath>

#include "md/constraint_law.hpp"
#include "nbkit/core/backend.hpp"
#include "nbkit/core/error.hpp"

namespace nbkit::md {

namespace {

V3d at(ConstAtomArrays p, std::int32_t i) { return {p.x[i], p.y[i], p.z[i]}; }
V3d at(AtomArrays p, std::int32_t i) { return {p.x[i], p.y[i], p.z[i]}; }
void add(AtomArrays p, std::int32_t i, V3d d) { p.x[i] += d.x, p.y[i] += d.y, p.z[i] += d.z; }

// converge_cluster over each cluster of `set` (clusters spread over threads): `correct(constraint,
// virial)` corrects one constraint when it must. Returns the virial's sum; throws naming `method`
// and the cluster that did not converge.
template <class Correct>
double sweep_clusters(const ConstraintSet& set, int threads, const char* method, Correct&& correct) {
  const auto clusters = static_cast<std::int64_t>(set.clusters());
  double virial = 0;
  std::int64_t failed_at = -1;
#pragma omp parallel for num_threads(threads) reduction(+ : virial) if (clusters > 2048)
  for (std::int64_t c = 0; c < clusters; ++c) {
    const bool converged = converge_cluster(set.distances.data(), set.cluster_first[c], set.cluster_first[c + 1],
                                            [&](const DistanceConstraint& d) { return correct(d, virial); });
    if (!converged) {
#pragma omp critical
      failed_at = std::max(failed_at, c);
    }
  }
  if (failed_at >= 0) throw_unconverged(set, method, failed_at);
  return virial;
}

}  // namespace

void throw_unconverged(const ConstraintSet& set, const char* method, std::int64_t cluster) {
  const DistanceConstraint& d = set.distances[set.cluster_first[cluster]];
  throw Error(fmt::format("{} did not converge to tolerance {} in {} iterations for the constraints around atoms "
                          "{}-{}: a time step too long, or atoms overlapping",
                          method, set.tolerance, kConstraintIterations, d.i + 1, d.j + 1));
}

void throw_unsettled(const ConstraintSet& set, std::int64_t water) {
  const RigidWater& w = set.waters[water];
  throw Error(fmt::format("SETTLE cannot place water {} (atoms {}, {}, {}): it moved too far in one step (a time "
                          "step too long, or atoms overlapping)",
                          water + 1, w.o + 1, w.h1 + 1, w.h2 + 1));
}

ConstraintSolver::ConstraintSolver(ConstraintSet set, const std::vector<double>& mass, int threads)
    : set_(std::move(set)), mass_(mass), threads_(resolve_threads(threads)) {
  inverse_mass_.resize(mass.size());
  for (std::size_t i = 0; i < mass.size(); ++i) inverse_mass_[i] = 1.0 / mass[i];
}

double ConstraintSolver::constrain_positions(ConstAtomArrays reference, AtomArrays x,
                                             const std::optional<PeriodicBox>& box) const {
  const ConstraintImages image = constraint_images(box);
  const auto waters = static_cast<std::int64_t>(set_.waters.size());
  double virial = 0;
  std::int64_t failed_at = -1;
#pragma omp parallel for num_threads(threads_) reduction(+ : virial) if (waters > 2048)
  for (std::int64_t w = 0; w < waters; ++w) {
    const RigidWater& water = set_.waters[w];
    // Everything relative to the reference oxygen, bonds by their minimum images.
    const V3d a0 = at(reference, water.o);
    const V3d a1 = image(at(x, water.o) - a0);
    V3d da, db, dc;
    double v = 0;
    if (!settle_positions(mass_[water.o], mass_[water.h1], water.oh, water.hh, image(at(reference, water.h1) - a0),
                          image(at(reference, water.h2) - a0), a1, a1 + image(at(x, water.h1) - at(x, water.o)),
                          a1 + image(at(x, water.h2) - at(x, water.o)), da, db, dc, v)) {
#pragma omp critical
      failed_at = std::max(failed_at, w);
      continue;
    }
    // Each atom moved by its correction (its periodic image kept).
    add(x, water.o, da), add(x, water.h1, db), add(x, water.h2, dc);
    virial += v;
  }
  if (failed_at >= 0) throw_unsettled(set_, failed_at);
  const double tolerance2 = 2 * set_.tolerance;
  virial += sweep_clusters(set_, threads_, "SHAKE", [&](const DistanceConstraint& d, double& sum) {
    const V3d r0 = image(at(reference, d.i) - at(reference, d.j));
    const double wi = inverse_mass_[d.i], wj = inverse_mass_[d.j];
    double g = 0;
    const Correction done =
        shake_correction(image(at(x, d.i) - at(x, d.j)), r0, d.d * d.d, wi, wj, tolerance2, g, sum);
    if (done == Correction::corrected) add(x, d.i, (g * wi) * r0), add(x, d.j, (-g * wj) * r0);
    return done;
  });
  return virial;
}

double ConstraintSolver::constrain_velocities(ConstAtomArrays x, AtomArrays v, const std::optional<PeriodicBox>& box,
                                              double dt) const {
  const ConstraintImages image = constraint_images(box);
  const auto waters = static_cast<std::int64_t>(set_.waters.size());
  double virial = 0;
#pragma omp parallel for num_threads(threads_) reduction(+ : virial) if (waters > 2048)
  for (std::int64_t w = 0; w < waters; ++w) {
    const RigidWater& water = set_.waters[w];
    const std::int32_t a = water.o, b = water.h1, c = water.h2;
    V3d va = at(v, a), vb = at(v, b), vc = at(v, c);
    virial += settle_velocities(image(at(x, a) - at(x, b)), image(at(x, a) - at(x, c)), image(at(x, b) - at(x, c)),
                                inverse_mass_[a], inverse_mass_[b], inverse_mass_[c], va, vb, vc);
    v.x[a] = va.x, v.y[a] = va.y, v.z[a] = va.z, v.x[b] = vb.x, v.y[b] = vb.y, v.z[b] = vb.z;
    v.x[c] = vc.x, v.y[c] = vc.y, v.z[c] = vc.z;
  }
  virial += sweep_clusters(set_, threads_, "RATTLE", [&](const DistanceConstraint& d, double& sum) {
    const V3d r = image(at(x, d.i) - at(x, d.j));
    const double wi = inverse_mass_[d.i], wj = inverse_mass_[d.j];
    double impulse = 0;
    const Correction done = rattle_correction(r, at(v, d.i) - at(v, d.j), d.d, wi, wj, set_.tolerance, dt, impulse, sum);
    if (done == Correction::corrected) add(v, d.i, (impulse * wi) * r), add(v, d.j, (-impulse * wj) * r);
    return done;
  });
  return virial;
}

double ConstraintSolver::largest_deviation(ConstAtomArrays x, const std::optional<PeriodicBox>& box) const {
  const ConstraintImages image = constraint_images(box);
  double largest = 0;
  auto check = [&](std::int32_t i, std::int32_t j, double d) {
    const V3d r = image(at(x, i) - at(x, j));
    largest = std::max(largest, std::abs(std::sqrt(dot(r, r)) - d) / d);
  };
  for (const RigidWater& w : set_.waters) check(w.o, w.h1, w.oh), check(w.o, w.h2, w.oh), check(w.h1, w.h2, w.hh);
  for (const DistanceConstraint& d : set_.distances) check(d.i, d.j, d.d);
  return largest;
}

}  // namespace nbkit::md
