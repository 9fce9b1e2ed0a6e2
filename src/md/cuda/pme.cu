// Smooth particle-mesh Ewald on one GPU (md/cuda/pme.cuh has the design; md/pme.hpp the method).
#include "md/cuda/pme.cuh"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <string>

#include "cuda/check.hpp"
#include "md/bspline.hpp"
#include "md/pme.hpp"
#include "nbkit/core/error.hpp"

namespace nbkit::md {

namespace {

using V3 = Vector3<double>;
constexpr int kThreads = 128;
constexpr int kReduceThreads = 256;

void check_cufft(cufftResult status, const char* what) {
  if (status != CUFFT_SUCCESS)
    throw Error(std::string("PME on the GPU: ") + what + " failed (cuFFT error " + std::to_string(static_cast<int>(status)) + ")");
}

struct Mesh {
  int k[3];
  double scale[3], lo[3];  // mesh points per A, the box's low corner
};

// An atom's first mesh point along axis a (floor(u), u in [0, K)) and its B-splines.
__device__ int splines(const Mesh& m, int order, int a, double x, double* value, double* derivative) {
  double u = (x - m.lo[a]) * m.scale[a];
  u -= m.k[a] * floor(u / m.k[a]);
  // A position not finite, or so far out (a run blowing up) that the reduction above loses it
  // (|u| beyond 2^53 / K), lands at mesh point 0 rather than outside the mesh: such a step's
  // forces or constraints are reported (the device's flags); before this its mesh writes went
  // out of bounds (compute-sanitizer, Constraints.RefusesWhatItCannotRun). u = K from rounding
  // gives the same points and weights as u = 0.
  if (!(u >= 0 && u < m.k[a])) u = 0;
  const double cell = floor(u);
  bspline_weights(order, u - cell, value, derivative);
  return static_cast<int>(cell);
}

__device__ int wrap(int k, int size) { return k < 0 ? k + size : (k >= size ? k - size : k); }

// Each atom adds q M(u1) M(u2) M(u3) to its order^3 mesh points, as 64-bit fixed point (two's
// complement in an unsigned atomic add: negative values wrap and sum correctly). `Order` lanes
// share an atom, lane j2 taking the points base[2] - j2 of each of its order^2 rows, so that one
// atomic instruction of a warp adds to 32 / Order runs of Order neighbouring words (a few
// sectors) instead of 32 words in 32 places. With a thread an atom the spread was half of PME's
// time; this way it is 22-33% faster on an H100 (docs/performance.md, session 31).
template <int Order>
__global__ void spread(int n, const V3* x, const double* q, Mesh m, double fixed_scale, unsigned long long* mesh) {
  constexpr int kAtomsPerWarp = 32 / Order;
  const int lane = threadIdx.x % 32;
  const int j2 = lane % Order;
  const std::int64_t warp = (static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const std::int64_t i = warp * kAtomsPerWarp + lane / Order;
  if (lane >= kAtomsPerWarp * Order || i >= n) return;
  double t[3][Order], d[3][Order];
  int base[3];
  const V3 p = x[i];
  base[0] = splines(m, Order, 0, p.x, t[0], d[0]);
  base[1] = splines(m, Order, 1, p.y, t[1], d[1]);
  base[2] = splines(m, Order, 2, p.z, t[2], d[2]);
  // The products in the order of a thread per atom (the same bits as before).
  const double charge = q[i] * fixed_scale;
  double weight2 = 0;  // t[2][j2], picked without indexing the array (which would go to local memory)
  for (int k = 0; k < Order; ++k)
    if (k == j2) weight2 = t[2][k];
  const int c = wrap(base[2] - j2, m.k[2]);
  for (int j0 = 0; j0 < Order; ++j0) {
    const int a = wrap(base[0] - j0, m.k[0]);
    for (int j1 = 0; j1 < Order; ++j1) {
      const int b = wrap(base[1] - j1, m.k[1]);
      const double w = charge * t[0][j0] * t[1][j1];
      atomicAdd(mesh + (static_cast<std::int64_t>(a) * m.k[1] + b) * m.k[2] + c,
                static_cast<unsigned long long>(__double2ll_rn(w * weight2)));
    }
  }
}

// The fixed-point mesh to float64, each point zeroed once read: the next spreading finds the mesh
// clear without a memset of its own (one launch fewer on the mesh's chain of small kernels).
__global__ void fixed_to_real(std::int64_t count, unsigned long long* fixed, double inverse_scale, double* mesh) {
  const std::int64_t k = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (k < count) {
    mesh[k] = static_cast<double>(static_cast<long long>(fixed[k])) * inverse_scale;
    fixed[k] = 0;
  }
}

// The convolution with G(m) (md/pme.cpp's loop, element by element): each thread one element
// of the half spectrum. G(m) times the B-spline moduli depends on the box alone, so it is
// tabulated when the box's edges change (tabulate_kernel) and each evaluation multiplies by the
// table (convolve); with energies, each block's energy and virial go by a fixed tree into
// partial[2 block], partial[2 block + 1] (convolve_with_energies). Both multiply by the same
// table, so the forces have the same bits with and without energies.
struct Kernel {
  int k[3];
  double length[3];
  double prefactor, exponent;  // k_e / (pi V), pi^2 / alpha^2
  const double *moduli0, *moduli1, *moduli2;
};

struct Element {
  int a, b, c;
};
__device__ inline Element element(const Kernel& g, std::int64_t e) {
  const int half = g.k[2] / 2 + 1;
  return {static_cast<int>(e / (static_cast<std::int64_t>(half) * g.k[1])), static_cast<int>((e / half) % g.k[1]),
          static_cast<int>(e % half)};
}
// |m|^2 of element (a, b, c): its wave vector from the signed indices over the edges.
__device__ inline double wave_number2(const Kernel& g, const Element& i) {
  const double ma = (i.a <= g.k[0] / 2 ? i.a : i.a - g.k[0]) / g.length[0];
  const double mb = (i.b <= g.k[1] / 2 ? i.b : i.b - g.k[1]) / g.length[1];
  const double mc = i.c / g.length[2];
  return ma * ma + mb * mb + mc * mc;
}

__global__ void tabulate_kernel(Kernel g, double* table) {
  const std::int64_t count = static_cast<std::int64_t>(g.k[0]) * g.k[1] * (g.k[2] / 2 + 1);
  const std::int64_t e = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (e >= count) return;
  const Element i = element(g, e);
  if (i.a == 0 && i.b == 0 && i.c == 0) {
    table[e] = 0;
    return;
  }
  const double m2 = wave_number2(g, i);
  table[e] = g.prefactor * exp(-g.exponent * m2) / m2 * g.moduli0[i.a] * g.moduli1[i.b] * g.moduli2[i.c];
}

__global__ void convolve(std::int64_t count, const double* __restrict__ table, cufftDoubleComplex* spectrum) {
  const std::int64_t e = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (e >= count) return;
  cufftDoubleComplex f = spectrum[e];
  if (e == 0) {
    f.x = f.y = 0;  // m = 0: no term (exactly zero, as before the table)
  } else {
    const double kernel = table[e];
    f.x *= kernel, f.y *= kernel;
  }
  spectrum[e] = f;
}

__global__ void convolve_with_energies(Kernel g, const double* __restrict__ table, cufftDoubleComplex* spectrum,
                                       double* partial) {
  __shared__ double energy_part[kReduceThreads], virial_part[kReduceThreads];
  const std::int64_t count = static_cast<std::int64_t>(g.k[0]) * g.k[1] * (g.k[2] / 2 + 1);
  const std::int64_t e = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  double energy = 0, virial = 0;
  if (e < count) {
    cufftDoubleComplex f = spectrum[e];
    if (e == 0) {
      f.x = f.y = 0;
    } else {
      const Element i = element(g, e);
      const double kernel = table[e];
      const double copies = (i.c == 0 || (g.k[2] % 2 == 0 && i.c == g.k[2] / 2)) ? 1.0 : 2.0;
      energy = 0.5 * copies * kernel * (f.x * f.x + f.y * f.y);
      virial = energy * (1 - 2 * g.exponent * wave_number2(g, i));
      f.x *= kernel, f.y *= kernel;
    }
    spectrum[e] = f;
  }
  energy_part[threadIdx.x] = energy, virial_part[threadIdx.x] = virial;
  __syncthreads();
  for (int width = kReduceThreads / 2; width > 0; width /= 2) {
    if (threadIdx.x < width) {
      energy_part[threadIdx.x] += energy_part[threadIdx.x + width];
      virial_part[threadIdx.x] += virial_part[threadIdx.x + width];
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) partial[2 * blockIdx.x] = energy_part[0], partial[2 * blockIdx.x + 1] = virial_part[0];
}

// The blocks' partial sums in one block, a fixed tree: energy_virial[0..1].
__global__ void sum_partials(int blocks, const double* partial, double* energy_virial) {
  __shared__ double energy_part[kReduceThreads], virial_part[kReduceThreads];
  double energy = 0, virial = 0;
  for (int k = threadIdx.x; k < blocks; k += blockDim.x) energy += partial[2 * k], virial += partial[2 * k + 1];
  energy_part[threadIdx.x] = energy, virial_part[threadIdx.x] = virial;
  __syncthreads();
  for (int width = kReduceThreads / 2; width > 0; width /= 2) {
    if (threadIdx.x < width) {
      energy_part[threadIdx.x] += energy_part[threadIdx.x + width];
      virial_part[threadIdx.x] += virial_part[threadIdx.x + width];
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) energy_virial[0] = energy_part[0], energy_virial[1] = virial_part[0];
}

// F_i = -q_i sum phi(k) grad(theta) (md/pme.cpp), each atom its own sum in a fixed order.
template <int Order>
__global__ void gather(int n, const V3* x, const double* q, Mesh m, const double* phi, V3* force) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  double t[3][Order], d[3][Order];
  int base[3];
  const V3 p = x[i];
  base[0] = splines(m, Order, 0, p.x, t[0], d[0]);
  base[1] = splines(m, Order, 1, p.y, t[1], d[1]);
  base[2] = splines(m, Order, 2, p.z, t[2], d[2]);
  double gx = 0, gy = 0, gz = 0;
  for (int j0 = 0; j0 < Order; ++j0) {
    const int a = wrap(base[0] - j0, m.k[0]);
    for (int j1 = 0; j1 < Order; ++j1) {
      const int b = wrap(base[1] - j1, m.k[1]);
      const double* row = phi + (static_cast<std::int64_t>(a) * m.k[1] + b) * m.k[2];
      for (int j2 = 0; j2 < Order; ++j2) {
        const double v = row[wrap(base[2] - j2, m.k[2])];
        gx += v * d[0][j0] * t[1][j1] * t[2][j2];
        gy += v * t[0][j0] * d[1][j1] * t[2][j2];
        gz += v * t[0][j0] * t[1][j1] * d[2][j2];
      }
    }
  }
  force[i] = V3{-q[i] * gx * m.scale[0], -q[i] * gy * m.scale[1], -q[i] * gz * m.scale[2]};
}

int blocks(std::int64_t n, int threads = kThreads) { return static_cast<int>((n + threads - 1) / threads); }

}  // namespace

PmeGpu::PmeGpu(std::array<int, 3> grid, int order, double alpha, const std::vector<double>& q, cudaStream_t stream)
    : grid_(grid), order_(order), alpha_(alpha), stream_(stream) {
  if (order < 4 || order > kMaxPmeOrder)
    throw Error("PME: B-spline order " + std::to_string(order) + " (expected 4, 5 or 6)");
  for (int a = 0; a < 3; ++a)
    if (grid[a] < order || grid[a] > 4096)
      throw Error("PME: a mesh of " + std::to_string(grid[a]) + " points along an edge (expected " +
                  std::to_string(order) + "..4096)");
  // A mesh value is at most the sum of |q| (the splines of one atom sum to 1): the fixed-point
  // scale 2^s keeps that below 2^62, with s at most 40 (a resolution of 1e-12 e, far below
  // float64 PME's own error at any tolerance it is asked for).
  double total = 0;
  for (double c : q) total += std::abs(c);
  const int bits = std::min(40, static_cast<int>(std::floor(62 - std::log2(total + 1))));
  if (bits < 20) throw Error("PME on the GPU: the charges' magnitudes sum beyond the fixed-point mesh's range");
  scale_ = std::ldexp(1.0, bits);
  const std::int64_t reals = static_cast<std::int64_t>(grid[0]) * grid[1] * grid[2];
  const std::int64_t complexes = static_cast<std::int64_t>(grid[0]) * grid[1] * (grid[2] / 2 + 1);
  fixed_ = cuda::DeviceBuffer<unsigned long long>(static_cast<std::size_t>(reals));
  mesh_ = cuda::DeviceBuffer<double>(static_cast<std::size_t>(reals));
  spectrum_ = cuda::DeviceBuffer<cufftDoubleComplex>(static_cast<std::size_t>(complexes));
  convolution_blocks_ = blocks(complexes, kReduceThreads);
  partial_ = cuda::DeviceBuffer<double>(2 * static_cast<std::size_t>(convolution_blocks_));
  table_ = cuda::DeviceBuffer<double>(static_cast<std::size_t>(complexes));
  std::vector<double> moduli;
  for (int a = 0; a < 3; ++a) {
    const std::vector<double> b = bspline_moduli(grid[a], order);
    moduli.insert(moduli.end(), b.begin(), b.end());
  }
  moduli_ = cuda::DeviceBuffer<double>(moduli.size());
  moduli_.upload(moduli.data(), moduli.size(), stream_);
  check_cufft(cufftPlan3d(&forward_, grid[0], grid[1], grid[2], CUFFT_D2Z), "planning the forward FFT");
  planned_forward_ = true;
  check_cufft(cufftPlan3d(&backward_, grid[0], grid[1], grid[2], CUFFT_Z2D), "planning the inverse FFT");
  planned_backward_ = true;
  check_cufft(cufftSetStream(forward_, stream_), "cufftSetStream");
  check_cufft(cufftSetStream(backward_, stream_), "cufftSetStream");
  NBKIT_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

PmeGpu::~PmeGpu() {
  if (planned_forward_) cufftDestroy(forward_);
  if (planned_backward_) cufftDestroy(backward_);
}

void PmeGpu::mark(int phase) {
  if (events_) (*events_)[static_cast<std::size_t>(phase)].record(stream_);
  if (ahead_ && phase == ahead_phase_) NBKIT_CUDA_CHECK(cudaEventRecord(ahead_, stream_));
}

void PmeGpu::evaluate(const V3* x, const double* q, int n, const PeriodicBox& box, double coulomb_k, V3* force,
                      double* energy_virial, cudaStream_t stream, cudaEvent_t ahead, int ahead_phase) {
  ahead_ = ahead, ahead_phase_ = ahead_phase;
  if (stream != stream_) {
    check_cufft(cufftSetStream(forward_, stream), "cufftSetStream");
    check_cufft(cufftSetStream(backward_, stream), "cufftSetStream");
    stream_ = stream;
  }
  Mesh m{};
  for (int a = 0; a < 3; ++a) {
    const double length = box.length(a);
    if (!(length > 0) || !std::isfinite(length)) throw Error("PME: the box edges must be positive lengths");
    m.k[a] = grid_[a], m.scale[a] = grid_[a] / length, m.lo[a] = box.lo[a];
  }
  const std::int64_t reals = static_cast<std::int64_t>(grid_[0]) * grid_[1] * grid_[2];
  const std::int64_t complexes = static_cast<std::int64_t>(grid_[0]) * grid_[1] * (grid_[2] / 2 + 1);
  mark(0);
  // The fixed-point mesh is cleared once; after that each conversion clears what it reads.
  if (!cleared_) NBKIT_CUDA_CHECK(cudaMemsetAsync(fixed_.data(), 0, reals * sizeof(unsigned long long), stream_));
  cleared_ = true;
  auto by_order = [&](auto kernel4, auto kernel5, auto kernel6, auto&&... args) {
    if (n == 0) return;
    if (order_ == 4) kernel4<<<blocks(n), kThreads, 0, stream_>>>(args...);
    else if (order_ == 5) kernel5<<<blocks(n), kThreads, 0, stream_>>>(args...);
    else kernel6<<<blocks(n), kThreads, 0, stream_>>>(args...);
    NBKIT_CUDA_CHECK_LAUNCH();
  };
  // Spreading: Order lanes an atom, 32 / Order atoms a warp.
  if (n > 0) {
    const std::int64_t warps = (n + 32 / order_ - 1) / (32 / order_);
    const int grid = blocks(warps * 32);
    if (order_ == 4) spread<4><<<grid, kThreads, 0, stream_>>>(n, x, q, m, scale_, fixed_.data());
    else if (order_ == 5) spread<5><<<grid, kThreads, 0, stream_>>>(n, x, q, m, scale_, fixed_.data());
    else spread<6><<<grid, kThreads, 0, stream_>>>(n, x, q, m, scale_, fixed_.data());
    NBKIT_CUDA_CHECK_LAUNCH();
  }
  fixed_to_real<<<blocks(reals), kThreads, 0, stream_>>>(reals, fixed_.data(), 1 / scale_, mesh_.data());
  NBKIT_CUDA_CHECK_LAUNCH();
  mark(1);
  check_cufft(cufftExecD2Z(forward_, mesh_.data(), spectrum_.data()), "the forward FFT");
  mark(2);
  const double pi = std::numbers::pi;
  Kernel g{{grid_[0], grid_[1], grid_[2]},
           {box.length(0), box.length(1), box.length(2)},
           coulomb_k / (pi * box.volume()),
           pi * pi / (alpha_ * alpha_),
           moduli_.data(),
           moduli_.data() + grid_[0],
           moduli_.data() + grid_[0] + grid_[1]};
  const std::array<double, 4> tabulated{box.length(0), box.length(1), box.length(2), coulomb_k};
  if (tabulated != tabulated_for_) {
    tabulate_kernel<<<blocks(complexes), kThreads, 0, stream_>>>(g, table_.data());
    NBKIT_CUDA_CHECK_LAUNCH();
    tabulated_for_ = tabulated;
  }
  if (energy_virial) {
    convolve_with_energies<<<convolution_blocks_, kReduceThreads, 0, stream_>>>(g, table_.data(), spectrum_.data(),
                                                                                partial_.data());
    NBKIT_CUDA_CHECK_LAUNCH();
    sum_partials<<<1, kReduceThreads, 0, stream_>>>(convolution_blocks_, partial_.data(), energy_virial);
    NBKIT_CUDA_CHECK_LAUNCH();
  } else {
    convolve<<<blocks(complexes), kThreads, 0, stream_>>>(complexes, table_.data(), spectrum_.data());
    NBKIT_CUDA_CHECK_LAUNCH();
  }
  mark(3);
  check_cufft(cufftExecZ2D(backward_, spectrum_.data(), mesh_.data()), "the inverse FFT");
  mark(4);
  by_order(gather<4>, gather<5>, gather<6>, n, x, q, m, static_cast<const double*>(mesh_.data()), force);
  mark(5);
}

std::array<double, 5> PmeGpu::phase_seconds() const {
  std::array<double, 5> out{};
  if (!events_) return out;
  (*events_)[5].synchronize();
  for (std::size_t k = 0; k < 5; ++k) out[k] = (*events_)[k + 1].seconds_since((*events_)[k]);
  return out;
}

}  // namespace nbkit::md
