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
  const BondLengths bond_length(t);
  std::vector<std::int32_t> angle_at(t.size(), -1);  // an H-X-H angle at each heavy atom
  for (std::size_t k = 0; k < t.angles.size(); ++k) {
    const HarmonicAngle& a = t.angles[k];
    if (is_hydrogen(t, a.i) && is_hydrogen(t, a.k) && angle_at[a.j] < 0) angle_at[a.j] = static_cast<std::int32_t>(k);
  }
  if (options.rigid_water) {
    for (const WaterAtoms& w : find_waters(t, molecules)) {
      const double oh1 = bond_length(w.o, w.h1), oh2 = bond_length(w.o, w.h2);
      double hh = bond_length(w.h1, w.h2);
      if (hh < 0) {
        if (angle_at[w.o] >= 0) {
          const HarmonicAngle& a = t.angles[angle_at[w.o]];
          if ((a.i == w.h1 && a.k == w.h2) || (a.i == w.h2 && a.k == w.h1))
            hh = std::sqrt(oh1 * oh1 + oh2 * oh2 - 2 * oh1 * oh2 * std::cos(a.theta0));
        }
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
  AtomSets sets(t.size());
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
