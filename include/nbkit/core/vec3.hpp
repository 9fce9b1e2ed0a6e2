#pragma once
// A 3-vector of doubles: positions and lengths in Angstrom.
#include <cmath>

namespace nbkit {

struct Vec3 {
  double x = 0, y = 0, z = 0;

  constexpr double& operator[](int axis) { return axis == 0 ? x : (axis == 1 ? y : z); }
  constexpr double operator[](int axis) const { return axis == 0 ? x : (axis == 1 ? y : z); }
  friend constexpr Vec3 operator+(Vec3 a, Vec3 b) { return {a.x + b.x, a.y + b.y, a.z + b.z}; }
  friend constexpr Vec3 operator-(Vec3 a, Vec3 b) { return {a.x - b.x, a.y - b.y, a.z - b.z}; }
  friend constexpr Vec3 operator*(double s, Vec3 a) { return {s * a.x, s * a.y, s * a.z}; }
  friend constexpr bool operator==(Vec3 a, Vec3 b) = default;
};

inline double norm(Vec3 a) { return std::sqrt(a.x * a.x + a.y * a.y + a.z * a.z); }

}  // namespace nbkit
