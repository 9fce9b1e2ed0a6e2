// md::replicate: a periodic system repeated along its box's edges (topology.hpp).
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>

#include "nbkit/core/error.hpp"
#include "nbkit/md/topology.hpp"

namespace nbkit::md {

namespace {

// The terms of `from` with every atom index moved by `shift`, appended to `to`.
template <class Term, class Shift>
void append_shifted(std::vector<Term>& to, const std::vector<Term>& from, Shift&& shift) {
  for (Term term : from) {
    shift(term);
    to.push_back(term);
  }
}

}  // namespace

Replicated replicate(const Topology& t, const Coordinates& c, std::array<int, 3> copies) {
  const std::optional<PeriodicBox> box = c.box ? c.box : t.box;
  if (!box) throw Error(fmt::format("{}: replicating needs a periodic box", t.source));
  for (int n : copies)
    if (n < 1) throw Error(fmt::format("replicate: {} copies along an edge; at least 1", n));
  if (c.positions.size() != t.size())
    throw Error(fmt::format("{}: {} positions for {} atoms", t.source, c.positions.size(), t.size()));
  const std::int64_t count = std::int64_t{copies[0]} * copies[1] * copies[2];
  const std::int64_t atoms = count * static_cast<std::int64_t>(t.size());
  if (atoms >= (std::int64_t{1} << 31))
    throw Error(fmt::format("replicate: {} atoms; fewer than 2^31 are indexable", atoms));
  Replicated r;
  Topology& out = r.topology;
  out.lj_types = t.lj_types, out.c12 = t.c12, out.c6 = t.c6, out.cmap_grids = t.cmap_grids;
  out.source = fmt::format("{} x {}x{}x{}", t.source, copies[0], copies[1], copies[2]);
  std::int32_t residues = 0;
  for (std::int32_t number : t.residue_number) residues = std::max(residues, number);
  const Vec3 edges = box->edges();
  for (int cz = 0; cz < copies[2]; ++cz)
    for (int cy = 0; cy < copies[1]; ++cy)
      for (int cx = 0; cx < copies[0]; ++cx) {
        const std::int64_t copy = (std::int64_t{cz} * copies[1] + cy) * copies[0] + cx;
        const auto s = static_cast<std::int32_t>(copy * static_cast<std::int64_t>(t.size()));
        out.atom_name.insert(out.atom_name.end(), t.atom_name.begin(), t.atom_name.end());
        out.residue_name.insert(out.residue_name.end(), t.residue_name.begin(), t.residue_name.end());
        for (std::int32_t number : t.residue_number)
          out.residue_number.push_back(number + static_cast<std::int32_t>(copy) * residues);
        out.mass.insert(out.mass.end(), t.mass.begin(), t.mass.end());
        out.charge.insert(out.charge.end(), t.charge.begin(), t.charge.end());
        out.lj_type.insert(out.lj_type.end(), t.lj_type.begin(), t.lj_type.end());
        out.hydrogen.insert(out.hydrogen.end(), t.hydrogen.begin(), t.hydrogen.end());
        append_shifted(out.bonds, t.bonds, [s](auto& b) { b.i += s, b.j += s; });
        append_shifted(out.urey_bradley, t.urey_bradley, [s](auto& b) { b.i += s, b.j += s; });
        append_shifted(out.angles, t.angles, [s](auto& a) { a.i += s, a.j += s, a.k += s; });
        auto four = [s](auto& d) { d.i += s, d.j += s, d.k += s, d.l += s; };
        append_shifted(out.dihedrals, t.dihedrals, four);
        append_shifted(out.periodic_impropers, t.periodic_impropers, four);
        append_shifted(out.harmonic_impropers, t.harmonic_impropers, four);
        append_shifted(out.cmaps, t.cmaps, [s](auto& m) {
          for (int a = 0; a < 4; ++a) m.phi[a] += s, m.psi[a] += s;
        });
        append_shifted(out.pairs14, t.pairs14, [s](auto& p) { p.i += s, p.j += s; });
        append_shifted(out.exclusions, t.exclusions, [s](auto& e) { e.first += s, e.second += s; });
        const Vec3 shift{cx * edges.x, cy * edges.y, cz * edges.z};
        for (const Vec3& x : c.positions) r.coordinates.positions.push_back(x + shift);
        r.coordinates.velocities.insert(r.coordinates.velocities.end(), c.velocities.begin(), c.velocities.end());
      }
  PeriodicBox grown = *box;
  for (int a = 0; a < 3; ++a) grown.hi[a] = grown.lo[a] + copies[a] * box->length(a);
  r.coordinates.box = grown;
  if (t.box) out.box = grown;
  out.check();
  return r;
}

}  // namespace nbkit::md
