#pragma once
// A vertex-centred rectilinear lattice, as APBS defines it: point (i,j,k) sits at
// origin + (i,j,k)*spacing, for 0 <= i < nx etc.; storage order x slowest, z fastest
// (index = (i*ny + j)*nz + k), the order OpenDX files hold. 64-bit indices throughout.
#include <array>
#include <cstdint>

#include "nbkit/core/vec3.hpp"

namespace nbkit {

struct Atoms;
struct BoundingBox;

struct Lattice {
  Vec3 origin;
  double spacing = 1.0;                // Angstrom, the same along all three axes
  std::array<std::int64_t, 3> dims{1, 1, 1};

  std::int64_t size() const { return dims[0] * dims[1] * dims[2]; }
  std::int64_t rows() const { return dims[0] * dims[1]; }  // rows along z
  std::int64_t index(std::int64_t i, std::int64_t j, std::int64_t k) const {
    return (i * dims[1] + j) * dims[2] + k;
  }
  Vec3 point(std::int64_t i, std::int64_t j, std::int64_t k) const {
    return {origin.x + static_cast<double>(i) * spacing, origin.y + static_cast<double>(j) * spacing,
            origin.z + static_cast<double>(k) * spacing};
  }
  Vec3 extent() const {  // edge lengths, (n-1)*spacing
    return {static_cast<double>(dims[0] - 1) * spacing, static_cast<double>(dims[1] - 1) * spacing,
            static_cast<double>(dims[2] - 1) * spacing};
  }
  Vec3 center() const { return origin + 0.5 * extent(); }
};

// Throws nbkit::Error unless spacing > 0, dims >= 1 and everything finite.
void validate(const Lattice& lattice);

// The lattice that covers the atoms' bounding box plus `padding` on every side, centred
// on the box, with points `spacing` apart.
Lattice lattice_around(const Atoms& atoms, double spacing, double padding);
// The same around a bounding box already found (atoms in a GPU's memory: check_device_atoms).
Lattice lattice_around(const BoundingBox& box, double spacing, double padding);

// A lattice centred on `center` whose edges are at least `length` long.
Lattice lattice_centered(Vec3 center, Vec3 length, double spacing);

}  // namespace nbkit
