// md::Simulation::minimize: L-BFGS on the engine's energy and forces (simulation.hpp has the
// contract). Two-loop recursion over the last 8 steps (Nocedal and Wright, Numerical
// Optimization, 2nd ed., algorithm 7.4) with the initial Hessian scaled by s.y / y.y, and a
// backtracking line search to Armijo's condition; no atom moves more than 0.2 A in one step
// (a strained start has forces of 1e4 kcal/mol/A that would throw atoms across the box).
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <deque>
#include <vector>

#include "md/engine.hpp"
#include "nbkit/core/error.hpp"
#include "nbkit/md/simulation.hpp"

namespace nbkit::md {

namespace {

constexpr int kHistory = 8;          // L-BFGS's pairs (s, y) kept
constexpr double kMaxMove = 0.2;     // A: the largest move of any atom in one step
constexpr double kArmijo = 1e-4;     // sufficient decrease, c1
constexpr int kBacktracks = 30;      // halvings of the step before the line search gives up

double dot(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (std::size_t k = 0; k < a.size(); ++k) s += a[k] * b[k];
  return s;
}

// The largest per-atom length of a 3N vector.
double largest_atom_norm(const std::vector<double>& v) {
  double largest = 0;
  for (std::size_t i = 0; i + 2 < v.size(); i += 3)
    largest = std::max(largest, v[i] * v[i] + v[i + 1] * v[i + 1] + v[i + 2] * v[i + 2]);
  return std::sqrt(largest);
}

struct Pair {
  std::vector<double> s, y;
  double rho;
};

}  // namespace

MinimizeResult Simulation::minimize(const MinimizeOptions& options) {
  if (!molecular_) throw Error("energy minimisation is for biomolecular systems (a prmtop, psf or molecular data file)");
  if (step_ != 0) throw Error("energy minimisation comes before the first step");
  if (!(options.tolerance > 0) || !std::isfinite(options.tolerance))
    throw Error(fmt::format("the minimisation's force tolerance must be positive, got {}", options.tolerance));
  if (options.max_iterations < 0)
    throw Error(fmt::format("the minimisation's iteration limit must not be negative, got {}", options.max_iterations));
  const auto start = std::chrono::steady_clock::now();
  state();
  const std::size_t n = system_.size(), dim = 3 * n;
  MinimizeResult result;
  Forces f;
  // The energy and gradient (-force) at `at`, written into the system first.
  auto evaluate = [&](const std::vector<double>& at, std::vector<double>& gradient) {
    for (std::size_t i = 0; i < n; ++i) system_.x[i] = at[3 * i], system_.y[i] = at[3 * i + 1], system_.z[i] = at[3 * i + 2];
    engine_->reevaluate();
    ++result.evaluations;
    engine_->forces(f);
    for (std::size_t i = 0; i < n; ++i)
      gradient[3 * i] = -f.fx[i], gradient[3 * i + 1] = -f.fy[i], gradient[3 * i + 2] = -f.fz[i];
    if (!std::isfinite(f.potential))
      throw Error(fmt::format("minimisation, evaluation {}: the energy is not finite (do two atoms overlap?)",
                              result.evaluations));
    return f.potential;
  };
  std::vector<double> x(dim), g(dim), trial(dim), trial_gradient(dim), p(dim), alphas(kHistory);
  for (std::size_t i = 0; i < n; ++i) x[3 * i] = system_.x[i], x[3 * i + 1] = system_.y[i], x[3 * i + 2] = system_.z[i];
  double energy = evaluate(x, g);
  double largest = largest_atom_norm(g);
  result.initial_energy = energy, result.initial_max_force = largest;
  const double log_span = largest > options.tolerance ? std::log(largest / options.tolerance) : 1.0;
  std::deque<Pair> history;
  bool at_x = true;  // the engine's last evaluation was at x
  while (largest > options.tolerance && (options.max_iterations == 0 || result.iterations < options.max_iterations)) {
    // The direction: -H g by the two-loop recursion, or steepest descent without a history.
    p = g;
    for (std::size_t k = history.size(); k-- > 0;) {
      alphas[k] = history[k].rho * dot(history[k].s, p);
      for (std::size_t m = 0; m < dim; ++m) p[m] -= alphas[k] * history[k].y[m];
    }
    if (!history.empty()) {
      const Pair& newest = history.back();
      const double gamma = dot(newest.s, newest.y) / dot(newest.y, newest.y);
      for (double& v : p) v *= gamma;
    } else {
      for (double& v : p) v *= 0.1 / largest;  // a first move of 0.1 A for the most pushed atom
    }
    for (std::size_t k = 0; k < history.size(); ++k) {
      const double beta = history[k].rho * dot(history[k].y, p);
      for (std::size_t m = 0; m < dim; ++m) p[m] += history[k].s[m] * (alphas[k] - beta);
    }
    for (double& v : p) v = -v;
    double slope = dot(g, p);
    if (!(slope < 0)) {  // not downhill (a stale history): steepest descent
      history.clear();
      for (std::size_t m = 0; m < dim; ++m) p[m] = -g[m] * 0.1 / largest;
      slope = dot(g, p);
    }
    const double move = largest_atom_norm(p);
    if (move > kMaxMove) {
      for (double& v : p) v *= kMaxMove / move;
      slope *= kMaxMove / move;
    }
    double alpha = 1, trial_energy = 0;
    bool accepted = false;
    for (int tries = 0; tries < kBacktracks && !accepted; ++tries, alpha *= 0.5) {
      for (std::size_t m = 0; m < dim; ++m) trial[m] = x[m] + alpha * p[m];
      trial_energy = evaluate(trial, trial_gradient);
      at_x = false;
      accepted = trial_energy <= energy + kArmijo * alpha * slope;
      if (accepted) break;
    }
    if (!accepted) {
      if (history.empty()) break;  // steepest descent cannot lower the energy either: done
      history.clear();
      continue;
    }
    Pair pair{std::vector<double>(dim), std::vector<double>(dim), 0};
    for (std::size_t m = 0; m < dim; ++m) pair.s[m] = alpha * p[m], pair.y[m] = trial_gradient[m] - g[m];
    const double sy = dot(pair.s, pair.y);
    if (sy > 1e-12 * std::sqrt(dot(pair.s, pair.s) * dot(pair.y, pair.y))) {  // curvature: keep H positive
      pair.rho = 1 / sy;
      history.push_back(std::move(pair));
      if (history.size() > kHistory) history.pop_front();
    }
    x.swap(trial), g.swap(trial_gradient);
    energy = trial_energy, at_x = true;
    largest = largest_atom_norm(g);
    ++result.iterations;
    if (options.progress) {
      double fraction = std::clamp(std::log(result.initial_max_force / std::max(largest, options.tolerance)) / log_span,
                                   0.0, 1.0);
      if (options.max_iterations > 0)
        fraction = std::max(fraction, static_cast<double>(result.iterations) / static_cast<double>(options.max_iterations));
      options.progress(fraction);
    }
  }
  if (!at_x) energy = evaluate(x, g);  // the engine's forces at the positions kept
  result.final_energy = energy, result.final_max_force = largest;
  result.converged = largest <= options.tolerance;
  // With constraints, the minimum of the unconstrained energy (its constrained bonds held near
  // their lengths by their own harmonic terms) is put on the constraints for dynamics; the energy
  // reported is the constrained structure's.
  if (engine_->constraint_count() > 0) {
    engine_->apply_constraints();
    result.final_energy = engine_->thermo(step_).potential;
  }
  // The thermostat's forces on top, as after the first evaluation (start_thermostat).
  if (thermostat_) engine_->apply_thermostat(*thermostat_, integrator_.timestep);
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace nbkit::md
