#pragma once
// Point charges as structure-of-arrays: positions (Angstrom), charges (e), radii
// (Angstrom). Radii are the ion-exclusion radii of the Debye-Hueckel law.
#include <cstddef>
#include <string>
#include <vector>

#include "nbkit/core/vec3.hpp"

namespace nbkit {

// No molecular structure or trajectory reaches 0.1 mm from its origin; a unit mix-up or
// corrupt bytes do (1e20, 3.4e34), and then every float32 sum turns to inf or NaN. Readers and
// maps refuse coordinates beyond this (Angstrom).
constexpr double kMaxCoordinate = 1e6;

// Throws nbkit::Error naming the atom (1-based) when a position, charge or radius is not
// finite, a coordinate lies beyond kMaxCoordinate, or a radius is negative.
struct Atoms;
void validate_atoms(const Atoms& atoms);
// The same checks for one atom, `index` 0-based (named 1-based): for atoms that are not in an
// Atoms (GPU arrays, whose checks run there and report the first atom refused).
void validate_atom(std::size_t index, Vec3 position, double charge, double radius);

struct Atoms {
  std::vector<double> x, y, z, charge, radius;

  std::size_t size() const { return x.size(); }
  bool empty() const { return x.empty(); }
  void reserve(std::size_t n);
  void push_back(Vec3 position, double q, double r);
  Vec3 position(std::size_t i) const { return {x[i], y[i], z[i]}; }
  double net_charge() const;
};

// Smallest box holding every atom: {min corner, max corner}. Throws on empty input.
struct BoundingBox {
  Vec3 lower, upper;
};
BoundingBox bounding_box(const Atoms& atoms);

}  // namespace nbkit
