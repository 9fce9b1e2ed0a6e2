#pragma once
// The constraint algorithms written once for the host (constraint_solver.cpp) and the GPU
// (cuda/constraints.cu), as bonded_law.hpp is for the bonded terms: one water's SETTLE for
// positions and for velocities, one distance's SHAKE and RATTLE correction, and the Gauss-Seidel
// sweep over a cluster of distances. Positions in, corrections out; each caller loads and stores
// its own layout (the host's structure of arrays, the GPU's Vector3 array).
#include <cmath>
#include <cstdint>
#include <optional>

#include "core/host_device.hpp"
#include "md/bonded_law.hpp"
#include "nbkit/core/box.hpp"
#include "nbkit/md/constraints.hpp"

namespace nbkit::md {

using V3d = Vector3<double>;

// The separation d as its minimum image in a box of edges length[3] (atoms are wrapped one by
// one; a bond is far shorter than half the box); d itself without a box.
// The nearest image by the inverse edge, as the pair law's minimum_image: a multiply where a
// division was (three a call; SHAKE calls it for every correction, and on the GPU the clusters'
// threads, chains of dependent float64 operations, are presumably the constraint kernels' tail:
// by Nsight Compute's counts a water's warp issues ~850 instructions, far short of the 19.6 us
// kernel; session 34). The whole number of edges it removes is the one the division found unless
// d / L lies within a rounding of a half-integer, which no constrained pair does (they are a few
// A apart, the edges twice the cutoff or more): the same bits (a 20-step CPU run of the
// 30,677-atom benchmark system gave the same checkpoint, byte for byte).
struct ConstraintImages {
  int periodic = 0;
  double length[3] = {0, 0, 0}, inverse[3] = {0, 0, 0};
  NBKIT_HOST_DEVICE V3d operator()(V3d d) const {
    using std::nearbyint;
    if (!periodic) return d;
    return {d.x - length[0] * nearbyint(d.x * inverse[0]), d.y - length[1] * nearbyint(d.y * inverse[1]),
            d.z - length[2] * nearbyint(d.z * inverse[2])};
  }
};

// The image rule of `box` (none without one), on the host.
inline ConstraintImages constraint_images(const std::optional<PeriodicBox>& box) {
  ConstraintImages image;
  if (box) {
    image.periodic = 1;
    for (int a = 0; a < 3; ++a) image.length[a] = box->length(a), image.inverse[a] = 1 / image.length[a];
  }
  return image;
}

NBKIT_HOST_DEVICE V3d unit_vector(V3d a) {
  using std::sqrt;
  return (1.0 / sqrt(dot(a, a))) * a;
}

// SETTLE (Miyamoto and Kollman 1992): the water's new centre of mass kept, its orientation found
// analytically in a frame whose z axis is the normal of the reference plane (the constraint
// forces lie in that plane, so each atom keeps its z; the two tilts phi and psi follow), then the
// rotation theta about z that conserves angular momentum about the old positions. The frame's
// algebra follows the paper's appendix (and GROMACS's csettle).
// In: the masses, the geometry; b0, c0 the reference hydrogens relative to the reference oxygen;
// a1, b1, c1 the unconstrained positions relative to the reference oxygen (images resolved).
// Out: each atom's correction, and the virial m_h (b0 . db + c0 . dc) (the oxygen at the origin
// adds nothing). False when the water cannot be placed (it moved too far in one step).
NBKIT_HOST_DEVICE bool settle_positions(double m_o, double m_h, double oh, double hh, V3d b0, V3d c0, V3d a1, V3d b1,
                                        V3d c1, V3d& da, V3d& db, V3d& dc, double& virial) {
  using std::abs;
  using std::sqrt;
  const double total = m_o + 2 * m_h;
  const double rc = 0.5 * hh, height = sqrt(oh * oh - rc * rc);
  const double ra = 2 * m_h * height / total, rb = height - ra;
  const V3d d1 = (m_o / total) * a1 + (m_h / total) * (b1 + c1);
  const V3d a1d = a1 - d1, b1d = b1 - d1, c1d = c1 - d1;
  const V3d ez = unit_vector(cross(b0, c0)), ex = unit_vector(cross(a1d, ez)), ey = cross(ez, ex);
  const double xb0 = dot(b0, ex), yb0 = dot(b0, ey), xc0 = dot(c0, ex), yc0 = dot(c0, ey);
  const double za1 = dot(a1d, ez);
  const double xb1 = dot(b1d, ex), yb1 = dot(b1d, ey), zb1 = dot(b1d, ez);
  const double xc1 = dot(c1d, ex), yc1 = dot(c1d, ey), zc1 = dot(c1d, ez);
  const double sin_phi = za1 / ra;
  const double cos_phi = sqrt(fmax(0.0, 1 - sin_phi * sin_phi));
  const double sin_psi = (zb1 - zc1) / (2 * rc * cos_phi);
  const double cos_psi = sqrt(fmax(0.0, 1 - sin_psi * sin_psi));
  const double ya2 = ra * cos_phi, xb2 = -rc * cos_psi;
  const double yb2 = -rb * cos_phi - rc * sin_psi * sin_phi, yc2 = -rb * cos_phi + rc * sin_psi * sin_phi;
  const double alpha = xb2 * (xb0 - xc0) + yb0 * yb2 + yc0 * yc2;
  const double beta = xb2 * (yc0 - yb0) + xb0 * yb2 + xc0 * yc2;
  const double gamma = xb0 * yb1 - xb1 * yb0 + xc0 * yc1 - xc1 * yc0;
  const double a2b2 = alpha * alpha + beta * beta, discriminant = a2b2 - gamma * gamma;
  if (!(abs(sin_phi) <= 1) || !(abs(sin_psi) <= 1) || !(discriminant >= 0) || !(a2b2 > 0)) return false;
  const double sin_theta = (alpha * gamma - beta * sqrt(discriminant)) / a2b2;
  const double cos_theta = sqrt(fmax(0.0, 1 - sin_theta * sin_theta));
  const double zb3 = -rb * sin_phi + rc * sin_psi * cos_phi, zc3 = -rb * sin_phi - rc * sin_psi * cos_phi;
  auto frame = [&](double u, double v, double s) { return d1 + u * ex + v * ey + s * ez; };
  da = frame(-ya2 * sin_theta, ya2 * cos_theta, za1) - a1;
  db = frame(xb2 * cos_theta - yb2 * sin_theta, xb2 * sin_theta + yb2 * cos_theta, zb3) - b1;
  dc = frame(-xb2 * cos_theta - yc2 * sin_theta, -xb2 * sin_theta + yc2 * cos_theta, zc3) - c1;
  virial = m_h * (dot(b0, db) + dot(c0, dc));
  return true;
}

// A water's three constraints at once: the impulses tau along its bonds (unit vectors e_ab,
// e_ac, e_bc) that leave no relative velocity along any of them, a 3 x 3 linear system solved by
// Cramer's rule (Miyamoto and Kollman's velocity SETTLE, for any masses). r_ab = x_a - x_b etc.
// (minimum images), w the inverse masses; the velocities changed in place; returns the virial
// sum tau |r|.
NBKIT_HOST_DEVICE double settle_velocities(V3d rab, V3d rac, V3d rbc, double wa, double wb, double wc, V3d& va,
                                           V3d& vb, V3d& vc) {
  using std::sqrt;
  const V3d eab = unit_vector(rab), eac = unit_vector(rac), ebc = unit_vector(rbc);
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
  va = va + ((tau[0] * wa) * eab + (tau[1] * wa) * eac);
  vb = vb + ((-tau[0] * wb) * eab + (tau[2] * wb) * ebc);
  vc = vc + ((-tau[1] * wc) * eac + (-tau[2] * wc) * ebc);
  return tau[0] * sqrt(dot(rab, rab)) + tau[1] * sqrt(dot(rac, rac)) + tau[2] * sqrt(dot(rbc, rbc));
}

// What one constraint's correction did in a sweep.
enum class Correction { within, corrected, impossible };

// SHAKE: a constraint off by more than the tolerance moved along its reference vector r0 (r the
// present bond vector, d2 its squared length, tolerance2 twice the relative tolerance). Sets the
// corrections of i (+g wi r0) and j (-g wj r0) as g, adding g |r0|^2 to the virial.
NBKIT_HOST_DEVICE Correction shake_correction(V3d r, V3d r0, double d2, double wi, double wj, double tolerance2,
                                              double& g, double& virial) {
  using std::abs;
  const double difference = d2 - dot(r, r);
  if (abs(difference) <= tolerance2 * d2) return Correction::within;
  const double denominator = 2 * (wi + wj) * dot(r0, r);
  if (!(denominator > 1e-6 * d2 * (wi + wj))) return Correction::impossible;  // turned ~90 degrees in a step
  g = difference / denominator;
  virial += g * dot(r0, r0);
  return Correction::corrected;
}

// RATTLE's velocity half: converged when the bond's length would change by no more than the
// tolerance (relative) over a step dt. Sets the impulse (i gets +impulse wi r, j -impulse wj r).
NBKIT_HOST_DEVICE Correction rattle_correction(V3d r, V3d v_ij, double d, double wi, double wj, double tolerance,
                                               double dt, double& impulse, double& virial) {
  using std::abs;
  const double rv = dot(r, v_ij);
  if (abs(rv) * dt <= tolerance * d * d) return Correction::within;
  impulse = -rv / ((wi + wj) * dot(r, r));
  virial += impulse * dot(r, r);
  return Correction::corrected;
}

constexpr int kConstraintIterations = 1000;

// Gauss-Seidel over one cluster's constraints distances[begin, end) until a sweep finds every one
// within tolerance: correct(constraint) returns its Correction. True when converged.
template <class Correct>
NBKIT_HOST_DEVICE bool converge_cluster(const DistanceConstraint* distances, std::int32_t begin, std::int32_t end,
                                        Correct&& correct) {
  bool converged = false, possible = true;
  for (int iteration = 0; iteration < kConstraintIterations && !converged && possible; ++iteration) {
    converged = true;
    for (std::int32_t k = begin; k < end && possible; ++k) {
      const Correction done = correct(distances[k]);
      converged = converged && done == Correction::within;
      possible = done != Correction::impossible;
    }
  }
  return converged;
}

}  // namespace nbkit::md
