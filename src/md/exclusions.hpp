#pragma once
// The force field's exclusion list as a set of atom pairs, shared by the reference forces and
// the neighbour list. Internal to the library.
#include <algorithm>
#include <cstdint>
#include <string>
#include <unordered_set>

#include "nbkit/core/error.hpp"
#include "nbkit/md.hpp"

namespace nbkit::md {

// One key per unordered pair of atom indices.
inline std::uint64_t exclusion_key(std::int64_t a, std::int64_t b) {
  return static_cast<std::uint64_t>(std::min(a, b)) << 32 | static_cast<std::uint64_t>(std::max(a, b));
}

// The listed pairs, checked: distinct atoms, indices below `atoms`.
inline std::unordered_set<std::uint64_t> exclusion_set(std::int64_t atoms, const ForceField& f) {
  std::unordered_set<std::uint64_t> set;
  for (const auto& [a, b] : f.exclusions) {
    if (a < 0 || b < 0 || a >= atoms || b >= atoms || a == b)
      throw Error("exclusion (" + std::to_string(a) + ", " + std::to_string(b) +
                  "): atom indices must be distinct and below " + std::to_string(atoms));
    set.insert(exclusion_key(a, b));
  }
  return set;
}

}  // namespace nbkit::md
