#pragma once
// The cardinal B-splines of smooth particle-mesh Ewald (Essmann et al., J. Chem. Phys. 103, 8577
// (1995), sec. 3 and eq. 4.1), written once for the CPU mesh (pme.cpp) and the GPU's
// (cuda/pme.cu): a point at mesh coordinate u = cell + w, 0 <= w < 1, spreads onto the mesh
// points cell - j, j = 0..order-1, with the weights M_n(w + j) and their derivatives d/du.
// Internal.
#include "core/host_device.hpp"

namespace nbkit::md {

constexpr int kMaxPmeOrder = 6;

// M_2(w + j): w, 1 - w; then M_{m+1}(x) = (x M_m(x) + (m + 1 - x) M_m(x - 1)) / m at x = w + j
// (de Boor's recurrence), the derivative M_n'(x) = M_{n-1}(x) - M_{n-1}(x - 1) taken from the
// order below. `value` and `derivative` hold `order` (4..6) entries.
NBKIT_HOST_DEVICE void bspline_weights(int order, double w, double* value, double* derivative) {
  double v[kMaxPmeOrder + 2] = {w, 1 - w, 0, 0, 0, 0, 0, 0};
  for (int m = 2; m < order; ++m) {
    if (m == order - 1)
      for (int j = 0; j < order; ++j) derivative[j] = (j < m ? v[j] : 0.0) - (j > 0 ? v[j - 1] : 0.0);
    double next[kMaxPmeOrder + 2] = {};
    for (int j = 0; j <= m; ++j) {
      const double x = w + j;
      next[j] = (x * (j < m ? v[j] : 0.0) + (m + 1 - x) * (j > 0 ? v[j - 1] : 0.0)) / m;
    }
    for (int j = 0; j <= m; ++j) v[j] = next[j];
  }
  for (int j = 0; j < order; ++j) value[j] = v[j];
}

}  // namespace nbkit::md
