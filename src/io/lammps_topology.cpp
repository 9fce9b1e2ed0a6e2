// A LAMMPS data file's molecular sections as an md::Topology (io/lammps_data.hpp's
// molecular_topology): the styles of LAMMPS's peptide example, read by their coefficients.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <sstream>

#include "io/text.hpp"
#include "nbkit/core/error.hpp"
#include "nbkit/io/lammps_data.hpp"

namespace nbkit::io {

namespace {

constexpr double kDegree = 3.14159265358979323846 / 180;

// The style of a Coeffs section: its "# style" comment, else the one style of the peptide
// example with that many coefficients; every type must have the same count.
std::string style_of(const std::string& source, const char* what, const std::string& comment,
                     const std::vector<std::vector<double>>& coeffs,
                     const std::vector<std::pair<std::size_t, std::string>>& known) {
  if (coeffs.empty()) return "";
  const std::size_t count = coeffs.front().size();
  for (std::size_t t = 0; t < coeffs.size(); ++t)
    if (coeffs[t].size() != count)
      throw Error(fmt::format("{}: {} Coeffs: type {} has {} coefficients, type 1 has {}", source, what, t + 1,
                              coeffs[t].size(), count));
  std::string supported;
  for (const auto& [n, style] : known) {
    supported += (supported.empty() ? "" : ", ") + style + fmt::format(" ({} coefficients)", n);
    if ((comment.empty() || comment == style) && n == count) return style;
  }
  throw Error(fmt::format("{}: {} Coeffs{}: {} coefficients per type; nbkit reads {}", source, what,
                          comment.empty() ? "" : " # " + comment, count, supported));
}

// Pairs 1, 2 and 3 bonds apart with that distance (LAMMPS's special list, from the bonds alone:
// a pair both 1-2 and 1-4 through a ring is 1-2).
std::map<std::pair<std::int32_t, std::int32_t>, int> special_pairs(std::size_t atoms, const std::vector<LammpsTerm>& bonds) {
  std::vector<std::vector<std::int32_t>> bonded(atoms);
  for (const LammpsTerm& b : bonds) bonded[b.atoms[0]].push_back(b.atoms[1]), bonded[b.atoms[1]].push_back(b.atoms[0]);
  std::map<std::pair<std::int32_t, std::int32_t>, int> pairs;
  for (std::size_t i = 0; i < atoms; ++i) {
    const auto a = static_cast<std::int32_t>(i);
    std::vector<std::int32_t> frontier{a}, next;
    for (int depth = 1; depth <= 3; ++depth) {
      next.clear();
      for (std::int32_t p : frontier)
        for (std::int32_t q : bonded[p])
          if (q != a) next.push_back(q), pairs.try_emplace({std::min(a, q), std::max(a, q)}, depth);
      frontier.swap(next);
    }
  }
  return pairs;
}

}  // namespace

SpecialBonds parse_special_bonds(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> words;
  for (std::string w; in >> w;) words.push_back(w);
  SpecialBonds s;
  auto all = [&](double a, double b, double c) {
    s.lj[0] = s.coul[0] = a, s.lj[1] = s.coul[1] = b, s.lj[2] = s.coul[2] = c;
  };
  if (words.size() == 1 && words[0] == "charmm") return s;
  if (words.size() == 1 && words[0] == "amber") {
    s.lj[2] = 0.5, s.coul[2] = 5.0 / 6.0;
    return s;
  }
  if (words.size() == 1 && words[0] == "dreiding") return all(0, 0, 1), s;
  if (words.size() == 1 && words[0] == "fene") return all(0, 1, 1), s;
  const std::string usage = "special_bonds: expected charmm, amber, dreiding, fene, or lj/coul, lj and coul each with "
                            "three factors in 0..1 (got '" + text + "')";
  if (words.empty() || words.size() % 4 != 0) throw Error(usage);
  for (std::size_t k = 0; k < words.size(); k += 4) {
    double f[3];
    for (int d = 0; d < 3; ++d) {
      const auto v = parse_number(words[k + 1 + d]);
      if (!v || !(*v >= 0 && *v <= 1)) throw Error(usage);
      f[d] = *v;
    }
    const std::string& key = words[k];
    if (key != "lj/coul" && key != "lj" && key != "coul") throw Error(usage);
    for (int d = 0; d < 3; ++d) {
      if (key != "coul") s.lj[d] = f[d];
      if (key != "lj") s.coul[d] = f[d];
    }
  }
  return s;
}

md::Topology molecular_topology(const LammpsData& data, const std::string& source, const SpecialBonds& special) {
  const md::System& s = data.system;
  const LammpsMolecular& m = data.molecular;
  if (m.atom_style.empty())
    throw Error(source + ": not a molecular data file (atom style molecular or full: id mol type ...)");
  if (s.units != md::Units::real) throw Error(source + ": molecular systems are read in real units");
  if (data.pair_epsilon.empty())
    throw Error(source + ": no Pair Coeffs: the Lennard-Jones parameters of every type are needed");
  const std::string bond = style_of(source, "Bond", m.bond_style, m.bond_coeffs, {{2, "harmonic"}});
  const std::string angle = style_of(source, "Angle", m.angle_style, m.angle_coeffs, {{2, "harmonic"}, {4, "charmm"}});
  const std::string dihedral = style_of(source, "Dihedral", m.dihedral_style, m.dihedral_coeffs, {{4, "charmm"}});
  const std::string improper = style_of(source, "Improper", m.improper_style, m.improper_coeffs, {{2, "harmonic"}});
  (void)bond, (void)improper;

  md::Topology t;
  t.source = "LAMMPS data " + source;
  const std::size_t n = s.size();
  t.atom_name.resize(n), t.residue_name.assign(n, "MOL"), t.residue_number.resize(n);
  t.mass.resize(n), t.charge = s.charge, t.lj_type.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    t.atom_name[i] = fmt::format("{}", s.id[i]);
    t.residue_number[i] = static_cast<std::int32_t>(m.molecule[i]);
    t.mass[i] = s.type_mass[s.type[i]];
    t.lj_type[i] = s.type[i];
  }
  // Lennard-Jones: the file's pairs, else LAMMPS's mixing (arithmetic for lj/charmm).
  const int types = s.types();
  const bool charmm = !m.pair_epsilon14.empty();
  t.lj_types = types;
  t.c12.resize(static_cast<std::size_t>(types) * types), t.c6.resize(t.c12.size());
  std::vector<double> c12_14(t.c12.size()), c6_14(t.c12.size());
  auto mixed = [&](const std::vector<double>& eps, const std::vector<double>& sigma, int a, int b, double& c12,
                   double& c6) {
    const double e = std::sqrt(eps[a] * eps[b]);
    const double sg = charmm ? 0.5 * (sigma[a] + sigma[b]) : std::sqrt(sigma[a] * sigma[b]);
    c12 = 4 * e * std::pow(sg, 12), c6 = 4 * e * std::pow(sg, 6);
  };
  for (int a = 0; a < types; ++a)
    for (int b = 0; b < types; ++b) {
      mixed(data.pair_epsilon, data.pair_sigma, a, b, t.c12[a * types + b], t.c6[a * types + b]);
      if (charmm) mixed(m.pair_epsilon14, m.pair_sigma14, a, b, c12_14[a * types + b], c6_14[a * types + b]);
    }
  for (const PairCoefficient& c : data.pair_ij)
    for (const auto& [a, b] : {std::pair{c.i - 1, c.j - 1}, std::pair{c.j - 1, c.i - 1}})
      t.c12[a * types + b] = 4 * c.epsilon * std::pow(c.sigma, 12), t.c6[a * types + b] = 4 * c.epsilon * std::pow(c.sigma, 6);

  for (const LammpsTerm& b : m.bonds) {
    const auto& k = m.bond_coeffs[b.type];
    t.bonds.push_back({b.atoms[0], b.atoms[1], k[0], k[1]});
  }
  for (const LammpsTerm& a : m.angles) {
    const auto& k = m.angle_coeffs[a.type];
    t.angles.push_back({a.atoms[0], a.atoms[1], a.atoms[2], k[0], k[1] * kDegree});
    if (angle == "charmm" && k[2] != 0) t.urey_bradley.push_back({a.atoms[0], a.atoms[2], k[2], k[3]});
  }
  for (std::size_t d = 0; d < m.dihedrals.size(); ++d) {
    const LammpsTerm& term = m.dihedrals[d];
    const auto& k = m.dihedral_coeffs[term.type];
    // K n d w: n a whole number >= 0, d whole degrees (LAMMPS's checks), w in [0, 1].
    if (k[1] != std::round(k[1]) || k[1] < 0 || k[2] != std::round(k[2]) || !(k[3] >= 0 && k[3] <= 1))
      throw Error(fmt::format("{}: Dihedral Coeffs type {}: charmm expects K, n >= 0 and d whole, 0 <= w <= 1", source,
                              term.type + 1));
    t.dihedrals.push_back({term.atoms[0], term.atoms[1], term.atoms[2], term.atoms[3], static_cast<int>(k[1]), k[0],
                           k[2] * kDegree});
    if (k[3] > 0) {
      if (special.lj[2] != 0 || special.coul[2] != 0)
        throw Error(source + ": dihedral_style charmm with 1-4 weights and special_bonds 1-4 factors would count the "
                             "1-4 pairs twice (LAMMPS refuses it too: use special_bonds charmm)");
      if (!charmm)
        throw Error(source + ": dihedral_style charmm with a 1-4 weight needs lj/charmm Pair Coeffs (epsilon14 sigma14)");
      const std::size_t p = static_cast<std::size_t>(s.type[term.atoms[0]]) * types + s.type[term.atoms[3]];
      t.pairs14.push_back({term.atoms[0], term.atoms[3], k[3], k[3] * c12_14[p], k[3] * c6_14[p]});
    }
  }
  for (const LammpsTerm& i : m.impropers) {
    const auto& k = m.improper_coeffs[i.type];
    // LAMMPS's improper angle is unsigned (acos): the same energy as the signed one for chi0 0 or 180.
    if (k[1] != 0 && std::abs(k[1]) != 180)
      throw Error(fmt::format("{}: Improper Coeffs type {}: chi0 {} (nbkit takes 0 or 180 degrees for LAMMPS's "
                              "unsigned improper angle)",
                              source, i.type + 1, k[1]));
    t.harmonic_impropers.push_back({i.atoms[0], i.atoms[1], i.atoms[2], i.atoms[3], k[0], k[1] * kDegree});
  }
  // The special pairs: out of the ordinary pairs; back, scaled, where a factor is nonzero.
  for (const auto& [pair, depth] : special_pairs(n, m.bonds)) {
    t.exclusions.push_back(pair);
    const double lj = special.lj[depth - 1], coul = special.coul[depth - 1];
    if (lj == 0 && coul == 0) continue;
    const std::size_t p = static_cast<std::size_t>(s.type[pair.first]) * types + s.type[pair.second];
    t.pairs14.push_back({pair.first, pair.second, coul, lj * t.c12[p], lj * t.c6[p]});
  }
  t.box = s.box;
  t.check();
  return t;
}

}  // namespace nbkit::io
