#include "nbkit/core/atoms.hpp"

#include <algorithm>

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
