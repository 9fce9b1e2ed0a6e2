#pragma once
// The one periodic box of nbkit: orthorhombic, from its lower corner to its upper one. MD's
// boxes are LAMMPS's (xlo xhi, ylo yhi, zlo zhi); the maps' periodic cell is a CRYST1
// record's, [0, a) x [0, b) x [0, c). Each engine takes its minimum images from it (MD:
// md/pair_law.hpp's minimum_image; the maps sum over the atoms' images, maps/periodic.cpp).
#include <array>

#include "nbkit/core/vec3.hpp"

namespace nbkit {

struct PeriodicBox {
  std::array<double, 3> lo{}, hi{};
  double length(int axis) const { return hi[axis] - lo[axis]; }
  double volume() const { return length(0) * length(1) * length(2); }
  Vec3 edges() const { return {length(0), length(1), length(2)}; }
  bool starts_at_origin() const { return lo[0] == 0 && lo[1] == 0 && lo[2] == 0; }
  // The cell [0, a) x [0, b) x [0, c), as a CRYST1 record places it.
  static PeriodicBox from_edges(Vec3 edges) { return {{0, 0, 0}, {edges.x, edges.y, edges.z}}; }
  friend bool operator==(const PeriodicBox&, const PeriodicBox&) = default;
};

}  // namespace nbkit
