#pragma once
// Hardy's nodal basis functions of the multilevel summation method (Parallel Computing 35:164,
// 2009, Eq 7; Hardy's thesis, UIUC 2006): piecewise polynomials that interpolate (Phi(0) = 1,
// Phi(k) = 0 for other integers k), reproduce polynomials up to their degree and are C1.
// Written once for the host's stages (msm.cpp, periodic_msm.cpp, md/msm.cpp) and the GPU's
// (grids_cuda.cu, interpolation_cuda.cu), so both weigh every atom and point alike.
#include "core/host_device.hpp"

namespace nbkit::maps::msm {

// Phi(t) of piecewise cubic (support 2) or quintic (support 3) interpolation; 0 beyond the support.
NBKIT_HOST_DEVICE double basis_value(bool quintic, double t) {
  const double x = t < 0 ? -t : t, x2 = t * t;
  if (!quintic) {
    if (x <= 1) return (1 - x) * (1 + x - 1.5 * x2);
    if (x <= 2) return -0.5 * (x - 1) * (2 - x) * (2 - x);
    return 0;
  }
  if (x <= 1) return (1 - x2) * (2 - x) * (6 + 3 * x - 5 * x2) / 12;
  if (x <= 2) return -(x - 1) * (2 - x) * (3 - x) * (4 + 9 * x - 5 * x2) / 24;
  if (x <= 3) return (x - 1) * (x - 2) * (3 - x) * (3 - x) * (4 - x) / 24;
  return 0;
}

}  // namespace nbkit::maps::msm
