// AMBER prmtop (io/amber.hpp). The file is a sequence of sections, each "%FLAG NAME", then
// "%FORMAT(nXw)" (n fields of width w per line: I integer, E/F real, a text), then the fields
// in fixed columns (%COMMENT lines may come between). Every field read is checked, and an
// error names the file, the line and "%FLAG NAME [entry]".
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <map>
#include <numbers>
#include <set>

#include "io/text.hpp"
#include "nbkit/core/error.hpp"
#include "nbkit/io/amber.hpp"

namespace nbkit::io {

namespace {

// AMBER's charge unit: charges are stored times 18.2223 = sqrt(332.0522173), its Coulomb
// constant's square root (kcal/mol A / e^2), as LEaP writes them and OpenMM and ParmEd read them.
constexpr double kAmberChargeScale = 18.2223;

struct Section {
  std::string name;
  std::int64_t flag_line = 0;
  char kind = 0;       // 'I', 'E', 'a'
  int per_line = 0, width = 0;
  std::vector<std::pair<std::int64_t, std::string_view>> lines;  // data lines with their numbers
};

class Prmtop {
 public:
  Prmtop(std::string_view text, const std::string& source) : source_(source) { split(text); }

  bool has(const std::string& name) const { return sections_.count(name) > 0; }
  const Section* find(const std::string& name) const {
    const auto it = sections_.find(name);
    return it == sections_.end() ? nullptr : &it->second;
  }
  // The fields of a section as text, `count` of them (any number when count < 0), each with
  // the line it is on.
  std::vector<std::pair<std::int64_t, std::string_view>> fields(const std::string& name, std::int64_t count) const {
    const Section* s = find(name);
    if (!s) throw InputError(source_, 0, "%FLAG " + name, "missing section (a prmtop needs it)");
    std::vector<std::pair<std::int64_t, std::string_view>> out;
    for (const auto& [number, line] : s->lines) {
      std::string_view l = line;
      if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
      if (s->kind != 'a')
        while (!l.empty() && l.back() == ' ') l.remove_suffix(1);
      const std::size_t n = (l.size() + s->width - 1) / s->width;
      if (n > static_cast<std::size_t>(s->per_line))
        throw InputError(source_, number, "%FLAG " + name,
                         fmt::format("{} characters, more than the format's {} fields of {}", l.size(), s->per_line,
                                     s->width));
      for (std::size_t f = 0; f < n; ++f) out.emplace_back(number, l.substr(f * s->width, s->width));
    }
    if (count >= 0 && static_cast<std::int64_t>(out.size()) != count)
      throw InputError(source_, s->flag_line, "%FLAG " + name,
                       fmt::format("{} values, expected {} (from POINTERS)", out.size(), count));
    return out;
  }
  std::vector<std::int64_t> integers(const std::string& name, std::int64_t count) const {
    const Section* s = find(name);
    if (s && s->kind != 'I') throw InputError(source_, s->flag_line, "%FLAG " + name, "expected an integer format");
    std::vector<std::int64_t> out;
    std::int64_t entry = 0;
    for (const auto& [number, field] : fields(name, count)) {
      ++entry;
      const auto token = split_whitespace(field);
      std::int64_t value = 0;
      if (token.size() != 1 ||
          std::from_chars(token[0].data(), token[0].data() + token[0].size(), value).ptr != token[0].data() + token[0].size())
        throw InputError(source_, number, fmt::format("%FLAG {} entry {}", name, entry),
                         "expected an integer, got " + quoted(field));
      out.push_back(value);
    }
    return out;
  }
  std::vector<double> reals(const std::string& name, std::int64_t count) const {
    const Section* s = find(name);
    if (s && s->kind != 'E') throw InputError(source_, s->flag_line, "%FLAG " + name, "expected a real format");
    std::vector<double> out;
    std::int64_t entry = 0;
    for (const auto& [number, field] : fields(name, count)) {
      ++entry;
      const auto token = split_whitespace(field);
      const auto value = token.size() == 1 ? parse_number(token[0]) : std::nullopt;
      if (!value || !std::isfinite(*value))
        throw InputError(source_, number, fmt::format("%FLAG {} entry {}", name, entry),
                         "expected a finite number, got " + quoted(field));
      out.push_back(*value);
    }
    return out;
  }
  std::vector<std::string> strings(const std::string& name, std::int64_t count) const {
    std::vector<std::string> out;
    for (const auto& [number, field] : fields(name, count)) {
      const auto token = split_whitespace(field);
      out.emplace_back(token.empty() ? "" : std::string(token[0]));
    }
    return out;
  }
  [[noreturn]] void fail(const std::string& name, std::int64_t entry, const std::string& problem) const {
    const Section* s = find(name);
    std::int64_t line = s ? s->flag_line : 0;
    if (s && entry > 0) {  // the line holding entry `entry` (1-based)
      const std::int64_t index = entry - 1;
      if (index / s->per_line < static_cast<std::int64_t>(s->lines.size())) line = s->lines[index / s->per_line].first;
    }
    throw InputError(source_, line, entry > 0 ? fmt::format("%FLAG {} entry {}", name, entry) : "%FLAG " + name,
                     problem);
  }
  const std::string& source() const { return source_; }

 private:
  void split(std::string_view text) {
    Lines lines(text);
    std::string_view line;
    Section* current = nullptr;
    bool format_expected = false;
    while (lines.next(line)) {
      if (line.rfind("%VERSION", 0) == 0 || line.rfind("%COMMENT", 0) == 0) continue;
      if (line.rfind("%FLAG", 0) == 0) {
        const auto words = split_whitespace(line.substr(5));
        if (words.size() != 1) throw InputError(source_, lines.number(), "%FLAG", "expected one section name");
        const std::string name(words[0]);
        if (sections_.count(name)) throw InputError(source_, lines.number(), "%FLAG " + name, "section given twice");
        current = &sections_[name];
        current->name = name, current->flag_line = lines.number();
        format_expected = true;
        continue;
      }
      if (line.rfind("%FORMAT", 0) == 0) {
        if (!current || !format_expected) throw InputError(source_, lines.number(), "%FORMAT", "not after a %FLAG line");
        parse_format(*current, line, lines.number());
        format_expected = false;
        continue;
      }
      if (!current) {
        throw InputError(source_, lines.number(), "",
                         "expected %VERSION or %FLAG: not a prmtop of the %FLAG format (AMBER 7 and later)");
      }
      if (format_expected) throw InputError(source_, lines.number(), "%FLAG " + current->name, "expected %FORMAT(...)");
      current->lines.emplace_back(lines.number(), line);
    }
    if (sections_.empty()) throw InputError(source_, 0, "", "no %FLAG sections: not an AMBER prmtop");
  }
  // "%FORMAT(10I8)", "%FORMAT(5E16.8)", "%FORMAT(20a4)", "%FORMAT(1a80)".
  void parse_format(Section& s, std::string_view line, std::int64_t number) const {
    const std::size_t open = line.find('('), close = line.find(')');
    std::string_view f = open != std::string_view::npos && close != std::string_view::npos && close > open
                             ? line.substr(open + 1, close - open - 1)
                             : std::string_view();
    std::size_t p = 0;
    while (p < f.size() && std::isdigit(static_cast<unsigned char>(f[p]))) ++p;
    const char kind = p < f.size() ? static_cast<char>(std::toupper(static_cast<unsigned char>(f[p]))) : 0;
    const std::string_view repeat = f.substr(0, p), rest = p < f.size() ? f.substr(p + 1) : std::string_view();
    const std::string_view width = rest.substr(0, rest.find('.'));
    const std::string_view decimals = width.size() < rest.size() ? rest.substr(width.size() + 1) : std::string_view();
    const bool decimals_ok = std::all_of(decimals.begin(), decimals.end(),
                                         [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; });
    int per_line = 0, w = 0;
    const bool ok = !repeat.empty() && !width.empty() &&
                    std::from_chars(repeat.data(), repeat.data() + repeat.size(), per_line).ptr ==
                        repeat.data() + repeat.size() &&
                    std::from_chars(width.data(), width.data() + width.size(), w).ptr == width.data() + width.size() &&
                    decimals_ok && per_line > 0 && w > 0 && (kind == 'I' || kind == 'E' || kind == 'F' || kind == 'A');
    if (!ok) throw InputError(source_, number, "%FLAG " + s.name, "unreadable format " + quoted(line));
    s.kind = kind == 'F' ? 'E' : (kind == 'A' ? 'a' : kind);
    s.per_line = per_line, s.width = w;
  }

  std::string source_;
  std::map<std::string, Section> sections_;
};

// POINTERS' entries by AMBER's names (the Reference Manual's order).
enum Pointer {
  NATOM, NTYPES, NBONH, MBONA, NTHETH, MTHETA, NPHIH, MPHIA, NHPARM, NPARM, NNB, NRES, NBONA, NTHETA, NPHIA, NUMBND,
  NUMANG, NPTRA, NATYP, NPHB, IFPERT, NBPER, NGPER, NDPER, MBPER, MGPER, MDPER, IFBOX, NMXRS, IFCAP, NUMEXTRA,
  kPointers
};

void refuse_unsupported(const Prmtop& p, const std::vector<std::int64_t>& ptr) {
  if (p.has("CTITLE") || p.has("CHARMM_UREY_BRADLEY"))
    p.fail("CTITLE", 0, "a CHAMBER prmtop (a CHARMM force field converted by chamber) is not read: use the psf and "
                        "CHARMM parameter files, or a prmtop of an AMBER force field");
  if (p.has("CHARMM_CMAP_COUNT"))
    p.fail("CHARMM_CMAP_COUNT", 0, "CHARMM's CMAP sections belong to CHAMBER prmtops, which are not read");
  if (ptr[IFPERT] != 0) p.fail("POINTERS", IFPERT + 1, "IFPERT: perturbation topologies are not supported");
  if (ptr[IFCAP] != 0) p.fail("POINTERS", IFCAP + 1, "IFCAP: solvent caps are not supported");
  if (ptr[NUMEXTRA] != 0)
    p.fail("POINTERS", NUMEXTRA + 1,
           fmt::format("NUMEXTRA = {}: extra points (TIP4P/TIP5P virtual sites, lone pairs) are not supported",
                       ptr[NUMEXTRA]));
  if (p.has("IPOL")) {
    const auto ipol = p.integers("IPOL", 1);
    if (ipol[0] != 0) p.fail("IPOL", 1, "polarisable force fields are not supported");
  }
}

// Atom index fields are stored as 3 (i - 1): checked and turned into 0-based indices.
std::int32_t atom_of(const Prmtop& p, const char* section, std::int64_t entry, std::int64_t value, std::int64_t atoms) {
  const std::int64_t v = std::abs(value);
  if (v % 3 != 0 || v / 3 >= atoms)
    p.fail(section, entry, fmt::format("atom pointer {} is not 3 (i - 1) for an atom i in 1..{}", value, atoms));
  return static_cast<std::int32_t>(v / 3);
}

std::int64_t type_of(const Prmtop& p, const char* section, std::int64_t entry, std::int64_t value, std::int64_t types) {
  if (value < 1 || value > types) p.fail(section, entry, fmt::format("parameter type {} outside 1..{}", value, types));
  return value - 1;
}

void read_atoms(const Prmtop& p, const std::vector<std::int64_t>& ptr, md::Topology& t) {
  const std::int64_t n = ptr[NATOM], types = ptr[NTYPES];
  t.atom_name = p.strings("ATOM_NAME", n);
  t.charge = p.reals("CHARGE", n);
  for (double& q : t.charge) q /= kAmberChargeScale;
  t.mass = p.reals("MASS", n);
  const auto type = p.integers("ATOM_TYPE_INDEX", n);
  t.lj_type.resize(n);
  for (std::int64_t i = 0; i < n; ++i)
    t.lj_type[i] = static_cast<std::int32_t>(type_of(p, "ATOM_TYPE_INDEX", i + 1, type[i], types));
  // Residues: RESIDUE_POINTER holds each residue's first atom (1-based, increasing).
  const auto labels = p.strings("RESIDUE_LABEL", ptr[NRES]);
  const auto first = p.integers("RESIDUE_POINTER", ptr[NRES]);
  t.residue_name.resize(n), t.residue_number.resize(n);
  for (std::int64_t r = 0; r < ptr[NRES]; ++r) {
    const std::int64_t begin = first[r] - 1, end = r + 1 < ptr[NRES] ? first[r + 1] - 1 : n;
    if (begin < 0 || begin >= end || end > n || (r == 0 && begin != 0))
      p.fail("RESIDUE_POINTER", r + 1, fmt::format("residue {} starts at atom {}: not increasing within 1..{}", r + 1,
                                                   first[r], n));
    for (std::int64_t i = begin; i < end; ++i) t.residue_name[i] = labels[r], t.residue_number[i] = static_cast<std::int32_t>(r + 1);
  }
  // The Lennard-Jones table: NONBONDED_PARM_INDEX[NTYPES (a - 1) + b - 1] points into ACOEF and
  // BCOEF (positive) or the 10-12 hydrogen-bond table (negative; accepted only when its
  // coefficients are zero, as in every modern force field).
  const auto index = p.integers("NONBONDED_PARM_INDEX", types * types);
  const std::int64_t pairs = types * (types + 1) / 2;
  const auto a = p.reals("LENNARD_JONES_ACOEF", pairs), b = p.reals("LENNARD_JONES_BCOEF", pairs);
  std::vector<double> hbond_a, hbond_b;
  if (ptr[NPHB] > 0) hbond_a = p.reals("HBOND_ACOEF", ptr[NPHB]), hbond_b = p.reals("HBOND_BCOEF", ptr[NPHB]);
  t.lj_types = static_cast<std::int32_t>(types);
  t.c12.assign(types * types, 0.0), t.c6.assign(types * types, 0.0);
  for (std::int64_t e = 0; e < types * types; ++e) {
    const std::int64_t k = index[e];
    if (k > 0 && k <= pairs) {
      t.c12[e] = a[k - 1], t.c6[e] = b[k - 1];
    } else if (k < 0 && -k <= ptr[NPHB]) {
      if (hbond_a[-k - 1] != 0 || hbond_b[-k - 1] != 0)
        p.fail("NONBONDED_PARM_INDEX", e + 1, "a 10-12 hydrogen-bond term with nonzero coefficients is not supported");
    } else {
      p.fail("NONBONDED_PARM_INDEX", e + 1, fmt::format("index {} outside the LJ table (1..{}) and the 10-12 table", k,
                                                        pairs));
    }
  }
  for (std::int64_t x = 0; x < types; ++x)
    for (std::int64_t y = 0; y < x; ++y)
      if (t.c12[x * types + y] != t.c12[y * types + x] || t.c6[x * types + y] != t.c6[y * types + x])
        p.fail("NONBONDED_PARM_INDEX", x * types + y + 1, "the Lennard-Jones table is not symmetric");
}

void read_bonds_and_angles(const Prmtop& p, const std::vector<std::int64_t>& ptr, md::Topology& t) {
  const std::int64_t n = ptr[NATOM];
  const auto k = p.reals("BOND_FORCE_CONSTANT", ptr[NUMBND]), r0 = p.reals("BOND_EQUIL_VALUE", ptr[NUMBND]);
  for (const char* section : {"BONDS_INC_HYDROGEN", "BONDS_WITHOUT_HYDROGEN"}) {
    const auto v = p.integers(section, 3 * ptr[section[6] == 'I' ? NBONH : NBONA]);
    for (std::size_t e = 0; e < v.size(); e += 3) {
      const std::int64_t type = type_of(p, section, e + 3, v[e + 2], ptr[NUMBND]);
      t.bonds.push_back({atom_of(p, section, e + 1, v[e], n), atom_of(p, section, e + 2, v[e + 1], n), k[type], r0[type]});
    }
  }
  const auto kt = p.reals("ANGLE_FORCE_CONSTANT", ptr[NUMANG]), theta0 = p.reals("ANGLE_EQUIL_VALUE", ptr[NUMANG]);
  for (const char* section : {"ANGLES_INC_HYDROGEN", "ANGLES_WITHOUT_HYDROGEN"}) {
    const auto v = p.integers(section, 4 * ptr[section[7] == 'I' ? NTHETH : NTHETA]);
    for (std::size_t e = 0; e < v.size(); e += 4) {
      const std::int64_t type = type_of(p, section, e + 4, v[e + 3], ptr[NUMANG]);
      t.angles.push_back({atom_of(p, section, e + 1, v[e], n), atom_of(p, section, e + 2, v[e + 1], n),
                          atom_of(p, section, e + 3, v[e + 2], n), kt[type], theta0[type]});
    }
  }
}

// Dihedrals, impropers and the 1-4 pairs they define.
void read_dihedrals(const Prmtop& p, const std::vector<std::int64_t>& ptr, md::Topology& t) {
  const std::int64_t n = ptr[NATOM], types = ptr[NPTRA];
  const auto k = p.reals("DIHEDRAL_FORCE_CONSTANT", types), period = p.reals("DIHEDRAL_PERIODICITY", types),
             phase = p.reals("DIHEDRAL_PHASE", types);
  const auto scee = p.has("SCEE_SCALE_FACTOR") ? p.reals("SCEE_SCALE_FACTOR", types) : std::vector<double>(types, 1.2);
  const auto scnb = p.has("SCNB_SCALE_FACTOR") ? p.reals("SCNB_SCALE_FACTOR", types) : std::vector<double>(types, 2.0);
  for (std::int64_t d = 0; d < types; ++d)
    if (period[d] != std::round(period[d]) || std::abs(period[d]) > 12)
      p.fail("DIHEDRAL_PERIODICITY", d + 1, fmt::format("periodicity {} is not a whole number in -12..12", period[d]));
  for (const char* section : {"DIHEDRALS_INC_HYDROGEN", "DIHEDRALS_WITHOUT_HYDROGEN"}) {
    const auto v = p.integers(section, 5 * ptr[section[10] == 'I' ? NPHIH : NPHIA]);
    for (std::size_t e = 0; e < v.size(); e += 5) {
      const std::int64_t type = type_of(p, section, e + 5, v[e + 4], types);
      const std::int32_t i = atom_of(p, section, e + 1, v[e], n), j = atom_of(p, section, e + 2, v[e + 1], n),
                         kk = atom_of(p, section, e + 3, v[e + 2], n), l = atom_of(p, section, e + 4, v[e + 3], n);
      // AMBER's periodicity may be negative (a sign LEaP uses to chain terms); |n| is the term.
      const md::PeriodicTorsion term{i, j, kk, l, static_cast<int>(std::abs(period[type])), k[type], phase[type]};
      (v[e + 3] < 0 ? t.periodic_impropers : t.dihedrals).push_back(term);
      if (v[e + 2] < 0 || v[e + 3] < 0) continue;  // no 1-4 pair from this one (OpenMM's rule too)
      if (!(scee[type] > 0) || !(scnb[type] > 0))
        p.fail("SCEE_SCALE_FACTOR", type + 1, "a dihedral with a 1-4 pair needs positive SCEE and SCNB factors");
      const std::int64_t pair = static_cast<std::int64_t>(t.lj_type[i]) * t.lj_types + t.lj_type[l];
      t.pairs14.push_back({i, l, 1 / scee[type], t.c12[pair] / scnb[type], t.c6[pair] / scnb[type]});
    }
  }
}

void read_exclusions(const Prmtop& p, const std::vector<std::int64_t>& ptr, md::Topology& t) {
  const std::int64_t n = ptr[NATOM];
  const auto count = p.integers("NUMBER_EXCLUDED_ATOMS", n);
  const auto list = p.integers("EXCLUDED_ATOMS_LIST", ptr[NNB]);
  std::set<std::pair<std::int32_t, std::int32_t>> pairs;
  std::int64_t e = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    if (count[i] < 0 || e + count[i] > ptr[NNB])
      p.fail("NUMBER_EXCLUDED_ATOMS", i + 1, "the counts add up to more than the excluded-atoms list (NNB)");
    for (std::int64_t c = 0; c < count[i]; ++c, ++e) {
      const std::int64_t j = list[e];  // 1-based; 0 is LEaP's placeholder for "none"
      if (j == 0) continue;
      if (j < 1 || j > n || j - 1 == i)
        p.fail("EXCLUDED_ATOMS_LIST", e + 1, fmt::format("atom {} for atom {}: outside 1..{} or itself", j, i + 1, n));
      pairs.insert({static_cast<std::int32_t>(std::min(i, j - 1)), static_cast<std::int32_t>(std::max(i, j - 1))});
    }
  }
  t.exclusions.assign(pairs.begin(), pairs.end());
}

// ff19SB's CMAP (as ParmEd and OpenMM read it): CMAP_COUNT holds the number of terms and of
// maps; CMAP_RESOLUTION each map's side; CMAP_PARAMETER_01, _02, ... each map's side^2 energies
// (kcal/mol, phi major, both angles from -180 degrees: md::CmapGrid's layout); CMAP_INDEX five
// atoms i j k l m (1-based, not AMBER's 3 (i - 1)) and a map (1-based) per term, phi being i-j-k-l
// and psi j-k-l-m.
void read_cmap(const Prmtop& p, const std::vector<std::int64_t>& ptr, md::Topology& t) {
  if (!p.has("CMAP_COUNT")) return;
  const auto count = p.integers("CMAP_COUNT", 2);
  if (count[0] < 0 || count[1] < 1 || count[1] > 99)
    p.fail("CMAP_COUNT", 1, fmt::format("{} terms on {} maps: expected some terms on 1..99 maps", count[0], count[1]));
  const auto side = p.integers("CMAP_RESOLUTION", count[1]);
  for (std::int64_t m = 0; m < count[1]; ++m) {
    if (side[m] < 4 || side[m] > 360) p.fail("CMAP_RESOLUTION", m + 1, fmt::format("a side of {} (expected 4..360)", side[m]));
    const std::string name = fmt::format("CMAP_PARAMETER_{:02d}", m + 1);
    t.cmap_grids.push_back({static_cast<std::int32_t>(side[m]), p.reals(name, side[m] * side[m])});
  }
  const std::int64_t n = ptr[NATOM];
  const auto v = p.integers("CMAP_INDEX", 6 * count[0]);
  for (std::size_t e = 0; e < v.size(); e += 6) {
    std::int32_t a[5];
    for (int k = 0; k < 5; ++k) {
      if (v[e + k] < 1 || v[e + k] > n)
        p.fail("CMAP_INDEX", static_cast<std::int64_t>(e) + k + 1, fmt::format("atom {} outside 1..{}", v[e + k], n));
      a[k] = static_cast<std::int32_t>(v[e + k] - 1);
    }
    const std::int64_t map = type_of(p, "CMAP_INDEX", static_cast<std::int64_t>(e) + 6, v[e + 5], count[1]);
    t.cmaps.push_back({{a[0], a[1], a[2], a[3]}, {a[1], a[2], a[3], a[4]}, static_cast<std::int32_t>(map)});
  }
}

void read_box(const Prmtop& p, const std::vector<std::int64_t>& ptr, md::Topology& t) {
  if (ptr[IFBOX] == 0) return;
  if (ptr[IFBOX] != 1)
    p.fail("POINTERS", IFBOX + 1, "IFBOX = 2: truncated octahedra are not supported (orthorhombic boxes only)");
  const auto box = p.reals("BOX_DIMENSIONS", 4);  // beta, a, b, c
  if (std::abs(box[0] - 90) > 1e-6) p.fail("BOX_DIMENSIONS", 1, fmt::format("angle beta {}: only orthorhombic boxes", box[0]));
  for (int a = 1; a < 4; ++a)
    if (!(box[a] > 0)) p.fail("BOX_DIMENSIONS", a + 1, "box edges must be positive");
  t.box = PeriodicBox::from_edges({box[1], box[2], box[3]});
}

}  // namespace

md::Topology parse_prmtop(std::string_view text, const std::string& source) {
  const Prmtop p(text, source);
  auto ptr = p.integers("POINTERS", -1);
  if (ptr.size() < kPointers)
    p.fail("POINTERS", 0, fmt::format("{} values, expected at least {}", ptr.size(), static_cast<int>(kPointers)));
  for (std::size_t e = 0; e < ptr.size(); ++e)
    if (ptr[e] < 0 || ptr[e] > std::numeric_limits<std::int32_t>::max())
      p.fail("POINTERS", e + 1, "a count must lie in 0..2^31 - 1");
  if (ptr[NATOM] == 0) p.fail("POINTERS", 1, "NATOM = 0: no atoms");
  if (ptr[NATOM] >= (std::int64_t{1} << 31) / 3) p.fail("POINTERS", 1, "too many atoms for the format's pointers");
  if (ptr[NTYPES] == 0) p.fail("POINTERS", 2, "NTYPES = 0: no Lennard-Jones types");
  if (ptr[NTYPES] > 100000) p.fail("POINTERS", 2, "NTYPES above 100000");
  refuse_unsupported(p, ptr);
  md::Topology t;
  t.source = "AMBER prmtop " + source;
  read_atoms(p, ptr, t);
  read_bonds_and_angles(p, ptr, t);
  read_dihedrals(p, ptr, t);
  read_exclusions(p, ptr, t);
  read_cmap(p, ptr, t);
  read_box(p, ptr, t);
  t.check();
  return t;
}

md::Topology read_prmtop(const std::string& path) {
  return parse_prmtop(read_file_text(path, "an AMBER prmtop file"), path);
}

}  // namespace nbkit::io
