#pragma once
// An N-body run as a library object, the same shape as md::Simulation: the bodies, the time
// step and the force options in; the backend resolved by the ForceEngine inside; the leapfrog
// loop with its diagnostics rows, snapshots and progress handed to the caller's reporters,
// every row checked finite. `nbkit nbody`, the tests and scripts run N-body through it.
#include <cstdint>
#include <functional>
#include <optional>

#include "nbkit/core/ranks.hpp"
#include "nbkit/nbody.hpp"

namespace nbkit::nbody {

// Diagnostics every `diagnostics_every` steps (and at the run's first and last step), the
// bodies every `snapshot_every` steps and at the last (and at the first when
// snapshot_at_start: a new run's initial conditions, not a restart's input), the fraction
// of the run done (within force evaluations too: a million bodies on a CPU take minutes).
struct Reporters {
  std::int64_t diagnostics_every = 1;
  std::function<void(const Diagnostics&, std::int64_t step)> diagnostics;
  std::int64_t snapshot_every = 0;
  bool snapshot_at_start = false;
  std::function<void(const Bodies&, std::int64_t step)> snapshot;
  std::function<void(double)> progress;
};

struct RunSummary {
  std::int64_t bodies = 0, first_step = 0, last_step = 0;
  double seconds = 0;
  // Under mpirun: this rank's time waiting for the others before each step's all-gather of
  // the positions (the ranks' imbalance), and in the all-gathers themselves (positions every
  // step, velocities and potentials at rows and snapshots): what passing the positions round a
  // ring, overlapped with the sums, could hide at most.
  double wait_seconds = 0, exchange_seconds = 0;
  double interactions_per_second() const;  // N^2 per force evaluation, the first one counted
  double bodies_per_second() const;        // N per force evaluation: the tree code's measure
};

class Simulation {
 public:
  // `first_step`: the step the bodies are at (a restart's); `initial_energy`: the energy the
  // errors are measured against (a restart's snapshot has it; default: the energy at the
  // first evaluation). The force engine checks its options here; the first forces are
  // evaluated by the first run, within its progress.
  // `ranks` (an mpirun job's, Ranks::world()): the bodies shared among the processes, each
  // kicking, drifting and summing the forces of its own consecutive share against every body,
  // the positions gathered every step (all-gathered: each rank needs every body's), velocities
  // and potentials at diagnostics and snapshot steps, where every rank then holds every body
  // and computes the same row. The same bits as one process for any rank count (all pairs on
  // the reference and cpu backends: ForceEngine::compute_range). Every rank must construct it
  // with the same bodies; the reporters are called on every rank.
  Simulation(Bodies bodies, double dt, ForceOptions options, std::int64_t first_step = 0,
             std::optional<double> initial_energy = std::nullopt, const Ranks* ranks = nullptr);
  Simulation(const Simulation&) = delete;
  Simulation& operator=(const Simulation&) = delete;

  // Leapfrog steps up to `last_step`. A total energy that is not finite ends the run with
  // nbkit::Error after the reporters have had the rows before.
  RunSummary run_to(std::int64_t last_step, const Reporters& reporters = {});

  const Bodies& bodies() const { return bodies_; }
  std::int64_t step() const { return step_; }
  double dt() const { return dt_; }
  double initial_energy() const { return initial_energy_; }
  const Diagnostics& first_diagnostics() const { return first_; }  // at the first evaluation
  const Diagnostics& last_diagnostics() const { return last_; }
  double largest_energy_error() const { return worst_; }  // |E/E0 - 1| over every row so far
  const ForceEngine& forces() const { return forces_; }

 private:
  void check_finite(const Diagnostics& d) const;
  void evaluate(bool with_potential);   // this rank's forces (all of them in one process)
  void step(bool with_potential);       // one leapfrog step of this rank's bodies
  void gather_velocities_and_potentials();
  const Ranks* ranks_ = nullptr;        // null or one rank: one process
  double wait_seconds_ = 0, exchange_seconds_ = 0;  // this run_to's (RunSummary)
  std::vector<std::int64_t> bounds_;    // rank r's bodies [bounds_[r], bounds_[r+1])
  Bodies bodies_;
  double dt_;
  std::function<void(double)> progress_;  // the run's, while one goes
  double progress_base_ = 0, progress_span_ = 1;
  ForceEngine forces_;
  Accelerations acc_;
  std::int64_t step_;
  std::optional<double> given_energy_;
  bool evaluated_ = false;
  double initial_energy_ = 0, worst_ = 0;
  Diagnostics first_, last_;
};

}  // namespace nbkit::nbody
