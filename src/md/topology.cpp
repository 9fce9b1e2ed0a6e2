// md::Topology's checks (nbkit/md/topology.hpp): what a reader or a hand-built topology got
// wrong, said before any force loop indexes with it; and the md::System of a topology's atoms.
#include "nbkit/md/topology.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <initializer_list>

#include "nbkit/core/error.hpp"
#include "nbkit/md.hpp"
#include "nbkit/md/molecular_forces.hpp"

namespace nbkit::md {

namespace {

struct Checker {
  const Topology& t;
  std::int64_t atoms;
  void index(const char* term, std::size_t n, std::initializer_list<std::int32_t> members) const {
    for (std::int32_t m : members)
      if (m < 0 || m >= atoms)
        throw Error(fmt::format("{}: {} {} names atom {}, outside 1..{}", t.source, term, n + 1, m + 1, atoms));
  }
  void finite(const char* term, std::size_t n, std::initializer_list<double> values) const {
    for (double v : values)
      if (!std::isfinite(v)) throw Error(fmt::format("{}: {} {} has a parameter that is not finite", t.source, term, n + 1));
  }
};

}  // namespace

void Topology::check() const {
  const std::size_t n = charge.size();
  if (mass.size() != n || lj_type.size() != n || atom_name.size() != n || residue_name.size() != n ||
      residue_number.size() != n || (!hydrogen.empty() && hydrogen.size() != n))
    throw Error(source + ": the per-atom lists (names, residues, masses, charges, types) differ in length");
  if (lj_types < 0 || c12.size() != static_cast<std::size_t>(lj_types) * lj_types || c6.size() != c12.size())
    throw Error(source + ": the Lennard-Jones table must hold types x types coefficients");
  const Checker c{*this, static_cast<std::int64_t>(n)};
  for (std::size_t i = 0; i < n; ++i) {
    if (lj_type[i] < 0 || lj_type[i] >= lj_types)
      throw Error(fmt::format("{}: atom {} has Lennard-Jones type {}, outside 1..{}", source, i + 1, lj_type[i] + 1,
                              lj_types));
    c.finite("atom", i, {mass[i], charge[i]});
  }
  for (std::size_t p = 0; p < c12.size(); ++p) c.finite("Lennard-Jones type pair", p, {c12[p], c6[p]});
  for (std::size_t k = 0; k < bonds.size(); ++k) c.index("bond", k, {bonds[k].i, bonds[k].j}), c.finite("bond", k, {bonds[k].k, bonds[k].r0});
  for (std::size_t k = 0; k < urey_bradley.size(); ++k) {
    const HarmonicBond& b = urey_bradley[k];
    c.index("Urey-Bradley term", k, {b.i, b.j}), c.finite("Urey-Bradley term", k, {b.k, b.r0});
  }
  for (std::size_t k = 0; k < angles.size(); ++k) {
    const HarmonicAngle& a = angles[k];
    c.index("angle", k, {a.i, a.j, a.k}), c.finite("angle", k, {a.k_theta, a.theta0});
  }
  for (const auto* list : {&dihedrals, &periodic_impropers})
    for (std::size_t k = 0; k < list->size(); ++k) {
      const PeriodicTorsion& d = (*list)[k];
      const char* term = list == &dihedrals ? "dihedral" : "improper";
      c.index(term, k, {d.i, d.j, d.k, d.l}), c.finite(term, k, {d.k_phi, d.phase});
      if (d.periodicity < 0 || d.periodicity > 12)
        throw Error(fmt::format("{}: {} {} has periodicity {} (expected 0..12)", source, term, k + 1, d.periodicity));
    }
  for (std::size_t k = 0; k < harmonic_impropers.size(); ++k) {
    const HarmonicImproper& d = harmonic_impropers[k];
    c.index("improper", k, {d.i, d.j, d.k, d.l}), c.finite("improper", k, {d.k_psi, d.psi0});
  }
  for (std::size_t m = 0; m < cmap_grids.size(); ++m) {
    const CmapGrid& g = cmap_grids[m];
    // At least 4 points a side: the periodic spline through them needs 3, and a coarser map
    // than CHARMM's 24 (15 degrees) is a mistake in practice.
    if (g.size < 4 || g.size > 360 || g.energy.size() != static_cast<std::size_t>(g.size) * g.size)
      throw Error(fmt::format("{}: CMAP grid {} has {} values for a side of {} (expected a side of 4..360, side^2 values)",
                              source, m + 1, g.energy.size(), g.size));
    for (double v : g.energy)
      if (!std::isfinite(v)) throw Error(fmt::format("{}: CMAP grid {} has a value that is not finite", source, m + 1));
  }
  for (std::size_t k = 0; k < cmaps.size(); ++k) {
    const CmapTorsion& m = cmaps[k];
    c.index("CMAP term", k, {m.phi[0], m.phi[1], m.phi[2], m.phi[3], m.psi[0], m.psi[1], m.psi[2], m.psi[3]});
    if (m.map < 0 || static_cast<std::size_t>(m.map) >= cmap_grids.size())
      throw Error(fmt::format("{}: CMAP term {} uses grid {}, outside 1..{}", source, k + 1, m.map + 1, cmap_grids.size()));
  }
  for (std::size_t k = 0; k < pairs14.size(); ++k) {
    const Pair14& p = pairs14[k];
    c.index("1-4 pair", k, {p.i, p.j}), c.finite("1-4 pair", k, {p.coulomb_scale, p.c12, p.c6});
    if (p.i == p.j) throw Error(fmt::format("{}: 1-4 pair {} joins atom {} to itself", source, k + 1, p.i + 1));
  }
  std::vector<std::pair<std::int32_t, std::int32_t>> pairs;
  pairs.reserve(exclusions.size());
  for (std::size_t k = 0; k < exclusions.size(); ++k) {
    c.index("exclusion", k, {exclusions[k].first, exclusions[k].second});
    if (exclusions[k].first == exclusions[k].second)
      throw Error(fmt::format("{}: exclusion {} joins atom {} to itself", source, k + 1, exclusions[k].first + 1));
    pairs.push_back(std::minmax(exclusions[k].first, exclusions[k].second));
  }
  // Each pair once: PME takes every excluded pair's erf part out of the mesh's sum, so a pair
  // listed twice would be taken out twice.
  std::sort(pairs.begin(), pairs.end());
  if (const auto twice = std::adjacent_find(pairs.begin(), pairs.end()); twice != pairs.end())
    throw Error(fmt::format("{}: atoms {} and {} are excluded twice", source, twice->first + 1, twice->second + 1));
}

System molecular_system(const Topology& t, const Coordinates& c) {
  t.check();
  const std::size_t n = t.size();
  if (c.positions.size() != n)
    throw Error(fmt::format("{} positions for the {} atoms of {}", c.positions.size(), n, t.source));
  if (!c.velocities.empty() && c.velocities.size() != n)
    throw Error(fmt::format("{} velocities for the {} atoms of {}", c.velocities.size(), n, t.source));
  System s;
  s.units = Units::real;
  s.resize(n);
  s.atom_mass = t.mass;
  s.has_charges = true;
  for (std::size_t i = 0; i < n; ++i) {
    if (!(t.mass[i] > 0)) throw Error(fmt::format("{}: atom {} has mass {}: dynamics needs positive masses", t.source, i + 1, t.mass[i]));
    s.x[i] = c.positions[i].x, s.y[i] = c.positions[i].y, s.z[i] = c.positions[i].z;
    if (!c.velocities.empty()) s.vx[i] = c.velocities[i].x, s.vy[i] = c.velocities[i].y, s.vz[i] = c.velocities[i].z;
    s.charge[i] = t.charge[i];
    s.type[i] = t.lj_type[i];
    s.id[i] = static_cast<std::int64_t>(i) + 1;
  }
  s.type_mass.assign(static_cast<std::size_t>(t.lj_types), 0.0);  // unused: each atom has its own mass
  if (c.box) {
    s.box = *c.box;
  } else if (t.box) {
    s.box = *t.box;
  } else {
    for (int a = 0; a < 3; ++a) {
      double lo = c.positions.empty() ? 0 : c.positions[0][a], hi = lo;
      for (const Vec3& p : c.positions) lo = std::min(lo, p[a]), hi = std::max(hi, p[a]);
      s.box.lo[a] = lo - 10, s.box.hi[a] = hi + 10;
    }
  }
  return s;
}

}  // namespace nbkit::md
