#pragma once
// The bonded terms of the biomolecular force fields, written once for the float64 reference, the
// CPU and the CUDA kernels, as pair_law.hpp is for the nonbonded pair:
// positions in, the term's energy and the force on each of its atoms out. Energies are AMBER's
// and CHARMM's, k (x - x0)^2 with no factor 1/2 (md/topology.hpp).
//
// The dihedral and its forces follow Bekker's formulation (H. Bekker, "Molecular dynamics
// simulation methods revised", thesis, Groningen 1996; GROMACS's do_dih_fup): with
// r_ij = x_i - x_j, r_kj = x_k - x_j, r_kl = x_k - x_l, m = r_ij x r_kj and n = r_kj x r_kl,
//   phi = atan2(|r_kj| r_ij . n, m . n)          (IUPAC: cis 0, trans pi; atan2 keeps full
//                                                 precision near 0 and pi, where acos does not)
//   F_i = -dE/dphi |r_kj| / |m|^2 m,  F_l = dE/dphi |r_kj| / |n|^2 n,
//   F_j = -F_i + p F_i - q F_l,       F_k = -F_l - p F_i + q F_l,
//   p = r_ij . r_kj / |r_kj|^2,       q = r_kl . r_kj / |r_kj|^2,
// which sum to zero and have no torque.
#include <cmath>

#include "core/host_device.hpp"

namespace nbkit::md {

template <class Real>
struct Vector3 {
  Real x, y, z;
};
template <class Real>
NBKIT_HOST_DEVICE Vector3<Real> operator-(Vector3<Real> a, Vector3<Real> b) {
  return {a.x - b.x, a.y - b.y, a.z - b.z};
}
template <class Real>
NBKIT_HOST_DEVICE Vector3<Real> operator+(Vector3<Real> a, Vector3<Real> b) {
  return {a.x + b.x, a.y + b.y, a.z + b.z};
}
template <class Real>
NBKIT_HOST_DEVICE Vector3<Real> operator*(Real s, Vector3<Real> a) {
  return {s * a.x, s * a.y, s * a.z};
}
template <class Real>
NBKIT_HOST_DEVICE Real dot(Vector3<Real> a, Vector3<Real> b) {
  return a.x * b.x + a.y * b.y + a.z * b.z;
}
template <class Real>
NBKIT_HOST_DEVICE Vector3<Real> cross(Vector3<Real> a, Vector3<Real> b) {
  return {a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x};
}

// E = k (r - r0)^2 between i and j (bonds, Urey-Bradley); returns E, sets the force on i (j
// gets its negative).
template <class Real>
NBKIT_HOST_DEVICE Real harmonic_bond(Vector3<Real> xi, Vector3<Real> xj, Real k, Real r0, Vector3<Real>& fi) {
  using std::sqrt;
  const Vector3<Real> d = xi - xj;
  const Real r = sqrt(dot(d, d));
  const Real stretch = r - r0;
  // dE/dr = 2 k (r - r0); F_i = -dE/dr d / r. A bond of length zero has no direction: no force.
  fi = r > Real(0) ? (Real(-2) * k * stretch / r) * d : Vector3<Real>{0, 0, 0};
  return k * stretch * stretch;
}

// E = k (theta - theta0)^2 for the angle i-j-k; sets the forces on i and k (j gets minus their
// sum). theta = atan2(|a x b|, a . b) with a = x_i - x_j, b = x_k - x_j; with
// dE/dtheta = 2 k (theta - theta0),
//   F_i = dE/dtheta / (|a| sin theta) (b/|b| - cos theta a/|a|), F_k likewise with a, b swapped.
// At theta = 0 or pi the direction is undefined; sin theta is kept from zero there (the force's
// size is finite, its direction any: no force field puts an angle's minimum there except
// linear triples, whose theta0 = pi gives dE/dtheta = 0 at it).
template <class Real>
NBKIT_HOST_DEVICE Real harmonic_angle(Vector3<Real> xi, Vector3<Real> xj, Vector3<Real> xk, Real k, Real theta0,
                                      Vector3<Real>& fi, Vector3<Real>& fk) {
  using std::atan2;
  using std::sqrt;
  const Vector3<Real> a = xi - xj, b = xk - xj;
  const Real la = sqrt(dot(a, a)), lb = sqrt(dot(b, b));
  const Vector3<Real> c = cross(a, b);
  const Real sine = sqrt(dot(c, c)) / (la * lb), cosine = dot(a, b) / (la * lb);
  const Real theta = atan2(sqrt(dot(c, c)), dot(a, b));
  const Real delta = theta - theta0;
  const Real de_dtheta = Real(2) * k * delta;
  const Real s = sine > Real(1e-12) ? sine : Real(1e-12);
  fi = (de_dtheta / (la * s)) * ((Real(1) / lb) * b - (cosine / la) * a);
  fk = (de_dtheta / (lb * s)) * ((Real(1) / la) * a - (cosine / lb) * b);
  return k * delta * delta;
}

// The dihedral i-j-k-l and the vectors its forces need (the header's comment).
template <class Real>
struct DihedralGeometry {
  Vector3<Real> r_ij, r_kj, r_kl, m, n;
  Real phi, length_kj;
};
template <class Real>
NBKIT_HOST_DEVICE DihedralGeometry<Real> dihedral_geometry(Vector3<Real> xi, Vector3<Real> xj, Vector3<Real> xk,
                                                          Vector3<Real> xl) {
  using std::atan2;
  using std::sqrt;
  DihedralGeometry<Real> g;
  g.r_ij = xi - xj, g.r_kj = xk - xj, g.r_kl = xk - xl;
  g.m = cross(g.r_ij, g.r_kj), g.n = cross(g.r_kj, g.r_kl);
  g.length_kj = sqrt(dot(g.r_kj, g.r_kj));
  g.phi = atan2(g.length_kj * dot(g.r_ij, g.n), dot(g.m, g.n));
  return g;
}

// The four forces of a dihedral term with derivative dE/dphi (Bekker; the header's comment).
// A collinear triple (|m| or |n| zero) has no dihedral: no force.
template <class Real>
NBKIT_HOST_DEVICE void dihedral_forces(const DihedralGeometry<Real>& g, Real de_dphi, Vector3<Real> f[4]) {
  const Real m2 = dot(g.m, g.m), n2 = dot(g.n, g.n), kj2 = g.length_kj * g.length_kj;
  if (!(m2 > Real(0)) || !(n2 > Real(0)) || !(kj2 > Real(0))) {
    for (int a = 0; a < 4; ++a) f[a] = {0, 0, 0};
    return;
  }
  const Vector3<Real> fi = (-de_dphi * g.length_kj / m2) * g.m;
  const Vector3<Real> fl = (de_dphi * g.length_kj / n2) * g.n;
  const Real p = dot(g.r_ij, g.r_kj) / kj2, q = dot(g.r_kl, g.r_kj) / kj2;
  const Vector3<Real> s = p * fi - q * fl;
  f[0] = fi;
  f[1] = s - fi;
  f[2] = Real(-1) * s - fl;
  f[3] = fl;
}

// E = k (1 + cos(n phi - phase)); dE/dphi = -k n sin(n phi - phase).
template <class Real>
NBKIT_HOST_DEVICE Real periodic_torsion(const DihedralGeometry<Real>& g, int periodicity, Real k, Real phase,
                                        Real& de_dphi) {
  using std::cos;
  using std::sin;
  const Real angle = Real(periodicity) * g.phi - phase;
  de_dphi = -k * Real(periodicity) * sin(angle);
  return k * (Real(1) + cos(angle));
}

// E = k (psi - psi0)^2 with psi - psi0 wrapped into [-pi, pi) (CHARMM's improper); dE/dpsi =
// 2 k (psi - psi0).
template <class Real>
NBKIT_HOST_DEVICE Real harmonic_improper(const DihedralGeometry<Real>& g, Real k, Real psi0, Real& de_dpsi) {
  using std::floor;
  const Real pi = Real(3.14159265358979323846);
  Real delta = g.phi - psi0;
  delta -= Real(2) * pi * floor((delta + pi) / (Real(2) * pi));
  de_dpsi = Real(2) * k * delta;
  return k * delta * delta;
}

}  // namespace nbkit::md
