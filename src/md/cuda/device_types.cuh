#pragma once
// The engine's device-side types: packed positions, the box's cells, launch sizes.
// Part of the GPU MD engine (engine_cuda.cu, whose comment has the design); included there
// only, one translation unit, split by job as GROMACS's nbnxm splits its GPU code.
#include <cuda_runtime.h>
#include "md/pair_law.hpp"

namespace nbkit::md {
namespace {

constexpr int kThreads = 128;

// Positions as the pair kernels read them, relative to the box's lower corner, with the type
// in the fourth word (one 16- or 32-byte load per neighbour).
template <class Real>
struct Packed;
template <>
struct Packed<float> {
  using type = float4;
  __device__ static float4 make(double x, double y, double z, int t) {
    return make_float4(static_cast<float>(x), static_cast<float>(y), static_cast<float>(z), __int_as_float(t));
  }
  __device__ static int type_of(const float4& p) { return __float_as_int(p.w); }
};
struct alignas(32) Double4 {
  double x, y, z, w;
};
template <>
struct Packed<double> {
  using type = Double4;
  __device__ static Double4 make(double x, double y, double z, int t) { return {x, y, z, static_cast<double>(t)}; }
  __device__ static int type_of(const Double4& p) { return static_cast<int>(p.w); }
};

// The box and its cells: cells[a] = floor(length / (reach + skin)) >= 2 along each axis.
struct Geometry {
  double lo[3], length[3], inverse_length[3], cells_per_length[3];
  int cells[3];
};

// pair_law.hpp's minimum image in the kernels' arithmetic.
template <class Real>
__device__ inline Real minimum_image(Real d, Real length, Real inverse_length) {
  return md::minimum_image(ScalarPairMath<Real>{}, d, length, inverse_length);
}

int blocks_for(std::int64_t n) { return static_cast<int>((n + kThreads - 1) / kThreads); }

}  // namespace
}  // namespace nbkit::md
