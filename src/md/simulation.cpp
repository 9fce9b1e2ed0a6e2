// md::Simulation: the backend chosen once, the engine built behind md::Engine, and the step
// loop with its thermo rows, frames and progress (what `nbkit md` used to do itself).
#include "nbkit/md/simulation.hpp"

#include <fmt/format.h>

#include <chrono>
#include <cmath>

#include "md/barostat.hpp"
#include "md/engine.hpp"
#include "md/molecules.hpp"
#include "md/force_field.hpp"
#include "nbkit/core/error.hpp"
#include "nbkit/core/memory.hpp"

namespace nbkit::md {

namespace {

bool fits_gpu_engine(const System& system, const ForceField& field, double skin) {
  for (int a = 0; a < 3; ++a)
    if (!(system.box.length(a) > 2 * (field.reach() + skin))) return false;
  return true;
}

// A thermo row that is not finite ends the run: the atoms overlapped or the step is too long.
void check_finite(const Thermo& t) {
  if (std::isfinite(t.temperature) && std::isfinite(t.potential) && std::isfinite(t.pressure)) return;
  throw Error(fmt::format("step {}: the energy or pressure is not finite (T {}, PotEng {}, Press {}): atoms overlap or "
                          "the time step is too long; the outputs hold the steps before",
                          t.step, t.temperature, t.potential, t.pressure));
}

}  // namespace

Backend choose_backend(const System& system, const ForceField& field, const SimulationOptions& options,
                       std::string* notice) {
  if (options.gpus.size() > 1)
    throw Error(fmt::format("--gpus: MD runs on one GPU; {} were named", options.gpus.size()));
  if (!options.gpus.empty() && (options.backend == Backend::cpu || options.backend == Backend::reference))
    throw Error("--gpus picks GPUs for --backend auto or cuda, not " + to_string(options.backend));
  std::string why;
  Backend backend = resolve_backend(options.backend, &why);
  if (options.backend == Backend::automatic && backend == Backend::cuda &&
      !fits_gpu_engine(system, field, options.skin)) {
    backend = Backend::cpu;
    why = "the box is not longer than twice (cutoff + skin) along every axis, which the GPU engine needs; running on "
          "the CPU";
  }
  if (backend == Backend::cuda) resolve_gpu(options.gpus);  // a usable GPU, the index checked, as every engine's
  // Asked for by name, the host engines refuse single precision; --backend auto on the CPU
  // computes in double (the GPU's arithmetic is what --precision picks).
  if (backend != Backend::cuda && options.backend != Backend::automatic && options.precision == Precision::single)
    throw Error(fmt::format("--precision single: the {} MD engine computes in double; leave --precision out or use "
                            "--backend cuda",
                            to_string(backend)));
  if (notice) *notice = backend == Backend::cpu && options.backend == Backend::automatic ? why : std::string();
  return backend;
}

double RunSummary::atom_steps_per_second() const {
  return seconds > 0 ? static_cast<double>(atoms) * static_cast<double>(steps) / seconds : 0.0;
}

void Simulation::check_integrator() const {
  if (!(integrator_.timestep > 0) || !std::isfinite(integrator_.timestep))
    throw Error(fmt::format("the time step must be positive, got {}", integrator_.timestep));
  if (integrator_.langevin && integrator_.langevin_middle)
    throw Error("one thermostat at a time: LAMMPS's Langevin or the Langevin-middle integrator");
  if (const auto& m = integrator_.langevin_middle) {
    if (!(m->temperature >= 0) || !std::isfinite(m->temperature))
      throw Error(fmt::format("Langevin middle: the temperature must not be negative, got {}", m->temperature));
    if (!(m->friction >= 0) || !std::isfinite(m->friction))
      throw Error(fmt::format("Langevin middle: the friction must not be negative, got {}", m->friction));
  }
  if (integrator_.barostat && integrator_.langevin)
    throw Error("the barostat runs with the Langevin-middle integrator or NVE, not LAMMPS's Langevin (whose forces "
                "a volume move's evaluation would drop)");
  if (!molecular_ && (integrator_.langevin_middle || integrator_.constraints.any() || integrator_.barostat))
    throw Error("constraints, the Langevin-middle integrator and the barostat are for biomolecular runs");
}

// The thermostat, and its forces added to the engine's first evaluation (as LAMMPS's setup).
void Simulation::start_thermostat() {
  if (!integrator_.langevin) return;
  thermostat_ = std::make_unique<Langevin>(integrator_.langevin->temperature, integrator_.langevin->damping,
                                           integrator_.langevin->seed);
  engine_->apply_thermostat(*thermostat_, integrator_.timestep);
}

Simulation::Simulation(System system, MolecularForceField field, Integrator integrator, SimulationOptions options)
    : system_(std::move(system)),
      molecular_(std::make_unique<MolecularForceField>(std::move(field))),
      integrator_(integrator) {
  check_integrator();
  if (options.gpus.size() > 1)
    throw Error(fmt::format("--gpus: MD runs on one GPU; {} were named", options.gpus.size()));
  if (!options.gpus.empty() && (options.backend == Backend::cpu || options.backend == Backend::reference))
    throw Error("--gpus picks GPUs for --backend auto or cuda, not " + to_string(options.backend));
  // automatic: the GPU when one is usable and the system is periodic (the GPU's pair list; a
  // molecule in vacuum has every pair tested there, which the CPU's cell list beats beyond a few
  // thousand atoms: docs/performance.md), or when --gpus names one; else the CPU.
  const bool periodic = molecular_->nonbonded.periodic();
  if (options.backend == Backend::reference) {
    backend_ = Backend::reference;
  } else if (options.backend == Backend::cuda || !options.gpus.empty()) {
    backend_ = Backend::cuda;
  } else if (options.backend == Backend::automatic && periodic) {
    backend_ = resolve_backend(Backend::automatic, nullptr);
  } else {
    backend_ = Backend::cpu;
  }
  // The GPU's arithmetic: mixed precision (float32 pairs, float64 sums) by default for periodic
  // systems, as the Lennard-Jones engine's single; float64 when asked, and always without a box.
  if (options.precision == Precision::single && backend_ != Backend::cuda && options.backend != Backend::automatic)
    throw Error(fmt::format("--precision single: the {} biomolecular engine computes in double; use --backend cuda",
                            to_string(backend_)));
  if (options.precision == Precision::single && backend_ == Backend::cuda && !periodic)
    throw Error("--precision single: without a periodic box the GPU sums every pair in double; leave --precision out");
  const bool single = backend_ == Backend::cuda && periodic && options.precision != Precision::double_;
  const int gpu = backend_ == Backend::cuda ? resolve_gpu(options.gpus).index : 0;
  const int threads = resolve_threads(options.threads);
  // The system, the topology's terms, each thread's force array, the cell list (~2 x 300 pairs of
  // 4 bytes per atom at a 10 A cutoff in water).
  const auto n = static_cast<std::uint64_t>(system_.size());
  check_memory(n * (200 + 24 * static_cast<std::uint64_t>(threads) + 2400),
               fmt::format("an MD run of {} atoms ({})", system_.size(), molecular_->topology.source));
  if (!(options.skin >= 0) || !std::isfinite(options.skin))
    throw Error(fmt::format("the neighbour skin must not be negative, got {}", options.skin));
  MolecularDynamics dynamics;
  dynamics.constraints = find_constraints(molecular_->topology, integrator_.constraints);
  dynamics.langevin_middle = integrator_.langevin_middle;
  engine_ = make_molecular_engine(system_, *molecular_, backend_, threads, gpu, options.skin, single,
                                  std::move(dynamics));
  if (options.time_phases) engine_->time_phases();
  if (integrator_.barostat) {
    if (!periodic) throw Error("a barostat needs a periodic box (cutoff-periodic, PME or MSM)");
    barostat_ = std::make_unique<MonteCarloBarostat>(
        *integrator_.barostat, system_.box.volume(), static_cast<std::int64_t>(find_molecules(molecular_->topology).size()));
  }
  start_thermostat();
}

std::optional<EnergyTerms> Simulation::energy_terms() const { return engine_->energy_terms(); }

Simulation::Simulation(System system, ForceField field, Integrator integrator, SimulationOptions options)
    : system_(std::move(system)), field_(std::move(field)), integrator_(integrator) {
  check_force_field(system_, field_);
  check_integrator();
  if (!(options.skin >= 0) || !std::isfinite(options.skin))
    throw Error(fmt::format("the neighbour skin must not be negative, got {}", options.skin));
  backend_ = choose_backend(system_, field_, options, &notice_);
  const int threads = resolve_threads(options.threads);
  check_memory(run_memory_bytes(system_, field_, options.skin, backend_ == Backend::cpu ? threads : 1),
               fmt::format("an MD run of {} atoms{}", system_.size(), backend_ == Backend::cuda ? " (host copy)" : ""));
  switch (backend_) {
    case Backend::reference: engine_ = make_reference_engine(system_, field_); break;
    case Backend::cuda: {
      GpuEngine::Options gpu;
      gpu.device = options.gpus.empty() ? 0 : options.gpus.front();  // checked by choose_backend
      gpu.double_precision = options.precision == Precision::double_;
      engine_ = make_gpu_engine(system_, field_, options.skin, gpu);
      downloaded_ = false;
      break;
    }
    default: engine_ = make_cpu_engine(system_, field_, options.skin, threads); break;
  }
  start_thermostat();
}

Simulation::~Simulation() = default;

RunSummary Simulation::run(std::int64_t steps, const Reporters& reporters) {
  if (steps < 0) throw Error(fmt::format("a run of {} steps: the step count must not be negative", steps));
  if (reporters.thermo_every < 0 || reporters.frame_every < 0 || reporters.checkpoint_every < 0)
    throw Error("thermo, frame and checkpoint intervals must not be negative");
  const std::int64_t first = step_, last = step_ + steps;
  auto report_thermo = [&] {
    const Thermo t = engine_->thermo(step_);
    check_finite(t);
    if (reporters.thermo) reporters.thermo(t);
  };
  auto report_frame = [&] {
    if (!reporters.frame || reporters.frame_every == 0 || step_ % reporters.frame_every != 0) return;
    reporters.frame(state(), step_);
  };
  // The first frame before the first thermo row: a start that is not finite keeps its frame.
  if (first == 0) report_frame();
  if (first == 0) engine_->estimate_start_constraint_virial(integrator_.timestep);
  report_thermo();
  const auto start = std::chrono::steady_clock::now();
  for (std::int64_t done = 1; done <= steps; ++done) {
    const std::int64_t next = step_ + 1;
    // Energies where a row is reported, at the run's last step (thermo() after a run), before
    // a barostat move (its Metropolis test starts from the present potential energy) and where
    // a checkpoint keeps them (a restart's first row reports them).
    const bool thermo_step = next == last || (reporters.thermo_every > 0 && next % reporters.thermo_every == 0);
    const bool barostat_step = barostat_ && next % barostat_->settings().frequency == 0;
    const bool checkpoint_step =
        reporters.checkpoint && reporters.checkpoint_every > 0 && next % reporters.checkpoint_every == 0;
    engine_->step(integrator_.timestep, thermo_step || barostat_step || checkpoint_step, thermostat_.get());
    step_ = next;
    if (barostat_step) engine_->barostat_move(*barostat_);
    downloaded_ = backend_ != Backend::cuda;
    if (thermo_step) report_thermo();
    report_frame();
    if (reporters.checkpoint && reporters.checkpoint_every > 0 && step_ % reporters.checkpoint_every == 0)
      reporters.checkpoint(step_);
    if (reporters.progress) reporters.progress(static_cast<double>(done) / static_cast<double>(steps));
  }
  RunSummary summary;
  summary.atoms = static_cast<std::int64_t>(system_.size());
  summary.steps = steps;
  summary.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return summary;
}

const System& Simulation::state() {
  if (!downloaded_) engine_->sync_host(), downloaded_ = true;
  return system_;
}

const PeriodicBox& Simulation::box() {
  if (engine_->box_on_host()) return system_.box;
  return state().box;
}

Thermo Simulation::thermo() const { return engine_->thermo(step_); }
std::int64_t Simulation::constraint_count() const { return engine_->constraint_count(); }
double Simulation::largest_constraint_deviation() const { return engine_->largest_constraint_deviation(); }
std::optional<StepPhases> Simulation::step_phases() const { return engine_->step_phases(); }
std::optional<BarostatTally> Simulation::barostat_tally() const {
  if (!barostat_) return std::nullopt;
  BarostatTally t;
  t.attempted = barostat_->attempted(), t.accepted = barostat_->accepted();
  t.volume_scale = barostat_->volume_scale();
  return t;
}
void Simulation::forces(Forces& out) const { engine_->forces(out); }
std::int64_t Simulation::list_builds() const { return engine_->builds(); }
std::string Simulation::description() const { return engine_->description(); }

}  // namespace nbkit::md
