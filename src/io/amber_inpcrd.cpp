// AMBER inpcrd / rst7, ASCII (io/amber.hpp): a title line; the atom count and optionally the
// time; 3 N coordinates in 12-character fields, 6 per line (%12.7f); then 3 N velocities
// (restarts) and/or a box line (a b c alpha beta gamma), told apart by how many fields follow
// the coordinates. Fields are read by column, as the format is fixed (two negative numbers can
// touch: "-12.3456789-10.1234567"), and each is checked.
#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <memory>

#include "io/text.hpp"
#include "nbkit/core/error.hpp"
#include "nbkit/io/amber.hpp"
#include "nbkit/io/atomic_file.hpp"

namespace nbkit::io {

namespace {

// AMBER's velocity unit is Angstrom per 1/20.455 ps (its time unit, sqrt(g/mol A^2 / kcal/mol));
// nbkit's real units take Angstrom/fs.
constexpr double kAmberVelocityToAngstromPerFs = 20.455 / 1000.0;

}  // namespace

md::Coordinates parse_inpcrd(std::string_view text, const std::string& source, std::size_t atoms) {
  Lines lines(text);
  std::string_view line;
  if (!lines.next(line)) throw InputError(source, 1, "title", "empty file: expected an AMBER inpcrd/rst7");
  if (!lines.next(line)) throw InputError(source, 2, "atom count", "missing line");
  const auto head = split_whitespace(line);
  const auto count = head.empty() ? std::nullopt : parse_number(head[0]);
  if (!count || *count != std::floor(*count) || *count < 1)
    throw InputError(source, lines.number(), "atom count", "expected a positive whole number, got " +
                                                               quoted(head.empty() ? line : head[0]));
  // Compared as numbers, and named as the file writes it: a count beyond any integer type (the
  // fuzzer's 1e106) has no integer to cast to.
  if (*count != static_cast<double>(atoms))
    throw InputError(source, lines.number(), "atom count",
                     fmt::format("{} atoms, the topology has {}", head[0], atoms));
  // Every field after the header, with its line.
  std::vector<std::pair<std::int64_t, double>> values;
  while (lines.next(line)) {
    std::string_view l = line;
    while (!l.empty() && (l.back() == '\r' || l.back() == ' ')) l.remove_suffix(1);
    for (std::size_t f = 0; f * 12 < l.size(); ++f) {
      const std::string_view field = l.substr(f * 12, 12);
      const auto token = split_whitespace(field);
      const auto value = token.size() == 1 ? parse_number(token[0]) : std::nullopt;
      if (!value || !std::isfinite(*value))
        throw InputError(source, lines.number(), fmt::format("field {} (columns {}-{})", f + 1, 12 * f + 1, 12 * f + 12),
                         "expected a finite number in 12 columns, got " + quoted(field));
      values.emplace_back(lines.number(), *value);
    }
  }
  const std::size_t n3 = 3 * atoms;
  const std::size_t extra = values.size() < n3 ? 0 : values.size() - n3;
  if (values.size() < n3 || !(extra == 0 || extra == 6 || extra == n3 || extra == n3 + 6))
    throw InputError(source, lines.number(), "coordinates",
                     fmt::format("{} numbers after the header: expected 3 x {} coordinates, then optionally as many "
                                 "velocities and/or a box line of 6",
                                 values.size(), atoms));
  md::Coordinates c;
  c.positions.resize(atoms);
  for (std::size_t i = 0; i < atoms; ++i)
    c.positions[i] = {values[3 * i].second, values[3 * i + 1].second, values[3 * i + 2].second};
  if (extra >= n3) {
    c.velocities.resize(atoms);
    for (std::size_t i = 0; i < atoms; ++i)
      c.velocities[i] = kAmberVelocityToAngstromPerFs * Vec3{values[n3 + 3 * i].second, values[n3 + 3 * i + 1].second,
                                                              values[n3 + 3 * i + 2].second};
  }
  if (extra == 6 || extra == n3 + 6) {
    const std::size_t b = values.size() - 6;
    for (int a = 0; a < 3; ++a)
      if (!(values[b + a].second > 0))
        throw InputError(source, values[b + a].first, "box", "box edges must be positive");
    for (int a = 3; a < 6; ++a)
      if (std::abs(values[b + a].second - 90) > 1e-4)
        throw InputError(source, values[b + a].first, "box",
                         fmt::format("angle {}: only orthorhombic boxes (90 degrees) are supported", values[b + a].second));
    c.box = PeriodicBox::from_edges({values[b].second, values[b + 1].second, values[b + 2].second});
  }
  return c;
}

void write_rst7(const std::string& path, const md::System& s, const std::string& title, double time_ps) {
  write_atomically(path, [&](const std::string& temporary) {
    std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::fopen(temporary.c_str(), "w"), &std::fclose);
    if (!f) throw Error(path + ": cannot write");
    fmt::print(f.get(), "{}\n{:6d}{:15.7e}\n", title.substr(0, 80), s.size(), time_ps);
    std::size_t field = 0;
    auto put = [&](double v) {
      if (!(std::abs(v) < 1e4)) throw Error(fmt::format("{}: {} does not fit the rst7 format's 12 columns", path, v));
      fmt::print(f.get(), "{:12.7f}", v);
      if (++field % 6 == 0) fmt::print(f.get(), "\n");
    };
    auto end_block = [&] {
      if (field % 6 != 0) fmt::print(f.get(), "\n");
      field = 0;
    };
    for (std::size_t i = 0; i < s.size(); ++i) put(s.x[i]), put(s.y[i]), put(s.z[i]);
    end_block();
    for (std::size_t i = 0; i < s.size(); ++i)
      for (double v : {s.vx[i], s.vy[i], s.vz[i]}) put(v / kAmberVelocityToAngstromPerFs);
    end_block();
    for (double v : {s.box.length(0), s.box.length(1), s.box.length(2), 90.0, 90.0, 90.0}) put(v);
    end_block();
    if (std::fflush(f.get()) != 0 || std::ferror(f.get())) throw Error(path + ": write failed");
  });
}

md::Coordinates read_inpcrd(const std::string& path, std::size_t atoms) {
  return parse_inpcrd(read_file_text(path, "an AMBER inpcrd/rst7 file"), path, atoms);
}

}  // namespace nbkit::io
