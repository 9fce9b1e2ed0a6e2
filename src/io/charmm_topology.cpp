// A psf and its parameters joined into an md::Topology (io/charmm.hpp), as CHARMM does and as
// OpenMM's CharmmPsfFile.createSystem (the oracle of tests/clients/check_energy_charmm.py) does:
// parameters looked up by the atoms' types, exact quadruples before wildcards; the exclusions
// and 1-4 pairs from the bond graph (nbxmod 5).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numbers>
#include <set>

#include "io/charmm_files.hpp"
#include "io/text.hpp"
#include "nbkit/core/error.hpp"
#include "nbkit/io/charmm.hpp"

namespace nbkit::io {

namespace {

// The CHARMM readers' types by name (declarations, not `using namespace`: in a unity batch a
// directive would carry charmm's helpers into the files compiled after this one).
using charmm::canonical;
using charmm::DihedralTerm;
using charmm::ImproperParameter;
using charmm::Key2;
using charmm::Key3;
using charmm::Key4;
using charmm::Key8;
using charmm::LennardJones;
using charmm::Parameters;
using charmm::parse_parameters;
using charmm::parse_psf;
using charmm::PsfAtom;
using charmm::PsfFile;
constexpr double kDegree = std::numbers::pi / 180;

class Builder {
 public:
  Builder(const PsfFile& psf, const Parameters& p) : psf_(psf), p_(p) {}

  md::Topology build() {
    if (std::abs(p_.nbxmod) != 5)
      throw Error(fmt::format("{}: NONBONDED nbxmod {}: only 5 (1-2 and 1-3 excluded, 1-4 pairs special, as CHARMM36 "
                              "and every CHARMM force field since CHARMM22) is supported",
                              files(), p_.nbxmod));
    t_.source = "CHARMM psf " + psf_.source;
    atoms();
    lennard_jones();
    bonded();
    pairs_from_bonds();
    t_.check();
    return std::move(t_);
  }

 private:
  std::string files() const {
    std::string out;
    for (const std::string& f : p_.files) out += (out.empty() ? "" : ", ") + f;
    return out.empty() ? "(no parameter files)" : out;
  }
  [[noreturn]] void missing(std::int64_t line, const std::string& term, const std::string& types) const {
    throw InputError(psf_.source, line, term, fmt::format("no parameters for types {} in {}", types, files()));
  }

  void atoms() {
    const std::size_t n = psf_.atoms.size();
    type_.resize(n);
    std::int32_t residue = 0;
    std::string last_residue;
    for (std::size_t i = 0; i < n; ++i) {
      const PsfAtom& a = psf_.atoms[i];
      if (a.numbered_type) {
        const auto it = p_.numbered_type.find(std::stoll(a.type));
        if (it == p_.numbered_type.end())
          throw InputError(psf_.source, a.line, fmt::format("atom {} type", i + 1),
                           fmt::format("type number {} is named by no MASS line in {}", a.type, files()));
        type_[i] = it->second;
      } else {
        type_[i] = a.type;
      }
      t_.atom_name.push_back(a.name);
      t_.residue_name.push_back(a.residue_name);
      // Residues numbered as the psf counts them: a new one at each change of segment or id.
      const std::string key = a.segment + ":" + a.residue_id;
      if (i == 0 || key != last_residue) ++residue, last_residue = key;
      t_.residue_number.push_back(residue);
      t_.mass.push_back(a.mass);
      t_.charge.push_back(a.charge);
    }
  }

  // One Lennard-Jones type per atom type in use (in order of first use); each pair by
  // Lorentz-Berthelot, E = eps [(Rmin/r)^12 - 2 (Rmin/r)^6] = eps Rmin^12 / r^12 - 2 eps Rmin^6 / r^6
  // with eps = sqrt(eps_a eps_b), Rmin = Rmin/2_a + Rmin/2_b, or NBFIX's eps and Rmin.
  void lennard_jones() {
    std::map<std::string, std::int32_t> index;
    for (std::size_t i = 0; i < type_.size(); ++i) {
      auto [it, fresh] = index.try_emplace(type_[i], static_cast<std::int32_t>(index.size()));
      if (fresh) {
        const auto lj = p_.lennard_jones.find(type_[i]);
        if (lj == p_.lennard_jones.end())
          throw InputError(psf_.source, psf_.atoms[i].line, fmt::format("atom {} type", i + 1),
                           fmt::format("type {} has no NONBONDED entry in {}", type_[i], files()));
        lj_.push_back(lj->second);
        lj_name_.push_back(type_[i]);
      }
      t_.lj_type.push_back(it->second);
    }
    const std::int32_t types = static_cast<std::int32_t>(lj_.size());
    t_.lj_types = types;
    t_.c12.resize(static_cast<std::size_t>(types) * types), t_.c6.resize(t_.c12.size());
    for (std::int32_t a = 0; a < types; ++a)
      for (std::int32_t b = 0; b < types; ++b) {
        const auto [epsilon, rmin] = pair_parameters(a, b, false);
        const double r6 = std::pow(rmin, 6);
        t_.c12[a * types + b] = epsilon * r6 * r6, t_.c6[a * types + b] = 2 * epsilon * r6;
      }
  }
  std::pair<double, double> pair_parameters(std::int32_t a, std::int32_t b, bool one_four) const {
    const auto fix = p_.nbfix.find(canonical(Key2{lj_name_[a], lj_name_[b]}));
    if (fix != p_.nbfix.end())
      return one_four ? std::pair{fix->second.epsilon14, fix->second.rmin14} : std::pair{fix->second.epsilon, fix->second.rmin};
    const LennardJones &x = lj_[a], &y = lj_[b];
    if (one_four) return {std::sqrt(x.epsilon14 * y.epsilon14), x.rmin_half14 + y.rmin_half14};
    return {std::sqrt(x.epsilon * y.epsilon), x.rmin_half + y.rmin_half};
  }

  void bonded() {
    for (std::size_t k = 0; k < psf_.bonds.atoms.size(); ++k) {
      const auto [i, j] = psf_.bonds.atoms[k];
      const auto it = p_.bonds.find(canonical(Key2{type_[i], type_[j]}));
      if (it == p_.bonds.end()) missing(psf_.bonds.line[k], fmt::format("!NBOND entry {}", k + 1), type_[i] + "-" + type_[j]);
      t_.bonds.push_back({i, j, it->second.k, it->second.r0});
    }
    for (std::size_t k = 0; k < psf_.angles.atoms.size(); ++k) {
      const auto [i, j, l] = psf_.angles.atoms[k];
      const auto it = p_.angles.find(canonical(Key3{type_[i], type_[j], type_[l]}));
      if (it == p_.angles.end())
        missing(psf_.angles.line[k], fmt::format("!NTHETA entry {}", k + 1), type_[i] + "-" + type_[j] + "-" + type_[l]);
      t_.angles.push_back({i, j, l, it->second.k, it->second.theta0 * kDegree});
      if (it->second.k_ub != 0) t_.urey_bradley.push_back({i, l, it->second.k_ub, it->second.s0});
    }
    for (std::size_t k = 0; k < psf_.dihedrals.atoms.size(); ++k) {
      const auto [i, j, l, m] = psf_.dihedrals.atoms[k];
      auto it = p_.dihedrals.find(canonical(Key4{type_[i], type_[j], type_[l], type_[m]}));
      if (it == p_.dihedrals.end()) it = p_.dihedrals.find(canonical(Key4{"X", type_[j], type_[l], "X"}));
      if (it == p_.dihedrals.end())
        missing(psf_.dihedrals.line[k], fmt::format("!NPHI entry {}", k + 1),
                type_[i] + "-" + type_[j] + "-" + type_[l] + "-" + type_[m] + " (nor X-" + type_[j] + "-" + type_[l] + "-X)");
      for (const DihedralTerm& d : it->second) t_.dihedrals.push_back({i, j, l, m, d.n, d.k, d.phase * kDegree});
    }
    for (std::size_t k = 0; k < psf_.impropers.atoms.size(); ++k) {
      const auto [i, j, l, m] = psf_.impropers.atoms[k];
      auto it = p_.impropers.find(canonical(Key4{type_[i], type_[j], type_[l], type_[m]}));
      if (it == p_.impropers.end()) it = p_.impropers.find(canonical(Key4{type_[i], "X", "X", type_[m]}));
      if (it == p_.impropers.end())
        missing(psf_.impropers.line[k], fmt::format("!NIMPHI entry {}", k + 1),
                type_[i] + "-" + type_[j] + "-" + type_[l] + "-" + type_[m] + " (nor " + type_[i] + "-X-X-" + type_[m] + ")");
      const ImproperParameter& imp = it->second;
      if (imp.n == 0)
        t_.harmonic_impropers.push_back({i, j, l, m, imp.k, imp.psi0 * kDegree});
      else
        t_.periodic_impropers.push_back({i, j, l, m, imp.n, imp.k, imp.psi0 * kDegree});
    }
    std::map<Key8, std::int32_t> map_index;
    for (std::size_t k = 0; k < psf_.cmaps.atoms.size(); ++k) {
      const auto& a = psf_.cmaps.atoms[k];
      const Key4 phi = canonical(Key4{type_[a[0]], type_[a[1]], type_[a[2]], type_[a[3]]});
      const Key4 psi = canonical(Key4{type_[a[4]], type_[a[5]], type_[a[6]], type_[a[7]]});
      const Key8 key{phi[0], phi[1], phi[2], phi[3], psi[0], psi[1], psi[2], psi[3]};
      const auto it = p_.cmaps.find(key);
      if (it == p_.cmaps.end()) {
        std::string types;
        for (int q = 0; q < 8; ++q) types += (q ? "-" : "") + type_[a[q]];
        missing(psf_.cmaps.line[k], fmt::format("!NCRTERM entry {}", k + 1), types);
      }
      auto [slot, fresh] = map_index.try_emplace(key, static_cast<std::int32_t>(t_.cmap_grids.size()));
      if (fresh) t_.cmap_grids.push_back({it->second.size, it->second.energy});
      t_.cmaps.push_back({{a[0], a[1], a[2], a[3]}, {a[4], a[5], a[6], a[7]}, slot->second});
    }
  }

  // 1-2 and 1-3 neighbours excluded; 1-4 neighbours (not also 1-2 or 1-3: rings) get the
  // special 1-4 pair, and are excluded from the ordinary pairs.
  void pairs_from_bonds() {
    const std::size_t n = type_.size();
    std::vector<std::vector<std::int32_t>> bonded(n);
    for (const auto& b : t_.bonds) bonded[b.i].push_back(b.j), bonded[b.j].push_back(b.i);
    using Pair = std::pair<std::int32_t, std::int32_t>;
    auto pair = [](std::int32_t a, std::int32_t b) { return Pair{std::min(a, b), std::max(a, b)}; };
    std::set<Pair> one_two, one_three, one_four;
    for (const auto& b : t_.bonds) one_two.insert(pair(b.i, b.j));
    for (std::size_t j = 0; j < n; ++j)
      for (std::int32_t i : bonded[j])
        for (std::int32_t k : bonded[j])
          if (i < k) one_three.insert(pair(i, k));
    for (const auto& b : t_.bonds)
      for (std::int32_t i : bonded[b.i])
        for (std::int32_t l : bonded[b.j])
          if (i != b.j && l != b.i && i != l) one_four.insert(pair(i, l));
    std::set<Pair> excluded(one_two);
    excluded.insert(one_three.begin(), one_three.end());
    for (const Pair& p : one_four) {
      if (excluded.count(p)) continue;
      const auto [epsilon, rmin] = pair_parameters(t_.lj_type[p.first], t_.lj_type[p.second], true);
      const double r6 = std::pow(rmin, 6);
      t_.pairs14.push_back({p.first, p.second, p_.e14fac, epsilon * r6 * r6, 2 * epsilon * r6});
    }
    for (const Pair& p : one_four) excluded.insert(p);
    t_.exclusions.assign(excluded.begin(), excluded.end());
  }

  const PsfFile& psf_;
  const Parameters& p_;
  md::Topology t_;
  std::vector<std::string> type_;  // each atom's type name
  std::vector<LennardJones> lj_;
  std::vector<std::string> lj_name_;
};

}  // namespace

md::Topology parse_charmm(std::string_view psf, const std::string& psf_source,
                          const std::vector<std::pair<std::string, std::string>>& parameters) {
  const PsfFile file = parse_psf(psf, psf_source);
  Parameters p;
  for (const auto& [text, source] : parameters) parse_parameters(text, source, p);
  return Builder(file, p).build();
}

md::Topology read_charmm(const std::string& psf_path, const std::vector<std::string>& parameter_paths) {
  if (parameter_paths.empty())
    throw Error(psf_path + ": a psf needs CHARMM parameter files (.prm, .par, .str) for its types");
  const std::string psf = read_file_text(psf_path, "a CHARMM psf file");
  std::vector<std::pair<std::string, std::string>> parameters;
  for (const std::string& path : parameter_paths)
    parameters.emplace_back(read_file_text(path, "a CHARMM parameter file"), path);
  return parse_charmm(psf, psf_path, parameters);
}

// crd: '*' title lines, the count line ("N" or "N EXT"), then one atom per line; the standard
// format's F10.5 columns and EXT's F20.10 are separated by blanks, so fields are read by
// whitespace (columns 5-7 are x, y, z).
md::Coordinates parse_charmm_crd(std::string_view text, const std::string& source, std::size_t atoms) {
  Lines lines(text);
  std::string_view line;
  while (lines.next(line) && (split_whitespace(line).empty() || split_whitespace(line).front().front() == '*')) {
  }
  const auto head = split_whitespace(line);
  std::int64_t n = -1;
  if (head.empty() || std::from_chars(head[0].data(), head[0].data() + head[0].size(), n).ptr != head[0].data() + head[0].size() || n < 0)
    throw InputError(source, lines.number(), "atom count", "expected the number of atoms after the title: not a CHARMM crd");
  if (static_cast<std::size_t>(n) != atoms)
    throw InputError(source, lines.number(), "atom count", fmt::format("{} atoms, the topology has {}", n, atoms));
  md::Coordinates c;
  c.positions.reserve(atoms);
  for (std::int64_t a = 0; a < n; ++a) {
    if (!lines.next(line)) throw InputError(source, lines.number(), "", fmt::format("the file ends after {} of {} atoms", a, n));
    const auto f = split_whitespace(line);
    if (f.size() < 7)
      throw InputError(source, lines.number(), fmt::format("atom {}", a + 1),
                       fmt::format("{} fields, expected number residue-number residue name x y z ...", f.size()));
    Vec3 x{};
    for (int k = 0; k < 3; ++k) {
      const auto v = parse_number(f[4 + k]);
      if (!v || !std::isfinite(*v))
        throw InputError(source, lines.number(), fmt::format("atom {} {}", a + 1, "xyz"[k]), "expected a number, got " + quoted(f[4 + k]));
      x[k] = *v;
    }
    c.positions.push_back(x);
  }
  return c;
}

md::Coordinates read_charmm_crd(const std::string& path, std::size_t atoms) {
  return parse_charmm_crd(read_file_text(path, "a CHARMM coordinate file"), path, atoms);
}

}  // namespace nbkit::io
