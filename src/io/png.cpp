#include "nbkit/io/png.hpp"

#include <fmt/format.h>
#include <png.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <vector>

#include "io/bitmap_font.hpp"
#include "io/canvas.hpp"
#include "nbkit/core/error.hpp"
#include "nbkit/io/atomic_file.hpp"

namespace nbkit::io {

SliceSpec parse_slice(const std::string& text) {
  SliceSpec spec;
  if (text.empty()) return spec;
  const char axis = static_cast<char>(std::tolower(static_cast<unsigned char>(text[0])));
  if (axis < 'x' || axis > 'z' || (text.size() > 1 && text[1] != '='))
    throw Error("--slice '" + text + "': expected x=COORD, y=COORD or z=COORD (Angstrom), or just x, y or z");
  spec.axis = axis - 'x';
  if (text.size() > 2) {
    try {
      std::size_t used = 0;
      spec.coordinate = std::stod(text.substr(2), &used);
      if (used != text.size() - 2 || !std::isfinite(*spec.coordinate)) throw std::invalid_argument("");
    } catch (const std::exception&) {
      throw Error("--slice '" + text + "': expected a number of Angstrom after '='");
    }
  }
  return spec;
}

namespace {

// Diverging red-white-blue (ColorBrewer RdBu end points), t in [-1, 1].
Rgb diverging(double t) {
  t = std::clamp(t, -1.0, 1.0);
  const Rgb end = t < 0 ? Rgb{178, 24, 43} : Rgb{33, 102, 172};
  const double a = std::fabs(t);
  auto mix = [a](std::uint8_t c) { return static_cast<std::uint8_t>(std::lround(255.0 + a * (c - 255.0))); };
  return {mix(end.r), mix(end.g), mix(end.b)};
}

std::string legend_number(double v) {
  if (v == 0) return "0";
  const double a = std::fabs(v);
  if (a >= 0.01 && a < 10000) return fmt::format("{:+.3g}", v);
  return fmt::format("{:+.2e}", v);
}

}  // namespace

SliceInfo write_slice_png(const std::string& path, const Map& map, const SliceSpec& spec, const std::vector<Vec3>& markers,
                          double marker_depth) {
  const Lattice& lattice = map.lattice;
  SliceInfo info;
  info.axis = spec.axis;
  const int a = spec.axis;
  const double coordinate = spec.coordinate.value_or(lattice.center()[a]);
  const double lower = lattice.origin[a], upper = lattice.origin[a] + lattice.extent()[a];
  if (coordinate < lower - 0.5 * lattice.spacing || coordinate > upper + 0.5 * lattice.spacing)
    throw Error(fmt::format("--slice {}={}: outside the lattice, which spans {:.3f} to {:.3f} A along {}", "xyz"[a],
                            coordinate, lower, upper, "xyz"[a]));
  info.index = std::clamp<std::int64_t>(std::llround((coordinate - lower) / lattice.spacing), 0, lattice.dims[a] - 1);
  info.coordinate = lower + static_cast<double>(info.index) * lattice.spacing;

  // Image axes: the two remaining lattice axes in order, the second drawn upwards.
  const int u = a == 0 ? 1 : 0, v = a == 2 ? 1 : 2;
  const std::int64_t nu = lattice.dims[u], nv = lattice.dims[v];
  if (nu > 8192 || nv > 8192) throw Error("--png: slices wider than 8192 points are not drawn");
  auto value = [&](std::int64_t iu, std::int64_t iv) {
    std::int64_t ijk[3];
    ijk[a] = info.index, ijk[u] = iu, ijk[v] = iv;
    return map.at(ijk[0], ijk[1], ijk[2]);
  };
  std::vector<double> magnitudes;
  magnitudes.reserve(static_cast<std::size_t>(nu * nv));
  for (std::int64_t iu = 0; iu < nu; ++iu)
    for (std::int64_t iv = 0; iv < nv; ++iv) magnitudes.push_back(std::fabs(value(iu, iv)));
  const std::size_t p99 = std::min(magnitudes.size() - 1, static_cast<std::size_t>(0.99 * magnitudes.size()));
  std::nth_element(magnitudes.begin(), magnitudes.begin() + static_cast<std::ptrdiff_t>(p99), magnitudes.end());
  info.range = magnitudes[p99] > 0 ? magnitudes[p99] : 1.0;

  const int scale = static_cast<int>(std::max<std::int64_t>(1, 512 / std::max(nu, nv)));
  const int image_w = static_cast<int>(nu) * scale, image_h = static_cast<int>(nv) * scale;
  const int margin = 10, text_scale = 2, line_h = 7 * text_scale + 6, bar_h = 16;
  const int width = std::max(image_w, 320) + 2 * margin;
  const int height = margin + line_h + image_h + margin + bar_h + 4 + line_h + margin;
  Canvas canvas(width, height);
  const std::string unit = units::to_string(map.unit);
  canvas.text(margin, margin, fmt::format("{}={:.2f} A  ({}{} plane)", "xyz"[a], info.coordinate, "xyz"[u], "xyz"[v]),
              text_scale);
  const int top = margin + line_h;
  for (int py = 0; py < image_h; ++py)
    for (int px = 0; px < image_w; ++px) {
      const std::int64_t iu = px / scale, iv = nv - 1 - py / scale;  // second axis upwards
      canvas.set(margin + px, top + py, diverging(value(iu, iv) / info.range));
    }
  // Markers within `marker_depth` of the slice plane: a black ring with a yellow centre,
  // projected onto the plane.
  for (const Vec3& m : markers) {
    if (std::fabs(m[a] - info.coordinate) > marker_depth) continue;
    const double fu = (m[u] - lattice.origin[u]) / lattice.spacing, fv = (m[v] - lattice.origin[v]) / lattice.spacing;
    const int cx = margin + static_cast<int>(std::lround((fu + 0.5) * scale));
    const int cy = top + static_cast<int>(std::lround((static_cast<double>(nv) - 0.5 - fv) * scale));
    const int radius = std::max(4, scale * 2);
    for (int dy = -radius; dy <= radius; ++dy)
      for (int dx = -radius; dx <= radius; ++dx) {
        const int r2 = dx * dx + dy * dy;
        if (r2 > radius * radius) continue;
        if (cx + dx < margin || cx + dx >= margin + image_w || cy + dy < top || cy + dy >= top + image_h) continue;
        canvas.set(cx + dx, cy + dy, r2 > (radius - 2) * (radius - 2) ? Rgb{0, 0, 0} : Rgb{250, 210, 40});
      }
  }
  const int bar_top = top + image_h + margin, bar_w = width - 2 * margin;
  for (int px = 0; px < bar_w; ++px) {
    const Rgb c = diverging(2.0 * px / (bar_w - 1) - 1.0);
    for (int py = 0; py < bar_h; ++py) canvas.set(margin + px, bar_top + py, c);
  }
  const int label_y = bar_top + bar_h + 4;
  const std::string low = legend_number(-info.range), high = legend_number(info.range);
  canvas.text(margin, label_y, low, text_scale);
  const std::string middle = "0 " + unit;
  canvas.text(margin + bar_w / 2 - Canvas::text_width(middle, text_scale) / 2, label_y, middle, text_scale);
  canvas.text(margin + bar_w - Canvas::text_width(high, text_scale), label_y, high, text_scale);
  save_png(path, canvas);
  return info;
}

}  // namespace nbkit::io
