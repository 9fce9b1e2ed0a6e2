// Ewald summation in float64 (md/ewald.hpp): the real-space pairs by the minimum image, the
// reciprocal sum over half of the g vectors (S(-g) = S(g)*), the self, excluded-pair and
// background terms, and every force.
#include "md/ewald.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <numbers>

#include "nbkit/core/error.hpp"

namespace nbkit::md {

namespace {

// OpenMM's estimate of the reciprocal sum's error with m vectors along an edge L.
double reciprocal_error(double length, double alpha, double tolerance, int m) {
  const double t = m * std::numbers::pi / (length * alpha);
  return tolerance - 0.05 * std::sqrt(length * alpha) * m * std::exp(-t * t);
}

// The first m where the error estimate drops below the tolerance, searched from 10 both ways
// (OpenMM's findZero).
int smallest_kmax(double length, double alpha, double tolerance) {
  int m = 10;
  double value = reciprocal_error(length, alpha, tolerance, m);
  if (value > 0) {
    while (value > 0 && m > 0) value = reciprocal_error(length, alpha, tolerance, --m);
    return m + 1;
  }
  while (value < 0 && m < 100000) value = reciprocal_error(length, alpha, tolerance, ++m);
  return m;
}

Vec3 minimum_image(Vec3 d, const PeriodicBox& box) {
  for (int a = 0; a < 3; ++a) d[a] -= box.length(a) * std::nearbyint(d[a] / box.length(a));
  return d;
}

}  // namespace

EwaldParameters ewald_parameters(const PeriodicBox& box, double cutoff, double tolerance) {
  if (!(tolerance > 0 && tolerance < 0.5)) throw Error("the Ewald error tolerance must lie between 0 and 0.5");
  if (!(cutoff > 0) || !std::isfinite(cutoff)) throw Error("the Ewald cutoff must be a positive length");
  EwaldParameters p;
  p.alpha = std::sqrt(-std::log(2 * tolerance)) / cutoff;
  for (int a = 0; a < 3; ++a) {
    const double length = box.length(a);
    if (!(length > 0) || !std::isfinite(length)) throw Error("the Ewald box edges must be positive lengths");
    int k = smallest_kmax(length, p.alpha, tolerance);
    if (k % 2 == 0) ++k;
    p.kmax[a] = k;
    p.pme_grid[a] = std::max(6, static_cast<int>(std::ceil(2 * p.alpha * length / (3 * std::pow(tolerance, 0.2)))));
  }
  return p;
}

EwaldEnergy ewald_coulomb(const std::vector<Vec3>& x, const std::vector<double>& q, const PeriodicBox& box,
                          double coulomb_k, double cutoff, const EwaldParameters& p,
                          const std::vector<std::pair<std::int32_t, std::int32_t>>& excluded) {
  const std::size_t n = x.size();
  if (q.size() != n) throw Error(fmt::format("{} charges for {} positions", q.size(), n));
  const double shortest = std::min({box.length(0), box.length(1), box.length(2)});
  if (!(cutoff > 0) || cutoff > shortest / 2)
    throw Error(fmt::format("the Ewald cutoff {} A must be positive and at most half the shortest edge ({} A)", cutoff,
                            shortest));
  if (!(p.alpha > 0) || p.kmax[0] < 1 || p.kmax[1] < 1 || p.kmax[2] < 1)
    throw Error("Ewald parameters: alpha and every kmax must be positive");
  const double pi = std::numbers::pi, volume = box.volume(), alpha = p.alpha;
  EwaldEnergy e;
  e.force.assign(n, Vec3{0, 0, 0});
  e.reciprocal_force.assign(n, Vec3{0, 0, 0});
  // Excluded partners, for the real-space loop.
  std::vector<std::vector<std::int32_t>> partners(n);
  for (const auto& [a, b] : excluded) {
    if (a < 0 || b < 0 || static_cast<std::size_t>(a) >= n || static_cast<std::size_t>(b) >= n || a == b)
      throw Error(fmt::format("excluded pair ({}, {}) outside the {} atoms", a, b, n));
    partners[static_cast<std::size_t>(std::min(a, b))].push_back(std::max(a, b));
  }
  for (auto& p_i : partners) std::sort(p_i.begin(), p_i.end());
  const double two_over_root_pi = 2 / std::sqrt(pi);
  // Real space: k q_i q_j erfc(a r) / r, force / r = k q_i q_j (erfc(a r) / r + 2a/sqrt(pi)
  // exp(-a^2 r^2)) / r^2; excluded pairs: -k q_i q_j erf(a r) / r, its derivative likewise.
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = i + 1; j < n; ++j) {
      const Vec3 d = minimum_image(x[i] - x[j], box);
      const double r2 = d.x * d.x + d.y * d.y + d.z * d.z, r = std::sqrt(r2);
      const double qq = coulomb_k * q[i] * q[j];
      const bool is_excluded = std::binary_search(partners[i].begin(), partners[i].end(), static_cast<std::int32_t>(j));
      const double gauss = two_over_root_pi * alpha * std::exp(-alpha * alpha * r2);
      double force_over_r = 0;
      if (is_excluded) {
        const double erf_r = std::erf(alpha * r) / r;
        e.excluded -= qq * erf_r;
        force_over_r = -qq * (erf_r - gauss) / r2;
      } else if (r < cutoff) {
        const double erfc_r = std::erfc(alpha * r) / r;
        e.real += qq * erfc_r;
        force_over_r = qq * (erfc_r + gauss) / r2;
      }
      e.force[i] = e.force[i] + force_over_r * d;
      e.force[j] = e.force[j] - force_over_r * d;
    }
  double q_sum = 0, q2_sum = 0;
  for (double qi : q) q_sum += qi, q2_sum += qi * qi;
  e.self = -coulomb_k * alpha / std::sqrt(pi) * q2_sum;
  e.background = -coulomb_k * pi * q_sum * q_sum / (2 * volume * alpha * alpha);
  // Reciprocal space over the half space m_x > 0, or m_x = 0 and m_y > 0, or m_x = m_y = 0 and
  // m_z > 0, each vector counted twice (its negative has the conjugate structure factor).
  const double g_unit[3] = {2 * pi / box.length(0), 2 * pi / box.length(1), 2 * pi / box.length(2)};
  const double prefactor = coulomb_k * 2 * pi / volume;
  std::vector<std::complex<double>> phase(n);
  for (int mx = 0; mx < p.kmax[0]; ++mx)
    for (int my = mx == 0 ? 0 : 1 - p.kmax[1]; my < p.kmax[1]; ++my)
      for (int mz = (mx == 0 && my == 0) ? 1 : 1 - p.kmax[2]; mz < p.kmax[2]; ++mz) {
        const Vec3 g{mx * g_unit[0], my * g_unit[1], mz * g_unit[2]};
        const double g2 = g.x * g.x + g.y * g.y + g.z * g.z;
        const double weight = 2 * prefactor * std::exp(-g2 / (4 * alpha * alpha)) / g2;
        std::complex<double> s{0, 0};
        for (std::size_t j = 0; j < n; ++j) {
          const double angle = g.x * x[j].x + g.y * x[j].y + g.z * x[j].z;
          phase[j] = {std::cos(angle), std::sin(angle)};
          s += q[j] * phase[j];
        }
        const double term = weight * std::norm(s);
        e.reciprocal += term;
        // Scaling x and the box by lambda scales g^2 by 1/lambda^2 and V by lambda^3:
        // d(term)/dlambda = term (-1 + g^2 / (2 alpha^2)) (Essmann et al., eq. 2.8's trace).
        e.reciprocal_virial += term * (1 - g2 / (2 * alpha * alpha));
        // F_j = -dE/dx_j = 2 weight q_j g Im(conj(S) exp(i g x_j)) (weight counts both g, -g).
        for (std::size_t j = 0; j < n; ++j) {
          const double im = (std::conj(s) * phase[j]).imag();
          e.reciprocal_force[j] = e.reciprocal_force[j] + (2 * weight * q[j] * im) * g;
        }
      }
  for (std::size_t j = 0; j < n; ++j) e.force[j] = e.force[j] + e.reciprocal_force[j];
  return e;
}

}  // namespace nbkit::md
