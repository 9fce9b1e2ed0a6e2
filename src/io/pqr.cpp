#include "nbkit/io/pqr.hpp"

#include <fmt/format.h>

#include <array>
#include <cmath>

#include "io/text.hpp"
#include "nbkit/core/error.hpp"

namespace nbkit::io {

std::vector<Atoms> parse_pqr_models(std::string_view text, const std::string& source) {
  static constexpr std::array<const char*, 5> kFieldNames = {"x", "y", "z", "charge", "radius"};
  std::vector<Atoms> models;
  Atoms atoms;
  Lines lines(text);
  std::string_view line;
  std::int64_t line_number = 0;
  while (lines.next(line)) {
    line_number = lines.number();
    if (line.starts_with("ENDMDL")) {  // a model ends: the next ATOM records are the next model's
      if (!atoms.empty()) {
        if (!models.empty() && atoms.size() != models.front().size())
          throw InputError(source, line_number, "ENDMDL",
                           fmt::format("model {} has {} atoms, model 1 has {}", models.size() + 1, atoms.size(),
                                       models.front().size()));
        models.push_back(std::move(atoms));
        atoms = Atoms{};
      }
      continue;
    }
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
  if (!atoms.empty()) {
    if (!models.empty() && atoms.size() != models.front().size())
      throw InputError(source, line_number, "ATOM",
                       fmt::format("model {} has {} atoms, model 1 has {}", models.size() + 1, atoms.size(),
                                   models.front().size()));
    models.push_back(std::move(atoms));
  }
  if (models.empty()) throw InputError(source, 0, "", "no ATOM or HETATM records: expected a PQR file with atoms");
  return models;
}

Atoms parse_pqr(std::string_view text, const std::string& source) {
  return std::move(parse_pqr_models(text, source).front());
}

std::vector<Atoms> read_pqr_models(const std::string& path) { return parse_pqr_models(read_file_text(path), path); }

Atoms read_pqr(const std::string& path) { return parse_pqr(read_file_text(path), path); }

}  // namespace nbkit::io
