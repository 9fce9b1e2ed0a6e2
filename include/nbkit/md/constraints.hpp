#pragma once
// Holonomic constraints of a biomolecular system (issue 19): rigid water by SETTLE (Miyamoto and
// Kollman, J. Comput. Chem. 13, 952 (1992): analytic, one water at a time) and fixed bond
// lengths (bonds to hydrogen, or every bond) by SHAKE (Ryckaert, Ciccotti and Berendsen, J.
// Comput. Phys. 23, 327 (1977)) for positions and RATTLE (Andersen, J. Comput. Phys. 52, 24
// (1983)) for velocities, each connected cluster of constraints iterated to a relative
// tolerance, as OpenMM's `constraints=HBonds, rigidWater=True` and its tolerance 1e-5.
// Also hydrogen mass repartitioning (Hopkins et al., J. Chem. Theory Comput. 11, 1864 (2015);
// OpenMM's `hydrogenMass`), which with these allows 4 fs steps. Plain C++.
#include <cstdint>
#include <string>
#include <vector>

#include "nbkit/md/topology.hpp"

namespace nbkit::md {

struct ConstraintOptions {
  // Which bonds keep their length: none, bonds with a hydrogen at either end (OpenMM's HBonds),
  // or every bond (AllBonds). Hydrogens: md::is_hydrogen.
  enum class Bonds { none, hydrogen, all };
  Bonds bonds = Bonds::none;
  // Water (a three-atom molecule: one heavy atom bonded to two hydrogens) held rigid at its
  // force field's geometry (the O-H bond lengths, and the H-H bond or the H-O-H angle) by SETTLE.
  bool rigid_water = false;
  // The largest relative deviation |r - d| / d a constraint may keep (OpenMM's default).
  double tolerance = 1e-5;
  bool any() const { return bonds != Bonds::none || rigid_water; }
};
ConstraintOptions::Bonds parse_constraint_bonds(const std::string& name);  // "none" | "h-bonds" | "all-bonds"
std::string to_string(ConstraintOptions::Bonds bonds);

// A rigid water: oxygen (any heavy atom) o, hydrogens h1, h2, the O-H and H-H distances (A).
struct RigidWater {
  std::int32_t o, h1, h2;
  double oh, hh;
};
// A fixed distance d (A) between atoms i and j.
struct DistanceConstraint {
  std::int32_t i, j;
  double d;
};
// The constraints of a topology: waters for SETTLE, the other distances in clusters (sets of
// constraints joined through shared atoms, each solved on its own) for SHAKE/RATTLE.
struct ConstraintSet {
  std::vector<RigidWater> waters;
  std::vector<DistanceConstraint> distances;  // cluster by cluster
  std::vector<std::int32_t> cluster_first;    // cluster c: distances[cluster_first[c] .. cluster_first[c + 1])
  double tolerance = 1e-5;
  // Constraints removed from the degrees of freedom: 3 per water, 1 per distance.
  std::int64_t count() const { return 3 * static_cast<std::int64_t>(waters.size()) + static_cast<std::int64_t>(distances.size()); }
  std::size_t clusters() const { return cluster_first.empty() ? 0 : cluster_first.size() - 1; }
  bool empty() const { return waters.empty() && distances.empty(); }
};
// The constraints `options` asks for, at the topology's equilibrium lengths (each bond's r0;
// water's H-H from its H-H bond, or from the H-O-H angle's theta0 when there is none). Throws
// nbkit::Error naming the source for a water without its geometry, or an atom of zero mass.
ConstraintSet find_constraints(const Topology& topology, const ConstraintOptions& options);

// Hydrogen mass repartitioning: every hydrogen bonded to a heavy atom gets `mass` (g/mol), the
// heavy atom losing what the hydrogen gains (the total unchanged); water is left alone when
// `skip_water` (rigid water, as OpenMM skips rigid residues). Throws when a heavy atom would be
// left lighter than 1 g/mol, or for a mass that is not positive.
void repartition_hydrogen_mass(Topology& topology, double mass, bool skip_water = true);

// Whether atom i of the topology is a hydrogen: Topology::hydrogen where it is filled, else a
// mass below 4.5 g/mol (deuterium counts).
bool is_hydrogen(const Topology& topology, std::size_t i);

}  // namespace nbkit::md
