#pragma once
// The density and occupancy laws at one lattice point, written once for the CPU threads
// (density.cpp) and the CUDA kernel (density_cuda.cu): the atoms in cells of at least the
// longest reach, the 27 cells around the point gathered in a fixed order (cell by cell, atoms in
// file order), so a point's sum is the same on every run and any thread or GPU count.
#include <cstdint>

#include "core/host_device.hpp"

namespace nbkit::maps::density {

// Atoms sorted by cell, relative to the lattice origin (Angstrom). amplitude: w (2 pi s^2)^-3/2;
// exponent: 1 / (2 s^2); reach2: the squared distance within which the atom counts (25 s^2 for a
// Gaussian, the sphere's radius squared for occupancy).
struct Cells {
  int n[3] = {1, 1, 1};
  double lo[3] = {0, 0, 0}, size = 1;  // the grid's corner and cell edge (>= every reach)
  const std::int32_t* start = nullptr;  // cells + 1
  const double *x = nullptr, *y = nullptr, *z = nullptr, *amplitude = nullptr, *exponent = nullptr, *reach2 = nullptr;
};

// Gaussian densities summed (occupancy false), or 1 if any sphere holds the point (occupancy).
template <class Exp>
NBKIT_HOST_DEVICE double density_at(const Cells& g, double px, double py, double pz, bool occupancy, Exp&& exp) {
  const double p[3] = {px, py, pz};
  int c[3];
  for (int k = 0; k < 3; ++k) {
    const double f = (p[k] - g.lo[k]) / g.size;
    if (f < -1.0 || f >= g.n[k] + 1.0) return 0.0;  // more than a cell beyond every atom's cell
    c[k] = f < 0 ? -1 : static_cast<int>(f);
  }
  double sum = 0;
  for (int a = c[0] - 1; a <= c[0] + 1; ++a) {
    if (a < 0 || a >= g.n[0]) continue;
    for (int b = c[1] - 1; b <= c[1] + 1; ++b) {
      if (b < 0 || b >= g.n[1]) continue;
      for (int d = c[2] - 1; d <= c[2] + 1; ++d) {
        if (d < 0 || d >= g.n[2]) continue;
        const int cell = (a * g.n[1] + b) * g.n[2] + d;
        for (std::int32_t s = g.start[cell]; s < g.start[cell + 1]; ++s) {
          const double dx = g.x[s] - px, dy = g.y[s] - py, dz = g.z[s] - pz;
          const double r2 = dx * dx + dy * dy + dz * dz;
          if (r2 > g.reach2[s]) continue;
          if (occupancy) return 1.0;
          sum += g.amplitude[s] * exp(-r2 * g.exponent[s]);
        }
      }
    }
  }
  return sum;
}

}  // namespace nbkit::maps::density
