#pragma once
// What the GPU kernels of potential maps share (cuda.cu: direct summation, cutoff_cuda.cu:
// cutoff summation): atoms in lattice units with exact integer/residual coordinates, the
// device math policy of the laws, the hardware reciprocal square root. CUDA code only.
#include <cuda_runtime.h>

#include <cmath>
#include <type_traits>
#include <vector>

#include "cuda/check.hpp"
#include "cuda/device_buffer.hpp"
#include "cuda/fast_math.cuh"
#include "maps/kernels.hpp"
#include "maps/laws.hpp"
#include "nbkit/maps.hpp"

namespace nbkit::maps::gpu {

// One atom: {x index, x residual, y index, y residual} and {z index, z residual,
// coefficient, unused}, lattice units. Two 16-byte (float) or 32-byte (double) loads.
template <class Real>
struct alignas(4 * sizeof(Real)) Quad {
  Real a, b, c, d;
};

template <class Real>
struct DeviceMath {
  __host__ __device__ Real set(double v) const { return static_cast<Real>(v); }
  // expf, not __expf: 2 ulp everywhere, where __expf's error grows with |x|; its extra
  // float32 work fits in the FP32 pipe's idle slots of this MUFU-bound loop.
  __host__ __device__ Real exp_scaled(double k, Real v) const { return ::exp(static_cast<Real>(k) * v); }
  // value where r2 < limit, else 0 (the cutoff laws)
  __host__ __device__ Real below(Real r2, double limit, Real value) const {
    return r2 < static_cast<Real>(limit) ? value : Real(0);
  }
  // max(v, 0) for v <= 1: in float32 a saturation to [0, 1], which ptxas folds into the
  // multiply-add that makes v (FFMA.SAT): one instruction fewer a pair in the cutcp loop.
  __host__ __device__ Real unit_ramp(Real v) const {
#ifdef __CUDA_ARCH__
    if constexpr (std::is_same_v<Real, float>) return __saturatef(v);
#endif
    return max(v, Real(0));
  }
};

using cuda::reciprocal_sqrt;

// The laws in lattice units (lengths measured in spacings; the atoms' coefficients carry
// 1/spacing, atoms_in_lattice_units).
inline CoulombLaw in_lattice_units(const CoulombLaw& law, double) { return law; }
inline DebyeHuckelLaw in_lattice_units(const DebyeHuckelLaw& law, double spacing) {
  return DebyeHuckelLaw{law.kappa * spacing};
}
template <Smoothing S>
CutoffLaw<S> in_lattice_units(const CutoffLaw<S>& law, double spacing) {
  return CutoffLaw<S>{law.cutoff / spacing};
}

// An atom in lattice units: each coordinate split into its nearest lattice index and a
// residual, so that (point index - atom index) - residual is exact to one rounding.
// `on_lattice`: every residual within singular_distance, so the atom may sit on a lattice
// point and must go through the kernels' checked pass. x, y, z relative to the lattice's
// origin, Angstrom; done on the GPU (device_input.cuh, cutoff/cuda.cu), with no operation a
// compiler could fuse, so it is the float64 arithmetic as written.
template <class Real>
__host__ __device__ inline void split_atom(double x, double y, double z, double coefficient, double spacing,
                                           Quad<Real>& xy, Quad<Real>& zc, bool& on_lattice) {
  double index[3], residual[3];
  const double coordinate[3] = {x / spacing, y / spacing, z / spacing};
  const double singular_residual = singular_distance / spacing;
  on_lattice = true;
  for (int a = 0; a < 3; ++a) {
    index[a] = nearbyint(coordinate[a]);  // ties to even, on the host (default rounding) and the GPU
    residual[a] = coordinate[a] - index[a];
    on_lattice = on_lattice && fabs(residual[a]) <= singular_residual;
  }
  xy = {static_cast<Real>(index[0]), static_cast<Real>(residual[0]), static_cast<Real>(index[1]),
        static_cast<Real>(residual[1])};
  zc = {static_cast<Real>(index[2]), static_cast<Real>(residual[2]), static_cast<Real>(coefficient / spacing),
        Real(0)};
}

// Values in one GPU's memory (atoms split or binned on the GPU that prepared them), copied to
// the GPU a worker runs on (a copy within that GPU, or between GPUs).
template <class T>
struct Source {
  const T* data = nullptr;
  std::size_t size = 0;
  int device = 0;
  cuda::DeviceBuffer<T> copy_to(int here) const {
    cuda::DeviceBuffer<T> out(size);
    if (size > 0) NBKIT_CUDA_CHECK(cudaMemcpyPeer(out.data(), here, data, device, size * sizeof(T)));
    return out;
  }
  // The values as read on `here`: these very ones on their own GPU (a small map's call spent
  // ~40 us allocating, copying and freeing a copy within it), else a copy kept in `copy`.
  struct View {
    const T* data = nullptr;
    std::size_t size = 0;
    cuda::DeviceBuffer<T> copy;
  };
  View on(int here) const {
    if (here == device) return {data, size, {}};
    cuda::DeviceBuffer<T> copy = copy_to(here);
    const T* at = copy.data();
    return {at, size, std::move(copy)};
  }
};

}  // namespace nbkit::maps::gpu
