#include "nbkit/core/lattice.hpp"

#include <fmt/format.h>

#include <cmath>

#include "nbkit/core/atoms.hpp"
#include "nbkit/core/error.hpp"

namespace nbkit {

namespace {
// Largest lattice edge accepted: keeps (nx*ny*nz) far from int64 overflow.
constexpr std::int64_t kMaxPointsPerAxis = std::int64_t{1} << 20;

std::int64_t points_for_length(double length, double spacing) {
  // Smallest n with (n-1)*spacing >= length; a tiny slack absorbs rounding of length/spacing.
  const double steps = std::ceil(length / spacing - 1e-9);
  return static_cast<std::int64_t>(std::max(steps, 0.0)) + 1;
}
}  // namespace

void validate(const Lattice& lattice) {
  if (!(lattice.spacing > 0) || !std::isfinite(lattice.spacing))
    throw Error(fmt::format("lattice spacing must be a positive number of Angstrom, got {}", lattice.spacing));
  for (int axis = 0; axis < 3; ++axis) {
    if (!std::isfinite(lattice.origin[axis])) throw Error("lattice origin must be finite");
    const double far = std::fabs(lattice.origin[axis]) + lattice.spacing * static_cast<double>(lattice.dims[axis]);
    if (far > kMaxCoordinate)
      throw Error(fmt::format("the lattice reaches {:g} A from the origin along {}, beyond {:g} A: no molecule is that "
                              "large (a unit mix-up?)",
                              far, "xyz"[axis], kMaxCoordinate));
    if (lattice.dims[axis] < 1 || lattice.dims[axis] > kMaxPointsPerAxis)
      throw Error(fmt::format("lattice dimension {} along {} is outside 1..{}", lattice.dims[axis],
                              "xyz"[axis], kMaxPointsPerAxis));
  }
}

Lattice lattice_centered(Vec3 center, Vec3 length, double spacing) {
  if (!(spacing > 0) || !std::isfinite(spacing))
    throw Error(fmt::format("lattice spacing must be a positive number of Angstrom, got {}", spacing));
  Lattice lattice;
  lattice.spacing = spacing;
  for (int axis = 0; axis < 3; ++axis) {
    if (!(length[axis] >= 0) || !std::isfinite(length[axis]))
      throw Error(fmt::format("lattice length along {} must be zero or positive, got {}", "xyz"[axis], length[axis]));
    const double points = std::ceil(length[axis] / spacing - 1e-9) + 1;
    if (points > static_cast<double>(kMaxPointsPerAxis))
      throw Error(fmt::format("lattice of length {} A at spacing {} A needs {} points along {}, more than {}",
                              length[axis], spacing, points, "xyz"[axis], kMaxPointsPerAxis));
    lattice.dims[axis] = points_for_length(length[axis], spacing);
    lattice.origin[axis] = center[axis] - 0.5 * static_cast<double>(lattice.dims[axis] - 1) * spacing;
  }
  validate(lattice);
  return lattice;
}

Lattice lattice_around(const Atoms& atoms, double spacing, double padding) {
  return lattice_around(bounding_box(atoms), spacing, padding);
}

Lattice lattice_around(const BoundingBox& box, double spacing, double padding) {
  if (!(padding >= 0) || !std::isfinite(padding))
    throw Error(fmt::format("padding must be zero or a positive number of Angstrom, got {}", padding));
  const Vec3 length = (box.upper - box.lower) + Vec3{2 * padding, 2 * padding, 2 * padding};
  return lattice_centered(0.5 * (box.lower + box.upper), length, spacing);
}

}  // namespace nbkit
