// CHARMM psf (io/charmm.hpp): a "PSF" line with the format's flags, then sections, each a
// header "count(s) !NAME[: comment]" and its entries. Atoms are one per line (whitespace-
// separated fields, as OpenMM and ParmEd read them: the fixed columns of the standard and EXT
// formats are separated by blanks); the other sections are integers filling lines (8 per line
// in the standard format, any number here). Every field is read or refused with file and line.
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <functional>

#include "io/charmm_files.hpp"
#include "io/text.hpp"
#include "nbkit/core/error.hpp"

namespace nbkit::io::charmm {

namespace {

bool integer(std::string_view token, std::int64_t& value) {
  return !token.empty() && std::from_chars(token.data(), token.data() + token.size(), value).ptr == token.data() + token.size();
}

class PsfReader {
 public:
  PsfReader(std::string_view text, const std::string& source) : lines_(text), source_(source) {}

  PsfFile read() {
    PsfFile psf;
    psf.source = source_;
    std::string_view line;
    if (!next_nonblank(line) || upper(split_whitespace(line).front()) != "PSF")
      fail(lines_.number(), "", "the first line must start with PSF: not a CHARMM psf file");
    for (std::string_view flag : split_whitespace(line))
      if (upper(flag) == "DRUDE") fail(lines_.number(), "PSF", "Drude polarisable systems are not supported");
    while (next_nonblank(line)) {
      const auto words = split_whitespace(line);
      std::vector<std::int64_t> counts;
      std::size_t w = 0;
      for (std::int64_t v = 0; w < words.size() && integer(words[w], v); ++w) counts.push_back(v);
      if (counts.empty() || w >= words.size() || words[w].front() != '!')
        fail(lines_.number(), "", "expected a section header like '   12 !NBOND: bonds', got " + quoted(line));
      std::string name = upper(words[w].substr(1));
      if (const auto colon = name.find(':'); colon != std::string::npos) name.resize(colon);
      for (std::int64_t c : counts)
        if (c < 0 || c > (std::int64_t{1} << 31) - 1) fail(lines_.number(), "!" + name, "a count must lie in 0..2^31 - 1");
      section(psf, name, counts);
    }
    if (psf.atoms.empty()) fail(lines_.number(), "!NATOM", "no atoms: the !NATOM section is missing or empty");
    return psf;
  }

 private:
  bool next_nonblank(std::string_view& line) {
    while (lines_.next(line))
      if (!split_whitespace(line).empty()) return true;
    return false;
  }
  [[noreturn]] void fail(std::int64_t line, const std::string& field, const std::string& problem) const {
    throw InputError(source_, line, field, problem);
  }

  void section(PsfFile& psf, const std::string& name, const std::vector<std::int64_t>& counts) {
    const std::int64_t header = lines_.number(), n = counts[0];
    if (name == "NTITLE") {
      std::string_view line;
      for (std::int64_t k = 0; k < n; ++k)
        if (!lines_.next(line)) fail(header, "!NTITLE", "the file ends inside the title");
    } else if (name == "NATOM") {
      if (!psf.atoms.empty()) fail(header, "!NATOM", "a second !NATOM section");
      atoms(psf, n);
    } else if (name == "NBOND") {
      terms(psf, psf.bonds, "!NBOND", n);
    } else if (name == "NTHETA") {
      terms(psf, psf.angles, "!NTHETA", n);
    } else if (name == "NPHI") {
      terms(psf, psf.dihedrals, "!NPHI", n);
    } else if (name == "NIMPHI") {
      terms(psf, psf.impropers, "!NIMPHI", n);
    } else if (name == "NCRTERM") {
      terms(psf, psf.cmaps, "!NCRTERM", n);
    } else if (name == "NDON" || name == "NACC") {
      integers("!" + name, 2 * n);  // hydrogen-bond donors and acceptors: no energy term
    } else if (name == "NNB") {
      if (n != 0)
        fail(header, "!NNB", "explicit nonbonded exclusions are not supported (CHARMM-GUI and psfgen write none)");
      integers("!NNB", static_cast<std::int64_t>(psf.atoms.size()));  // the per-atom pointers, all 0
    } else if (name == "NGRP") {
      integers("!NGRP", 3 * n);  // charge groups: no energy term
    } else if (name == "MOLNT") {
      integers("!MOLNT", static_cast<std::int64_t>(psf.atoms.size()));
    } else if (name == "NUMLP") {
      if (n != 0 || (counts.size() > 1 && counts[1] != 0))
        fail(header, "!NUMLP", "lone pairs (CHARMM's virtual sites) are not supported");
    } else {
      if (n != 0) fail(header, "!" + name, "an unknown psf section with entries: refused rather than left out");
    }
  }

  void atoms(PsfFile& psf, std::int64_t n) {
    const std::int64_t header = lines_.number();
    psf.atoms.reserve(static_cast<std::size_t>(n));
    for (std::int64_t a = 0; a < n; ++a) {
      std::string_view line;
      if (!lines_.next(line)) fail(header, "!NATOM", fmt::format("the file ends after {} of {} atoms", a, n));
      const auto f = split_whitespace(line);
      const std::int64_t number = lines_.number();
      if (f.size() < 8)
        fail(number, fmt::format("atom {}", a + 1),
             fmt::format("{} fields, expected at least 8: serial segment residue-id residue name type charge mass",
                         f.size()));
      std::int64_t serial = 0;
      if (!integer(f[0], serial) || serial != a + 1)
        fail(number, fmt::format("atom {}", a + 1), "the serial number must count 1, 2, 3...: got " + quoted(f[0]));
      PsfAtom atom;
      atom.segment = std::string(f[1]), atom.residue_id = std::string(f[2]), atom.residue_name = std::string(f[3]);
      atom.name = std::string(f[4]), atom.type = std::string(f[5]);
      std::int64_t type_number = 0;
      atom.numbered_type = integer(f[5], type_number);
      const auto charge = parse_number(f[6]), mass = parse_number(f[7]);
      if (!charge || !std::isfinite(*charge)) fail(number, fmt::format("atom {} charge", a + 1), "expected a number, got " + quoted(f[6]));
      if (!mass || !(*mass >= 0) || !std::isfinite(*mass))
        fail(number, fmt::format("atom {} mass", a + 1), "expected a mass of 0 or more, got " + quoted(f[7]));
      atom.charge = *charge, atom.mass = *mass, atom.line = number;
      psf.atoms.push_back(std::move(atom));
    }
  }

  // `count` integers from the lines after the header, with the line each is on.
  std::vector<std::pair<std::int64_t, std::int64_t>> integers(const std::string& field, std::int64_t count) {
    const std::int64_t header = lines_.number();
    std::vector<std::pair<std::int64_t, std::int64_t>> out;
    out.reserve(static_cast<std::size_t>(count));
    std::string_view line;
    while (static_cast<std::int64_t>(out.size()) < count) {
      if (!lines_.next(line))
        fail(header, field, fmt::format("the file ends after {} of {} indices", out.size(), count));
      for (std::string_view token : split_whitespace(line)) {
        std::int64_t v = 0;
        if (!integer(token, v)) fail(lines_.number(), field, "expected an atom index, got " + quoted(token));
        if (static_cast<std::int64_t>(out.size()) == count)
          fail(lines_.number(), field, fmt::format("more indices than the header's {}", count));
        out.emplace_back(v, lines_.number());
      }
    }
    return out;
  }

  template <int Width>
  void terms(const PsfFile& psf, PsfTerms<Width>& into, const std::string& field, std::int64_t n) {
    if (psf.atoms.empty()) fail(lines_.number(), field, "a bonded section before !NATOM");
    const auto values = integers(field, Width * n);
    const std::int64_t atoms = static_cast<std::int64_t>(psf.atoms.size());
    for (std::int64_t t = 0; t < n; ++t) {
      std::array<std::int32_t, Width> term{};
      for (int k = 0; k < Width; ++k) {
        const auto [v, line] = values[static_cast<std::size_t>(Width * t + k)];
        if (v < 1 || v > atoms)
          fail(line, fmt::format("{} entry {}", field, t + 1), fmt::format("atom {} outside 1..{}", v, atoms));
        term[k] = static_cast<std::int32_t>(v - 1);
      }
      into.atoms.push_back(term);
      into.line.push_back(values[static_cast<std::size_t>(Width * t)].second);
    }
  }

  Lines lines_;
  std::string source_;
};

}  // namespace

PsfFile parse_psf(std::string_view text, const std::string& source) { return PsfReader(text, source).read(); }

}  // namespace nbkit::io::charmm
