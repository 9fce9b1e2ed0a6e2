#pragma once
// The Langevin-middle step's per-atom updates on the device, written once: the separate kernels
// of md/cuda/molecular_dynamics.cu (a kernel per update, as the host engine's loops) and the
// whole step in one launch (md/cuda/constraints.cu's langevin_middle_step_kernel) call these, so
// both give the same bits. Internal to the CUDA build.
#include <cuda_runtime.h>

#include <cstdint>

#include "md/bonded_law.hpp"  // Vector3
#include "md/langevin_noise.hpp"
#include "md/periodic.hpp"

namespace nbkit::md {

// With constraints the position updates also keep the step's start (`reference`, SHAKE's and
// SETTLE's reference) and the update itself (`unconstrained`, for the velocities' correction):
// two copies of the positions a step fewer than cudaMemcpyAsync before and after (nullptr: none).
struct ConstraintCopies {
  Vector3<double>*reference, *unconstrained;
};

struct BoxEdges {
  double lo[3], length[3];
};

__device__ inline Vector3<double> wrapped(const Vector3<double>& x, const BoxEdges& box) {
  return {wrap_coordinate(x.x, box.lo[0], box.length[0]), wrap_coordinate(x.y, box.lo[1], box.length[1]),
          wrap_coordinate(x.z, box.lo[2], box.length[2])};
}

// v += scale / m f (the kick).
__device__ inline void kick_atom(int i, Vector3<double>* v, const Vector3<double>* f, const double* mass, double scale) {
  v[i] = v[i] + (scale / mass[i]) * f[i];
}

// Drift half, the thermostat's velocity update, drift half (BAOAB's middle: O between the A's),
// atom i's noise drawn by its index.
__device__ inline void langevin_middle_atom(int i, Vector3<double>* x, Vector3<double>* v, const double* mass,
                                            double half, double a, double b, double kt, std::uint64_t seed,
                                            std::uint64_t call, ConstraintCopies copies) {
  if (copies.reference) copies.reference[i] = x[i];
  double noise[3];
  normal_triplet(seed, call, static_cast<std::uint32_t>(i), kLangevinMiddleTag, noise);
  const double sigma = b * sqrt(kt / mass[i]);
  double xi[3] = {x[i].x, x[i].y, x[i].z}, vi[3] = {v[i].x, v[i].y, v[i].z};
  for (int k = 0; k < 3; ++k) {
    xi[k] += half * vi[k];
    vi[k] = a * vi[k] + sigma * noise[k];
    xi[k] += half * vi[k];
  }
  x[i] = {xi[0], xi[1], xi[2]}, v[i] = {vi[0], vi[1], vi[2]};
  if (copies.unconstrained) copies.unconstrained[i] = x[i];
}

// The constraints' correction of the positions given to the velocities, v += (x -
// x_unconstrained) / dt, and with a box the atom wrapped into it as the evaluation would next.
__device__ inline void correct_velocity_atom(int i, Vector3<double>* v, Vector3<double>* x,
                                             const Vector3<double>* unconstrained, double dt, bool wrap,
                                             const BoxEdges& box) {
  const Vector3<double> xi = x[i];
  const Vector3<double> d = xi - unconstrained[i];
  v[i] = {v[i].x + d.x / dt, v[i].y + d.y / dt, v[i].z + d.z / dt};
  if (wrap) x[i] = wrapped(xi, box);
}

// The whole step's constants (ConstraintsGpu::langevin_middle_step).
struct MiddleStep {
  Vector3<double>*x, *v;
  const Vector3<double>* f;
  const double* mass;  // per atom
  double kick_scale;   // dt times force-to-acceleration
  double half, a, b, kt;
  std::uint64_t seed;
  ConstraintCopies copies;
  double dt;
  bool wrap;
  BoxEdges box;
};

}  // namespace nbkit::md
