#pragma once
// Pair forces through the Verlet list: a thread per atom (the engine's kernel).
// Part of the GPU MD engine (engine_cuda.cu, whose comment has the design); included there
// only, one translation unit, split by job as GROMACS's nbnxm splits its GPU code.
#include "md/cuda/cell_list.cuh"

namespace nbkit::md {
namespace {

// ---- forces --------------------------------------------------------------------------------

template <class Real>
struct PairKernelArguments {
  const typename Packed<Real>::type* packed;
  const Real* charge;  // q_i sqrt(k / dielectric), or null without Coulomb
  const int* list;
  const int* row_length;
  const LennardJonesCoefficients<Real>* parameters;
  int types;
  Real length[3], inverse_length[3];
  Real reach2;  // without Coulomb, the Lennard-Jones cutoff's square
  PairCutoffs<Real> cutoffs;
  Real *fx, *fy, *fz;
  double *energy, *virial;  // per atom, half of each of its pairs (with Energies)
  const Control* control;
};

// The minimum-image separation r_j - r_i of two packed positions, and its square.
template <class Real>
struct Separation {
  Real dx, dy, dz, r2;
};
template <class Real, class Position>
__device__ inline Separation<Real> separation(const PairKernelArguments<Real>& p, const Position& pi, Real xj, Real yj,
                                              Real zj) {
  Separation<Real> s;
  s.dx = minimum_image<Real>(xj - pi.x, p.length[0], p.inverse_length[0]);
  s.dy = minimum_image<Real>(yj - pi.y, p.length[1], p.inverse_length[1]);
  s.dz = minimum_image<Real>(zj - pi.z, p.length[2], p.inverse_length[2]);
  s.r2 = s.dx * s.dx + s.dy * s.dy + s.dz * s.dz;
  return s;
}

// One atom's sums over its pairs, as every pair kernel makes them: pair_law.hpp's law in Real
// arithmetic, -f on the atom, the energy and virial in double when asked; stored with half of
// each pair's energy and virial (each pair is in two rows).
template <class Real, bool Coulomb, bool Energies>
struct AtomSums {
  Real fx = 0, fy = 0, fz = 0;
  double energy = 0, virial = 0;
  // A pair within reach (r2 < reach2), with q_i q_j k / dielectric (0 without Coulomb).
  __device__ void add(const PairKernelArguments<Real>& p, const Separation<Real>& s,
                      const LennardJonesCoefficients<Real>& lj, Real qq) {
    Real pair_energy, force_over_r;
    nonbonded_pair<Coulomb, !Coulomb>(ScalarPairMath<Real>{}, s.r2, lj, qq, p.cutoffs, pair_energy, force_over_r);
    fx -= force_over_r * s.dx, fy -= force_over_r * s.dy, fz -= force_over_r * s.dz;
    if (Energies) energy += static_cast<double>(pair_energy), virial += static_cast<double>(force_over_r * s.r2);
  }
  __device__ void store(const PairKernelArguments<Real>& p, int i) const {
    p.fx[i] = fx, p.fy[i] = fy, p.fz[i] = fz;
    if (Energies) p.energy[i] = 0.5 * energy, p.virial[i] = 0.5 * virial;
  }
};

// One thread per atom i, its row of the list in order.
template <class Real, bool Coulomb, bool Energies>
__global__ void __launch_bounds__(kThreads) pair_forces(int n, PairKernelArguments<Real> p) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n || p.control->frozen) return;
  const auto pi = p.packed[i];
  const LennardJonesCoefficients<Real>* row_parameters = p.parameters + Packed<Real>::type_of(pi) * p.types;
  const Real qi = Coulomb ? p.charge[i] : Real(0);
  AtomSums<Real, Coulomb, Energies> sums;
  const int length = p.row_length[i];
  const int* entry = p.list + i;
  for (int k = 0; k < length; ++k, entry += n) {
    const int j = __ldg(entry);
    const auto pj = p.packed[j];
    const Separation<Real> s = separation(p, pi, pj.x, pj.y, pj.z);
    if (s.r2 >= p.reach2) continue;  // in the skin
    sums.add(p, s, row_parameters[Packed<Real>::type_of(pj)], Coulomb ? qi * p.charge[j] : Real(0));
  }
  sums.store(p, i);
}

}  // namespace
}  // namespace nbkit::md
