// Periodic cells from lengths and angles, as DCD, PDB (CRYST1) and MDAnalysis's `dimensions`
// give them (nbkit/analysis.hpp).
#include <cmath>
#include <numbers>
#include <string>

#include "nbkit/analysis.hpp"
#include "nbkit/core/error.hpp"

namespace nbkit::analysis {

namespace {

Vec3 cross(Vec3 u, Vec3 v) { return {u.y * v.z - u.z * v.y, u.z * v.x - u.x * v.z, u.x * v.y - u.y * v.x}; }
double dot(Vec3 u, Vec3 v) { return u.x * v.x + u.y * v.y + u.z * v.z; }

}  // namespace

double Cell::volume() const { return std::fabs(dot(a, cross(b, c))); }

std::array<double, 3> Cell::widths() const {
  const double v = volume();
  return {v / norm(cross(b, c)), v / norm(cross(c, a)), v / norm(cross(a, b))};
}

Cell cell_from_lengths_angles(double a, double b, double c, double alpha, double beta, double gamma) {
  const auto describe = [&] {
    return "a periodic cell of edges " + std::to_string(a) + ", " + std::to_string(b) + ", " + std::to_string(c) +
           " A and angles " + std::to_string(alpha) + ", " + std::to_string(beta) + ", " + std::to_string(gamma) +
           " degrees";
  };
  for (double v : {a, b, c, alpha, beta, gamma})
    if (!std::isfinite(v)) throw Error(describe() + ": not finite");
  if (a <= 0 || b <= 0 || c <= 0) throw Error(describe() + ": an edge is not positive");
  for (double angle : {alpha, beta, gamma})
    if (angle <= 0 || angle >= 180) throw Error(describe() + ": an angle is outside (0, 180) degrees");
  // Exact right angles stay exact (cos 90 degrees would otherwise be 6e-17).
  const auto cosine = [](double degrees) { return degrees == 90 ? 0.0 : std::cos(degrees * std::numbers::pi / 180); };
  const double ca = cosine(alpha), cb = cosine(beta), cg = cosine(gamma);
  const double sg = gamma == 90 ? 1.0 : std::sin(gamma * std::numbers::pi / 180);
  const double cy = (ca - cb * cg) / sg;
  const double cz2 = 1 - cb * cb - cy * cy;
  if (cz2 <= 1e-12) throw Error(describe() + ": the angles span no volume");
  return Cell{{a, 0, 0}, {b * cg, b * sg, 0}, {c * cb, c * cy, c * std::sqrt(cz2)}};
}

std::optional<Cell> cell_from_dcd(const std::array<double, 6>& r) {
  // The record is A, gamma, B, beta, alpha, C (CHARMM's order).
  double alpha = r[4], beta = r[3], gamma = r[1];
  if (r[0] == 0 && r[2] == 0 && r[5] == 0) return std::nullopt;  // no cell: a non-periodic run
  // CHARMM writes the cosines of the angles, NAMD and OpenMM the angles (MDAnalysis's rule).
  if (std::fabs(alpha) <= 1 && std::fabs(beta) <= 1 && std::fabs(gamma) <= 1) {
    alpha = std::acos(alpha) * 180 / std::numbers::pi;
    beta = std::acos(beta) * 180 / std::numbers::pi;
    gamma = std::acos(gamma) * 180 / std::numbers::pi;
    // acos(0) is 90 up to rounding: keep right angles exact
    for (double* angle : {&alpha, &beta, &gamma})
      if (std::fabs(*angle - 90) < 1e-12) *angle = 90;
  }
  return cell_from_lengths_angles(r[0], r[2], r[5], alpha, beta, gamma);
}

}  // namespace nbkit::analysis
