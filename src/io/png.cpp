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
#include "nbkit/core/ranks.hpp"
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

// Sequential, perceptually uniform (viridis, sampled at nine points and interpolated), t in [0, 1].
Rgb sequential(double t) {
  static constexpr std::array<Rgb, 9> kViridis = {{{68, 1, 84},
                                                    {72, 40, 120},
                                                    {62, 74, 137},
                                                    {49, 104, 142},
                                                    {38, 130, 142},
                                                    {31, 158, 137},
                                                    {53, 183, 121},
                                                    {109, 205, 89},
                                                    {253, 231, 37}}};
  t = std::clamp(t, 0.0, 1.0) * (kViridis.size() - 1);
  const std::size_t i = std::min<std::size_t>(static_cast<std::size_t>(t), kViridis.size() - 2);
  const double f = t - static_cast<double>(i);
  auto mix = [f](std::uint8_t a, std::uint8_t b) { return static_cast<std::uint8_t>(std::lround(a + f * (b - a))); };
  return {mix(kViridis[i].r, kViridis[i + 1].r), mix(kViridis[i].g, kViridis[i + 1].g),
          mix(kViridis[i].b, kViridis[i + 1].b)};
}

std::string legend_number(double v) {
  if (v == 0) return "0";
  const double a = std::fabs(v);
  if (a >= 0.01 && a < 10000) return fmt::format("{:+.3g}", v);
  return fmt::format("{:+.2e}", v);
}

// Tick positions at 1, 2 or 5 times a power of ten, about `count` of them over [low, high].
std::vector<double> ticks(double low, double high, int count) {
  const double span = high - low;
  if (!(span > 0)) return {low};
  const double raw = span / count, power = std::pow(10.0, std::floor(std::log10(raw)));
  const double step = raw / power < 1.5 ? power : raw / power < 3.5 ? 2 * power : raw / power < 7.5 ? 5 * power : 10 * power;
  std::vector<double> out;
  for (double t = std::ceil(low / step - 1e-9) * step; t <= high + 1e-9 * step; t += step)
    out.push_back(std::fabs(t) < 1e-9 * step ? 0.0 : t);
  return out;
}

std::string tick_label(double v) { return fmt::format("{:g}", v); }

}  // namespace

SliceInfo slice_plane(const Lattice& lattice, const SliceSpec& spec) {
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
  const int u = a == 0 ? 1 : 0, v = a == 2 ? 1 : 2;
  if (lattice.dims[u] > 8192 || lattice.dims[v] > 8192) throw Error("--png: slices wider than 8192 points are not drawn");
  return info;
}

SlicePlane::SlicePlane(const Lattice& lattice, const SliceSpec& spec, units::PotentialUnit unit)
    : lattice_(lattice), plane_(slice_plane(lattice, spec)) {
  map_.lattice = lattice;
  map_.lattice.dims[plane_.axis] = 1;
  map_.lattice.origin[plane_.axis] = plane_.coordinate;
  map_.unit = unit;
  map_.values.assign(static_cast<std::size_t>(map_.lattice.size()), 0.0);
}

void SlicePlane::add(const MapSlab& slab) {
  const std::int64_t ny = lattice_.dims[1], nz = lattice_.dims[2], index = plane_.index;
  for (std::int64_t row = slab.row_begin; row < slab.row_end; ++row) {
    const std::int64_t i = row / ny, j = row % ny;
    const double* values = slab.values + (row - slab.row_begin) * nz;
    if (plane_.axis == 0 && i == index)
      std::copy(values, values + nz, map_.values.begin() + j * nz);
    else if (plane_.axis == 1 && j == index)
      std::copy(values, values + nz, map_.values.begin() + i * nz);
    else if (plane_.axis == 2)
      map_.values[static_cast<std::size_t>(i * ny + j)] = values[index];
  }
}

void SlicePlane::gather(const Ranks& ranks, const std::vector<std::int64_t>& bounds) {
  if (!ranks.distributed()) return;
  const std::vector<double> all = ranks.gather(map_.values);
  if (!ranks.root()) return;
  const std::size_t size = map_.values.size();
  for (int r = 1; r < ranks.size(); ++r) {
    MapSlab mine{bounds[static_cast<std::size_t>(r)], bounds[static_cast<std::size_t>(r) + 1], nullptr};
    // The rank's plane read back as its rows: a plane point (i, j) or (., k) lies in one row.
    const double* plane = all.data() + static_cast<std::size_t>(r) * size;
    const std::int64_t ny = lattice_.dims[1], nz = lattice_.dims[2], index = plane_.index;
    for (std::int64_t row = mine.row_begin; row < mine.row_end; ++row) {
      const std::int64_t i = row / ny, j = row % ny;
      if (plane_.axis == 0 && i == index)
        std::copy(plane + j * nz, plane + (j + 1) * nz, map_.values.begin() + j * nz);
      else if (plane_.axis == 1 && j == index)
        std::copy(plane + i * nz, plane + (i + 1) * nz, map_.values.begin() + i * nz);
      else if (plane_.axis == 2)
        map_.values[static_cast<std::size_t>(i * ny + j)] = plane[i * ny + j];
    }
  }
}

SliceInfo SlicePlane::write_png(const std::string& path, ColorScale scale) const {
  SliceSpec spec;
  spec.axis = plane_.axis;
  spec.coordinate = plane_.coordinate;
  SliceInfo info = write_slice_png(path, map_, spec, {}, 0, scale);
  info.index = plane_.index;
  return info;
}

SliceInfo write_slice_png(const std::string& path, const Map& map, const SliceSpec& spec,
                          const std::vector<SliceMarkers>& markers, double marker_depth, ColorScale color_scale) {
  const Lattice& lattice = map.lattice;
  SliceInfo info = slice_plane(lattice, spec);
  const int a = spec.axis;

  // Image axes: the two remaining lattice axes in order, the second drawn upwards.
  const int u = a == 0 ? 1 : 0, v = a == 2 ? 1 : 2;
  const std::int64_t nu = lattice.dims[u], nv = lattice.dims[v];
  auto value = [&](std::int64_t iu, std::int64_t iv) {
    std::int64_t ijk[3];
    ijk[a] = info.index, ijk[u] = iu, ijk[v] = iv;
    return map.at(ijk[0], ijk[1], ijk[2]);
  };
  std::vector<double> magnitudes;
  magnitudes.reserve(static_cast<std::size_t>(nu * nv));
  info.low = info.high = value(0, 0);
  for (std::int64_t iu = 0; iu < nu; ++iu)
    for (std::int64_t iv = 0; iv < nv; ++iv) {
      const double w = value(iu, iv);
      magnitudes.push_back(std::fabs(w));
      info.low = std::min(info.low, w), info.high = std::max(info.high, w);
    }
  const std::size_t p99 = std::min(magnitudes.size() - 1, static_cast<std::size_t>(0.99 * magnitudes.size()));
  std::nth_element(magnitudes.begin(), magnitudes.begin() + static_cast<std::ptrdiff_t>(p99), magnitudes.end());
  info.range = magnitudes[p99] > 0 ? magnitudes[p99] : 1.0;
  const bool signed_scale = color_scale == ColorScale::diverging;
  info.saturated = info.high > info.range || (signed_scale ? info.low < -info.range : info.low < 0);
  auto color = [&](double w) { return signed_scale ? diverging(w / info.range) : sequential(w / info.range); };

  const int scale = static_cast<int>(std::max<std::int64_t>(1, 512 / std::max(nu, nv)));
  const int image_w = static_cast<int>(nu) * scale, image_h = static_cast<int>(nv) * scale;
  const int text_scale = 2, char_w = 6 * text_scale, line_h = 7 * text_scale + 6, bar_h = 16, tick = 5;
  // Room for the v axis's tick labels on the left and the u axis's below.
  const auto u_ticks = ticks(lattice.origin[u], lattice.origin[u] + lattice.extent()[u], 5);
  const auto v_ticks = ticks(lattice.origin[v], lattice.origin[v] + lattice.extent()[v], 5);
  std::size_t label_chars = 0;
  for (double t : v_ticks) label_chars = std::max(label_chars, tick_label(t).size());
  const int margin = 10, left = margin + static_cast<int>(label_chars) * char_w + tick + 4;
  const int legend_lines = 2 + (info.saturated ? 1 : 0) + (markers.empty() ? 0 : 1);
  const int width = std::max(left + image_w + margin, 2 * margin + 40 * char_w);
  const int top = margin + line_h;
  const int axis_label_y = top + image_h + tick + 3;
  const int bar_top = axis_label_y + 2 * line_h;
  const int height = bar_top + bar_h + 4 + legend_lines * line_h + margin;
  Canvas canvas(width, height);
  info.image_left = left, info.image_top = top, info.pixel_scale = scale;
  const std::string unit = units::to_string(map.unit);
  canvas.text(margin, margin, fmt::format("{}={:.2f} A  ({}{} plane)", "xyz"[a], info.coordinate, "xyz"[u], "xyz"[v]),
              text_scale);
  for (int py = 0; py < image_h; ++py)
    for (int px = 0; px < image_w; ++px) {
      const std::int64_t iu = px / scale, iv = nv - 1 - py / scale;  // second axis upwards
      canvas.set(left + px, top + py, color(value(iu, iv)));
    }
  // Axes: ticks at round coordinates (Angstrom) with their labels, and the axes' names.
  const Rgb black{0, 0, 0};
  auto pixel_u = [&](double x) { return left + static_cast<int>(std::lround(((x - lattice.origin[u]) / lattice.spacing + 0.5) * scale)); };
  auto pixel_v = [&](double y) {
    return top + static_cast<int>(std::lround((static_cast<double>(nv) - 0.5 - (y - lattice.origin[v]) / lattice.spacing) * scale));
  };
  for (double t : u_ticks) {
    const int px = pixel_u(t);
    for (int d = 0; d < tick; ++d) canvas.set(px, top + image_h + d, black);
    const std::string label = tick_label(t);
    canvas.text(px - Canvas::text_width(label, text_scale) / 2, axis_label_y, label, text_scale);
  }
  for (double t : v_ticks) {
    const int py = pixel_v(t);
    for (int d = 1; d <= tick; ++d) canvas.set(left - d, py, black);
    const std::string label = tick_label(t);
    canvas.text(left - tick - 3 - Canvas::text_width(label, text_scale), py - 7 * text_scale / 2, label, text_scale);
  }
  const std::string axes = fmt::format("{} (A) across, {} (A) up", "xyz"[u], "xyz"[v]);
  canvas.text(left, axis_label_y + line_h, axes, text_scale);
  // Markers within `marker_depth` of the slice plane: a black ring around the set's colour,
  // projected onto the plane.
  for (const SliceMarkers& set : markers)
    for (const Vec3& m : set.positions) {
      if (std::fabs(m[a] - info.coordinate) > marker_depth) continue;
      const int cx = pixel_u(m[u]), cy = pixel_v(m[v]);
      const int radius = std::max(4, scale * 2);
      for (int dy = -radius; dy <= radius; ++dy)
        for (int dx = -radius; dx <= radius; ++dx) {
          const int r2 = dx * dx + dy * dy;
          if (r2 > radius * radius) continue;
          if (cx + dx < left || cx + dx >= left + image_w || cy + dy < top || cy + dy >= top + image_h) continue;
          canvas.set(cx + dx, cy + dy,
                     r2 > (radius - 2) * (radius - 2) ? black : Rgb{set.color[0], set.color[1], set.color[2]});
        }
    }
  // The colour bar and its labels: the range, its unit, and the data's true span when beyond it.
  const int bar_w = width - 2 * margin;
  for (int px = 0; px < bar_w; ++px) {
    const double t = static_cast<double>(px) / (bar_w - 1);
    const Rgb c = signed_scale ? diverging(2.0 * t - 1.0) : sequential(t);
    for (int py = 0; py < bar_h; ++py) canvas.set(margin + px, bar_top + py, c);
  }
  int label_y = bar_top + bar_h + 4;
  const bool low_beyond = signed_scale ? info.low < -info.range : info.low < 0;
  const std::string low = signed_scale ? (low_beyond ? "<=" : "") + legend_number(-info.range) : "0";
  const std::string high = (info.high > info.range ? ">=" : "") + legend_number(info.range);
  canvas.text(margin, label_y, low, text_scale);
  const std::string middle = signed_scale ? "0 " + unit : unit;
  canvas.text(margin + bar_w / 2 - Canvas::text_width(middle, text_scale) / 2, label_y, middle, text_scale);
  canvas.text(margin + bar_w - Canvas::text_width(high, text_scale), label_y, high, text_scale);
  label_y += line_h;
  canvas.text(margin, label_y,
              fmt::format("colours to the 99th percentile of |{}|", signed_scale ? "V" : "value"), text_scale);
  if (info.saturated) {
    label_y += line_h;
    canvas.text(margin, label_y,
                fmt::format("saturated: data {} to {}", legend_number(info.low), legend_number(info.high)), text_scale,
                Rgb{160, 0, 0});
  }
  if (!markers.empty()) {
    label_y += line_h;
    int x = margin;
    for (const SliceMarkers& set : markers) {
      const int radius = 6, cx = x + radius, cy = label_y + 7 * text_scale / 2;
      for (int dy = -radius; dy <= radius; ++dy)
        for (int dx = -radius; dx <= radius; ++dx) {
          const int r2 = dx * dx + dy * dy;
          if (r2 <= radius * radius)
            canvas.set(cx + dx, cy + dy, r2 > (radius - 2) * (radius - 2) ? black : Rgb{set.color[0], set.color[1], set.color[2]});
        }
      canvas.text(x + 2 * radius + 4, label_y, set.label, text_scale);
      x += 2 * radius + 4 + Canvas::text_width(set.label, text_scale) + 2 * char_w;
    }
    canvas.text(x, label_y, fmt::format("(within {:g} A)", marker_depth), text_scale);
  }
  save_png(path, canvas);
  return info;
}

}  // namespace nbkit::io
