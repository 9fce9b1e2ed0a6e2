// A topology's molecules and waters (md/molecules.hpp), and molecules made whole for output
// (md/molecular_forces.hpp's whole_molecules).
#include "md/molecules.hpp"

#include <cmath>

#include "nbkit/md.hpp"
#include "nbkit/md/constraints.hpp"
#include "nbkit/md/molecular_forces.hpp"

namespace nbkit::md {

Molecules find_molecules(const Topology& t) {
  const std::size_t n = t.size();
  AtomSets sets(n);
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
  const BondLengths bond_length(t);
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
    if (bond_length(heavy, h[0]) < 0 || bond_length(heavy, h[1]) < 0) continue;
    waters.push_back({heavy, h[0], h[1]});
  }
  return waters;
}

void place_molecules(const Molecules& m, System& s, const PeriodicBox& box, std::array<double, 3> factor,
                     bool centre_in_box) {
  std::vector<double>* coordinate[3] = {&s.x, &s.y, &s.z};
  const auto molecules = static_cast<std::int64_t>(m.size());
#pragma omp parallel for if (molecules > 4096)
  for (std::int64_t k = 0; k < molecules; ++k)
    for (int a = 0; a < 3; ++a) {
      std::vector<double>& c = *coordinate[a];
      const double lo = box.lo[a], length = box.length(a);
      // The centre of mass of the molecule's nearest images to its first atom.
      const double anchor = c[m.atoms[m.first[k]]];
      double weighted = 0, total = 0;
      for (std::int32_t p = m.first[k]; p < m.first[k + 1]; ++p) {
        const double d = c[m.atoms[p]] - anchor;
        weighted += s.atom_mass[m.atoms[p]] * (d - length * std::nearbyint(d / length));
        total += s.atom_mass[m.atoms[p]];
      }
      const double centre = anchor + weighted / total;
      double moved = lo + (centre - lo) * factor[a];
      if (centre_in_box) moved -= length * factor[a] * std::floor((moved - lo) / (length * factor[a]));
      // Each atom at its nearest image to the centre, around the new centre: an atom wrapped to the
      // far face is a whole old box length away, which a scaled box would no longer make whole.
      for (std::int32_t p = m.first[k]; p < m.first[k + 1]; ++p) {
        double& v = c[m.atoms[p]];
        const double d = v - centre;
        v = moved + (d - length * std::nearbyint(d / length));
      }
    }
}

void whole_molecules(const Topology& topology, System& s) {
  place_molecules(find_molecules(topology), s, s.box, {1, 1, 1}, true);
}

}  // namespace nbkit::md
