// SETTLE, SHAKE and RATTLE on the host (constraint_solver.hpp).
#include "md/constraint_solver.hpp"

#include <fmt/format.h>
#include <omp.h>

#include <algorithm>
#include <cmath>

#include "nbkit/core/backend.hpp"
#include "nbkit/core/error.hpp"
#include "nbkit/core/vec3.hpp"

namespace nbkit::md {

namespace {

constexpr int kMaxIterations = 1000;

double dot(Vec3 a, Vec3 b) { return a.x * b.x + a.y * b.y + a.z * b.z; }
Vec3 cross(Vec3 a, Vec3 b) { return {a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x}; }
Vec3 unit(Vec3 a) { return (1.0 / norm(a)) * a; }

// The separation a - b as its minimum image (atoms are wrapped one by one; a bond is far
// shorter than half the box).
struct Images {
  const std::optional<PeriodicBox>& box;
  Vec3 operator()(Vec3 d) const {
    if (!box) return d;
    for (int a = 0; a < 3; ++a) {
      const double length = box->length(a);
      d[a] -= length * std::nearbyint(d[a] / length);
    }
    return d;
  }
};

Vec3 at(ConstAtomArrays p, std::int32_t i) { return {p.x[i], p.y[i], p.z[i]}; }
Vec3 at(AtomArrays p, std::int32_t i) { return {p.x[i], p.y[i], p.z[i]}; }
void add(AtomArrays p, std::int32_t i, Vec3 d) { p.x[i] += d.x, p.y[i] += d.y, p.z[i] += d.z; }

// What one constraint's correction did in a sweep.
enum class Correction { within, corrected, impossible };

// Gauss-Seidel over each cluster of `set` (clusters spread over threads) until a sweep finds every
// constraint within tolerance: `correct(constraint, virial)` corrects one constraint when it must.
// Returns the virial's sum; throws naming `method` and the cluster that did not converge.
template <class Correct>
double sweep_clusters(const ConstraintSet& set, int threads, const char* method, Correct&& correct) {
  const auto clusters = static_cast<std::int64_t>(set.clusters());
  double virial = 0;
  std::int64_t failed_at = -1;
#pragma omp parallel for num_threads(threads) reduction(+ : virial) if (clusters > 2048)
  for (std::int64_t c = 0; c < clusters; ++c) {
    bool converged = false, possible = true;
    for (int iteration = 0; iteration < kMaxIterations && !converged && possible; ++iteration) {
      converged = true;
      for (std::int32_t k = set.cluster_first[c]; k < set.cluster_first[c + 1] && possible; ++k) {
        const Correction done = correct(set.distances[k], virial);
        converged = converged && done == Correction::within;
        possible = done != Correction::impossible;
      }
    }
    if (!converged) {
#pragma omp critical
      failed_at = std::max(failed_at, c);
    }
  }
  if (failed_at >= 0) {
    const DistanceConstraint& d = set.distances[set.cluster_first[failed_at]];
    throw Error(fmt::format("{} did not converge to tolerance {} in {} iterations for the constraints around atoms "
                            "{}-{}: a time step too long, or atoms overlapping",
                            method, set.tolerance, kMaxIterations, d.i + 1, d.j + 1));
  }
  return virial;
}

}  // namespace

ConstraintSolver::ConstraintSolver(ConstraintSet set, const std::vector<double>& mass, int threads)
    : set_(std::move(set)), mass_(mass), threads_(resolve_threads(threads)) {
  inverse_mass_.resize(mass.size());
  for (std::size_t i = 0; i < mass.size(); ++i) inverse_mass_[i] = 1.0 / mass[i];
}

double ConstraintSolver::constrain_positions(ConstAtomArrays reference, AtomArrays x,
                                             const std::optional<PeriodicBox>& box) const {
  const Images image{box};
  const auto waters = static_cast<std::int64_t>(set_.waters.size());
  double virial = 0;
  bool failed = false;
  std::int64_t failed_at = -1;
  // SETTLE (Miyamoto and Kollman 1992): the water's new centre of mass kept, its orientation
  // found analytically in a frame whose z axis is the normal of the reference plane (the
  // constraint forces lie in that plane, so each atom keeps its z; the two tilts phi and psi
  // follow), then the rotation theta about z that conserves angular momentum about the old
  // positions. The frame's algebra follows the paper's appendix (and GROMACS's csettle).
#pragma omp parallel for num_threads(threads_) reduction(+ : virial) if (waters > 2048)
  for (std::int64_t w = 0; w < waters; ++w) {
    const RigidWater& water = set_.waters[w];
    const double m_o = mass_[water.o], m_h = mass_[water.h1], total = m_o + 2 * m_h;
    const double rc = 0.5 * water.hh, height = std::sqrt(water.oh * water.oh - rc * rc);
    const double ra = 2 * m_h * height / total, rb = height - ra;
    // Everything relative to the reference oxygen, bonds by their minimum images.
    const Vec3 a0 = at(reference, water.o);
    const Vec3 b0 = image(at(reference, water.h1) - a0), c0 = image(at(reference, water.h2) - a0);
    const Vec3 a1 = image(at(x, water.o) - a0);
    const Vec3 b1 = a1 + image(at(x, water.h1) - at(x, water.o)), c1 = a1 + image(at(x, water.h2) - at(x, water.o));
    const Vec3 d1 = (m_o / total) * a1 + (m_h / total) * (b1 + c1);
    const Vec3 a1d = a1 - d1, b1d = b1 - d1, c1d = c1 - d1;
    const Vec3 ez = unit(cross(b0, c0)), ex = unit(cross(a1d, ez)), ey = cross(ez, ex);
    const double xb0 = dot(b0, ex), yb0 = dot(b0, ey), xc0 = dot(c0, ex), yc0 = dot(c0, ey);
    const double za1 = dot(a1d, ez);
    const double xb1 = dot(b1d, ex), yb1 = dot(b1d, ey), zb1 = dot(b1d, ez);
    const double xc1 = dot(c1d, ex), yc1 = dot(c1d, ey), zc1 = dot(c1d, ez);
    const double sin_phi = za1 / ra;
    const double cos_phi = std::sqrt(std::max(0.0, 1 - sin_phi * sin_phi));
    const double sin_psi = (zb1 - zc1) / (2 * rc * cos_phi);
    const double cos_psi = std::sqrt(std::max(0.0, 1 - sin_psi * sin_psi));
    const double ya2 = ra * cos_phi, xb2 = -rc * cos_psi;
    const double yb2 = -rb * cos_phi - rc * sin_psi * sin_phi, yc2 = -rb * cos_phi + rc * sin_psi * sin_phi;
    const double alpha = xb2 * (xb0 - xc0) + yb0 * yb2 + yc0 * yc2;
    const double beta = xb2 * (yc0 - yb0) + xb0 * yb2 + xc0 * yc2;
    const double gamma = xb0 * yb1 - xb1 * yb0 + xc0 * yc1 - xc1 * yc0;
    const double a2b2 = alpha * alpha + beta * beta, discriminant = a2b2 - gamma * gamma;
    if (!(std::abs(sin_phi) <= 1) || !(std::abs(sin_psi) <= 1) || !(discriminant >= 0) || !(a2b2 > 0)) {
#pragma omp critical
      failed = true, failed_at = w;
      continue;
    }
    const double sin_theta = (alpha * gamma - beta * std::sqrt(discriminant)) / a2b2;
    const double cos_theta = std::sqrt(std::max(0.0, 1 - sin_theta * sin_theta));
    const double zb3 = -rb * sin_phi + rc * sin_psi * cos_phi, zc3 = -rb * sin_phi - rc * sin_psi * cos_phi;
    auto frame = [&](double u, double v, double s) { return d1 + u * ex + v * ey + s * ez; };
    const Vec3 a3 = frame(-ya2 * sin_theta, ya2 * cos_theta, za1);
    const Vec3 b3 = frame(xb2 * cos_theta - yb2 * sin_theta, xb2 * sin_theta + yb2 * cos_theta, zb3);
    const Vec3 c3 = frame(-xb2 * cos_theta - yc2 * sin_theta, -xb2 * sin_theta + yc2 * cos_theta, zc3);
    // Each atom moved by its correction (its periodic image kept).
    const Vec3 da = a3 - a1, db = b3 - b1, dc = c3 - c1;
    add(x, water.o, da), add(x, water.h1, db), add(x, water.h2, dc);
    virial += m_h * (dot(b0, db) + dot(c0, dc));  // the oxygen at the origin adds nothing
  }
  if (failed)
    throw Error(fmt::format("SETTLE cannot place water {} (atoms {}, {}, {}): it moved too far in one step (a time "
                            "step too long, or atoms overlapping)",
                            failed_at + 1, set_.waters[failed_at].o + 1, set_.waters[failed_at].h1 + 1,
                            set_.waters[failed_at].h2 + 1));
  // SHAKE: each constraint off by more than the tolerance moved along its reference vector.
  const double tolerance2 = 2 * set_.tolerance;
  virial += sweep_clusters(set_, threads_, "SHAKE", [&](const DistanceConstraint& d, double& sum) {
    const Vec3 r = image(at(x, d.i) - at(x, d.j));
    const double d2 = d.d * d.d, difference = d2 - dot(r, r);
    if (std::abs(difference) <= tolerance2 * d2) return Correction::within;
    const Vec3 r0 = image(at(reference, d.i) - at(reference, d.j));
    const double wi = inverse_mass_[d.i], wj = inverse_mass_[d.j];
    const double denominator = 2 * (wi + wj) * dot(r0, r);
    if (!(denominator > 1e-6 * d2 * (wi + wj))) return Correction::impossible;  // turned ~90 degrees in a step
    const double g = difference / denominator;
    add(x, d.i, (g * wi) * r0), add(x, d.j, (-g * wj) * r0);
    sum += g * dot(r0, r0);
    return Correction::corrected;
  });
  return virial;
}

double ConstraintSolver::constrain_velocities(ConstAtomArrays x, AtomArrays v, const std::optional<PeriodicBox>& box,
                                              double dt) const {
  const Images image{box};
  const auto waters = static_cast<std::int64_t>(set_.waters.size());
  double virial = 0;
  // A water's three constraints at once: the impulses tau along its bonds (unit vectors e_oh1,
  // e_oh2, e_hh) that leave no relative velocity along any of them, a 3 x 3 linear system
  // solved by Cramer's rule (Miyamoto and Kollman's velocity SETTLE, for any masses).
#pragma omp parallel for num_threads(threads_) reduction(+ : virial) if (waters > 2048)
  for (std::int64_t w = 0; w < waters; ++w) {
    const RigidWater& water = set_.waters[w];
    const std::int32_t a = water.o, b = water.h1, c = water.h2;
    const Vec3 rab = image(at(x, a) - at(x, b)), rac = image(at(x, a) - at(x, c)), rbc = image(at(x, b) - at(x, c));
    const Vec3 eab = unit(rab), eac = unit(rac), ebc = unit(rbc);
    const double wa = inverse_mass_[a], wb = inverse_mass_[b], wc = inverse_mass_[c];
    const Vec3 va = at(v, a), vb = at(v, b), vc = at(v, c);
    const double m[3][3] = {{wa + wb, wa * dot(eab, eac), -wb * dot(eab, ebc)},
                            {wa * dot(eac, eab), wa + wc, wc * dot(eac, ebc)},
                            {-wb * dot(ebc, eab), wc * dot(ebc, eac), wb + wc}};
    const double rhs[3] = {-dot(eab, va - vb), -dot(eac, va - vc), -dot(ebc, vb - vc)};
    auto det = [](const double q[3][3]) {
      return q[0][0] * (q[1][1] * q[2][2] - q[1][2] * q[2][1]) - q[0][1] * (q[1][0] * q[2][2] - q[1][2] * q[2][0]) +
             q[0][2] * (q[1][0] * q[2][1] - q[1][1] * q[2][0]);
    };
    const double whole = det(m);
    double tau[3];
    for (int k = 0; k < 3; ++k) {
      double q[3][3];
      for (int r = 0; r < 3; ++r)
        for (int s = 0; s < 3; ++s) q[r][s] = s == k ? rhs[r] : m[r][s];
      tau[k] = det(q) / whole;
    }
    add(v, a, (tau[0] * wa) * eab + (tau[1] * wa) * eac);
    add(v, b, (-tau[0] * wb) * eab + (tau[2] * wb) * ebc);
    add(v, c, (-tau[1] * wc) * eac + (-tau[2] * wc) * ebc);
    virial += tau[0] * norm(rab) + tau[1] * norm(rac) + tau[2] * norm(rbc);
  }
  // RATTLE's velocity half: converged when no constraint's length would change by more than the
  // tolerance (relative) over a step dt.
  virial += sweep_clusters(set_, threads_, "RATTLE", [&](const DistanceConstraint& d, double& sum) {
    const Vec3 r = image(at(x, d.i) - at(x, d.j));
    const double rv = dot(r, at(v, d.i) - at(v, d.j));
    if (std::abs(rv) * dt <= set_.tolerance * d.d * d.d) return Correction::within;
    const double wi = inverse_mass_[d.i], wj = inverse_mass_[d.j];
    const double impulse = -rv / ((wi + wj) * dot(r, r));
    add(v, d.i, (impulse * wi) * r), add(v, d.j, (-impulse * wj) * r);
    sum += impulse * dot(r, r);
    return Correction::corrected;
  });
  return virial;
}

double ConstraintSolver::largest_deviation(ConstAtomArrays x, const std::optional<PeriodicBox>& box) const {
  const Images image{box};
  double largest = 0;
  auto check = [&](std::int32_t i, std::int32_t j, double d) {
    largest = std::max(largest, std::abs(norm(image(at(x, i) - at(x, j))) - d) / d);
  };
  for (const RigidWater& w : set_.waters) check(w.o, w.h1, w.oh), check(w.o, w.h2, w.oh), check(w.h1, w.h2, w.hh);
  for (const DistanceConstraint& d : set_.distances) check(d.i, d.j, d.d);
  return largest;
}

}  // namespace nbkit::md
