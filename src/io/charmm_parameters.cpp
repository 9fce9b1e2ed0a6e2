// CHARMM parameter and stream files (io/charmm.hpp). A line's '!' starts a comment; a line
// ending in '-' goes on on the next; '*' lines are titles. A section keyword (CHARMM reads
// its first four letters: BOND, ANGL or THET, DIHE or PHI, IMPR or IMPH, CMAP, NONB or NBON,
// NBFI, HBON, ATOM) starts a section, END ends the file or the stream file's block, and every
// other line is one entry of the current section, read by its fields.
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>

#include "io/charmm_files.hpp"
#include "io/text.hpp"
#include "nbkit/core/error.hpp"

namespace nbkit::io::charmm {

Key2 canonical(Key2 k) { return std::min(k, Key2{k[1], k[0]}); }
Key3 canonical(Key3 k) { return std::min(k, Key3{k[2], k[1], k[0]}); }
Key4 canonical(Key4 k) { return std::min(k, Key4{k[3], k[2], k[1], k[0]}); }

namespace {

enum class Section { none, atoms, bonds, angles, dihedrals, impropers, cmap, nonbonded, nbfix, hbond };

// The section a keyword starts, or none when the word is not one.
Section section_of(const std::string& word) {
  const std::string w = word.substr(0, 4);
  if (w == "ATOM") return Section::atoms;
  if (w == "BOND") return Section::bonds;
  if (w == "ANGL" || w == "THET") return Section::angles;
  if (w == "DIHE" || w == "PHI") return Section::dihedrals;
  if (w == "IMPR" || w == "IMPH") return Section::impropers;
  if (w == "CMAP") return Section::cmap;
  if (w == "NONB" || w == "NBON") return Section::nonbonded;
  if (w == "NBFI") return Section::nbfix;
  if (w == "HBON") return Section::hbond;
  return Section::none;
}

class ParameterReader {
 public:
  ParameterReader(std::string_view text, const std::string& source, Parameters& p)
      : lines_(text), source_(source), p_(p) {}

  void read() {
    // A stream file's parameters sit in "read para" blocks; a parameter file is one block.
    const bool stream = has_read_commands();
    bool in_parameters = !stream, in_topology = false;
    std::string line;
    std::int64_t number = 0;
    while (logical_line(line, number)) {
      const auto words = split_whitespace(line);
      const std::string first = upper(words.front());
      if (stream && !in_parameters && !in_topology) {
        if (first == "READ" && words.size() >= 2) {
          const std::string what = upper(words[1]).substr(0, 4);
          if (what == "PARA") in_parameters = true, section_ = Section::none;
          else if (what == "RTF") in_topology = true;
        }
        continue;  // CHARMM commands around the blocks
      }
      if (first == "END") {
        if (!stream) return;
        in_parameters = in_topology = false;
        continue;
      }
      if (in_topology) {  // residue topologies: only their MASS lines matter here
        if (first == "MASS") mass(words, number);
        continue;
      }
      if (first == "MASS") {
        mass(words, number);
        continue;
      }
      if (const Section s = section_of(first); s != Section::none) {
        if (section_ == Section::cmap && cmap_left_ > 0) cmap_short(number);
        section_ = s;
        if (s == Section::nonbonded) nonbonded_options(words, number);
        continue;
      }
      entry(words, number);
    }
    if (section_ == Section::cmap && cmap_left_ > 0) cmap_short(number);
  }

 private:
  bool has_read_commands() const {
    Lines lines(lines_);
    std::string_view l;
    while (lines.next(l)) {
      const auto words = split_whitespace(l.substr(0, l.find('!')));
      if (words.size() >= 2 && upper(words[0]) == "READ") return true;
    }
    return false;
  }

  // The next line with content: comments cut, '-' continuations joined, titles skipped.
  bool logical_line(std::string& out, std::int64_t& number) {
    out.clear();
    std::string_view raw;
    while (lines_.next(raw)) {
      if (out.empty()) number = lines_.number();
      std::string_view l = raw.substr(0, raw.find('!'));
      while (!l.empty() && (l.back() == ' ' || l.back() == '\t' || l.back() == '\r')) l.remove_suffix(1);
      if (out.empty()) {
        const auto words = split_whitespace(l);
        if (words.empty() || words.front().front() == '*') continue;
      }
      const bool continued = !l.empty() && l.back() == '-' && (l.size() == 1 || l[l.size() - 2] == ' ' || l[l.size() - 2] == '\t');
      if (continued) l.remove_suffix(1);
      out += std::string(l) + " ";
      if (continued) continue;
      if (!split_whitespace(out).empty()) return true;
      out.clear();  // a lone '-' and nothing after it
    }
    return !split_whitespace(out).empty();
  }

  [[noreturn]] void fail(std::int64_t line, const std::string& field, const std::string& problem) const {
    throw InputError(source_, line, field, problem);
  }
  double number(std::string_view token, std::int64_t line, const std::string& field) const {
    const auto v = parse_number(token);
    if (!v || !std::isfinite(*v)) fail(line, field, "expected a number, got " + quoted(token));
    return *v;
  }
  int whole(std::string_view token, std::int64_t line, const std::string& field) const {
    const double v = number(token, line, field);
    if (v != std::round(v) || std::abs(v) > 1000) fail(line, field, "expected a whole number, got " + quoted(token));
    return static_cast<int>(v);
  }
  void count(const std::vector<std::string_view>& words, std::int64_t line, const char* section,
             std::initializer_list<std::size_t> allowed, const char* layout) const {
    if (std::find(allowed.begin(), allowed.end(), words.size()) == allowed.end())
      fail(line, section, fmt::format("{} fields, expected {}", words.size(), layout));
  }
  Origin here(std::int64_t line) const { return {source_, line}; }

  void mass(const std::vector<std::string_view>& w, std::int64_t line) {
    if (w.size() < 4) fail(line, "MASS", "expected MASS number type mass");
    const int n = whole(w[1], line, "MASS number");
    number(w[3], line, "MASS mass");
    if (n > 0) p_.numbered_type[n] = std::string(w[2]);  // -1: numbered by CHARMM as read, not by the file
  }

  void nonbonded_options(const std::vector<std::string_view>& w, std::int64_t line) {
    for (std::size_t k = 1; k + 1 < w.size(); ++k) {
      const std::string option = upper(w[k]);
      if (option == "E14FAC") p_.e14fac = number(w[k + 1], line, "NONBONDED e14fac");
      if (option == "NBXMOD") p_.nbxmod = whole(w[k + 1], line, "NONBONDED nbxmod");
    }
    if (!(p_.e14fac >= 0 && p_.e14fac <= 1)) fail(line, "NONBONDED e14fac", "the 1-4 scale must lie in 0..1");
  }

  void entry(const std::vector<std::string_view>& w, std::int64_t line) {
    auto s = [&](std::size_t k) { return std::string(w[k]); };
    switch (section_) {
      case Section::none:
        fail(line, "", "a parameter line before any section (BONDS, ANGLES, ...): " + quoted(w.front()));
      case Section::atoms:
        fail(line, "ATOMS", "expected MASS lines");
      case Section::hbond:
        return;  // hydrogen-bond terms: no CHARMM force field since CHARMM19 uses them
      case Section::bonds: {
        count(w, line, "BONDS", {4}, "type type Kb b0");
        const double k = number(w[2], line, "BONDS Kb"), r0 = number(w[3], line, "BONDS b0");
        p_.bonds[canonical(Key2{s(0), s(1)})] = {k, r0, here(line)};
        return;
      }
      case Section::angles: {
        count(w, line, "ANGLES", {5, 7}, "type type type Ktheta theta0 [Kub S0]");
        const double k = number(w[3], line, "ANGLES Ktheta"), theta0 = number(w[4], line, "ANGLES theta0");
        const double kub = w.size() == 7 ? number(w[5], line, "ANGLES Kub") : 0.0;
        const double s0 = w.size() == 7 ? number(w[6], line, "ANGLES S0") : 0.0;
        p_.angles[canonical(Key3{s(0), s(1), s(2)})] = {k, theta0, kub, s0, here(line)};
        return;
      }
      case Section::dihedrals: {
        count(w, line, "DIHEDRALS", {7}, "type type type type Kchi n delta");
        const DihedralTerm term{number(w[4], line, "DIHEDRALS Kchi"), whole(w[5], line, "DIHEDRALS n"),
                                number(w[6], line, "DIHEDRALS delta")};
        if (term.n <= 0 || term.n > 12)
          fail(line, "DIHEDRALS n", fmt::format("multiplicity {} (expected 1..12)", term.n));
        // Lines of one quadruple add terms; a term of a multiplicity already there replaces it
        // (OpenMM's CharmmParameterSet and ParmEd read files so).
        auto& terms = p_.dihedrals[canonical(Key4{s(0), s(1), s(2), s(3)})];
        const auto same = std::find_if(terms.begin(), terms.end(), [&](const DihedralTerm& t) { return t.n == term.n; });
        if (same != terms.end()) *same = term;
        else terms.push_back(term);
        return;
      }
      case Section::impropers: {
        count(w, line, "IMPROPERS", {7}, "type type type type Kpsi n psi0");
        const ImproperParameter imp{number(w[4], line, "IMPROPERS Kpsi"), whole(w[5], line, "IMPROPERS n"),
                                    number(w[6], line, "IMPROPERS psi0"), here(line)};
        if (imp.n < 0 || imp.n > 12) fail(line, "IMPROPERS n", fmt::format("multiplicity {} (expected 0..12)", imp.n));
        p_.impropers[canonical(Key4{s(0), s(1), s(2), s(3)})] = imp;
        return;
      }
      case Section::cmap:
        return cmap(w, line);
      case Section::nonbonded: {
        count(w, line, "NONBONDED", {4, 7}, "type ignored epsilon Rmin/2 [ignored epsilon14 Rmin/2_14]");
        LennardJones lj{std::abs(number(w[2], line, "NONBONDED epsilon")), number(w[3], line, "NONBONDED Rmin/2"), 0, 0};
        lj.epsilon14 = w.size() == 7 ? std::abs(number(w[5], line, "NONBONDED epsilon14")) : lj.epsilon;
        lj.rmin_half14 = w.size() == 7 ? number(w[6], line, "NONBONDED Rmin/2 1-4") : lj.rmin_half;
        if (lj.rmin_half < 0 || lj.rmin_half14 < 0) fail(line, "NONBONDED Rmin/2", "a radius must not be negative");
        if (w.front().find_first_of("*%#") != std::string_view::npos)
          fail(line, "NONBONDED", "wildcard atom types in NONBONDED are not supported: " + quoted(w.front()));
        p_.lennard_jones[s(0)] = lj;
        return;
      }
      case Section::nbfix: {
        count(w, line, "NBFIX", {4, 6}, "type type Emin Rmin [Emin14 Rmin14]");
        Nbfix f{std::abs(number(w[2], line, "NBFIX Emin")), number(w[3], line, "NBFIX Rmin"), 0, 0};
        f.epsilon14 = w.size() == 6 ? std::abs(number(w[4], line, "NBFIX Emin14")) : f.epsilon;
        f.rmin14 = w.size() == 6 ? number(w[5], line, "NBFIX Rmin14") : f.rmin;
        p_.nbfix[canonical(Key2{s(0), s(1)})] = f;
        return;
      }
    }
  }

  [[noreturn]] void cmap_short(std::int64_t line) const {
    const std::int64_t all = static_cast<std::int64_t>(p_.cmaps.at(cmap_key_).size) * p_.cmaps.at(cmap_key_).size;
    fail(line, "CMAP", fmt::format("the map ends after {} of its {} values", all - cmap_left_, all));
  }

  // A map's header (8 types and the side), then side^2 values over as many lines as it takes.
  void cmap(const std::vector<std::string_view>& w, std::int64_t line) {
    if (cmap_left_ == 0) {
      count(w, line, "CMAP", {9}, "eight types and the grid's side");
      const int side = whole(w[8], line, "CMAP resolution");
      if (side < 4 || side > 360) fail(line, "CMAP resolution", fmt::format("a side of {} (expected 4..360)", side));
      Key4 phi{std::string(w[0]), std::string(w[1]), std::string(w[2]), std::string(w[3])};
      Key4 psi{std::string(w[4]), std::string(w[5]), std::string(w[6]), std::string(w[7])};
      phi = canonical(phi), psi = canonical(psi);
      cmap_key_ = {phi[0], phi[1], phi[2], phi[3], psi[0], psi[1], psi[2], psi[3]};
      p_.cmaps[cmap_key_] = {side, {}};
      cmap_left_ = static_cast<std::int64_t>(side) * side;
      return;
    }
    auto& grid = p_.cmaps[cmap_key_].energy;
    for (std::string_view token : w) {
      if (cmap_left_ == 0) fail(line, "CMAP", "more values than the map's side^2");
      grid.push_back(number(token, line, "CMAP value"));
      --cmap_left_;
    }
  }

  Lines lines_;
  std::string source_;
  Parameters& p_;
  Section section_ = Section::none;
  Key8 cmap_key_;
  std::int64_t cmap_left_ = 0;
};

}  // namespace

void parse_parameters(std::string_view text, const std::string& source, Parameters& into) {
  into.files.push_back(source);
  ParameterReader(text, source, into).read();
}

}  // namespace nbkit::io::charmm
