// The bicubic cells of a CMAP grid (md/cmap.hpp): derivatives from periodic cubic splines, then
// each cell's 16 coefficients from the cubic Hermite basis.
#include "md/cmap.hpp"

#include <array>
#include <cmath>

#include "nbkit/core/error.hpp"

namespace nbkit::md {

namespace {

// The first derivatives at the knots of the periodic cubic spline through y_0 .. y_{n-1}
// (spacing h, y_n = y_0). The spline's second derivatives M solve the cyclic system
//   M_{k-1} + 4 M_k + M_{k+1} = 6 (y_{k+1} - 2 y_k + y_{k-1}) / h^2,
// strictly diagonally dominant, so Gaussian elimination without pivoting is stable; n is a
// map's side (24 for CHARMM36 and ff19SB), so the dense O(n^3) solve costs microseconds once.
// Then y'(x_k) = (y_{k+1} - y_k) / h - h (2 M_k + M_{k+1}) / 6.
std::vector<double> periodic_spline_slopes(const std::vector<double>& y, double h) {
  const std::size_t n = y.size();
  std::vector<double> a(n * n, 0.0), m(n);
  for (std::size_t k = 0; k < n; ++k) {
    const std::size_t prev = (k + n - 1) % n, next = (k + 1) % n;
    a[k * n + prev] += 1, a[k * n + k] += 4, a[k * n + next] += 1;
    m[k] = 6 * (y[next] - 2 * y[k] + y[prev]) / (h * h);
  }
  for (std::size_t col = 0; col < n; ++col)
    for (std::size_t row = col + 1; row < n; ++row) {
      const double factor = a[row * n + col] / a[col * n + col];
      if (factor == 0) continue;
      for (std::size_t k = col; k < n; ++k) a[row * n + k] -= factor * a[col * n + k];
      m[row] -= factor * m[col];
    }
  for (std::size_t row = n; row-- > 0;) {
    double sum = m[row];
    for (std::size_t k = row + 1; k < n; ++k) sum -= a[row * n + k] * m[k];
    m[row] = sum / a[row * n + row];
  }
  std::vector<double> slope(n);
  for (std::size_t k = 0; k < n; ++k) {
    const std::size_t next = (k + 1) % n;
    slope[k] = (y[next] - y[k]) / h - h * (2 * m[k] + m[next]) / 6;
  }
  return slope;
}

// The cubic Hermite basis on [0, 1], as coefficients of 1, t, t^2, t^3: value at the near end
// (t = 0), value at the far end, slope at the near end, slope at the far end.
constexpr std::array<std::array<double, 4>, 4> kHermite{{{1, 0, -3, 2}, {0, 0, 3, -2}, {0, 1, -2, 1}, {0, 0, -1, 1}}};

}  // namespace

std::vector<double> cmap_coefficients(std::int32_t size, const std::vector<double>& energy) {
  if (size < 4 || energy.size() != static_cast<std::size_t>(size) * size)
    throw Error("a CMAP grid needs size^2 values and a side of at least 4");
  const std::size_t n = static_cast<std::size_t>(size);
  const double h = 2 * 3.14159265358979323846 / size;
  auto at = [n](std::size_t a, std::size_t b) { return (a % n) * n + b % n; };
  std::vector<double> d_phi(n * n), d_psi(n * n), d_phi_psi(n * n), line(n);
  for (std::size_t b = 0; b < n; ++b) {  // along phi, psi fixed
    for (std::size_t a = 0; a < n; ++a) line[a] = energy[at(a, b)];
    const auto s = periodic_spline_slopes(line, h);
    for (std::size_t a = 0; a < n; ++a) d_phi[at(a, b)] = s[a];
  }
  for (std::size_t a = 0; a < n; ++a) {  // along psi, phi fixed
    for (std::size_t b = 0; b < n; ++b) line[b] = energy[at(a, b)];
    const auto s = periodic_spline_slopes(line, h);
    for (std::size_t b = 0; b < n; ++b) d_psi[at(a, b)] = s[b];
  }
  for (std::size_t b = 0; b < n; ++b) {  // d/dphi of d/dpsi
    for (std::size_t a = 0; a < n; ++a) line[a] = d_psi[at(a, b)];
    const auto s = periodic_spline_slopes(line, h);
    for (std::size_t a = 0; a < n; ++a) d_phi_psi[at(a, b)] = s[a];
  }
  // E(u, v) = sum over the corners (ca, cb) of
  //   E H_ca(u) H_cb(v) + h E_phi G_ca(u) H_cb(v) + h E_psi H_ca(u) G_cb(v) + h^2 E_phipsi G_ca(u) G_cb(v)
  // with H the value basis and G the slope basis (the slopes scaled to the unit cell by h).
  std::vector<double> c(16 * n * n, 0.0);
  for (std::size_t a = 0; a < n; ++a)
    for (std::size_t b = 0; b < n; ++b) {
      double* cell = c.data() + 16 * (a * n + b);
      for (int ca = 0; ca < 2; ++ca)
        for (int cb = 0; cb < 2; ++cb) {
          const std::size_t corner = at(a + ca, b + cb);
          const double values[4] = {energy[corner], h * d_phi[corner], h * d_psi[corner], h * h * d_phi_psi[corner]};
          const std::array<double, 4>* u_basis[4] = {&kHermite[ca], &kHermite[2 + ca], &kHermite[ca], &kHermite[2 + ca]};
          const std::array<double, 4>* v_basis[4] = {&kHermite[cb], &kHermite[cb], &kHermite[2 + cb], &kHermite[2 + cb]};
          for (int kind = 0; kind < 4; ++kind)
            for (int m = 0; m < 4; ++m)
              for (int k = 0; k < 4; ++k) cell[4 * m + k] += values[kind] * (*u_basis[kind])[m] * (*v_basis[kind])[k];
        }
    }
  return c;
}

}  // namespace nbkit::md
