#pragma once
// The Monte Carlo barostat's proposals and acceptance (BarostatSettings in
// nbkit/md/simulation.hpp has the method); the molecular engine scales the box and molecules and
// evaluates the energy. Internal.
#include <array>
#include <cstdint>

#include "nbkit/core/box.hpp"
#include "nbkit/md/simulation.hpp"

namespace nbkit::md {

class MonteCarloBarostat {
 public:
  // `volume` starts the largest volume change at 1% of it (OpenMM's start); `molecules` counts
  // the scaled centres (the N in N k T ln(V'/V)).
  MonteCarloBarostat(const BarostatSettings& settings, double volume, std::int64_t molecules);
  // The next move: each edge's scale factor (draws from the counter-based stream).
  std::array<double, 3> propose(const PeriodicBox& box);
  // Whether the proposed move is kept, from the potential energies (kcal/mol) and volumes (A^3)
  // before and after; tallies it and adapts the largest volume change every 10 moves of an axis.
  bool accept(double energy_before, double energy_after, double volume_before, double volume_after);

  const BarostatSettings& settings() const { return settings_; }
  std::uint64_t calls() const { return calls_; }
  std::array<double, 3> volume_scale() const { return volume_scale_; }
  // Moves tried and kept per axis since this object was made (isotropic: the first).
  std::array<std::int64_t, 3> attempted() const { return attempted_total_; }
  std::array<std::int64_t, 3> accepted() const { return accepted_total_; }
  // Those since the last adaptation (what a checkpoint keeps), and a checkpoint's state.
  std::array<std::int64_t, 3> window_attempted() const { return attempted_; }
  std::array<std::int64_t, 3> window_accepted() const { return accepted_; }
  void resume(std::uint64_t calls, std::array<double, 3> volume_scale, std::array<std::int64_t, 3> attempted,
              std::array<std::int64_t, 3> accepted);

 private:
  BarostatSettings settings_;
  std::int64_t molecules_;
  std::uint64_t calls_ = 0;
  std::array<double, 3> volume_scale_{};
  std::array<std::int64_t, 3> attempted_{}, accepted_{};              // since the last adaptation
  std::array<std::int64_t, 3> attempted_total_{}, accepted_total_{};  // the whole run
  int axis_ = 0;            // the proposed move's axis (0 for isotropic moves)
  double acceptance_ = 0;   // the proposed move's uniform number for Metropolis
};

}  // namespace nbkit::md
