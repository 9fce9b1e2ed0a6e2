#include "nbkit/io/nbody_pictures.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "io/canvas.hpp"
#include "nbkit/core/error.hpp"

namespace nbkit::io {

void write_density_png(const std::string& path, const nbody::Bodies& b, double extent, double time) {
  if (!(extent > 0)) throw Error("density picture: the extent must be positive");
  constexpr int kSize = 512, kLegend = 40;
  std::vector<double> mass(static_cast<std::size_t>(kSize * kSize), 0.0);
  for (std::size_t i = 0; i < b.size(); ++i) {
    const int px = static_cast<int>(std::floor((b.x[i] + extent) / (2 * extent) * kSize));
    const int py = static_cast<int>(std::floor((extent - b.y[i]) / (2 * extent) * kSize));  // y up
    if (px < 0 || py < 0 || px >= kSize || py >= kSize) continue;
    mass[static_cast<std::size_t>(py * kSize + px)] += b.mass[i];
  }
  const double peak = *std::max_element(mass.begin(), mass.end());
  double floor = peak;
  for (double m : mass)
    if (m > 0) floor = std::min(floor, m);
  Canvas canvas(kSize, kSize + kLegend);
  const double span = peak > floor ? std::log(peak / floor) : 1.0;
  for (int y = 0; y < kSize; ++y)
    for (int x = 0; x < kSize; ++x) {
      const double m = mass[static_cast<std::size_t>(y * kSize + x)];
      if (m <= 0) continue;
      // Light grey for one body's mass, black for the densest pixel (logarithmic).
      const double t = std::clamp(0.25 + 0.75 * std::log(m / floor) / span, 0.0, 1.0);
      const auto level = static_cast<std::uint8_t>(std::lround(255 * (1 - t)));
      canvas.set(x, y, {level, level, level});
    }
  canvas.text(6, kSize + 6, fmt::format("x-y projection, |x|,|y| < {:g}, t = {:.4g} (N-body units)", extent, time), 1);
  canvas.text(6, kSize + 20, fmt::format("{} bodies; grey to black: log mass per pixel", b.size()), 1);
  save_png(path, canvas);
}

void write_energy_png(const std::string& path, const std::vector<double>& time, const std::vector<double>& error) {
  if (time.size() != error.size() || time.empty()) throw Error("energy plot: no points");
  constexpr int kWidth = 640, kHeight = 400, kLeft = 60, kBottom = 40, kTop = 24, kRight = 16;
  const double t_end = std::max(time.back(), 1e-300);
  double largest = 0;
  for (double e : error) largest = std::max(largest, std::fabs(e));
  const double top = std::pow(10.0, std::ceil(std::log10(std::max(largest, 1e-16))));
  const double bottom = top * 1e-6;
  Canvas canvas(kWidth, kHeight);
  const int plot_w = kWidth - kLeft - kRight, plot_h = kHeight - kTop - kBottom;
  for (int x = kLeft; x <= kLeft + plot_w; ++x) canvas.set(x, kTop + plot_h, {0, 0, 0});
  for (int y = kTop; y <= kTop + plot_h; ++y) canvas.set(kLeft, y, {0, 0, 0});
  for (int decade = 0; decade <= 6; ++decade) {  // grid lines and labels every decade
    const int y = kTop + plot_h * decade / 6;
    for (int x = kLeft + 1; x <= kLeft + plot_w; x += 4) canvas.set(x, y, {200, 200, 200});
    canvas.text(4, y - 3, fmt::format("{:.0e}", top / std::pow(10.0, decade)), 1);
  }
  int previous_x = -1, previous_y = -1;
  for (std::size_t i = 0; i < time.size(); ++i) {
    const double e = std::max(std::fabs(error[i]), bottom);
    const int x = kLeft + static_cast<int>(std::lround(time[i] / t_end * plot_w));
    const int y = kTop + static_cast<int>(std::lround(std::log10(top / e) / 6 * plot_h));
    if (previous_x >= 0) {  // a straight segment from the previous point
      const int steps = std::max(std::abs(x - previous_x), std::abs(y - previous_y)) + 1;
      for (int s = 0; s <= steps; ++s)
        canvas.set(previous_x + (x - previous_x) * s / steps, previous_y + (y - previous_y) * s / steps, {33, 102, 172});
    }
    previous_x = x, previous_y = y;
  }
  canvas.text(kLeft, 6, fmt::format("|E(t)/E(0) - 1|, largest {:.2e}", largest), 1);
  canvas.text(kLeft, kHeight - 16, fmt::format("time 0 to {:.4g} (N-body units)", t_end), 1);
  save_png(path, canvas);
}

}  // namespace nbkit::io
