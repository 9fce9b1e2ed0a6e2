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

// One thread per atom i, its row of the list in order: the pair law of pair_law.hpp (the
// CPU loops' too), Real arithmetic, the energy and virial summed in double when asked.
template <class Real, bool Coulomb, bool Energies>
__global__ void __launch_bounds__(kThreads) pair_forces(int n, PairKernelArguments<Real> p) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n || p.control->frozen) return;
  const auto pi = p.packed[i];
  const int type_i = Packed<Real>::type_of(pi);
  const LennardJonesCoefficients<Real>* row_parameters = p.parameters + type_i * p.types;
  const Real qi = Coulomb ? p.charge[i] : Real(0);
  Real fx = 0, fy = 0, fz = 0;
  double energy = 0, virial = 0;
  const int length = p.row_length[i];
  const int* entry = p.list + i;
  for (int k = 0; k < length; ++k, entry += n) {
    const int j = __ldg(entry);
    const auto pj = p.packed[j];
    const Real dx = minimum_image<Real>(pj.x - pi.x, p.length[0], p.inverse_length[0]);
    const Real dy = minimum_image<Real>(pj.y - pi.y, p.length[1], p.inverse_length[1]);
    const Real dz = minimum_image<Real>(pj.z - pi.z, p.length[2], p.inverse_length[2]);
    const Real r2 = dx * dx + dy * dy + dz * dz;
    if (r2 >= p.reach2) continue;  // in the skin
    Real pair_energy, force_over_r;
    nonbonded_pair<Coulomb, !Coulomb>(ScalarPairMath<Real>{}, r2, row_parameters[Packed<Real>::type_of(pj)],
                                      Coulomb ? qi * p.charge[j] : Real(0), p.cutoffs, pair_energy, force_over_r);
    fx -= force_over_r * dx, fy -= force_over_r * dy, fz -= force_over_r * dz;
    if (Energies) energy += static_cast<double>(pair_energy), virial += static_cast<double>(force_over_r * r2);
  }
  p.fx[i] = fx, p.fy[i] = fy, p.fz[i] = fz;
  if (Energies) p.energy[i] = 0.5 * energy, p.virial[i] = 0.5 * virial;  // each pair is in two rows
}

}  // namespace
}  // namespace nbkit::md
