// nbody::Simulation: the leapfrog loop around one ForceEngine, with diagnostics, snapshots
// and progress through reporters (what `nbkit nbody` used to do itself).
#include "nbkit/nbody/simulation.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>

#include "nbkit/core/error.hpp"
#include "nbody/leapfrog.hpp"

namespace nbkit::nbody {

namespace {

// The engine's progress (the fraction of one evaluation) as the fraction of the whole run.
ForceOptions with_run_progress(ForceOptions options, const std::function<void(double)>* run, const double* base,
                               const double* span) {
  options.progress = [run, base, span](double f) {
    if (*run) (*run)(*base + *span * f);
  };
  return options;
}

}  // namespace

double RunSummary::interactions_per_second() const {
  const double n = static_cast<double>(bodies);
  return seconds > 0 ? n * n * static_cast<double>(last_step - first_step + 1) / seconds : 0.0;
}

double RunSummary::bodies_per_second() const {
  return seconds > 0 ? static_cast<double>(bodies) * static_cast<double>(last_step - first_step + 1) / seconds : 0.0;
}

Simulation::Simulation(Bodies bodies, double dt, ForceOptions options, std::int64_t first_step,
                       std::optional<double> initial_energy, const Ranks* ranks)
    : bodies_(std::move(bodies)),
      dt_(dt),
      forces_(with_run_progress(std::move(options), &progress_, &progress_base_, &progress_span_)),
      step_(first_step),
      given_energy_(initial_energy) {
  if (!(dt > 0) || !std::isfinite(dt)) throw Error(fmt::format("the time step must be positive, got {}", dt));
  if (first_step < 0) throw Error(fmt::format("the first step must not be negative, got {}", first_step));
  if (initial_energy && !std::isfinite(*initial_energy))
    throw Error(fmt::format("the initial energy {} is not finite", *initial_energy));
  if (ranks && ranks->distributed()) {
    ranks_ = ranks;
    // Equal shares: the all-pairs sum costs the same for every body.
    const std::int64_t n = static_cast<std::int64_t>(bodies_.size()), r = ranks->size();
    for (std::int64_t k = 0; k <= r; ++k) bounds_.push_back(n * k / r);
  }
}

void Simulation::evaluate(bool with_potential) {
  if (!ranks_) return forces_.compute(bodies_, acc_, with_potential);
  const auto rank = static_cast<std::size_t>(ranks_->rank());
  forces_.compute_range(bodies_, static_cast<std::size_t>(bounds_[rank]), static_cast<std::size_t>(bounds_[rank + 1]),
                        acc_);
}

void Simulation::step(bool with_potential) {
  if (!ranks_) return leapfrog_step(bodies_, acc_, dt_, forces_, with_potential);
  // leapfrog_step's halves on this rank's bodies, every rank's positions gathered between them.
  const auto rank = static_cast<std::size_t>(ranks_->rank());
  const auto first = static_cast<std::size_t>(bounds_[rank]), last = static_cast<std::size_t>(bounds_[rank + 1]);
  kick_and_drift(bodies_, acc_, dt_, first, last);
  // A barrier first, only to tell the ranks' imbalance from the exchange in the timings.
  const auto start = std::chrono::steady_clock::now();
  ranks_->barrier();
  const auto ready = std::chrono::steady_clock::now();
  for (std::vector<double>* v : {&bodies_.x, &bodies_.y, &bodies_.z}) ranks_->all_gather_ranges(v->data(), bounds_);
  wait_seconds_ += std::chrono::duration<double>(ready - start).count();
  exchange_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - ready).count();
  evaluate(with_potential);
  kick(bodies_, acc_, dt_, first, last);
}

void Simulation::gather_velocities_and_potentials() {
  if (!ranks_) return;
  const auto start = std::chrono::steady_clock::now();
  for (std::vector<double>* v : {&bodies_.vx, &bodies_.vy, &bodies_.vz, &acc_.potential})
    ranks_->all_gather_ranges(v->data(), bounds_);
  exchange_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void Simulation::check_finite(const Diagnostics& d) const {
  if (std::isfinite(d.total)) return;
  throw Error(fmt::format("the energy is not finite at step {} (t = {:.6g}): the run diverged; a smaller --dt or a "
                          "larger --softening keeps close encounters resolved",
                          step_, d.time));
}

RunSummary Simulation::run_to(std::int64_t last_step, const Reporters& r) {
  if (last_step < step_)
    throw Error(fmt::format("the run ends at step {}, before the present step {}", last_step, step_));
  if (r.diagnostics_every < 1) throw Error("diagnostics every K steps: K must be at least 1");
  if (r.snapshot_every < 0) throw Error("snapshots every K steps: K must not be negative");
  const std::int64_t first = step_;
  const auto start = std::chrono::steady_clock::now();
  wait_seconds_ = exchange_seconds_ = 0;
  // The run's force evaluations, for the progress: the first one (when not done yet) and a step each.
  const std::int64_t offset = evaluated_ ? 0 : 1;
  const double evaluations = static_cast<double>(std::max<std::int64_t>(last_step - first + offset, 1));
  progress_ = r.progress;
  progress_span_ = 1 / evaluations;
  progress_base_ = 0;
  if (!evaluated_) {
    evaluate(true);
    gather_velocities_and_potentials();
    first_ = last_ = diagnose(bodies_, acc_, static_cast<double>(step_) * dt_);
    initial_energy_ = given_energy_.value_or(first_.total);
    check_finite(first_);
    worst_ = std::fabs(first_.total / initial_energy_ - 1);
    evaluated_ = true;
  }
  if (r.diagnostics) r.diagnostics(last_, step_);
  if (r.snapshot && r.snapshot_at_start) r.snapshot(bodies_, step_);
  for (std::int64_t k = first + 1; k <= last_step; ++k) {
    // Potentials only where a row needs them; the accelerations are the same bits either way.
    const bool row = k % r.diagnostics_every == 0 || k == last_step;
    progress_base_ = static_cast<double>(k - first - 1 + offset) / evaluations;
    step(row);
    step_ = k;
    const bool snapshot = r.snapshot && ((r.snapshot_every > 0 && k % r.snapshot_every == 0) || k == last_step);
    if (row || snapshot) gather_velocities_and_potentials();  // every rank then holds every body
    if (row) {
      last_ = diagnose(bodies_, acc_, static_cast<double>(k) * dt_);
      check_finite(last_);
      worst_ = std::max(worst_, std::fabs(last_.total / initial_energy_ - 1));
      if (r.diagnostics) r.diagnostics(last_, k);
    }
    if (snapshot) r.snapshot(bodies_, k);
    if (progress_) progress_(static_cast<double>(k - first + offset) / evaluations);
  }
  progress_ = nullptr;
  RunSummary summary;
  summary.bodies = static_cast<std::int64_t>(bodies_.size());
  summary.first_step = first + 1 - offset;
  summary.last_step = last_step;
  summary.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  summary.wait_seconds = wait_seconds_, summary.exchange_seconds = exchange_seconds_;
  return summary;
}

}  // namespace nbkit::nbody
