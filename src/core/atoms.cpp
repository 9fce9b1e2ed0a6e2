#include "nbkit/core/atoms.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "nbkit/core/error.hpp"

namespace nbkit {

void Atoms::reserve(std::size_t n) {
  x.reserve(n);
  y.reserve(n);
  z.reserve(n);
  charge.reserve(n);
  radius.reserve(n);
}

void Atoms::push_back(Vec3 position, double q, double r) {
  x.push_back(position.x);
  y.push_back(position.y);
  z.push_back(position.z);
  charge.push_back(q);
  radius.push_back(r);
}

void validate_atom(std::size_t i, Vec3 position, double charge, double radius) {
  if (!std::isfinite(position.x) || !std::isfinite(position.y) || !std::isfinite(position.z) ||
      !std::isfinite(charge) || !std::isfinite(radius))
    throw Error(fmt::format("atom {} has a coordinate, charge or radius that is not a finite number", i + 1));
  for (int a = 0; a < 3; ++a) {
    const double v = position[a];
    if (std::fabs(v) > kMaxCoordinate)
      throw Error(fmt::format("atom {}: {} = {:g} A lies beyond {:g} A of the origin: no molecule is that large (a "
                              "unit mix-up or a corrupt file?)",
                              i + 1, "xyz"[a], v, kMaxCoordinate));
  }
  if (radius < 0) throw Error(fmt::format("atom {}: radius {} is negative", i + 1, radius));
}

void validate_atoms(const Atoms& atoms) {
  if (atoms.empty()) throw Error("no atoms");
  for (std::size_t i = 0; i < atoms.size(); ++i) validate_atom(i, atoms.position(i), atoms.charge[i], atoms.radius[i]);
}

double Atoms::net_charge() const {
  double sum = 0;
  for (double q : charge) sum += q;
  return sum;
}

BoundingBox bounding_box(const Atoms& atoms) {
  if (atoms.empty()) throw Error("no atoms: the bounding box of nothing is undefined");
  BoundingBox box{atoms.position(0), atoms.position(0)};
  for (std::size_t i = 1; i < atoms.size(); ++i)
    for (int axis = 0; axis < 3; ++axis) {
      const double v = atoms.position(i)[axis];
      box.lower[axis] = std::min(box.lower[axis], v);
      box.upper[axis] = std::max(box.upper[axis], v);
    }
  return box;
}

}  // namespace nbkit
