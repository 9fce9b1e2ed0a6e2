#pragma once
// The one interface behind md::Simulation: an engine steps the System it was built on (the
// reference and CPU engines in place, the GPU engine on the device, bringing the atoms back
// on sync_host). New engines (a multi-GPU domain decomposition, PME on the GPU) implement
// this and are chosen in simulation.cpp. Internal to the library.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "nbkit/core/error.hpp"
#include "nbkit/md.hpp"
#include "nbkit/md/molecular_forces.hpp"
#include "nbkit/md/simulation.hpp"

namespace nbkit::md {

class MonteCarloBarostat;

class Engine {
 public:
  virtual ~Engine() = default;
  // v += f/m dt/2, x += v dt, forces (energies and virial too when `energies`; the
  // thermostat's forces added when given), v += f/m dt/2.
  virtual void step(double dt, bool energies, Langevin* thermostat) = 0;
  // Adds the thermostat's forces to the present ones (the setup's evaluation, as LAMMPS).
  virtual void apply_thermostat(Langevin& thermostat, double dt) = 0;
  // Thermo of the present atoms with the energies of the last evaluation that had them.
  virtual Thermo thermo(std::int64_t step) const = 0;
  // Brings positions and velocities into the System the engine was built on.
  virtual void sync_host() = 0;
  virtual void forces(Forces& out) const = 0;
  virtual std::int64_t builds() const = 0;
  virtual std::string description() const = 0;
  // Each term's energy at the last evaluation with energies, for engines of biomolecular
  // systems (empty for the Lennard-Jones engines).
  virtual std::optional<EnergyTerms> energy_terms() const { return std::nullopt; }
  // Whether the System's box is always the engine's present one, even while the atoms are on
  // a device (Simulation::box need not bring them to the host).
  virtual bool box_on_host() const { return false; }
  // The energy and forces again at the System's present positions (with energies; no
  // thermostat), after a caller moved the atoms: the minimiser's evaluation. Biomolecular
  // engines only.
  virtual void reevaluate() { throw Error("energy minimisation is for biomolecular systems"); }
  // Checkpoints (biomolecular engines): the pair list is rebuilt at the next evaluation, as a
  // restarted engine's is; and a restart's forces (the thermostat's included) and terms replace
  // the present ones.
  virtual void rebuild_at_next_evaluation() { throw Error("checkpoints are for biomolecular runs"); }
  virtual void set_forces(const Forces&, const std::optional<EnergyTerms>&) {
    throw Error("checkpoints are for biomolecular runs");
  }
  // The Langevin-middle integrator's draws so far, and a restart's (biomolecular engines).
  virtual std::uint64_t noise_calls() const { return 0; }
  virtual void resume_noise_at(std::uint64_t) {}
  // Constraints (biomolecular engines): how many, the largest relative deviation now, and the
  // present positions and velocities put on them (then the forces again).
  virtual std::int64_t constraint_count() const { return 0; }
  virtual double largest_constraint_deviation() const { return 0; }
  // Whether the last step summed the energies (Engine::step's flag; engines that always sum
  // them say true).
  virtual bool energies_current() const { return true; }
  // Before a run's first step (biomolecular engines with constraints): the constraint forces'
  // virial at the start, which no step has made yet, estimated for the step-0 row's pressure.
  virtual void estimate_start_constraint_virial(double /*dt*/) {}
  virtual void apply_constraints() {}
  // Phase timing (biomolecular engines; SimulationOptions::time_phases).
  virtual void time_phases() {}
  virtual std::optional<StepPhases> step_phases() const { return std::nullopt; }
  // One Monte Carlo volume move (biomolecular engines); true when kept.
  virtual bool barostat_move(MonteCarloBarostat&) { throw Error("a barostat is for biomolecular runs"); }
};

// What a biomolecular engine integrates besides velocity Verlet: constraints, and the
// Langevin-middle integrator in place of it.
struct MolecularDynamics {
  ConstraintSet constraints;
  std::optional<Integrator::LangevinMiddleSettings> langevin_middle;
};

// Each engine evaluates the first forces (with energies) when built. `system` must outlive it.
std::unique_ptr<Engine> make_reference_engine(System& system, const ForceField& field);
std::unique_ptr<Engine> make_cpu_engine(System& system, const ForceField& field, double skin, int threads);
std::unique_ptr<Engine> make_gpu_engine(System& system, const ForceField& field, double skin,
                                        const GpuEngine::Options& options);
// A biomolecular system (md/molecular_engine.cpp): its energy and forces every step on the
// reference or cpu backend (a cell list with `skin`), or on GPU `gpu` (backend cuda; a pair list
// with `skin` for periodic systems, in mixed precision where `single`).
std::unique_ptr<Engine> make_molecular_engine(System& system, const MolecularForceField& field, Backend backend,
                                              int threads, int gpu, double skin, bool single = false,
                                              MolecularDynamics dynamics = {});

}  // namespace nbkit::md
