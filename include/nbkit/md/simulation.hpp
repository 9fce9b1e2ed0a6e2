#pragma once
// An MD run as a library object (OpenMM's Simulation/Context split: the System and the
// ForceField describe the physics, the Integrator how to step, SimulationOptions where to
// run): it chooses the backend, owns the engine (the float64 reference, the CPU neighbour-list
// engine or the GPU engine; src/md/engine.hpp) and the step loop, checks every reported
// state finite, and hands thermo rows and trajectory frames to the caller's reporters. The
// command line (`nbkit md`) and the tests run MD through it (the benchmarks time the engines
// themselves: GpuEngine, verlet_step).
#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "nbkit/core/backend.hpp"
#include "nbkit/md.hpp"
#include "nbkit/md/constraints.hpp"
#include "nbkit/md/molecular_forces.hpp"

namespace nbkit::md {

// Monte Carlo barostat (NPT; Chow and Ferguson, Comput. Phys. Commun. 91, 283 (1995); Aqvist
// et al., Chem. Phys. Lett. 384, 288 (2004); OpenMM's MonteCarloBarostat and
// MonteCarloAnisotropicBarostat): every `frequency` steps the box is scaled by a random volume
// change (isotropic: all edges alike; anisotropic: one of the `axes` allowed, chosen at random),
// each molecule's centre of mass moved with it (molecules keep their shape, so constraints hold),
// and the move kept with the Metropolis probability of
//   dW = dE + P dV - N_molecules k T ln(V' / V).
// The largest volume change adapts to keep about half the moves (OpenMM's rule). Biomolecular
// runs only.
struct BarostatSettings {
  double pressure = 1.01325;  // bar (OpenMM's unit; 1 atm = 1.01325 bar)
  double temperature = 300;   // K
  int frequency = 25;         // steps between moves
  bool anisotropic = false;
  std::array<bool, 3> axes{true, true, true};  // anisotropic: the edges that may change
  std::uint64_t seed = 0;
};

// How to step (the units' time step): velocity Verlet (NVE), with LAMMPS's Langevin thermostat
// (md::Langevin) where `langevin` is given, or the Langevin-middle integrator (BAOAB split as
// Leimkuhler and Matthews, Appl. Math. Res. Express 2013, 34, and OpenMM's
// LangevinMiddleIntegrator) where `langevin_middle` is given; biomolecular runs may add
// constraints and a barostat.
struct Integrator {
  double timestep = 0.005;
  struct LangevinSettings {
    double temperature = 0, damping = 0;  // units' temperature and time
    std::uint64_t seed = 0;
  };
  std::optional<LangevinSettings> langevin;  // empty: NVE
  // Each step: v += f/m dt, x += v dt/2, v = a v + sqrt((1 - a^2) k T / m) N(0, 1) with
  // a = exp(-friction dt), x += v dt/2, constraints, forces. Friction in 1/(units' time) (OpenMM's
  // 1/ps is 0.001/fs); the normal numbers counter-based as md::Langevin's.
  struct LangevinMiddleSettings {
    double temperature = 0, friction = 0;
    std::uint64_t seed = 0;
  };
  std::optional<LangevinMiddleSettings> langevin_middle;
  ConstraintOptions constraints;            // biomolecular runs (md/constraints.hpp)
  std::optional<BarostatSettings> barostat;  // biomolecular runs
};

struct SimulationOptions {
  // automatic: the GPU when one is usable and the box is longer than twice (reach + skin)
  // along every axis (the GPU engine's minimum image), else the CPU, `notice` saying why;
  // biomolecular systems: the GPU when one is usable and the system is periodic, else the CPU.
  // reference: the all-images float64 forces on one thread (small systems; the oracle).
  Backend backend = Backend::automatic;
  // The GPU's pair arithmetic (single: float32 pair forces, float64 positions and velocities;
  // biomolecular systems: float32 pairs with float64 sums, OpenMM's mixed, periodic only); empty:
  // single on the GPU (biomolecular: where periodic). The CPU and reference engines compute in
  // float64, and refuse single when it is given.
  std::optional<Precision> precision;
  int threads = 0;        // CPU threads (0: all; nbkit::resolve_threads)
  std::vector<int> gpus;  // the GPU to run on (empty: the first); MD runs on one GPU
  double skin = 0.3;      // the neighbour list's skin (units' length)
  // Biomolecular runs: time the step's phases (Simulation::step_phases; on the GPU with events,
  // which cost a little).
  bool time_phases = false;
};

// Where a biomolecular run's time went (SimulationOptions::time_phases), seconds summed over the
// steps: the host's integration (kicks, drifts, the Langevin update), constraints (SHAKE, SETTLE,
// RATTLE), force evaluations (wall time, each step's and the barostat's) and barostat moves
// (their scaling and bookkeeping beyond the evaluation); on the GPU, the device's share of the
// evaluations by CUDA events (uploading positions, bonded terms, the pair list's builds, the
// pairs, PME's mesh, the sums, downloading forces).
struct StepPhases {
  std::int64_t steps = 0, evaluations = 0;
  double integrate = 0, constraints = 0, forces = 0, barostat = 0;
  double upload = 0, bonded = 0, list = 0, pairs = 0, mesh = 0, finish = 0, download = 0;
};

// Energy minimisation before dynamics (biomolecular systems): L-BFGS (Liu and Nocedal, Math.
// Program. 45, 503 (1989); OpenMM's LocalEnergyMinimizer is L-BFGS too) on the engine's own
// energy and forces, until the largest force on any atom is at most `tolerance` (OpenMM 8's
// criterion; its default 10 kJ/mol/nm is 0.239 kcal/mol/A) or `max_iterations` (0: no limit).
struct MinimizeOptions {
  double tolerance = 0.2390057;  // kcal/mol/A
  std::int64_t max_iterations = 0;
  // Called after each iteration with the fraction of the way (in log force) to the tolerance.
  std::function<void(double)> progress;
};
struct MinimizeResult {
  double initial_energy = 0, final_energy = 0;        // kcal/mol
  double initial_max_force = 0, final_max_force = 0;  // kcal/mol/A
  std::int64_t iterations = 0, evaluations = 0;
  bool converged = false;  // the largest force reached the tolerance
  double seconds = 0;
};

// What a run hands back while it goes: thermo rows every `thermo_every` steps (and at the
// run's first and last step, as LAMMPS prints them), the atoms every `frame_every` steps
// (0: none; the System's positions, velocities and box, in its atom order), and the fraction
// done. Any of them may be empty.
struct Reporters {
  std::int64_t thermo_every = 0;
  std::function<void(const Thermo&)> thermo;
  std::int64_t frame_every = 0;
  std::function<void(const System&, std::int64_t step)> frame;
  std::function<void(double)> progress;
  // Every `checkpoint_every` steps (0: never), after the step's thermo row and frame.
  std::int64_t checkpoint_every = 0;
  std::function<void(std::int64_t step)> checkpoint;
};

// The state a biomolecular run restarts from bit for bit (Simulation::checkpoint and restore;
// io/checkpoint.hpp writes and reads it): the step, the atoms, the box, the last evaluation's
// forces (the thermostat's included) and terms, and how far the thermostat's random stream has
// gone.
struct Checkpoint {
  std::int64_t step = 0;
  double timestep = 0;
  PeriodicBox box;
  std::vector<double> x, y, z, vx, vy, vz;
  Forces forces;
  std::optional<EnergyTerms> terms;
  bool thermostat = false;
  std::uint64_t thermostat_calls = 0;
  // The barostat's draws so far, its present largest volume changes (one per axis; isotropic
  // uses the first) and its tallies of moves tried and kept since it last adapted them.
  bool barostat = false;
  std::uint64_t barostat_calls = 0;
  std::array<double, 3> barostat_volume_scale{};
  std::array<std::int64_t, 3> barostat_attempted{}, barostat_accepted{};
};

// The barostat's moves per axis (isotropic: all in the first), and its present largest volume
// changes (A^3).
struct BarostatTally {
  std::array<std::int64_t, 3> attempted{}, accepted{};
  std::array<double, 3> volume_scale{};
};

struct RunSummary {
  std::int64_t atoms = 0, steps = 0;
  double seconds = 0;
  double atom_steps_per_second() const;
};

class Engine;
class MonteCarloBarostat;

class Simulation {
 public:
  // Checks the system and the force field, chooses the backend, checks the host memory the
  // run holds, builds the engine and evaluates the first forces (with the thermostat's, as
  // LAMMPS's setup does). Throws nbkit::Error for anything it cannot run.
  Simulation(System system, ForceField field, Integrator integrator, SimulationOptions options);
  // A biomolecular system (md/molecular_forces.hpp; `system` made from the same topology by
  // md::molecular_system) on the reference, CPU or GPU backend (automatic: the GPU when one is
  // usable and the system is periodic), float64 or on the GPU mixed precision.
  Simulation(System system, MolecularForceField field, Integrator integrator, SimulationOptions options);
  ~Simulation();
  Simulation(const Simulation&) = delete;
  Simulation& operator=(const Simulation&) = delete;

  // `steps` velocity-Verlet steps. A thermo row that is not finite (atoms overlap, a time step
  // too long) ends the run with nbkit::Error after the reporters have had the rows before.
  RunSummary run(std::int64_t steps, const Reporters& reporters = {});
  // Moves the atoms to a local minimum of the potential energy (MinimizeOptions), before the
  // first step: positions change, velocities and the step count do not. A line search that
  // cannot lower the energy (at the precision's noise) ends it, converged or not; the result
  // says which. Throws nbkit::Error for a Lennard-Jones run or after steps were taken.
  MinimizeResult minimize(const MinimizeOptions& options = {});
  // The state to restart from (biomolecular runs). Taking it wraps the atoms into the box and
  // has the pair list rebuilt at the next step, as a restart from it does: the run then goes on
  // exactly as its restart will (pairs are summed in the order of the list's last build, so a
  // run that never checkpoints differs from these in the last bits).
  Checkpoint checkpoint();
  // Goes on from `c` instead of the present state: positions, velocities, box, forces, terms,
  // the step count and the thermostat's stream. Throws nbkit::Error for another atom count,
  // values that are not finite, or a Lennard-Jones run.
  void restore(const Checkpoint& c);

  // The state now: the atoms (downloaded from the GPU when the engine is there), the thermo
  // of the last evaluation with energies (every run's first and last step have them), the
  // forces in the system's atom order.
  const System& state();
  // The box now, without bringing the atoms from the GPU where the engine keeps the box on the
  // host (biomolecular runs: a thermo row's volume and density need no more).
  const PeriodicBox& box();
  Thermo thermo() const;
  void forces(Forces& out) const;

  std::int64_t step_count() const { return step_; }
  // Constraints (biomolecular runs): how many (each removes a degree of freedom), and the largest
  // relative deviation |r - d| / d now (at most the tolerance after each step).
  std::int64_t constraint_count() const;
  double largest_constraint_deviation() const;
  std::optional<BarostatTally> barostat_tally() const;
  std::optional<StepPhases> step_phases() const;  // with SimulationOptions::time_phases
  std::int64_t list_builds() const;
  Backend backend() const { return backend_; }
  // "CPU, 16 threads, float64" / "GPU: NVIDIA H100 80GB HBM3, float32" / "reference, float64"
  std::string description() const;
  // Why --backend auto chose the CPU in a build with CUDA (empty otherwise): callers say it
  // before the run.
  const std::string& notice() const { return notice_; }
  const ForceField& force_field() const { return field_; }  // the Lennard-Jones field (not molecular runs)
  const MolecularForceField* molecular_field() const { return molecular_.get(); }  // null for Lennard-Jones runs
  // Each term's energy at the last evaluation with energies (molecular runs; empty otherwise).
  std::optional<EnergyTerms> energy_terms() const;
  const Integrator& integrator() const { return integrator_; }

 private:
  void check_integrator() const;
  void start_thermostat();

  System system_;
  ForceField field_;
  std::unique_ptr<MolecularForceField> molecular_;
  Integrator integrator_;
  std::unique_ptr<Langevin> thermostat_;
  std::unique_ptr<Engine> engine_;
  std::unique_ptr<MonteCarloBarostat> barostat_;
  Backend backend_ = Backend::cpu;
  std::string notice_;
  std::int64_t step_ = 0;
  bool downloaded_ = true;  // system_ holds the engine's present atoms
};

// The backend a run of `system` would get (the rule of SimulationOptions::backend), with the
// notice --backend auto gives; throws for a request that cannot be met (cuda without a GPU,
// single precision on the CPU, several GPUs).
Backend choose_backend(const System& system, const ForceField& field, const SimulationOptions& options,
                       std::string* notice = nullptr);

}  // namespace nbkit::md
