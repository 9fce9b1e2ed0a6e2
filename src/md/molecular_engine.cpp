// The engine of biomolecular systems behind md::Simulation: velocity Verlet (with RATTLE where
// there are constraints) or the Langevin-middle integrator, each atom with its own mass, SHAKE and
// SETTLE by ConstraintSolver, and the Monte Carlo barostat's volume moves, around the energy and
// forces of MolecularCpuForces (the float64 reference, or the CPU's cell list with a skin, rebuilt
// when an atom has moved half of it) or MolecularGpuForces (one GPU, a pair list with the same
// skin). On the GPU the whole step stays on the device (MolecularGpuDynamics: the same sequence,
// kernel by kernel) and the host's System is brought up to date only when something reads it
// (thermo rows, frames, checkpoints, the barostat's moves, which run on the host); host-side
// changes go back up before the next step. MSM (its grids are the host's) and LAMMPS's Langevin
// thermostat (its forces are added on the host) step on the host around the GPU's forces.
// Periodic atoms are wrapped into the box one by one (the bonded terms and the constraints take
// their atoms' nearest images, so a molecule may straddle the box's faces).
#include <fmt/format.h>

#include <array>
#include <chrono>
#include <cmath>
#include <optional>
#include <string>

#include "md/barostat.hpp"
#include "md/constraint_solver.hpp"
#include "md/engine.hpp"
#include "md/integrator.hpp"
#include "md/kinetic_sum.hpp"
#include "md/langevin_noise.hpp"
#include "md/molecules.hpp"
#include "md/molecular_cpu.hpp"
#include "md/molecular_gpu.hpp"
#include "md/molecular_gpu_dynamics.hpp"
#include "md/thermo_sums.hpp"
#include "nbkit/core/error.hpp"

namespace nbkit::md {

namespace {

class MolecularEngine final : public Engine {
 public:
  MolecularEngine(System& system, const MolecularForceField& field, Backend backend, int threads, int gpu,
                  double skin, bool single, MolecularDynamics dynamics)
      : system_(system),
        field_(field),
        backend_(backend),
        threads_(backend == Backend::reference ? 1 : resolve_threads(threads)),
        periodic_(field.nonbonded.periodic()),
        middle_(dynamics.langevin_middle) {
    if (system_.size() != field_.topology.size() || system_.atom_mass.size() != system_.size())
      throw Error("the system was not made from this topology (md::molecular_system makes it)");
    positions_.resize(system_.size());
    copy_positions();
    check_molecular_inputs(field_.topology, positions_, box(), field_.nonbonded);
    if (backend == Backend::cuda)
      gpu_ = std::make_unique<MolecularGpuForces>(field_.topology, field_.nonbonded, gpu, single, skin);
    else
      cpu_ = std::make_unique<MolecularCpuForces>(field_.topology, field_.nonbonded, backend, threads_, skin);
    if (!dynamics.constraints.empty()) {
      constraints_ = std::make_unique<ConstraintSolver>(std::move(dynamics.constraints), system_.atom_mass, threads_);
      // The start put on the constraints (OpenMM's applyConstraints and applyVelocityConstraints):
      // positions from a file hold them only to the digits it kept.
      reference_ = {system_.x, system_.y, system_.z};
      constraints_->constrain_positions(reference(), atoms(system_.x, system_.y, system_.z), box());
      constraints_->constrain_velocities(positions(), atoms(system_.vx, system_.vy, system_.vz), box(), 1.0);
    }
    if (periodic_) wrap_into_box(system_);
    evaluate();
    if (gpu_ && gpu_->resident())
      device_ = std::make_unique<MolecularGpuDynamics>(*gpu_, system_,
                                                       constraints_ ? constraints_->set() : ConstraintSet{});
  }
  void step(double dt, bool energies, Langevin* thermostat) override {
    start_constraint_virial_.reset();  // a step makes its own
    if (phases_) {
      if (phases_->steps == 0) phases_ = StepPhases{};  // from the first step: not the minimiser's evaluations
      ++phases_->steps;
    }
    if (device_ && !thermostat) return device_step(dt, energies);
    pull();
    host_newer_ = true;
    if (middle_) return langevin_middle_step(dt);
    lap();
    half_kick(system_, forces_, dt, threads_);
    if (constraints_) reference_ = {system_.x, system_.y, system_.z};
    drift(system_, dt, threads_);
    lap(&StepPhases::integrate);
    // RATTLE's first half: the positions onto the constraints, the velocities given the same move.
    const double position_virial = constrain_positions(dt);
    lap(&StepPhases::constraints);
    wrap_and_evaluate();
    lap(&StepPhases::forces);
    if (thermostat) thermostat->apply(system_, forces_, dt);
    half_kick(system_, forces_, dt, threads_);
    lap(&StepPhases::integrate);
    constraint_virial_ = position_virial + constrain_velocities(dt);
    forces_.virial += constraint_virial_;
    lap(&StepPhases::constraints);
  }
  // A trial velocity-Verlet step from the present state, x' = x + dt (v + dt F / 2m), put onto
  // the constraints against x (on copies): SHAKE's correction delta = dt^2 G / 2m gives the
  // constraint forces G of the start, and their virial sum r . G is twice the position half's
  // (a step's own constraint virial is its position half at the start plus its velocity half
  // at the end: G(0) and G(dt) halved). Without it the step-0 row's pressure had no constraint
  // forces in it (+18,000 bar for 64 rigid waters: Constraints.StepZeroPressureHasTheConstraintVirial).
  void estimate_start_constraint_virial(double dt) override {
    if (!constraints_ || !(dt > 0)) return;
    pull();
    const auto n = static_cast<std::int64_t>(system_.size());
    const double to_acceleration = unit_constants(system_.units).force_to_acceleration;
    std::array<std::vector<double>, 3> trial{system_.x, system_.y, system_.z};
    const std::vector<double>* v[3] = {&system_.vx, &system_.vy, &system_.vz};
    const std::vector<double>* f[3] = {&forces_.fx, &forces_.fy, &forces_.fz};
    for (int a = 0; a < 3; ++a)
      for (std::int64_t i = 0; i < n; ++i)
        trial[a][i] += dt * ((*v[a])[i] + 0.5 * dt * to_acceleration * (*f[a])[i] / system_.mass(i));
    const double w = constraints_->constrain_positions(positions(), atoms(trial[0], trial[1], trial[2]), box());
    start_constraint_virial_ = 2 * w / (dt * dt) / to_acceleration;
  }
  bool energies_current() const override { return energies_current_; }
  void time_phases() override {
    phases_ = StepPhases{};
    if (gpu_) gpu_->time_phases();
  }
  std::optional<StepPhases> step_phases() const override { return phases_; }
  void apply_thermostat(Langevin& thermostat, double dt) override {
    pull();
    thermostat.apply(system_, forces_, dt);
    host_newer_ = true;
  }
  Thermo thermo(std::int64_t step) const override {
    const std::int64_t constraints = constraints_ ? constraints_->count() : 0;
    const double start_virial = start_constraint_virial_ ? *start_constraint_virial_ : 0.0;
    // The GPU's sums of this step (sums_current_) need no copy of the atoms.
    if (sums_current_ && device_newer_)
      return thermo_from_sums(system_.units, system_.size(), system_.box.volume(), mass_velocity2_, forces_.potential,
                              forces_.virial + start_virial, step, constraints);
    pull();
    if (device_) {  // the same sum of m v^2 as the device's (kinetic_sum.hpp), from the host's copy
      const double mv2 = kinetic_mass_velocity2(
          system_.size(), [&](std::size_t i) { return system_.mass(i); },
          [&](std::size_t i, double* v) { v[0] = system_.vx[i], v[1] = system_.vy[i], v[2] = system_.vz[i]; });
      return thermo_from_sums(system_.units, system_.size(), system_.box.volume(), mv2, forces_.potential,
                              forces_.virial + start_virial, step, constraints);
    }
    const double virial = forces_.virial;
    forces_.virial += start_virial;
    const Thermo t = md::thermo(system_, forces_, step, constraints);
    forces_.virial = virial;
    return t;
  }
  bool box_on_host() const override { return true; }  // the barostat's moves are the host's
  void sync_host() override { pull(); }
  void forces(Forces& out) const override {
    pull();
    out = forces_;
  }
  std::int64_t builds() const override { return cpu_ ? cpu_->builds() : gpu_->list_builds(); }
  std::string description() const override {
    if (gpu_) return "GPU: " + gpu_->description() + (device_ ? ", whole step on the device" : "");
    return backend_ == Backend::reference ? "reference, 1 thread, float64"
                                          : fmt::format("CPU, {} thread{}, float64", threads_, threads_ == 1 ? "" : "s");
  }
  std::optional<EnergyTerms> energy_terms() const override {
    if (!(sums_current_ && device_newer_)) pull();
    return terms_;
  }
  // The callers below change the host's System (after reading it through sync_host): the device
  // takes it back before its next step.
  void rebuild_at_next_evaluation() override {
    pull();
    if (cpu_) cpu_->rebuild_next();
    if (gpu_) gpu_->rebuild_next();
    host_newer_ = true;
  }
  void set_forces(const Forces& f, const std::optional<EnergyTerms>& terms) override {
    pull();
    forces_ = f;
    if (terms) terms_ = *terms;
    energies_current_ = true;
    start_constraint_virial_.reset();
    host_newer_ = true;
  }
  void reevaluate() override {
    pull();
    wrap_and_evaluate();
    host_newer_ = true;
  }
  std::uint64_t noise_calls() const override { return noise_calls_; }
  void resume_noise_at(std::uint64_t calls) override { noise_calls_ = calls; }
  double largest_constraint_deviation() const override {
    pull();
    return constraints_ ? constraints_->largest_deviation(positions(), box()) : 0.0;
  }
  std::int64_t constraint_count() const override { return constraints_ ? constraints_->count() : 0; }
  void apply_constraints() override {
    if (!constraints_) return;
    pull();
    host_newer_ = true;
    reference_ = {system_.x, system_.y, system_.z};
    constraints_->constrain_positions(reference(), atoms(system_.x, system_.y, system_.z), box());
    constraints_->constrain_velocities(positions(), atoms(system_.vx, system_.vy, system_.vz), box(), 1.0);
    wrap_and_evaluate();
  }
  // A Monte Carlo volume move: the box and each molecule's centre of mass scaled about the box's
  // low corner, the energy evaluated there, and the old state put back unless the move is kept.
  bool barostat_move(MonteCarloBarostat& barostat) override {
    if (!periodic_) throw Error("a barostat needs a periodic box");
    // The device's step sums energies only when asked (Engine::step): a move needs them current.
    if (!energies_current_) throw Error("internal: a barostat move after a step without energies");
    pull();
    lap();
    if (molecules_.first.empty()) molecules_ = find_molecules(field_.topology);
    const double energy_before = forces_.potential, volume_before = system_.box.volume();
    const PeriodicBox box_before = system_.box;
    saved_x_ = system_.x, saved_y_ = system_.y, saved_z_ = system_.z;
    const Forces forces_before = forces_;
    const EnergyTerms terms_before = terms_;
    const std::array<double, 3> factor = barostat.propose(system_.box);
    // A box shorter than twice the cutoff along an edge is one the engines cannot sum: such a
    // move is refused outright (its energy taken as infinite), counted as tried.
    for (int a = 0; a < 3; ++a)
      if (!(factor[a] * box_before.length(a) >= 2 * field_.nonbonded.cutoff)) {
        barostat.accept(energy_before, INFINITY, volume_before, volume_before);
        lap(&StepPhases::barostat);
        return false;
      }
    host_newer_ = true;
    place_molecules(molecules_, system_, box_before, factor, false);
    for (int a = 0; a < 3; ++a) system_.box.hi[a] = box_before.lo[a] + factor[a] * box_before.length(a);
    lap(&StepPhases::barostat);
    wrap_and_evaluate();
    lap(&StepPhases::forces);
    if (barostat.accept(energy_before, forces_.potential, volume_before, system_.box.volume())) {
      // The evaluation's virial has no constraint forces in it. The move carries each molecule
      // whole (its constrained lengths and the step's constraint forces stand), so the step's
      // constraint virial is still the pressure's; without it a row here was off by the
      // constraints' share (12,000 bar for rigid water; Constraints.PressureAfterAnAccepted...).
      forces_.virial += constraint_virial_;
      return true;
    }
    system_.x.swap(saved_x_), system_.y.swap(saved_y_), system_.z.swap(saved_z_);
    system_.box = box_before;
    forces_ = forces_before;
    terms_ = terms_before;
    lap(&StepPhases::barostat);
    return false;
  }

 private:
  // The step on the GPU (MolecularGpuDynamics): the host's sequences below, kernel by kernel.
  void device_step(double dt, bool energies) {
    if (!device_error_.empty()) throw Error(device_error_);
    sums_current_ = false;
    if (host_newer_) device_->upload(system_, forces_), host_newer_ = false;
    lap();
    const UnitConstants u = unit_constants(system_.units);
    const std::optional<PeriodicBox> b = box();
    // The step's calls, made here or captured once into a CUDA graph that replays them
    // (MolecularGpuDynamics::step_as_graph; the laps time phases only without graphs).
    MolecularGpuDynamics::StepKey key;
    key.dt = dt, key.energies = energies, key.langevin = middle_.has_value();
    if (b)
      for (int a = 0; a < 3; ++a) key.box[a] = b->lo[a], key.box[3 + a] = b->length(a);
    if (middle_) {
      const double a = std::exp(-middle_->friction * dt), scale = std::sqrt(1 - a * a);
      const double kt = u.boltzmann * middle_->temperature / u.mv2_to_energy;
      key.a = a, key.b = scale, key.kt = kt, key.seed = middle_->seed;
      const std::uint64_t call = noise_calls_++;
      // With constraints the updates up to the evaluation are one launch (the same bits), except
      // where the phases are timed, which need them apart.
      const bool one_launch = device_->fuses_middle_step() && !phases_;
      auto queue = [&] {
        if (one_launch) {
          device_->langevin_middle_step(dt * u.force_to_acceleration, dt, a, scale, kt, middle_->seed, call, b);
        } else {
          device_->kick(dt * u.force_to_acceleration);
          lap(&StepPhases::integrate);
          device_->constrain_velocities(dt, b);
          lap(&StepPhases::constraints);
          device_->langevin_middle(dt, a, scale, kt, middle_->seed, call);
          lap(&StepPhases::integrate);
          device_->constrain_positions(dt, b);
          lap(&StepPhases::constraints);
        }
        device_->evaluate(b, energies);
        lap(&StepPhases::forces);
      };
      if (!device_->step_as_graph(key, call, queue, b)) queue();
    } else {
      auto queue = [&] {
        device_->kick(0.5 * dt * u.force_to_acceleration);
        device_->drift(dt);
        lap(&StepPhases::integrate);
        device_->constrain_positions(dt, b);
        lap(&StepPhases::constraints);
        device_->evaluate(b, energies);
        lap(&StepPhases::forces);
        device_->kick(0.5 * dt * u.force_to_acceleration);
        lap(&StepPhases::integrate);
        device_->constrain_velocities(dt, b);
        lap(&StepPhases::constraints);
      };
      if (!device_->step_as_graph(key, 0, queue, b)) queue();
    }
    if (phases_) {
      ++phases_->evaluations;
      add_gpu_phases();
    }
    device_newer_ = true;
    energies_current_ = energies;
    if (!energies) return;
    // A step with energies is a thermo row's, a barostat move's or a checkpoint's: the sums
    // alone (the energies, the virial and m v^2 reduced on the device), checked as a download
    // checks, or the whole state (NBKIT_MD_DEVICE_THERMO=0, as up to session 41). What needs the
    // atoms (frames, checkpoints, the barostat) brings them when it reads them.
    if (!device_->thermo_on_device()) return pull();
    try {
      constraint_virial_ = device_->sums(forces_, terms_, mass_velocity2_);
    } catch (const Error& e) {
      device_error_ = e.what();
      throw;
    }
    sums_current_ = true;
  }
  // The host's System, forces and energies brought up to date from the device (when it is ahead).
  // A failure found on the device (a force not finite, a water or cluster the constraints could
  // not place) ends the run: every later read or step repeats it, so no stale host copy is
  // taken for the device's state.
  void pull() const {
    if (!device_error_.empty()) throw Error(device_error_);
    if (!device_newer_) return;
    try {
      constraint_virial_ = device_->download(system_, forces_, terms_);
    } catch (const Error& e) {
      device_error_ = e.what();
      throw;
    }
    device_newer_ = false;
  }
  void add_gpu_phases() {
    const MolecularGpuForces::Phases g = gpu_->phase_seconds();
    phases_->upload += g.upload, phases_->bonded += g.bonded, phases_->list += g.list, phases_->pairs += g.pairs;
    phases_->mesh += g.mesh, phases_->finish += g.finish, phases_->download += g.download;
  }

  // The Langevin-middle step (Integrator::LangevinMiddleSettings): kick, half drift, the
  // Ornstein-Uhlenbeck velocity update, half drift, constraints, forces.
  void langevin_middle_step(double dt) {
    lap();
    const UnitConstants u = unit_constants(system_.units);
    const double kick = dt * u.force_to_acceleration;
    const std::int64_t n = static_cast<std::int64_t>(system_.size());
#pragma omp parallel for num_threads(threads_) if (n > 4096)
    for (std::int64_t i = 0; i < n; ++i) {
      const double scale = kick / system_.mass(i);
      system_.vx[i] += scale * forces_.fx[i], system_.vy[i] += scale * forces_.fy[i], system_.vz[i] += scale * forces_.fz[i];
    }
    lap(&StepPhases::integrate);
    const double velocity_virial = constrain_velocities(dt);
    lap(&StepPhases::constraints);
    if (constraints_) reference_ = {system_.x, system_.y, system_.z};
    const double a = std::exp(-middle_->friction * dt), b = std::sqrt(1 - a * a);
    const double kt = u.boltzmann * middle_->temperature / u.mv2_to_energy;  // k T / m in velocity^2 x mass
    const std::uint64_t call = noise_calls_++, seed = middle_->seed;
    const double half = 0.5 * dt;
#pragma omp parallel for num_threads(threads_) if (n > 4096)
    for (std::int64_t i = 0; i < n; ++i) {
      double noise[3];
      normal_triplet(seed, call, static_cast<std::uint32_t>(i), kLangevinMiddleTag, noise);
      const double sigma = b * std::sqrt(kt / system_.mass(i));
      double* x[3] = {&system_.x[i], &system_.y[i], &system_.z[i]};
      double* v[3] = {&system_.vx[i], &system_.vy[i], &system_.vz[i]};
      for (int k = 0; k < 3; ++k) {
        *x[k] += half * *v[k];
        *v[k] = a * *v[k] + sigma * noise[k];
        *x[k] += half * *v[k];
      }
    }
    lap(&StepPhases::integrate);
    const double position_virial = constrain_positions(dt);
    lap(&StepPhases::constraints);
    wrap_and_evaluate();
    lap(&StepPhases::forces);
    constraint_virial_ = position_virial + velocity_virial;
    forces_.virial += constraint_virial_;
  }
  // Phase timing: the time since the last lap added to `phase` (none: only the clock reset).
  void lap(double StepPhases::*phase = nullptr) {
    if (!phases_) return;
    if (device_) device_->synchronize();  // the device's phases end when its work does
    const auto now = std::chrono::steady_clock::now();
    if (phase) phases_.value().*phase += std::chrono::duration<double>(now - lap_).count();
    lap_ = now;
  }
  // SHAKE/SETTLE of the positions against reference_ (the step's start), the velocities given
  // the same correction over dt; the constraint forces' virial (energy) returned.
  double constrain_positions(double dt) {
    if (!constraints_) return 0;
    unconstrained_ = {system_.x, system_.y, system_.z};
    const double w = constraints_->constrain_positions(reference(), atoms(system_.x, system_.y, system_.z), box());
    const auto n = static_cast<std::int64_t>(system_.size());
#pragma omp parallel for num_threads(threads_) if (n > 4096)
    for (std::int64_t i = 0; i < n; ++i) {
      system_.vx[i] += (system_.x[i] - unconstrained_[0][i]) / dt;
      system_.vy[i] += (system_.y[i] - unconstrained_[1][i]) / dt;
      system_.vz[i] += (system_.z[i] - unconstrained_[2][i]) / dt;
    }
    return w / (dt * dt) / unit_constants(system_.units).force_to_acceleration;
  }
  double constrain_velocities(double dt) {
    if (!constraints_) return 0;
    const double w = constraints_->constrain_velocities(positions(), atoms(system_.vx, system_.vy, system_.vz), box(), dt);
    return w / dt / unit_constants(system_.units).force_to_acceleration;
  }
  // Atoms wrapped into the box where the CPU's cell list is rebuilt anyway, so that a wrap never
  // forces a rebuild; every step on the GPU, whose list measures moves by the minimum image.
  void wrap_and_evaluate() {
    if (periodic_) {
      copy_positions();
      if (!cpu_ || cpu_->needs_rebuild(positions_, box())) wrap_into_box(system_);
    }
    evaluate();
  }
  static AtomArrays atoms(std::vector<double>& x, std::vector<double>& y, std::vector<double>& z) {
    return {x.data(), y.data(), z.data()};
  }
  ConstAtomArrays positions() const { return {system_.x.data(), system_.y.data(), system_.z.data()}; }
  ConstAtomArrays reference() const { return {reference_[0].data(), reference_[1].data(), reference_[2].data()}; }

  void copy_positions() {
    for (std::size_t i = 0; i < system_.size(); ++i) positions_[i] = {system_.x[i], system_.y[i], system_.z[i]};
  }
  std::optional<PeriodicBox> box() const {
    return periodic_ ? std::optional<PeriodicBox>(system_.box) : std::nullopt;
  }
  void evaluate() {
    copy_positions();
    const MolecularForces result = gpu_ ? checked(gpu_->evaluate(positions_, box())) : cpu_->evaluate(positions_, box());
    if (phases_) {
      ++phases_->evaluations;
      if (gpu_) add_gpu_phases();
    }
    forces_.resize(system_.size());
    for (std::size_t i = 0; i < system_.size(); ++i)
      forces_.fx[i] = result.force[i].x, forces_.fy[i] = result.force[i].y, forces_.fz[i] = result.force[i].z;
    forces_.potential = result.energy.total();
    forces_.virial = result.virial;
    terms_ = result.energy;
    energies_current_ = true;
    start_constraint_virial_.reset();
  }

  System& system_;
  const MolecularForceField& field_;
  Backend backend_;
  int threads_;
  bool periodic_;
  std::vector<Vec3> positions_;
  // Mutable: thermo() and the other readers bring them up to date from the device (pull()).
  mutable Forces forces_;
  mutable EnergyTerms terms_;
  std::unique_ptr<MolecularGpuForces> gpu_;
  std::unique_ptr<MolecularGpuDynamics> device_;  // the GPU's step (not MSM's)
  mutable bool device_newer_ = false;  // the device has stepped since the host's copy
  // The device's sums of its present step (MolecularGpuDynamics::sums: forces_'s potential and
  // virial, terms_, m v^2) are in, its atoms maybe not.
  bool sums_current_ = false;
  double mass_velocity2_ = 0;
  bool energies_current_ = true;       // the last evaluation summed the energies (host ones always do)
  mutable double constraint_virial_ = 0;  // the last step's constraint forces' virial (in forces_.virial)
  // Before the first step: the start's estimated constraint virial, added to the thermo rows'
  // (estimate_start_constraint_virial); forgotten at any step or evaluation.
  std::optional<double> start_constraint_virial_;
  mutable std::string device_error_;   // what the device's last read-back found wrong
  bool host_newer_ = true;             // the host's copy changed since the device's
  std::unique_ptr<MolecularCpuForces> cpu_;
  std::optional<Integrator::LangevinMiddleSettings> middle_;
  std::optional<StepPhases> phases_;
  std::chrono::steady_clock::time_point lap_;
  std::uint64_t noise_calls_ = 0;
  std::unique_ptr<ConstraintSolver> constraints_;
  std::array<std::vector<double>, 3> reference_, unconstrained_;  // a step's start, its unconstrained move
  Molecules molecules_;                                          // the barostat's
  std::vector<double> saved_x_, saved_y_, saved_z_;

  // The GPU's forces, checked finite as molecular_forces checks the host's.
  static MolecularForces checked(MolecularForces f) {
    for (std::size_t i = 0; i < f.force.size(); ++i)
      if (!std::isfinite(f.force[i].x + f.force[i].y + f.force[i].z))
        throw Error(fmt::format("the force on atom {} is not finite: do two atoms overlap?", i + 1));
    if (!std::isfinite(f.energy.total())) throw Error("the energy is not finite: do two atoms overlap?");
    return f;
  }
};

}  // namespace

std::unique_ptr<Engine> make_molecular_engine(System& system, const MolecularForceField& field, Backend backend,
                                              int threads, int gpu, double skin, bool single,
                                              MolecularDynamics dynamics) {
  return std::make_unique<MolecularEngine>(system, field, backend, threads, gpu, skin, single, std::move(dynamics));
}

}  // namespace nbkit::md
