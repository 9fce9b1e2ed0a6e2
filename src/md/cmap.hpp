#pragma once
// CMAP, the tabulated correction E(phi, psi) of CHARMM and AMBER ff19SB (md/topology.hpp's
// CmapGrid), written once for the float64 reference, the CPU and the CUDA kernel.
//
// Between grid points the energy is a bicubic patch (Press et al., Numerical Recipes, 3rd ed.,
// section 3.6.3): on each cell it matches the grid's values and, at the four corners, the first
// derivatives along phi and psi and the cross derivative. Those derivatives are taken, as CHARMM
// and OpenMM take them, from periodic cubic splines: d/dphi from a spline through each grid
// column (psi fixed), d/dpsi through each row, and d2/dphi dpsi from a spline along phi through
// the d/dpsi values. The energy is then C1 everywhere, so dynamics conserves it.
#include <cmath>
#include <cstdint>
#include <vector>

#include "core/host_device.hpp"

namespace nbkit::md {

// The 16 coefficients of every cell of a size x size grid (energy[a * size + b] as CmapGrid):
// cell (a, b), whose corner is grid point (a, b), has
//   E(u, v) = sum_{m,n=0..3} c[16 (a size + b) + 4 m + n] u^m v^n,   u, v in [0, 1)
// with u = (phi - phi_a) / delta, v = (psi - psi_b) / delta, delta = 2 pi / size.
std::vector<double> cmap_coefficients(std::int32_t size, const std::vector<double>& energy);

// The energy of a map at (phi, psi) (radians, any range: wrapped by 2 pi) and its derivatives.
template <class Real>
NBKIT_HOST_DEVICE Real cmap_energy(const double* coefficients, std::int32_t size, Real phi, Real psi, Real& de_dphi,
                                   Real& de_dpsi) {
  using std::floor;
  const Real pi = Real(3.14159265358979323846), two_pi = Real(2) * pi;
  const Real delta = two_pi / Real(size);
  // Distances from the grid's first point, -pi, wrapped into [0, 2 pi); the cell index is kept
  // below size where rounding puts 2 pi - tiny at 2 pi.
  Real a = phi + pi, b = psi + pi;
  a -= two_pi * floor(a / two_pi), b -= two_pi * floor(b / two_pi);
  int s = static_cast<int>(a / delta), t = static_cast<int>(b / delta);
  s = s < size ? s : size - 1, t = t < size ? t : size - 1;
  const Real u = a / delta - Real(s), v = b / delta - Real(t);
  const double* c = coefficients + 16 * (static_cast<std::int64_t>(s) * size + t);
  // Horner in u over polynomials in v.
  Real e = 0, du = 0, dv = 0;
  for (int m = 3; m >= 0; --m) {
    const double* row = c + 4 * m;
    const Real p = ((Real(row[3]) * v + Real(row[2])) * v + Real(row[1])) * v + Real(row[0]);
    const Real dp = (Real(3) * Real(row[3]) * v + Real(2) * Real(row[2])) * v + Real(row[1]);
    du = du * u + e;  // d/du of the Horner sum, built alongside it
    e = e * u + p;
    dv = dv * u + dp;
  }
  de_dphi = du / delta, de_dpsi = dv / delta;
  return e;
}

}  // namespace nbkit::md
