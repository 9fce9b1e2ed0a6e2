// The GPU-resident map of ion placement (ion_map.hpp). One thread per lattice point for the
// updates; the lowest energy by a two-pass block reduction that keeps the lowest index on
// ties, so the choice is the host loop's and the same on every run.
#include <cfloat>
#include <cmath>

#include "cuda/check.hpp"
#include "cuda/device_buffer.hpp"
#include "cuda/stream.hpp"
#include "maps/ion_map.hpp"
#include "maps/laws.hpp"

namespace nbkit::maps {

namespace {

constexpr int kThreads = 256;

struct Grid {
  double origin[3], spacing;
  long long dims[3];
  long long size;
  __device__ void point(long long p, double* x) const {
    const long long i = p / (dims[1] * dims[2]), j = (p / dims[2]) % dims[1], k = p % dims[2];
    x[0] = origin[0] + i * spacing, x[1] = origin[1] + j * spacing, x[2] = origin[2] + k * spacing;
  }
};

template <class Law>
__global__ void add_atom_kernel(Grid grid, double ax, double ay, double az, double coefficient, Law law,
                                double prefactor, double singular2, double* __restrict__ values) {
  const long long p = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (p >= grid.size) return;
  double x[3];
  grid.point(p, x);
  const double dx = x[0] - ax, dy = x[1] - ay, dz = x[2] - az;
  const double r2 = dx * dx + dy * dy + dz * dz;
  if (r2 < singular2) return;
  values[p] += prefactor * law_term(law, ScalarMath<double>{}, coefficient, r2, 1 / sqrt(r2));
}

__global__ void exclude_kernel(Grid grid, double cx, double cy, double cz, double radius2, long long index,
                               char* __restrict__ excluded) {
  const long long p = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (p >= grid.size) return;
  double x[3];
  grid.point(p, x);
  const double dx = x[0] - cx, dy = x[1] - cy, dz = x[2] - cz;
  if (dx * dx + dy * dy + dz * dz < radius2 || p == index) excluded[p] = 1;
}

struct Best {
  double energy;
  long long index;
};

__device__ inline Best better(Best a, Best b) {
  if (b.index < 0) return a;
  if (a.index < 0) return b;
  if (b.energy < a.energy || (b.energy == a.energy && b.index < a.index)) return b;
  return a;
}

// Pass 1: each block's best over a grid-stride range; pass 2 (one block): the best of those.
__global__ void lowest_kernel(long long size, const double* __restrict__ values, const char* __restrict__ excluded,
                              double charge, Best* __restrict__ out) {
  __shared__ Best shared[kThreads];
  Best best{0, -1};
  for (long long p = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; p < size;
       p += static_cast<long long>(gridDim.x) * blockDim.x)
    if (!excluded[p]) best = better(best, Best{charge * values[p], p});
  shared[threadIdx.x] = best;
  __syncthreads();
  for (int half = blockDim.x / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) shared[threadIdx.x] = better(shared[threadIdx.x], shared[threadIdx.x + half]);
    __syncthreads();
  }
  if (threadIdx.x == 0) out[blockIdx.x] = shared[0];
}

__global__ void best_of_blocks(int count, const Best* __restrict__ in, Best* __restrict__ out) {
  __shared__ Best shared[kThreads];
  Best best{0, -1};
  for (int b = threadIdx.x; b < count; b += blockDim.x) best = better(best, in[b]);
  shared[threadIdx.x] = best;
  __syncthreads();
  for (int half = blockDim.x / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) shared[threadIdx.x] = better(shared[threadIdx.x], shared[threadIdx.x + half]);
    __syncthreads();
  }
  if (threadIdx.x == 0) *out = shared[0];
}

constexpr int kReductionBlocks = 512;

}  // namespace

struct GpuIonMap::State {
  int gpu;
  cuda::Stream stream;
  Grid grid{};
  cuda::DeviceBuffer<double> values;
  cuda::DeviceBuffer<char> excluded;
  cuda::DeviceBuffer<Best> partial, best;
  explicit State(int device) : gpu(device) {}
  int blocks() const { return static_cast<int>((grid.size + kThreads - 1) / kThreads); }
};

namespace {
int current_device(int gpu) {  // makes `gpu` current before the stream is created on it
  NBKIT_CUDA_CHECK(cudaSetDevice(gpu));
  return gpu;
}
}  // namespace

GpuIonMap::GpuIonMap(int gpu, const Lattice& lattice, const std::vector<double>& values,
                     const std::vector<char>& excluded)
    : state_(std::make_unique<State>(current_device(gpu))) {
  State& s = *state_;
  for (int a = 0; a < 3; ++a) s.grid.origin[a] = lattice.origin[a], s.grid.dims[a] = lattice.dims[a];
  s.grid.spacing = lattice.spacing;
  s.grid.size = lattice.size();
  s.values = cuda::DeviceBuffer<double>(values.size());
  s.excluded = cuda::DeviceBuffer<char>(excluded.size());
  s.partial = cuda::DeviceBuffer<Best>(kReductionBlocks);
  s.best = cuda::DeviceBuffer<Best>(1);
  s.values.upload(values.data(), values.size(), s.stream);
  s.excluded.upload(excluded.data(), excluded.size(), s.stream);
  NBKIT_CUDA_CHECK(cudaStreamSynchronize(s.stream));
}

GpuIonMap::~GpuIonMap() {
  if (state_) cudaSetDevice(state_->gpu);
}

std::int64_t GpuIonMap::lowest_energy_point(double charge, double* potential) {
  State& s = *state_;
  NBKIT_CUDA_CHECK(cudaSetDevice(s.gpu));
  lowest_kernel<<<kReductionBlocks, kThreads, 0, s.stream>>>(s.grid.size, s.values.data(), s.excluded.data(), charge,
                                                               s.partial.data());
  NBKIT_CUDA_CHECK_LAUNCH();
  best_of_blocks<<<1, kThreads, 0, s.stream>>>(kReductionBlocks, s.partial.data(), s.best.data());
  NBKIT_CUDA_CHECK_LAUNCH();
  Best best{};
  s.best.download(&best, 1, s.stream);
  NBKIT_CUDA_CHECK(cudaStreamSynchronize(s.stream));
  if (best.index < 0) return -1;
  double value = 0;
  NBKIT_CUDA_CHECK(cudaMemcpyAsync(&value, s.values.data() + best.index, sizeof(double), cudaMemcpyDeviceToHost, s.stream));
  NBKIT_CUDA_CHECK(cudaStreamSynchronize(s.stream));
  *potential = value;
  return best.index;
}

void GpuIonMap::add_atom(Vec3 position, double charge, double radius, const AnyLaw& law, double prefactor) {
  State& s = *state_;
  NBKIT_CUDA_CHECK(cudaSetDevice(s.gpu));
  std::visit(
      [&](const auto& the_law) {
        add_atom_kernel<<<s.blocks(), kThreads, 0, s.stream>>>(s.grid, position.x, position.y, position.z,
                                                               the_law.coefficient(charge, radius), the_law, prefactor,
                                                               singular_distance * singular_distance, s.values.data());
      },
      law);
  NBKIT_CUDA_CHECK_LAUNCH();
}

void GpuIonMap::exclude(Vec3 center, double radius, std::int64_t index) {
  State& s = *state_;
  NBKIT_CUDA_CHECK(cudaSetDevice(s.gpu));
  exclude_kernel<<<s.blocks(), kThreads, 0, s.stream>>>(s.grid, center.x, center.y, center.z, radius * radius, index,
                                                        s.excluded.data());
  NBKIT_CUDA_CHECK_LAUNCH();
}

std::vector<double> GpuIonMap::values() const {
  State& s = *state_;
  NBKIT_CUDA_CHECK(cudaSetDevice(s.gpu));
  std::vector<double> out(s.values.size());
  s.values.download(out.data(), out.size(), s.stream);
  NBKIT_CUDA_CHECK(cudaStreamSynchronize(s.stream));
  return out;
}

}  // namespace nbkit::maps
