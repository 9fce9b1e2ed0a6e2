// Velocity Verlet (kick, drift, forces, kick) and LAMMPS's Langevin thermostat, for the
// host engines (the reference and the CPU list engine); the GPU engine runs the same steps in
// its kernels (engine_cuda.cu).
#include "md/integrator.hpp"

#include <omp.h>

#include <cmath>

#include "md/langevin_noise.hpp"
#include "nbkit/core/error.hpp"
#include "nbkit/md.hpp"

namespace nbkit::md {

Langevin::Langevin(double temperature, double damping, std::uint64_t seed)
    : temperature_(temperature), damping_(damping), seed_(seed) {
  if (!(temperature >= 0) || !std::isfinite(temperature)) throw Error("Langevin: the temperature must not be negative");
  if (!(damping > 0) || !std::isfinite(damping)) throw Error("Langevin: the damping time must be positive");
}

LangevinDraw Langevin::next_draw(Units units, double dt) {
  if (!(dt > 0)) throw Error("Langevin: the time step must be positive");
  const UnitConstants u = unit_constants(units);
  LangevinDraw draw;
  draw.seed = seed_;
  draw.call = calls_++;
  draw.damping = damping_;
  draw.kick_per_sqrt_mass =
      std::sqrt(24.0 * u.boltzmann * temperature_ / damping_ / dt / u.mv2_to_energy) / u.force_to_acceleration;
  draw.force_to_acceleration = u.force_to_acceleration;
  return draw;
}

void Langevin::apply(const System& s, Forces& forces, double dt) {
  const LangevinDraw draw = next_draw(s.units, dt);
  const std::int64_t n = static_cast<std::int64_t>(s.size());
  // Atom by atom, each with its own counter: any thread count, the same numbers.
#pragma omp parallel for if (n > 65536)
  for (std::int64_t i = 0; i < n; ++i) {
    const double velocity[3] = {s.vx[i], s.vy[i], s.vz[i]};
    double force[3] = {forces.fx[i], forces.fy[i], forces.fz[i]};
    add_langevin_force(draw, static_cast<std::uint32_t>(i), s.mass(i), velocity, force);
    forces.fx[i] = force[0], forces.fy[i] = force[1], forces.fz[i] = force[2];
  }
}


void half_kick(System& s, const Forces& forces, double dt, int threads) {
  const double half = 0.5 * dt * unit_constants(s.units).force_to_acceleration;
  const std::int64_t n = static_cast<std::int64_t>(s.size());
  // Atom by atom, so threads change nothing in the numbers.
#pragma omp parallel for num_threads(resolve_threads(threads)) if (n > 65536)
  for (std::int64_t i = 0; i < n; ++i) {
    const double scale = half / s.mass(i);
    s.vx[i] += scale * forces.fx[i], s.vy[i] += scale * forces.fy[i], s.vz[i] += scale * forces.fz[i];
  }
}

void drift(System& s, double dt, int threads) {
  const std::int64_t n = static_cast<std::int64_t>(s.size());
#pragma omp parallel for num_threads(resolve_threads(threads)) if (n > 65536)
  for (std::int64_t i = 0; i < n; ++i) s.x[i] += dt * s.vx[i], s.y[i] += dt * s.vy[i], s.z[i] += dt * s.vz[i];
}

void verlet_step(System& s, Forces& forces, const ForceField& field, NeighborList& list, double dt, int threads,
                 Langevin* thermostat) {
  half_kick(s, forces, dt, threads);
  drift(s, dt, threads);
  if (list.needs_rebuild(s)) {
    wrap_into_box(s);
    list.build(s, field);
  }
  forces_cpu(s, field, list, forces, threads);
  if (thermostat) thermostat->apply(s, forces, dt);
  half_kick(s, forces, dt, threads);
}

}  // namespace nbkit::md
