// The kick-drift-kick leapfrog (nbody.hpp): positions and velocities around a force engine.
#include "nbody/leapfrog.hpp"

namespace nbkit::nbody {

void leapfrog_step(Bodies& b, Accelerations& acc, double dt, const ForceOptions& options) {
  ForceEngine forces(options);
  leapfrog_step(b, acc, dt, forces, true);
}

void kick_and_drift(Bodies& b, const Accelerations& acc, double dt, std::size_t first, std::size_t last) {
  const double half = 0.5 * dt;
  for (std::size_t i = first; i < last; ++i) {
    b.vx[i] += half * acc.ax[i], b.vy[i] += half * acc.ay[i], b.vz[i] += half * acc.az[i];
    b.x[i] += dt * b.vx[i], b.y[i] += dt * b.vy[i], b.z[i] += dt * b.vz[i];
  }
}

void kick(Bodies& b, const Accelerations& acc, double dt, std::size_t first, std::size_t last) {
  const double half = 0.5 * dt;
  for (std::size_t i = first; i < last; ++i)
    b.vx[i] += half * acc.ax[i], b.vy[i] += half * acc.ay[i], b.vz[i] += half * acc.az[i];
}

void leapfrog_step(Bodies& b, Accelerations& acc, double dt, ForceEngine& forces, bool with_potential) {
  kick_and_drift(b, acc, dt, 0, b.size());
  forces.compute(b, acc, with_potential);
  kick(b, acc, dt, 0, b.size());
}

}  // namespace nbkit::nbody
