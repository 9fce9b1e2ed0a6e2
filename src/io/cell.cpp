#include "nbkit/io/cell.hpp"

#include <fmt/format.h>

#include <array>
#include <cmath>
#include <filesystem>

#include "io/gemmi_structure.hpp"
#include "io/text.hpp"
#include "nbkit/core/error.hpp"
#include "nbkit/io/structure.hpp"

namespace nbkit::io {

namespace {

// PDB writes a = b = c = 1 and angles of 90 when a structure has no crystal cell (NMR,
// cryo-EM); that is no box.
bool is_placeholder(const std::array<double, 6>& cell) {
  return cell[0] == 1 && cell[1] == 1 && cell[2] == 1;
}

std::optional<PeriodicBox> orthorhombic(const std::array<double, 6>& cell, const std::string& source, std::int64_t line) {
  static constexpr std::array<const char*, 6> kNames = {"a", "b", "c", "alpha", "beta", "gamma"};
  if (is_placeholder(cell)) return std::nullopt;
  for (int f = 0; f < 3; ++f)
    if (!(cell[f] > 0) || !std::isfinite(cell[f]))
      throw InputError(source, line, kNames[f], fmt::format("expected a positive edge length, got {}", cell[f]));
  for (int f = 3; f < 6; ++f)
    if (std::fabs(cell[f] - 90) > 1e-3)
      throw InputError(source, line, kNames[f],
                       fmt::format("only orthorhombic boxes are supported (angles of 90 degrees), got {} {} {}",
                                   cell[3], cell[4], cell[5]));
  return PeriodicBox::from_edges(Vec3{cell[0], cell[1], cell[2]});
}

}  // namespace

std::optional<PeriodicBox> parse_cryst1(std::string_view text, const std::string& source) {
  static constexpr std::array<const char*, 6> kNames = {"a", "b", "c", "alpha", "beta", "gamma"};
  Lines lines(text);
  std::string_view line;
  std::int64_t line_number = 0;
  while (lines.next(line)) {
    line_number = lines.number();
    if (!line.starts_with("CRYST1")) continue;
    // CRYST1 a b c alpha beta gamma [space group] [Z]; PDB's fixed columns are
    // whitespace-separated in practice, and PQR writers keep the record as it was.
    const auto fields = split_whitespace(line);
    if (fields.size() < 7)
      throw InputError(source, line_number, "CRYST1",
                       fmt::format("expected a b c alpha beta gamma after CRYST1, found {} fields", fields.size() - 1));
    std::array<double, 6> cell{};
    for (int f = 0; f < 6; ++f) {
      const auto value = parse_number(fields[f + 1]);
      if (!value) throw InputError(source, line_number, kNames[f], "expected a number, got " + quoted(fields[f + 1]));
      cell[f] = *value;
    }
    return orthorhombic(cell, source, line_number);
  }
  return std::nullopt;
}

std::optional<PeriodicBox> read_periodic_box(const std::string& path) {
  if (guess_structure_format(path) == StructureFormat::pqr) return parse_cryst1(read_file_text(path), path);
  const gemmi::Structure structure = read_gemmi_structure(path);
  const gemmi::UnitCell& cell = structure.cell;
  if (!cell.is_crystal()) return std::nullopt;
  return orthorhombic({cell.a, cell.b, cell.c, cell.alpha, cell.beta, cell.gamma}, path, 0);
}

}  // namespace nbkit::io
