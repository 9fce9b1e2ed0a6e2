#pragma once
// The molecules of a topology: sets of atoms joined by bonds (OpenMM's "molecules", which its
// barostat scales as wholes and its rigid water recognises). Internal.
#include <cstdint>
#include <vector>

#include "nbkit/md/topology.hpp"

namespace nbkit::md {

struct Molecules {
  std::vector<std::int32_t> of_atom;  // each atom's molecule, numbered by its lowest atom
  std::vector<std::int32_t> first;    // molecule m: atoms[first[m] .. first[m + 1])
  std::vector<std::int32_t> atoms;    // molecule by molecule, ascending within each
  std::size_t size() const { return first.empty() ? 0 : first.size() - 1; }
};
Molecules find_molecules(const Topology& topology);

// A water: a three-atom molecule of one heavy atom bonded to two hydrogens (md::is_hydrogen).
struct WaterAtoms {
  std::int32_t o, h1, h2;
};
std::vector<WaterAtoms> find_waters(const Topology& topology, const Molecules& molecules);

}  // namespace nbkit::md
