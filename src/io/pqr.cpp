#include "nbkit/io/pqr.hpp"

#include <fmt/format.h>

#include <array>
#include <cmath>

#include "io/text.hpp"
#include "nbkit/core/error.hpp"

namespace nbkit::io {

Atoms parse_pqr(std::string_view text, const std::string& source) {
  static constexpr std::array<const char*, 5> kFieldNames = {"x", "y", "z", "charge", "radius"};
  Atoms atoms;
  std::int64_t line_number = 0;
  std::size_t position = 0;
  while (position < text.size()) {
    std::size_t end = text.find('\n', position);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(position, end - position);
    position = end + 1;
    ++line_number;
    if (!(line.starts_with("ATOM") || line.starts_with("HETATM"))) continue;
    const auto fields = split_whitespace(line);
    if (fields[0] != "ATOM" && fields[0] != "HETATM") continue;  // e.g. "ATOMIC ..." is no record
    // record serial name resName [chainID] resSeq x y z charge radius
    if (fields.size() < 10)
      throw InputError(source, line_number, "record",
                       fmt::format("expected at least 10 whitespace-separated fields (ATOM serial name resName "
                                   "[chainID] resSeq x y z charge radius), found {}",
                                   fields.size()));
    std::array<double, 5> values{};
    for (std::size_t f = 0; f < 5; ++f) {
      const std::string_view token = fields[fields.size() - 5 + f];
      const auto value = parse_number(token);
      if (!value)
        throw InputError(source, line_number, kFieldNames[f], "expected a number, got " + quoted(token));
      if (!std::isfinite(*value))
        throw InputError(source, line_number, kFieldNames[f], "expected a finite number, got " + quoted(token));
      values[f] = *value;
    }
    if (values[4] < 0)
      throw InputError(source, line_number, "radius", "expected zero or a positive radius, got " + quoted(fields.back()));
    atoms.push_back({values[0], values[1], values[2]}, values[3], values[4]);
  }
  if (atoms.empty()) throw InputError(source, 0, "", "no ATOM or HETATM records: expected a PQR file with atoms");
  return atoms;
}

Atoms read_pqr(const std::string& path) { return parse_pqr(read_file_text(path), path); }

}  // namespace nbkit::io
