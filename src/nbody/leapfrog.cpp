// The kick-drift-kick leapfrog (nbody.hpp): positions and velocities around a force engine.
#include "nbkit/nbody.hpp"

namespace nbkit::nbody {

void leapfrog_step(Bodies& b, Accelerations& acc, double dt, const ForceOptions& options) {
  ForceEngine forces(options);
  leapfrog_step(b, acc, dt, forces, true);
}

void leapfrog_step(Bodies& b, Accelerations& acc, double dt, ForceEngine& forces, bool with_potential) {
  const std::size_t n = b.size();
  const double half = 0.5 * dt;
  for (std::size_t i = 0; i < n; ++i) {
    b.vx[i] += half * acc.ax[i], b.vy[i] += half * acc.ay[i], b.vz[i] += half * acc.az[i];
    b.x[i] += dt * b.vx[i], b.y[i] += dt * b.vy[i], b.z[i] += dt * b.vz[i];
  }
  forces.compute(b, acc, with_potential);
  for (std::size_t i = 0; i < n; ++i)
    b.vx[i] += half * acc.ax[i], b.vy[i] += half * acc.ay[i], b.vz[i] += half * acc.az[i];
}

}  // namespace nbkit::nbody
