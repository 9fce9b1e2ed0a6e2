#pragma once
// The molecules of a topology: sets of atoms joined by bonds (OpenMM's "molecules", which its
// barostat scales as wholes and its rigid water recognises). Internal.
#include <algorithm>
#include <array>
#include <cstdint>
#include <numeric>
#include <unordered_map>
#include <vector>

#include "nbkit/core/box.hpp"
#include "nbkit/md/topology.hpp"

namespace nbkit::md {

// Union-find with path halving; the root of a set is its lowest atom.
struct AtomSets {
  std::vector<std::int32_t> parent;
  explicit AtomSets(std::size_t n) : parent(n) { std::iota(parent.begin(), parent.end(), 0); }
  std::int32_t root(std::int32_t a) {
    while (parent[a] != a) a = parent[a] = parent[parent[a]];
    return a;
  }
  void join(std::int32_t a, std::int32_t b) {
    a = root(a), b = root(b);
    if (a != b) parent[std::max(a, b)] = std::min(a, b);
  }
};

struct Molecules {
  std::vector<std::int32_t> of_atom;  // each atom's molecule, numbered by its lowest atom
  std::vector<std::int32_t> first;    // molecule m: atoms[first[m] .. first[m + 1])
  std::vector<std::int32_t> atoms;    // molecule by molecule, ascending within each
  std::size_t size() const { return first.empty() ? 0 : first.size() - 1; }
};
Molecules find_molecules(const Topology& topology);

// Each molecule's centre of mass (of its atoms' nearest images) moved to lo + (centre - lo) x
// factor along each axis of `box` (then into the scaled box when `centre_in_box`), its atoms
// placed as their nearest images around it: the barostat's scaling (factor != 1) and
// whole_molecules (factor 1, centre in the box). `system`'s atom_mass weighs the centres.
struct System;
void place_molecules(const Molecules& molecules, System& system, const PeriodicBox& box, std::array<double, 3> factor,
                     bool centre_in_box);

// A water: a three-atom molecule of one heavy atom bonded to two hydrogens (md::is_hydrogen).
struct WaterAtoms {
  std::int32_t o, h1, h2;
};
std::vector<WaterAtoms> find_waters(const Topology& topology, const Molecules& molecules);

// Each bond's equilibrium length by its atoms (the first listed where a pair is bonded twice).
class BondLengths {
 public:
  explicit BondLengths(const Topology& t) {
    lengths_.reserve(t.bonds.size());
    for (const HarmonicBond& b : t.bonds) lengths_.emplace(key(b.i, b.j), b.r0);
  }
  // The length of bond (i, j), or a negative number when they are not bonded.
  double operator()(std::int32_t i, std::int32_t j) const {
    const auto it = lengths_.find(key(i, j));
    return it == lengths_.end() ? -1.0 : it->second;
  }

 private:
  static std::uint64_t key(std::int32_t i, std::int32_t j) {
    return (static_cast<std::uint64_t>(std::min(i, j)) << 32) | static_cast<std::uint32_t>(std::max(i, j));
  }
  std::unordered_map<std::uint64_t, double> lengths_;
};

}  // namespace nbkit::md
