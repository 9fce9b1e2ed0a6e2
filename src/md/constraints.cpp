// Which constraints a topology has (md/constraints.hpp), its molecules and waters
// (md/molecules.hpp), and hydrogen mass repartitioning.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>

#include "md/molecules.hpp"
#include "nbkit/core/error.hpp"
#include "nbkit/md/constraints.hpp"

namespace nbkit::md {

namespace {

// Union-find with path halving; the root of a set is its lowest atom.
struct Sets {
  std::vector<std::int32_t> parent;
  explicit Sets(std::size_t n) : parent(n) { std::iota(parent.begin(), parent.end(), 0); }
  std::int32_t root(std::int32_t a) {
    while (parent[a] != a) a = parent[a] = parent[parent[a]];
    return a;
  }
  void join(std::int32_t a, std::int32_t b) {
    a = root(a), b = root(b);
    if (a != b) parent[std::max(a, b)] = std::min(a, b);
  }
};

// The bond (i, j)'s equilibrium length in the topology, or a negative number.
double bond_length(const Topology& t, std::int32_t i, std::int32_t j) {
  for (const HarmonicBond& b : t.bonds)
    if ((b.i == i && b.j == j) || (b.i == j && b.j == i)) return b.r0;
  return -1;
}

}  // namespace

bool is_hydrogen(const Topology& t, std::size_t i) { return t.hydrogen.empty() ? t.mass[i] < 4.5 : t.hydrogen[i] != 0; }

ConstraintOptions::Bonds parse_constraint_bonds(const std::string& name) {
  if (name == "none") return ConstraintOptions::Bonds::none;
  if (name == "h-bonds" || name == "hbonds") return ConstraintOptions::Bonds::hydrogen;
  if (name == "all-bonds" || name == "allbonds") return ConstraintOptions::Bonds::all;
  throw Error(fmt::format("constraints \"{}\": none, h-bonds or all-bonds", name));
}

std::string to_string(ConstraintOptions::Bonds bonds) {
  switch (bonds) {
    case ConstraintOptions::Bonds::hydrogen: return "h-bonds";
    case ConstraintOptions::Bonds::all: return "all-bonds";
    default: return "none";
  }
}

Molecules find_molecules(const Topology& t) {
  const std::size_t n = t.size();
  Sets sets(n);
  for (const HarmonicBond& b : t.bonds) sets.join(b.i, b.j);
  Molecules m;
  m.of_atom.resize(n);
  std::vector<std::int32_t> index(n, -1), count;
  for (std::size_t a = 0; a < n; ++a) {
    const std::int32_t r = sets.root(static_cast<std::int32_t>(a));
    if (index[r] < 0) index[r] = static_cast<std::int32_t>(count.size()), count.push_back(0);
    m.of_atom[a] = index[r];
    ++count[index[r]];
  }
  m.first.assign(count.size() + 1, 0);
  for (std::size_t k = 0; k < count.size(); ++k) m.first[k + 1] = m.first[k] + count[k];
  m.atoms.resize(n);
  std::vector<std::int32_t> fill(m.first.begin(), m.first.end() - 1);
  for (std::size_t a = 0; a < n; ++a) m.atoms[fill[m.of_atom[a]]++] = static_cast<std::int32_t>(a);
  return m;
}

std::vector<WaterAtoms> find_waters(const Topology& t, const Molecules& m) {
  std::vector<WaterAtoms> waters;
  for (std::size_t k = 0; k < m.size(); ++k) {
    if (m.first[k + 1] - m.first[k] != 3) continue;
    std::int32_t heavy = -1, h[2] = {-1, -1}, hydrogens = 0;
    for (std::int32_t p = m.first[k]; p < m.first[k + 1]; ++p) {
      const std::int32_t a = m.atoms[p];
      if (is_hydrogen(t, a)) {
        if (hydrogens < 2) h[hydrogens] = a;
        ++hydrogens;
      } else {
        heavy = a;
      }
    }
    if (hydrogens != 2 || heavy < 0) continue;
    if (bond_length(t, heavy, h[0]) < 0 || bond_length(t, heavy, h[1]) < 0) continue;
    waters.push_back({heavy, h[0], h[1]});
  }
  return waters;
}

ConstraintSet find_constraints(const Topology& t, const ConstraintOptions& options) {
  ConstraintSet set;
  set.tolerance = options.tolerance;
  if (!(options.tolerance > 0 && options.tolerance < 0.1))
    throw Error(fmt::format("the constraint tolerance must be in (0, 0.1), got {}", options.tolerance));
  if (!options.any()) return set;
  for (std::size_t i = 0; i < t.size(); ++i)
    if (!(t.mass[i] > 0))
      throw Error(fmt::format("{}: atom {} ({}) has mass {}: constrained dynamics needs every mass positive", t.source,
                              i + 1, t.atom_name[i], t.mass[i]));
  const Molecules molecules = find_molecules(t);
  std::vector<char> in_water(t.size(), 0);
  if (options.rigid_water) {
    for (const WaterAtoms& w : find_waters(t, molecules)) {
      const double oh1 = bond_length(t, w.o, w.h1), oh2 = bond_length(t, w.o, w.h2);
      double hh = bond_length(t, w.h1, w.h2);
      if (hh < 0) {
        for (const HarmonicAngle& a : t.angles)
          if (a.j == w.o && ((a.i == w.h1 && a.k == w.h2) || (a.i == w.h2 && a.k == w.h1)))
            hh = std::sqrt(oh1 * oh1 + oh2 * oh2 - 2 * oh1 * oh2 * std::cos(a.theta0));
      }
      if (hh < 0)
        throw Error(fmt::format("{}: water {} {} (atoms {}-{}) has neither an H-H bond nor an H-O-H angle to take its "
                                "rigid geometry from",
                                t.source, t.residue_name[w.o], t.residue_number[w.o], w.o + 1, w.h2 + 1));
      // SETTLE's canonical triangle is isosceles: both O-H lengths must agree (they do in every
      // water model; a topology where they do not is refused rather than bent).
      if (std::abs(oh1 - oh2) > 1e-9 * oh1)
        throw Error(fmt::format("{}: water {} {} has O-H lengths {} and {} A; rigid water needs them equal", t.source,
                                t.residue_name[w.o], t.residue_number[w.o], oh1, oh2));
      if (t.mass[w.h1] != t.mass[w.h2])
        throw Error(fmt::format("{}: water {} {} has hydrogens of masses {} and {}; SETTLE needs them equal", t.source,
                                t.residue_name[w.o], t.residue_number[w.o], t.mass[w.h1], t.mass[w.h2]));
      set.waters.push_back({w.o, w.h1, w.h2, oh1, hh});
      in_water[w.o] = in_water[w.h1] = in_water[w.h2] = 1;
    }
  }
  // The bonds to constrain outside rigid water, then grouped into clusters joined by atoms.
  std::vector<DistanceConstraint> distances;
  if (options.bonds != ConstraintOptions::Bonds::none) {
    std::set<std::pair<std::int32_t, std::int32_t>> seen;
    for (const HarmonicBond& b : t.bonds) {
      if (in_water[b.i] || in_water[b.j]) continue;
      if (options.bonds == ConstraintOptions::Bonds::hydrogen && !is_hydrogen(t, b.i) && !is_hydrogen(t, b.j)) continue;
      const auto key = std::minmax(b.i, b.j);
      if (!seen.insert({key.first, key.second}).second) continue;
      if (!(b.r0 > 0))
        throw Error(fmt::format("{}: bond {}-{} has equilibrium length {}; a constraint needs a positive one", t.source,
                                b.i + 1, b.j + 1, b.r0));
      distances.push_back({key.first, key.second, b.r0});
    }
  }
  Sets sets(t.size());
  for (const DistanceConstraint& c : distances) sets.join(c.i, c.j);
  // Clusters in the order of their lowest atom, each's constraints in the topology's order.
  std::stable_sort(distances.begin(), distances.end(), [&](const DistanceConstraint& a, const DistanceConstraint& b) {
    return sets.root(a.i) < sets.root(b.i);
  });
  set.distances = distances;
  for (std::size_t k = 0; k < distances.size(); ++k)
    if (k == 0 || sets.root(distances[k].i) != sets.root(distances[k - 1].i))
      set.cluster_first.push_back(static_cast<std::int32_t>(k));
  if (!distances.empty()) set.cluster_first.push_back(static_cast<std::int32_t>(distances.size()));
  return set;
}

void repartition_hydrogen_mass(Topology& t, double mass, bool skip_water) {
  if (!(mass > 0) || !std::isfinite(mass))
    throw Error(fmt::format("the hydrogen mass must be positive, got {}", mass));
  if (t.hydrogen.empty()) {
    t.hydrogen.resize(t.size());
    for (std::size_t i = 0; i < t.size(); ++i) t.hydrogen[i] = t.mass[i] < 4.5;
  }
  const std::vector<std::uint8_t>& hydrogen = t.hydrogen;
  std::vector<char> water(t.size(), 0);
  if (skip_water)
    for (const WaterAtoms& w : find_waters(t, find_molecules(t))) water[w.o] = water[w.h1] = water[w.h2] = 1;
  for (const HarmonicBond& b : t.bonds) {
    std::int32_t heavy = b.i, h = b.j;
    if (hydrogen[heavy]) std::swap(heavy, h);
    if (!hydrogen[h] || hydrogen[heavy] || water[h]) continue;
    const double transfer = mass - t.mass[h];
    t.mass[h] = mass;
    t.mass[heavy] -= transfer;
    if (!(t.mass[heavy] >= 1))
      throw Error(fmt::format("{}: giving its hydrogens {} g/mol leaves atom {} ({}) with {} g/mol", t.source, mass,
                              heavy + 1, t.atom_name[heavy], t.mass[heavy]));
  }
}

}  // namespace nbkit::md
