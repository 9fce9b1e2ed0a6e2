// PQR records (pqr.hpp). The format is whitespace-separated (APBS reads it so), but its
// writers keep PDB's column widths, so fields run together once numbers fill their columns:
//   "HETATM10000"          record name (columns 1-6) and a five-digit serial
//   "A1000"                chain ID and a four-digit residue number
//   "-12.345-100.123"      y against x once a coordinate has eight characters
// Every line that starts with ATOM or HETATM is read or refused with its file and line; none
// is skipped. pdb2pqr's writer (pdb2pqr/structures.py, get_pqr_string) is the layout checked
// below: x, y, z in columns 31-38, 39-46, 47-54 (%8.3f), then charge and radius.
#include "nbkit/io/pqr.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <optional>

#include "io/text.hpp"
#include "nbkit/core/error.hpp"

namespace nbkit::io {

namespace {

constexpr std::array<const char*, 5> kFieldNames = {"x", "y", "z", "charge", "radius"};

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// "-12.345-100.123" -> "-12.345", "-100.123": a sign after a digit or a point starts a new
// number (not after an exponent's 'e').
void split_fused_numbers(std::string_view token, std::vector<std::string_view>& pieces) {
  std::size_t start = 0;
  for (std::size_t i = 1; i < token.size(); ++i)
    if ((token[i] == '-' || token[i] == '+') && (is_digit(token[i - 1]) || token[i - 1] == '.')) {
      pieces.push_back(token.substr(start, i - start));
      start = i;
    }
  pieces.push_back(token.substr(start));
}

// "  1.00" or "100.00": a PDB occupancy or B-factor column (%6.2f).
bool pdb_two_decimals(std::string_view column) {
  std::size_t i = 0;
  while (i < column.size() && column[i] == ' ') ++i;
  if (i < column.size() && column[i] == '-') ++i;
  const std::size_t digits = i;
  while (i < column.size() && is_digit(column[i])) ++i;
  if (i == digits || i + 3 != column.size() || column[i] != '.') return false;
  return is_digit(column[i + 1]) && is_digit(column[i + 2]);
}

// A PDB ATOM record rather than a PQR one: coordinates in their columns, then occupancy and
// B-factor as %6.2f in columns 55-60 and 61-66 (a PQR's charge and radius stand there with
// more decimals, or shifted).
bool is_pdb_layout(std::string_view line) {
  if (line.size() < 66 || line[34] != '.' || line[42] != '.' || line[50] != '.') return false;
  if (!pdb_two_decimals(line.substr(54, 6)) || !pdb_two_decimals(line.substr(60, 6))) return false;
  return line.size() == 66 || !(is_digit(line[66]) || line[66] == '.');
}

// pdb2pqr's columns for x, y and z (%8.3f in 31-38, 39-46, 47-54).
bool is_pdb2pqr_layout(std::string_view line) {
  return line.size() > 54 && line[34] == '.' && line[42] == '.' && line[50] == '.';
}

std::optional<double> finite_number(std::string_view token) {
  const auto value = parse_number(token);
  if (!value || !std::isfinite(*value)) return std::nullopt;
  return value;
}

class PqrRecordReader {
 public:
  PqrRecordReader(const std::string& source) : source_(source) {}

  // The x, y, z, charge and radius of one ATOM/HETATM line (`rest`: after the record name);
  // with `identity`, the fields before them too (serial, atom and residue names, chain,
  // residue number).
  std::array<double, 5> read(std::string_view line, std::string_view record, std::string_view rest,
                             std::int64_t number, PqrRecord* identity = nullptr) {
    number_ = number;
    if (is_pdb_layout(line))
      fail("record",
           fmt::format("a PDB-format {} record (occupancy and B-factor in columns 55-66), not a PQR record with "
                       "charge and radius: make a PQR with 'pdb2pqr --ff=AMBER IN.pdb OUT.pqr', or name the file "
                       ".pdb and pass --charges amber (or another pdb2pqr force field)",
                       record));
    const auto tokens = split_whitespace(rest);
    // The five values from the right, fused numbers split.
    std::vector<std::string_view> tail;  // right to left
    std::vector<std::string_view> head;  // the fields before the five values, left to right
    std::size_t fields = 1 + tokens.size();  // the record name, then the rest's tokens
    std::size_t t = tokens.size();
    while (t > 0 && tail.size() < 5) {
      std::vector<std::string_view> pieces;
      split_fused_numbers(tokens[--t], pieces);
      fields += pieces.size() - 1;
      std::size_t p = pieces.size();
      while (p > 0 && tail.size() < 5) tail.push_back(pieces[--p]);
      head.insert(head.begin(), pieces.begin(), pieces.begin() + static_cast<std::ptrdiff_t>(p));
    }
    head.insert(head.begin(), tokens.begin(), tokens.begin() + static_cast<std::ptrdiff_t>(t));
    // Positive numbers that fill their columns run together with no sign between them
    // ("12.3451000.000"): then pdb2pqr's coordinate columns, with charge and radius after them.
    const bool fused = fields < 10 || !std::all_of(tail.begin(), tail.begin() + std::min<std::size_t>(tail.size(), 5),
                                                   [](std::string_view t) { return finite_number(t).has_value(); });
    if (fused && is_pdb2pqr_layout(line))
      if (const auto columns = from_columns(line)) {
        if (identity) identify(split_whitespace(line.substr(record.size(), 30 - record.size())), *identity);
        return within_range(*columns);
      }
    if (fields < 10)
      fail("record", fmt::format("expected at least 10 whitespace-separated fields (ATOM serial name resName "
                                 "[chainID] resSeq x y z charge radius), found {}",
                                 fields));
    std::array<double, 5> values{};
    for (std::size_t f = 0; f < 5; ++f) {
      const std::string_view token = tail[4 - f];
      if (const auto value = finite_number(token)) {
        values[f] = *value;
        continue;
      }
      if (!parse_number(token)) {
        const bool element = !token.empty() && std::isalpha(static_cast<unsigned char>(token.front())) &&
                             token.size() <= 2;
        fail(kFieldNames[f], "expected a number, got " + quoted(token) +
                                 (element && f == 4 ? " (an element symbol: a PDB file? a PQR record ends with charge "
                                                      "and radius; make one with pdb2pqr)"
                                                    : ""));
      }
      fail(kFieldNames[f], "expected a finite number, got " + quoted(token));
    }
    if (values[4] < 0) fail("radius", "expected zero or a positive radius, got " + quoted(tail[0]));

    // Where the columns show the coordinates, the fields read must be those: a record short
    // of its charge or radius would otherwise shift every value by one field.
    if (is_pdb2pqr_layout(line))
      if (const auto columns = coordinate_columns(line))
        for (int a = 0; a < 3; ++a)
          if ((*columns)[static_cast<std::size_t>(a)] != values[static_cast<std::size_t>(a)])
            fail("record", fmt::format("x, y, z in columns 31-54 are {} {} {}, but the fields read as x, y, z are {} "
                                       "{} {}: a field is missing (a PQR record ends with x y z charge radius)",
                                       (*columns)[0], (*columns)[1], (*columns)[2], values[0], values[1], values[2]));
    if (identity) identify(head, *identity);
    return within_range(values);
  }

 private:
  static std::optional<std::array<double, 3>> coordinate_columns(std::string_view line) {
    std::array<double, 3> xyz{};
    for (std::size_t a = 0; a < 3; ++a) {
      std::string_view column = line.substr(30 + 8 * a, 8);
      while (!column.empty() && column.front() == ' ') column.remove_prefix(1);
      const auto value = finite_number(column);
      if (!value) return std::nullopt;
      xyz[a] = *value;
    }
    return xyz;
  }

  // x, y, z from pdb2pqr's columns; charge and radius the two fields after them.
  static std::optional<std::array<double, 5>> from_columns(std::string_view line) {
    const auto xyz = coordinate_columns(line);
    if (!xyz) return std::nullopt;
    std::array<double, 5> values{(*xyz)[0], (*xyz)[1], (*xyz)[2], 0, 0};
    const auto rest = split_whitespace(line.substr(54));
    if (rest.size() != 2) return std::nullopt;
    for (int f = 0; f < 2; ++f) {
      const auto value = finite_number(rest[static_cast<std::size_t>(f)]);
      if (!value) return std::nullopt;
      values[static_cast<std::size_t>(3 + f)] = *value;
    }
    if (values[4] < 0) return std::nullopt;
    return values;
  }

  // "serial name resName [chainID] resSeq", with a chain ID fused to its residue number
  // ("W1000") split and an insertion code ("52A") kept apart.
  static void identify(const std::vector<std::string_view>& head, PqrRecord& r) {
    auto integer = [](std::string_view text) -> std::optional<std::int64_t> {
      std::int64_t v = 0;
      const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), v);
      if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
      return v;
    };
    if (!head.empty()) r.serial = integer(head[0]);
    if (head.size() > 1) r.name = std::string(head[1]);
    if (head.size() > 2) r.residue_name = std::string(head[2]);
    std::string_view number;
    if (head.size() > 4) {
      r.chain = std::string(head[3]);
      number = head[4];
    } else if (head.size() == 4) {
      number = head[3];
      std::size_t letters = 0;
      while (letters < number.size() && std::isalpha(static_cast<unsigned char>(number[letters]))) ++letters;
      if (letters == 1 && letters < number.size()) {  // "W1000": chain W, residue 1000
        r.chain = std::string(number.substr(0, 1));
        number.remove_prefix(1);
      }
    }
    if (!number.empty() && std::isalpha(static_cast<unsigned char>(number.back())) && number.size() > 1) {
      r.insertion_code = number.back();
      number.remove_suffix(1);
    }
    if (const auto n = integer(number)) r.residue_number = static_cast<int>(*n);
  }

  const std::array<double, 5>& within_range(const std::array<double, 5>& values) const {
    for (std::size_t a = 0; a < 3; ++a)
      if (std::fabs(values[a]) > kMaxCoordinate)
        fail(kFieldNames[a], fmt::format("{:g} A lies beyond {:g} A of the origin: no molecule is that large (a unit "
                                         "mix-up or a corrupt file?)",
                                         values[a], kMaxCoordinate));
    return values;
  }

  [[noreturn]] void fail(const std::string& field, const std::string& problem) const {
    throw InputError(source_, number_, field, problem);
  }

  const std::string& source_;
  std::int64_t number_ = 0;
};

}  // namespace

namespace {

// "ATOM", "HETATM", or empty for a line of another record. PDB's record name is columns 1-6
// ("ATOM  ", "HETATM"); writers fuse it with a serial of five digits or more, so the name is
// matched as a prefix, never as a whole field. "ATOM" is padded to six columns, so a letter
// after it is no serial: such a line ("ATOMIC ...") is refused, not skipped.
std::string_view record_name(std::string_view line, const std::string& source, std::int64_t number) {
  if (line.starts_with("HETATM")) return "HETATM";
  if (!line.starts_with("ATOM")) return {};
  if (line.size() > 4 && std::isalpha(static_cast<unsigned char>(line[4])))
    throw InputError(source, number, "record",
                     "starts with ATOM but is no ATOM record (" + quoted(split_whitespace(line).front()) +
                         "): a PQR file holds ATOM and HETATM records");
  return "ATOM";
}

}  // namespace

std::vector<Atoms> parse_pqr_models(std::string_view text, const std::string& source) {
  std::vector<Atoms> models;
  Atoms atoms;
  Lines lines(text);
  std::string_view line;
  std::int64_t line_number = 0;
  PqrRecordReader reader(source);
  auto end_model = [&](const char* field) {
    if (atoms.empty()) return;
    if (!models.empty() && atoms.size() != models.front().size())
      throw InputError(source, line_number, field,
                       fmt::format("model {} has {} atoms, model 1 has {}", models.size() + 1, atoms.size(),
                                   models.front().size()));
    models.push_back(std::move(atoms));
    atoms = Atoms{};
  };
  while (lines.next(line)) {
    line_number = lines.number();
    if (line.starts_with("ENDMDL")) {  // a model ends: the next ATOM records are the next model's
      end_model("ENDMDL");
      continue;
    }
    const std::string_view record = record_name(line, source, line_number);
    if (record.empty()) continue;  // REMARK, TER, END, CRYST1, MODEL, ...: no atoms
    const std::array<double, 5> v = reader.read(line, record, line.substr(record.size()), line_number);
    atoms.push_back({v[0], v[1], v[2]}, v[3], v[4]);
  }
  end_model("ATOM");
  if (models.empty()) throw InputError(source, 0, "", "no ATOM or HETATM records: expected a PQR file with atoms");
  return models;
}

std::vector<PqrRecord> parse_pqr_records(std::string_view text, const std::string& source) {
  std::vector<PqrRecord> records;
  Lines lines(text);
  std::string_view line;
  PqrRecordReader reader(source);
  int model = 0;
  bool model_has_atoms = false;
  while (lines.next(line)) {
    if (line.starts_with("ENDMDL")) {
      if (model_has_atoms) ++model;
      model_has_atoms = false;
      continue;
    }
    const std::string_view record = record_name(line, source, lines.number());
    if (record.empty()) continue;
    PqrRecord r;
    r.hetatm = record == "HETATM";
    r.model = model;
    r.line = lines.number();
    const auto v = reader.read(line, record, line.substr(record.size()), r.line, &r);
    r.position = {v[0], v[1], v[2]};
    r.charge = v[3];
    r.radius = v[4];
    records.push_back(std::move(r));
    model_has_atoms = true;
  }
  return records;
}

Atoms parse_pqr(std::string_view text, const std::string& source) {
  return std::move(parse_pqr_models(text, source).front());
}

namespace {
const char* kPqrFile = "a PQR file (ATOM/HETATM records with charges and radii)";
}

std::vector<Atoms> read_pqr_models(const std::string& path) {
  return parse_pqr_models(read_file_text(path, kPqrFile), path);
}

Atoms read_pqr(const std::string& path) { return parse_pqr(read_file_text(path, kPqrFile), path); }

}  // namespace nbkit::io
