// nbody::accelerations: checks the request and picks the backend; the float64 reference.
#include "nbody/forces.hpp"

#include <fmt/format.h>

#include <cmath>

#include "nbkit/core/error.hpp"
#include "nbody/gravity.hpp"

namespace nbkit::nbody {

void accelerations_reference(const Bodies& b, double softening, Accelerations& out) {
  const std::size_t n = b.size();
  out.resize(n);
  const double eps2 = softening * softening;
  for (std::size_t i = 0; i < n; ++i) {
    double ax = 0, ay = 0, az = 0, phi = 0;
    for (std::size_t j = 0; j < n; ++j) {
      if (j == i) continue;
      const double dx = b.x[j] - b.x[i], dy = b.y[j] - b.y[i], dz = b.z[j] - b.z[i];
      const double inverse_distance = 1 / std::sqrt(dx * dx + dy * dy + dz * dz + eps2);
      const double s = gravity_acceleration_factor(b.mass[j], inverse_distance);
      ax += s * dx, ay += s * dy, az += s * dz;
      phi += gravity_potential_term(b.mass[j], inverse_distance);
    }
    out.ax[i] = ax, out.ay[i] = ay, out.az[i] = az, out.potential[i] = -phi;
  }
}

void accelerations(const Bodies& bodies, const ForceOptions& options, Accelerations& out) {
  if (!(options.softening > 0) || !std::isfinite(options.softening))
    throw Error(fmt::format("softening must be a positive length (N-body units), got {}", options.softening));
  if (options.threads < 0) throw Error("thread count must be zero (all) or positive");
  switch (options.backend) {
    case Backend::reference: accelerations_reference(bodies, options.softening, out); return;
    case Backend::automatic:
    case Backend::cpu:
      accelerations_cpu(bodies, options.softening, options.precision == Precision::double_,
                        options.threads > 0 ? options.threads : hardware_threads(), out);
      return;
    case Backend::cuda:
      throw Error("--backend cuda: the GPU N-body path is not in this version yet; use --backend cpu");
  }
}

const char* nbody_cpu_target_name() { return nbody_cpu_target(); }

}  // namespace nbkit::nbody
