// The Monte Carlo barostat's proposals and Metropolis test (barostat.hpp).
#include "md/barostat.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "md/langevin_noise.hpp"
#include "nbkit/core/error.hpp"
#include "nbkit/core/units.hpp"
#include "nbkit/md.hpp"

namespace nbkit::md {

namespace {

// 1 bar A^3 in kcal/mol: 1e5 Pa x 1e-30 m^3 x N_A / 4184 J/kcal.
constexpr double kBarCubicAngstromKcal = 1e5 * 1e-30 * 6.02214076e23 / 4184.0;

}  // namespace

MonteCarloBarostat::MonteCarloBarostat(const BarostatSettings& settings, double volume, std::int64_t molecules)
    : settings_(settings), molecules_(molecules) {
  if (!(settings.pressure > -1e6 && settings.pressure < 1e6))
    throw Error(fmt::format("barostat: the pressure must be finite, got {} bar", settings.pressure));
  if (!(settings.temperature > 0) || !std::isfinite(settings.temperature))
    throw Error(fmt::format("barostat: the temperature must be positive, got {} K", settings.temperature));
  if (settings.frequency < 1) throw Error(fmt::format("barostat: the frequency must be at least 1 step, got {}", settings.frequency));
  if (settings.anisotropic && !(settings.axes[0] || settings.axes[1] || settings.axes[2]))
    throw Error("barostat: an anisotropic barostat needs at least one axis to scale");
  volume_scale_.fill(0.01 * volume);
}

std::array<double, 3> MonteCarloBarostat::propose(const PeriodicBox& box) {
  const std::uint64_t call = calls_++;
  const std::uint32_t counter[4] = {static_cast<std::uint32_t>(call), static_cast<std::uint32_t>(call >> 32), 0,
                                    kBarostatTag};
  const std::uint32_t key[2] = {static_cast<std::uint32_t>(settings_.seed),
                                static_cast<std::uint32_t>(settings_.seed >> 32)};
  std::uint32_t bits[4];
  philox4x32_10(counter, key, bits);
  double u[4];
  for (int k = 0; k < 4; ++k) u[k] = (static_cast<double>(bits[k]) + 0.5) * 0x1p-32;
  axis_ = 0;
  if (settings_.anisotropic) {
    int allowed[3], count = 0;
    for (int a = 0; a < 3; ++a)
      if (settings_.axes[a]) allowed[count++] = a;
    axis_ = allowed[std::min(count - 1, static_cast<int>(u[0] * count))];
  }
  acceptance_ = u[2];
  const double volume = box.volume();
  const double change = volume_scale_[axis_] * 2 * (u[1] - 0.5);
  const double ratio = (volume + change) / volume;
  std::array<double, 3> factor{1, 1, 1};
  if (settings_.anisotropic)
    factor[axis_] = ratio;
  else
    factor.fill(std::cbrt(ratio));
  return factor;
}

bool MonteCarloBarostat::accept(double energy_before, double energy_after, double volume_before, double volume_after) {
  const double kt = unit_constants(Units::real).boltzmann * settings_.temperature;
  const double w = (energy_after - energy_before) + settings_.pressure * kBarCubicAngstromKcal * (volume_after - volume_before) -
                   static_cast<double>(molecules_) * kt * std::log(volume_after / volume_before);
  const bool kept = std::isfinite(w) && (w <= 0 || acceptance_ < std::exp(-w / kt));
  const int a = axis_;
  ++attempted_[a], ++attempted_total_[a];
  if (kept) ++accepted_[a], ++accepted_total_[a];
  // OpenMM's adaptation: every 10 moves, shrink the step when fewer than a quarter were kept,
  // grow it (to at most 30% of the volume) when more than three quarters were.
  if (attempted_[a] >= 10) {
    if (accepted_[a] < 0.25 * attempted_[a])
      volume_scale_[a] /= 1.1;
    else if (accepted_[a] > 0.75 * attempted_[a])
      volume_scale_[a] = std::min(volume_scale_[a] * 1.1, 0.3 * (kept ? volume_after : volume_before));
    attempted_[a] = accepted_[a] = 0;
  }
  return kept;
}

void MonteCarloBarostat::resume(std::uint64_t calls, std::array<double, 3> volume_scale,
                                std::array<std::int64_t, 3> attempted, std::array<std::int64_t, 3> accepted) {
  calls_ = calls, volume_scale_ = volume_scale, attempted_ = attempted, accepted_ = accepted;
}

}  // namespace nbkit::md
