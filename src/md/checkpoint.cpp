// md::Simulation's checkpoints (simulation.hpp has the contract; io/checkpoint.cpp the file).
#include <fmt/format.h>

#include <cmath>

#include "md/barostat.hpp"
#include "md/engine.hpp"
#include "nbkit/core/error.hpp"
#include "nbkit/md/simulation.hpp"

namespace nbkit::md {

Checkpoint Simulation::checkpoint() {
  if (!molecular_) throw Error("checkpoints are for biomolecular runs (Lennard-Jones runs restart from their data file)");
  // The GPU's steps sum energies only where they are read: a checkpoint keeps its step's.
  if (!engine_->energies_current())
    throw Error("a checkpoint needs its step's energies: take it from Reporters::checkpoint, at a thermo row "
                "or between runs");
  state();
  // Both the run going on and its restart wrap here and rebuild the list at the next step.
  if (molecular_->nonbonded.periodic()) wrap_into_box(system_);
  engine_->rebuild_at_next_evaluation();
  Checkpoint c;
  c.step = step_, c.timestep = integrator_.timestep, c.box = system_.box;
  c.x = system_.x, c.y = system_.y, c.z = system_.z, c.vx = system_.vx, c.vy = system_.vy, c.vz = system_.vz;
  engine_->forces(c.forces);
  c.terms = engine_->energy_terms();
  // `thermostat`: the forces hold LAMMPS's thermostat forces; the calls are whichever stream runs.
  c.thermostat = thermostat_ != nullptr;
  c.thermostat_calls = thermostat_ ? thermostat_->calls() : engine_->noise_calls();
  if (barostat_) {
    c.barostat = true;
    c.barostat_calls = barostat_->calls();
    c.barostat_volume_scale = barostat_->volume_scale();
    c.barostat_attempted = barostat_->window_attempted(), c.barostat_accepted = barostat_->window_accepted();
  }
  return c;
}

void Simulation::restore(const Checkpoint& c) {
  if (!molecular_) throw Error("checkpoints are for biomolecular runs (Lennard-Jones runs restart from their data file)");
  const std::size_t n = system_.size();
  for (const auto* v : {&c.x, &c.y, &c.z, &c.vx, &c.vy, &c.vz, &c.forces.fx, &c.forces.fy, &c.forces.fz})
    if (v->size() != n) throw Error(fmt::format("a checkpoint of {} atoms for a system of {}", v->size(), n));
  for (const auto* v : {&c.x, &c.y, &c.z, &c.vx, &c.vy, &c.vz, &c.forces.fx, &c.forces.fy, &c.forces.fz})
    for (double value : *v)
      if (!std::isfinite(value)) throw Error("the checkpoint holds a value that is not finite");
  if (c.step < 0) throw Error(fmt::format("the checkpoint's step {} is negative", c.step));
  state();
  system_.x = c.x, system_.y = c.y, system_.z = c.z, system_.vx = c.vx, system_.vy = c.vy, system_.vz = c.vz;
  system_.box = c.box;
  step_ = c.step;
  engine_->set_forces(c.forces, c.terms);
  engine_->rebuild_at_next_evaluation();
  if (integrator_.langevin_middle) engine_->resume_noise_at(c.thermostat_calls);
  if (barostat_ && c.barostat)
    barostat_->resume(c.barostat_calls, c.barostat_volume_scale, c.barostat_attempted, c.barostat_accepted);
  if (thermostat_) {
    thermostat_->resume_at(c.thermostat_calls);
    // A checkpoint of an NVE run has no thermostat forces in its forces: add this run's.
    if (!c.thermostat) engine_->apply_thermostat(*thermostat_, integrator_.timestep);
  } else if (c.thermostat) {
    engine_->reevaluate();  // the saved forces hold the old thermostat's: the forces alone
  }
}

}  // namespace nbkit::md
