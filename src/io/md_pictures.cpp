// thermo.png: stacked line panels of an MD run's thermo table (io/md_pictures.hpp).
#include "nbkit/io/md_pictures.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "io/canvas.hpp"
#include "nbkit/core/error.hpp"

namespace nbkit::io {

void write_thermo_png(const std::string& path, const std::vector<double>& time, const std::string& time_label,
                      const std::vector<ThermoSeries>& panels) {
  if (time.empty() || panels.empty()) throw Error("thermo picture: no rows to draw");
  constexpr int kWidth = 720, kPanel = 170, kLeft = 90, kRight = 30, kTop = 10, kGap = 34, kBottom = 30;
  const int height = kTop + static_cast<int>(panels.size()) * (kPanel + kGap) + kBottom;
  Canvas canvas(kWidth, height);
  const double t0 = time.front(), t1 = time.back() > t0 ? time.back() : t0 + 1;
  const int plot_w = kWidth - kLeft - kRight;
  auto x_of = [&](double t) { return kLeft + static_cast<int>(std::lround((t - t0) / (t1 - t0) * plot_w)); };
  const Rgb black{0, 0, 0}, grid{205, 205, 205}, line{33, 102, 172};
  for (std::size_t p = 0; p < panels.size(); ++p) {
    const ThermoSeries& s = panels[p];
    if (s.values.size() != time.size()) throw Error(fmt::format("thermo picture: {} values for {} times", s.values.size(), time.size()));
    double lo = INFINITY, hi = -INFINITY;
    for (double v : s.values)
      if (std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v);
    if (!(lo <= hi)) lo = -1, hi = 1;
    if (hi - lo < 1e-12 * std::max(1.0, std::abs(hi))) lo -= 1, hi += 1;
    const int top = kTop + static_cast<int>(p) * (kPanel + kGap) + 14;
    auto y_of = [&](double v) { return top + static_cast<int>(std::lround((hi - v) / (hi - lo) * kPanel)); };
    canvas.text(kLeft, top - 13, s.label, 1);
    for (int x = kLeft; x <= kLeft + plot_w; ++x) canvas.set(x, top + kPanel, black);
    for (int y = top; y <= top + kPanel; ++y) canvas.set(kLeft, y, black);
    for (int k = 0; k <= 2; ++k) {  // ticks at the ends and the middle of the y range
      const double v = hi - (hi - lo) * k / 2.0;
      const int y = y_of(v);
      for (int x = kLeft + 1; x <= kLeft + plot_w; x += 4) canvas.set(x, y, grid);
      const std::string tick = fmt::format("{:.6g}", v);
      canvas.text(kLeft - 4 - Canvas::text_width(tick, 1), y - 3, tick, 1);
    }
    for (int k = 0; k <= 4; ++k) {  // time ticks
      const double t = t0 + (t1 - t0) * k / 4.0;
      const int x = x_of(t);
      for (int y = top + kPanel; y <= top + kPanel + 3; ++y) canvas.set(x, y, black);
      const std::string tick = fmt::format("{:.4g}", t);
      canvas.text(x - Canvas::text_width(tick, 1) / 2, top + kPanel + 6, tick, 1);
    }
    int px = -1, py = -1;
    for (std::size_t i = 0; i < time.size(); ++i) {
      if (!std::isfinite(s.values[i])) {
        px = -1;
        continue;
      }
      const int x = x_of(time[i]), y = y_of(s.values[i]);
      if (px >= 0) {
        const int steps = std::max(std::abs(x - px), std::abs(y - py)) + 1;
        for (int k = 0; k <= steps; ++k) canvas.set(px + (x - px) * k / steps, py + (y - py) * k / steps, line);
      } else {
        canvas.set(x, y, line);
      }
      px = x, py = y;
    }
  }
  canvas.text(kLeft + plot_w / 2 - Canvas::text_width(time_label, 1) / 2, height - 14, time_label, 1);
  save_png(path, canvas);
}

}  // namespace nbkit::io
