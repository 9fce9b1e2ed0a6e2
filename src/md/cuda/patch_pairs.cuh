#pragma once
// The slides' patch-pair kernel (no list), kept as the measured baseline of seed 001's design.
// Part of the GPU MD engine (engine_cuda.cu, whose comment has the design); included there
// only, one translation unit, split by job as GROMACS's nbnxm splits its GPU code.
#include "md/cuda/verlet_list_forces.cuh"

namespace nbkit::md {
namespace {

// The slides' patch-pair design (seed 001, NAMD's GPU nonbonded kernel; Stone et al., J Comp
// Chem 28:2618, 2007), with patches = the cells (at least reach + skin wide, so every pair
// within reach lies in neighbouring cells until the next rebuild): one block of 32 threads
// per home cell, a thread per home atom; the atoms of each of the 27 neighbouring cells pass
// through shared memory and every pair is tested (no list). The cells and the atoms within
// them come in the order the list kernel stores them, and the same pairs are skipped, so
// each force is the same sum in the same order as the Verlet-list kernel's.
constexpr int kPatchThreads = 32;

template <class Real>
struct PatchKernelArguments {
  PairKernelArguments<Real> pair;
  const int* cell_start;
  const int* tag;
  const int* exclusion_first;  // null without exclusions
  const int* exclusion_partner;
  int cells[3];
};

template <class Real, bool Coulomb, bool Energies>
__global__ void __launch_bounds__(kPatchThreads) patch_pair_forces(PatchKernelArguments<Real> a) {
  using Position = typename Packed<Real>::type;
  __shared__ Position tile[kPatchThreads];
  __shared__ Real tile_charge[kPatchThreads];
  __shared__ int tile_tag[kPatchThreads];
  const PairKernelArguments<Real>& p = a.pair;
  if (p.control->frozen) return;
  const int home = blockIdx.x;
  const int home_begin = a.cell_start[home], home_end = a.cell_start[home + 1];
  const int c[3] = {home % a.cells[0], home / a.cells[0] % a.cells[1], home / a.cells[0] / a.cells[1]};
  int first_offset[3];
  for (int axis = 0; axis < 3; ++axis) first_offset[axis] = a.cells[axis] >= 3 ? -1 : 0;
  for (int home_base = home_begin; home_base < home_end; home_base += kPatchThreads) {
    const int i = home_base + threadIdx.x;
    const bool active = i < home_end;
    const Position pi = p.packed[active ? i : home_begin];
    const LennardJonesCoefficients<Real>* row_parameters = p.parameters + Packed<Real>::type_of(pi) * p.types;
    const Real qi = Coulomb && active ? p.charge[i] : Real(0);
    const int tag_i = a.exclusion_first && active ? a.tag[i] : 0;
    AtomSums<Real, Coulomb, Energies> sums;
    for (int oz = first_offset[2]; oz <= 1; ++oz) {
      const int cz = (c[2] + oz + a.cells[2]) % a.cells[2];
      for (int oy = first_offset[1]; oy <= 1; ++oy) {
        const int cy = (c[1] + oy + a.cells[1]) % a.cells[1];
        for (int ox = first_offset[0]; ox <= 1; ++ox) {
          const int cx = (c[0] + ox + a.cells[0]) % a.cells[0];
          const int cell = (cz * a.cells[1] + cy) * a.cells[0] + cx;
          const int end = a.cell_start[cell + 1];
          for (int base = a.cell_start[cell]; base < end; base += kPatchThreads) {
            const int count = min(kPatchThreads, end - base);
            __syncthreads();  // the previous tile is no longer read
            if (static_cast<int>(threadIdx.x) < count) {
              tile[threadIdx.x] = p.packed[base + threadIdx.x];
              if (Coulomb) tile_charge[threadIdx.x] = p.charge[base + threadIdx.x];
              if (a.exclusion_first) tile_tag[threadIdx.x] = a.tag[base + threadIdx.x];
            }
            __syncthreads();
            if (!active) continue;
            for (int k = 0; k < count; ++k) {
              if (base + k == i) continue;
              const Position pj = tile[k];
              const Separation<Real> d = separation(p, pi, pj.x, pj.y, pj.z);
              if (d.r2 >= p.reach2) continue;
              if (a.exclusion_first && excluded(tag_i, tile_tag[k], a.exclusion_first, a.exclusion_partner)) continue;
              sums.add(p, d, row_parameters[Packed<Real>::type_of(pj)], Coulomb ? qi * tile_charge[k] : Real(0));
            }
          }
        }
      }
    }
    if (active) sums.store(p, i);
  }
}

}  // namespace
}  // namespace nbkit::md
