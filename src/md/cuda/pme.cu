// Smooth particle-mesh Ewald on one GPU (md/cuda/pme.cuh has the design; md/pme.hpp the method).
#include "md/cuda/pme.cuh"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <numbers>
#include <string>

#include "cuda/check.hpp"
#include "cuda/primitives.hpp"
#include "md/bspline.hpp"
#include "md/pme.hpp"
#include "nbkit/core/error.hpp"

namespace nbkit::md {

// The mesh's size and placement, as the kernels take it.
struct PmeMesh {
  int k[3];
  double scale[3], lo[3];  // mesh points per A, the box's low corner
};

namespace {

using V3 = Vector3<double>;
using Mesh = PmeMesh;
constexpr int kThreads = 128;
constexpr int kReduceThreads = 256;

void check_cufft(cufftResult status, const char* what) {
  if (status != CUFFT_SUCCESS)
    throw Error(std::string("PME on the GPU: ") + what + " failed (cuFFT error " + std::to_string(static_cast<int>(status)) + ")");
}

// An atom's coordinate along axis a in mesh points, reduced to [0, K).
__device__ double mesh_coordinate(const Mesh& m, int a, double x) {
  double u = (x - m.lo[a]) * m.scale[a];
  u -= m.k[a] * floor(u / m.k[a]);
  // A position not finite, or so far out (a run blowing up) that the reduction above loses it
  // (|u| beyond 2^53 / K), lands at mesh point 0 rather than outside the mesh: such a step's
  // forces or constraints are reported (the device's flags); before this its mesh writes went
  // out of bounds (compute-sanitizer, Constraints.RefusesWhatItCannotRun). u = K from rounding
  // gives the same points and weights as u = 0.
  if (!(u >= 0 && u < m.k[a])) u = 0;
  return u;
}

// An atom's first mesh point along axis a (floor(u), u in [0, K)) and its B-splines.
__device__ int splines(const Mesh& m, int order, int a, double x, double* value, double* derivative) {
  const double u = mesh_coordinate(m, a, x);
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

// Spreading by mesh point (the default; NBKIT_PME_SPREAD=atoms for the atomic adds above): the
// atoms binned by their first mesh point into bricks of kBrick^3 points (a counting sort), then a
// block a brick and a thread a point, each thread summing in a register the terms of the atoms
// in the bricks whose supports reach its brick. Each term is spread's (the same products, the
// same rounding to 64-bit fixed point) and an integer sum does not depend on its order, so the
// mesh has the atomic adds' bits; what goes is 125 atomic adds an atom to global memory (the
// spread was ~0.9 of the mesh's 1.6 ms a step at a million atoms, session 42) and the conversion
// pass (the sum is converted where it is made). A brick of 4 reads the atoms of 2 bricks an axis
// (3 where the mesh's last, short brick is among them), of which (5/8)^3 of the (point, atom)
// pairs are within an atom's support at order 5.
constexpr int kBrick = 4;
constexpr int kBrickPoints = kBrick * kBrick * kBrick;  // the threads of a block
constexpr int kStagedAtoms = kBrickPoints;              // atoms in shared memory at a time

struct Bricks {
  int count[3];  // ceil(K / kBrick) along each axis
};

__device__ inline int brick_size(const Mesh& m, int a, int brick) { return min(kBrick, m.k[a] - brick * kBrick); }

// Each atom's brick (of its first mesh points) and its rank among the atoms counted there.
__global__ void bin_by_brick(int n, const V3* x, Mesh m, Bricks b, int* __restrict__ key, int* __restrict__ rank,
                             int* __restrict__ count) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const V3 p = x[i];
  const int c0 = static_cast<int>(floor(mesh_coordinate(m, 0, p.x))) / kBrick;
  const int c1 = static_cast<int>(floor(mesh_coordinate(m, 1, p.y))) / kBrick;
  const int c2 = static_cast<int>(floor(mesh_coordinate(m, 2, p.z))) / kBrick;
  const int k = (c0 * b.count[1] + c1) * b.count[2] + c2;
  key[i] = k;
  rank[i] = atomicAdd(count + k, 1);
}

__global__ void place_by_brick(int n, const int* __restrict__ key, const int* __restrict__ rank,
                               const int* __restrict__ start, int* __restrict__ sorted) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) sorted[start[key[i]] + rank[i]] = i;
}

template <int Order>
__global__ void __launch_bounds__(kBrickPoints)
    spread_by_point(const V3* __restrict__ x, const double* __restrict__ q, Mesh m, Bricks b,
                    const int* __restrict__ start, const int* __restrict__ sorted, double fixed_scale,
                    double inverse_scale, double* __restrict__ mesh) {
  __shared__ double weight[3][Order][kStagedAtoms];  // an atom's t[a][j] at [a][j][slot]
  __shared__ double charge[kStagedAtoms];
  __shared__ int first[3][kStagedAtoms];
  const int brick[3] = {static_cast<int>(blockIdx.x / (static_cast<unsigned>(b.count[1]) * b.count[2])),
                        static_cast<int>((blockIdx.x / b.count[2]) % b.count[1]),
                        static_cast<int>(blockIdx.x % b.count[2])};
  const int l = threadIdx.x;
  const int point[3] = {brick[0] * kBrick + l / (kBrick * kBrick), brick[1] * kBrick + (l / kBrick) % kBrick,
                        brick[2] * kBrick + l % kBrick};
  const bool inside = point[0] < m.k[0] && point[1] < m.k[1] && point[2] < m.k[2];
  // The bricks whose atoms reach this brick's points along each axis: an atom at first point c
  // reaches c - Order + 1 .. c, so the brick's points p .. p + size - 1 take the atoms whose c is
  // in p .. p + size + Order - 2 (mod K): this brick and the next ones until that many are covered.
  int source[3][4], sources[3];
  for (int a = 0; a < 3; ++a) {
    const int need = min(m.k[a], brick_size(m, a, brick[a]) + Order - 1);
    int covered = 0, s = brick[a];
    sources[a] = 0;
    while (covered < need && sources[a] < b.count[a] && sources[a] < 4) {
      source[a][sources[a]++] = s;
      covered += brick_size(m, a, s);
      s = s + 1 == b.count[a] ? 0 : s + 1;
    }
  }
  unsigned long long sum = 0;  // fixed point, two's complement (as spread's atomic adds)
  int staged = 0;
  auto add_staged = [&] {
    __syncthreads();
    if (inside)
      for (int s = 0; s < staged; ++s) {
        int j0 = first[0][s] - point[0], j1 = first[1][s] - point[1], j2 = first[2][s] - point[2];
        if (j0 < 0) j0 += m.k[0];
        if (j1 < 0) j1 += m.k[1];
        if (j2 < 0) j2 += m.k[2];
        if (j0 < Order && j1 < Order && j2 < Order) {
          const double w = charge[s] * weight[0][j0][s] * weight[1][j1][s];
          sum += static_cast<unsigned long long>(__double2ll_rn(w * weight[2][j2][s]));
        }
      }
    __syncthreads();
    staged = 0;
  };
  for (int s0 = 0; s0 < sources[0]; ++s0)
    for (int s1 = 0; s1 < sources[1]; ++s1)
      for (int s2 = 0; s2 < sources[2]; ++s2) {
        const int k = (source[0][s0] * b.count[1] + source[1][s1]) * b.count[2] + source[2][s2];
        int from = start[k];
        const int to = start[k + 1];
        while (from < to) {  // the same bounds in every thread: the block's barriers agree
          const int take = min(to - from, kStagedAtoms - staged);
          if (l < take) {
            const int i = sorted[from + l];
            const V3 p = x[i];
            double t[3][Order], d[3][Order];
            first[0][staged + l] = splines(m, Order, 0, p.x, t[0], d[0]);
            first[1][staged + l] = splines(m, Order, 1, p.y, t[1], d[1]);
            first[2][staged + l] = splines(m, Order, 2, p.z, t[2], d[2]);
            for (int a = 0; a < 3; ++a)
              for (int j = 0; j < Order; ++j) weight[a][j][staged + l] = t[a][j];
            charge[staged + l] = q[i] * fixed_scale;
          }
          staged += take;
          from += take;
          if (staged == kStagedAtoms) add_staged();
        }
      }
  if (staged > 0) add_staged();
  if (inside)
    mesh[(static_cast<std::int64_t>(point[0]) * m.k[1] + point[1]) * m.k[2] + point[2]] =
        static_cast<double>(static_cast<long long>(sum)) * inverse_scale;
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
  if (const char* pick = std::getenv("NBKIT_PME_SPREAD"); pick && *pick) {
    const std::string p = pick;
    if (p != "points" && p != "atoms")
      throw Error("NBKIT_PME_SPREAD is \"" + p + "\": expected points (the default) or atoms");
    spread_by_atoms_ = p == "atoms";
  }
  if (spread_by_atoms_) {
    fixed_ = cuda::DeviceBuffer<unsigned long long>(static_cast<std::size_t>(reals));
  } else {
    atoms_ = static_cast<int>(q.size());
    for (int a = 0; a < 3; ++a) bricks_[a] = (grid[a] + kBrick - 1) / kBrick;
    const std::int64_t bricks = static_cast<std::int64_t>(bricks_[0]) * bricks_[1] * bricks_[2];
    brick_count_ = cuda::DeviceBuffer<int>(static_cast<std::size_t>(bricks) + 1);
    brick_start_ = cuda::DeviceBuffer<int>(static_cast<std::size_t>(bricks) + 1);
    const auto n = static_cast<std::size_t>(std::max(atoms_, 1));
    atom_brick_ = cuda::DeviceBuffer<int>(n), atom_rank_ = cuda::DeviceBuffer<int>(n), by_brick_ = cuda::DeviceBuffer<int>(n);
    std::size_t bytes = 0;
    NBKIT_CUDA_CHECK(cuda::exclusive_sum(nullptr, bytes, brick_count_.data(), brick_start_.data(),
                                         static_cast<int>(bricks + 1), stream_));
    scan_scratch_ = cuda::DeviceBuffer<unsigned char>(std::max<std::size_t>(bytes, 1));
  }
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
  if (!spread_by_atoms_) {
    spread_by_points(x, q, n, m);
  } else {
    // The fixed-point mesh is cleared once; after that each conversion clears what it reads.
    if (!cleared_) NBKIT_CUDA_CHECK(cudaMemsetAsync(fixed_.data(), 0, reals * sizeof(unsigned long long), stream_));
    cleared_ = true;
    spread_by_atoms(x, q, n, m);
  }
  mark(1);
  check_cufft(cufftExecD2Z(forward_, mesh_.data(), spectrum_.data()), "the forward FFT");
  mark(2);
  auto by_order = [&](auto kernel4, auto kernel5, auto kernel6, auto&&... args) {
    if (n == 0) return;
    if (order_ == 4) kernel4<<<blocks(n), kThreads, 0, stream_>>>(args...);
    else if (order_ == 5) kernel5<<<blocks(n), kThreads, 0, stream_>>>(args...);
    else kernel6<<<blocks(n), kThreads, 0, stream_>>>(args...);
    NBKIT_CUDA_CHECK_LAUNCH();
  };
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

void PmeGpu::spread_by_atoms(const V3* x, const double* q, int n, const Mesh& m) {
  // Order lanes an atom, 32 / Order atoms a warp.
  const std::int64_t reals = static_cast<std::int64_t>(grid_[0]) * grid_[1] * grid_[2];
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
}

void PmeGpu::spread_by_points(const V3* x, const double* q, int n, const Mesh& m) {
  if (n > atoms_)
    throw Error("PME on the GPU: " + std::to_string(n) + " atoms, the mesh was made for " + std::to_string(atoms_));
  const Bricks b{{bricks_[0], bricks_[1], bricks_[2]}};
  const std::int64_t bricks = static_cast<std::int64_t>(b.count[0]) * b.count[1] * b.count[2];
  NBKIT_CUDA_CHECK(cudaMemsetAsync(brick_count_.data(), 0, (bricks + 1) * sizeof(int), stream_));
  if (n > 0) {
    bin_by_brick<<<blocks(n), kThreads, 0, stream_>>>(n, x, m, b, atom_brick_.data(), atom_rank_.data(),
                                                      brick_count_.data());
    NBKIT_CUDA_CHECK_LAUNCH();
  }
  std::size_t bytes = scan_scratch_.size();
  NBKIT_CUDA_CHECK(cuda::exclusive_sum(scan_scratch_.data(), bytes, brick_count_.data(), brick_start_.data(),
                                       static_cast<int>(bricks + 1), stream_));
  if (n > 0) {
    place_by_brick<<<blocks(n), kThreads, 0, stream_>>>(n, atom_brick_.data(), atom_rank_.data(),
                                                        brick_start_.data(), by_brick_.data());
    NBKIT_CUDA_CHECK_LAUNCH();
  }
  const auto launch = [&](auto kernel) {
    kernel<<<static_cast<unsigned>(bricks), kBrickPoints, 0, stream_>>>(x, q, m, b, brick_start_.data(),
                                                                        by_brick_.data(), scale_, 1 / scale_,
                                                                        mesh_.data());
    NBKIT_CUDA_CHECK_LAUNCH();
  };
  if (order_ == 4) launch(spread_by_point<4>);
  else if (order_ == 5) launch(spread_by_point<5>);
  else launch(spread_by_point<6>);
}

std::array<double, 5> PmeGpu::phase_seconds() const {
  std::array<double, 5> out{};
  if (!events_) return out;
  (*events_)[5].synchronize();
  for (std::size_t k = 0; k < 5; ++k) out[k] = (*events_)[k + 1].seconds_since((*events_)[k]);
  return out;
}

}  // namespace nbkit::md
