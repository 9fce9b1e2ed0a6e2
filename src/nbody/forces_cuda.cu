// All-pairs gravity on NVIDIA GPUs.
//
// The kernel starts from the design the slides build step by step (seed 002; Nyland, Harris,
// Prins, GPU Gems 3 ch. 31): bodies as {x, y, z, m} records, each block staging tiles of
// bodies j in shared memory, every thread summing a tile for its bodies i with the hardware
// reciprocal square root, and no branch in the loop (softening keeps r^2 >= eps^2 > 0, and a
// body's pair with itself adds exactly zero acceleration: its separation is zero). Past it,
// for Hopper, where every instruction takes an issue slot the FP32 pipe could use:
//   - register blocking: a thread holds kBodiesPerThread bodies i, so one shared-memory load
//     of a body j serves four interactions (the sample spends one load on each);
//   - bodies j split over gridDim.y blocks when there are too few bodies i to fill the GPU
//     (the sample runs N / 256 blocks: 64 at N = 16384, half an H100 idle); a second kernel
//     adds the splits' partial sums in a fixed order, so results are deterministic;
//   - float32 sums over one tile of 256 bodies, float64 across tiles and splits, so the
//     rounding error does not grow with N;
//   - potentials only when asked (diagnostics steps), the self pair masked in the tiles that
//     can hold it, which leaves the accelerations' arithmetic, and so their bits, unchanged;
//   - any N: the last tile is padded with massless bodies, never a rounding of N.
// Several GPUs split the bodies i (contiguous ranges), each holding every body j; one host
// thread drives them all through page-locked staging memory and asynchronous copies.
#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "cuda/check.hpp"
#include "cuda/device_buffer.hpp"
#include "cuda/fast_math.cuh"
#include "cuda/pinned_buffer.hpp"
#include "cuda/stream.hpp"
#include "nbkit/core/backend.hpp"
#include "nbkit/core/error.hpp"
#include "nbody/device_bodies.cuh"
#include "nbody/forces.hpp"
#include "nbody/gravity.hpp"

namespace nbkit::nbody {
namespace {

constexpr int kThreads = 256;                 // threads per block
constexpr int kBodiesPerThread = 4;           // bodies i per thread (register blocking)
constexpr int kBodiesPerBlock = kThreads * kBodiesPerThread;
constexpr int kTileLoads = 1;                 // bodies j each thread stages per tile
constexpr int kTile = kThreads * kTileLoads;  // bodies j per shared-memory tile
constexpr int kTileUnroll = 16;               // bodies j per trip of the tile loop
constexpr int kMinBlocksPerSm = 3;            // registers capped at 85: three blocks (24 warps) an SM
// Measured on an H100 (bench_nbody_cuda, N = 131072 and 1048576): 4 bodies a thread beat 6
// and 8 (registers); unrolling by 16 beat 8 (+3%) and 4 (+5%); 512-body tiles, blocks of 128
// or 512 threads, four or five blocks an SM (float64 sums moved to shared memory to fit) and
// loading the next tile into registers during this one's sums gained nothing or lost (-6%).
// What limits the kernel is issue: 12 FP32 instructions, an rsqrt and a quarter of a shared
// load an interaction, issued on 83% of cycles at unroll 8 (Nsight Compute; the rest mostly
// dispatch stalls between the FMA pipes and the MIO queue the rsqrts go through).
constexpr int kComponents = 4;                // ax, ay, az, potential
constexpr int kMaxSplits = 64;
constexpr int kLongestSplit = 256;            // tiles; shorter blocks where the split limits allow
constexpr std::size_t kMaxPartialBytes = std::size_t(1) << 30;  // partial sums of the j splits

template <class Real>
struct alignas(4 * sizeof(Real)) Body {
  Real x, y, z, m;
};

template <class Real>
__device__ __forceinline__ Real fused_multiply_add(Real a, Real b, Real c) {
  if constexpr (sizeof(Real) == 4) return __fmaf_rn(a, b, c);
  else return __fma_rn(a, b, c);
}

// One tile's sums for a thread's bodies i, in Real (float32 for single precision).
template <class Real>
struct TileSums {
  Real ax[kBodiesPerThread], ay[kBodiesPerThread], az[kBodiesPerThread], phi[kBodiesPerThread];
};

// Sums the kTile bodies j of `tile` for the bodies i. kMaskSelf: the tile can hold one of
// them; its own pair then adds nothing to the potential (body t's place in the tile is
// self_first + t kThreads, maybe out of range).
template <bool kPotential, bool kMaskSelf, class Real>
__device__ __forceinline__ void sum_tile(const Body<Real>* __restrict__ tile, const Body<Real> (&body)[kBodiesPerThread],
                                         Real eps2, int self_first, TileSums<Real>& sums) {
#pragma unroll kTileUnroll
  for (int k = 0; k < kTile; ++k) {
    const Body<Real> other = tile[k];  // the same address for every thread: a broadcast
#pragma unroll
    for (int t = 0; t < kBodiesPerThread; ++t) {
      const Real dx = other.x - body[t].x, dy = other.y - body[t].y, dz = other.z - body[t].z;
      const Real r2 = fused_multiply_add(dx, dx, fused_multiply_add(dy, dy, fused_multiply_add(dz, dz, eps2)));
      const Real inverse_distance = cuda::reciprocal_sqrt(r2);
      const Real s = gravity_acceleration_factor(other.m, inverse_distance);
      sums.ax[t] = fused_multiply_add(s, dx, sums.ax[t]);
      sums.ay[t] = fused_multiply_add(s, dy, sums.ay[t]);
      sums.az[t] = fused_multiply_add(s, dz, sums.az[t]);
      if constexpr (kPotential) {
        const Real mass = kMaskSelf && k - self_first == t * kThreads ? Real(0) : other.m;
        sums.phi[t] += gravity_potential_term(mass, inverse_distance);
      }
    }
  }
}

// Bodies i of this device: [i_begin, i_begin + i_count); block (x, y) takes kBodiesPerBlock of
// them against the bodies j of split y, [y j_per_split, (y + 1) j_per_split). Partial sums
// to partial[(y * kComponents + c) * i_count + i - i_begin], float64.
template <bool kPotential, class Real>
__global__ void __launch_bounds__(kThreads, sizeof(Real) == 4 ? kMinBlocksPerSm : 1)
    gravity_kernel(const Body<Real>* __restrict__ bodies, int n, int i_begin, int i_count, int j_per_split, Real eps2,
                   double* __restrict__ partial) {
  __shared__ Body<Real> tile[kTile];
  const int block_first = i_begin + static_cast<int>(blockIdx.x) * kBodiesPerBlock;
  const int i_end = i_begin + i_count;
  Body<Real> body[kBodiesPerThread];
  double ax[kBodiesPerThread], ay[kBodiesPerThread], az[kBodiesPerThread], phi[kBodiesPerThread];
#pragma unroll
  for (int t = 0; t < kBodiesPerThread; ++t) {
    const int i = block_first + t * kThreads + static_cast<int>(threadIdx.x);
    body[t] = i < i_end ? bodies[i] : Body<Real>{};  // beyond the end: computed, never stored
    ax[t] = ay[t] = az[t] = phi[t] = 0;
  }
  const int j_first = static_cast<int>(blockIdx.y) * j_per_split;
  const int j_last = min(n, j_first + j_per_split);
  for (int tile_first = j_first; tile_first < j_last; tile_first += kTile) {
#pragma unroll
    for (int load = 0; load < kTileLoads; ++load) {
      const int slot = load * kThreads + static_cast<int>(threadIdx.x), j = tile_first + slot;
      tile[slot] = j < j_last ? bodies[j] : Body<Real>{};  // massless padding
    }
    __syncthreads();
    TileSums<Real> sums;
#pragma unroll
    for (int t = 0; t < kBodiesPerThread; ++t) sums.ax[t] = sums.ay[t] = sums.az[t] = sums.phi[t] = 0;
    const int self_first = block_first + static_cast<int>(threadIdx.x) - tile_first;
    const bool may_hold_self = tile_first < block_first + kBodiesPerBlock && block_first < tile_first + kTile;
    if constexpr (kPotential) {
      if (may_hold_self) sum_tile<true, true>(tile, body, eps2, self_first, sums);
      else sum_tile<true, false>(tile, body, eps2, self_first, sums);
    } else {
      sum_tile<false, false>(tile, body, eps2, self_first, sums);
    }
#pragma unroll
    for (int t = 0; t < kBodiesPerThread; ++t) {
      ax[t] += static_cast<double>(sums.ax[t]);
      ay[t] += static_cast<double>(sums.ay[t]);
      az[t] += static_cast<double>(sums.az[t]);
      if constexpr (kPotential) phi[t] += static_cast<double>(sums.phi[t]);
    }
    __syncthreads();
  }
  const std::size_t split_base = static_cast<std::size_t>(blockIdx.y) * kComponents * i_count;
#pragma unroll
  for (int t = 0; t < kBodiesPerThread; ++t) {
    const int local = block_first - i_begin + t * kThreads + static_cast<int>(threadIdx.x);
    if (local >= i_count) continue;
    partial[split_base + local] = ax[t];
    partial[split_base + i_count + local] = ay[t];
    partial[split_base + 2 * static_cast<std::size_t>(i_count) + local] = az[t];
    if constexpr (kPotential) partial[split_base + 3 * static_cast<std::size_t>(i_count) + local] = phi[t];
  }
}

// out[c * i_count + i] = the splits' partial sums of component c, added in split order (the
// potential negated: phi_i = -sum m_j / r_ij).
__global__ void sum_splits(const double* __restrict__ partial, int splits, int i_count, int components,
                           double* __restrict__ out) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i >= i_count) return;
  for (int c = 0; c < components; ++c) {
    double sum = 0;
    for (int s = 0; s < splits; ++s) sum += partial[(static_cast<std::size_t>(s) * kComponents + c) * i_count + i];
    out[static_cast<std::size_t>(c) * i_count + i] = c == 3 ? -sum : sum;
  }
}

// The caller's bodies in GPU memory packed into the kernel's records; the first body whose
// position is not finite or whose mass is not positive and finite goes to *bad (atomicMin;
// INT_MAX: none).
template <class Real>
__global__ void pack_device_bodies(DeviceBodies b, Body<Real>* __restrict__ out, int* __restrict__ bad) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i >= b.n) return;
  double x, y, z, m;
  if (!load_device_body(b, i, x, y, z, m)) atomicMin(bad, i);
  out[i] = {static_cast<Real>(x), static_cast<Real>(y), static_cast<Real>(z), static_cast<Real>(m)};
}

// Resident blocks of the acceleration kernel on one SM (the potential kernel launches with
// the same split, so the accelerations' sums are the same whichever kernel ran).
template <class Real>
int blocks_per_multiprocessor() {
  int blocks = 0;
  NBKIT_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, gravity_kernel<false, Real>, kThreads, 0));
  return std::max(blocks, 1);
}

// How many ways to split the bodies j (tile-aligned): the count that fills the GPU's
// resident block slots most evenly over the waves of blocks (few bodies i: many splits; many
// bodies i: the few that even out the last wave), each split costing a little: one more
// float64 partial sum per body i to write and add (~21 / n of the kernel's time: 32 bytes
// at ~3 TB/s against n interactions at ~2e12/s), and one more block prologue.
int choose_splits(int i_count, int n, int resident_blocks) {
  const long long blocks_x = (i_count + kBodiesPerBlock - 1) / kBodiesPerBlock;
  const int tiles = (n + kTile - 1) / kTile;
  const std::size_t bytes_per_split = static_cast<std::size_t>(kComponents) * sizeof(double) * i_count;
  const int most = static_cast<int>(std::min<std::size_t>(
      {static_cast<std::size_t>(kMaxSplits), static_cast<std::size_t>(tiles),
       std::max<std::size_t>(1, kMaxPartialBytes / std::max<std::size_t>(bytes_per_split, 1))}));
  int best = 1;
  double best_cost = 1e300;
  for (int tiles_per_split = tiles; tiles_per_split >= 1; --tiles_per_split) {
    const int splits = (tiles + tiles_per_split - 1) / tiles_per_split;  // those with bodies in them
    if (splits > most) break;
    if (tiles_per_split > kLongestSplit && (tiles + kLongestSplit - 1) / kLongestSplit <= most) continue;
    const long long blocks = blocks_x * splits;
    const long long waves = (blocks + resident_blocks - 1) / resident_blocks;
    const double balance = static_cast<double>(blocks) / static_cast<double>(waves * resident_blocks);
    const double cost = 1 / balance + splits * (21.0 / n + 5e-4);
    if (cost < best_cost - 1e-12) best = tiles_per_split, best_cost = cost;
  }
  return best;  // tiles per split
}

}  // namespace

struct GpuForces::State {
  struct Device {
    int index = 0;
    std::string name;
    int resident_blocks32 = 0, resident_blocks64 = 0;
    int i_begin = 0, i_count = 0;
    cuda::DeviceBuffer<Body<float>> bodies32;
    cuda::DeviceBuffer<Body<double>> bodies64;
    cuda::DeviceBuffer<double> partial, out;
    cuda::DeviceBuffer<int> flags;  // device bodies: the first bad input and the first bad result
    std::unique_ptr<cuda::Stream> stream;
    std::unique_ptr<cuda::Event> start, stop;
    ~Device() { cudaSetDevice(index); }  // its buffers and stream are freed on their device next
  };
  std::vector<std::unique_ptr<Device>> devices;
  double softening = 0;
  bool double_precision = false;
  cuda::PinnedBuffer<Body<float>> staged32;
  cuda::PinnedBuffer<Body<double>> staged64;
  cuda::PinnedBuffer<double> results;
  double kernel_seconds = 0;
};

GpuForces::GpuForces(const std::vector<int>& gpus, double softening, bool double_precision)
    : state_(std::make_unique<State>()) {
  const std::vector<GpuInfo> chosen = resolve_gpus(gpus);
  state_->softening = softening;
  state_->double_precision = double_precision;
  for (const GpuInfo& gpu : chosen) {
    auto device = std::make_unique<State::Device>();
    device->index = gpu.index;
    device->name = gpu.name;
    NBKIT_CUDA_CHECK(cudaSetDevice(gpu.index));
    device->stream = std::make_unique<cuda::Stream>();
    device->start = std::make_unique<cuda::Event>();
    device->stop = std::make_unique<cuda::Event>();
    const int sms = gpu.multiprocessors;
    device->resident_blocks32 = sms * blocks_per_multiprocessor<float>();
    device->resident_blocks64 = sms * blocks_per_multiprocessor<double>();
    state_->devices.push_back(std::move(device));
  }
}

GpuForces::~GpuForces() = default;

namespace {

// Device `device`'s share of the bodies i against all n bodies j: the bodies copied from the
// host's staging buffer (`from_host`) or already packed on the device, the gravity kernel over
// the chosen splits and the fixed-order sum of the splits into device.out (component-major).
// On device.stream, between device.start and (recorded by the caller) device.stop.
void launch_gravity(GpuForces::State& s, GpuForces::State::Device& device, int n, bool with_potential,
                    const void* staged, bool from_host, bool split_as_one_gpu = false) {
  const bool dbl = s.double_precision;
  const std::size_t count = static_cast<std::size_t>(n);
  const cudaStream_t stream = *device.stream;
  const int j_per_split =
      choose_splits(split_as_one_gpu ? n : device.i_count, n, dbl ? device.resident_blocks64 : device.resident_blocks32) *
      kTile;
  const int used_splits = (n + j_per_split - 1) / j_per_split;
  const std::size_t partial_size = static_cast<std::size_t>(used_splits) * kComponents * device.i_count;
  if (device.partial.size() < partial_size) device.partial = cuda::DeviceBuffer<double>(partial_size);
  const std::size_t out_size = static_cast<std::size_t>(kComponents) * device.i_count;
  if (device.out.size() < out_size) device.out = cuda::DeviceBuffer<double>(out_size);
  const dim3 grid(static_cast<unsigned>((device.i_count + kBodiesPerBlock - 1) / kBodiesPerBlock),
                  static_cast<unsigned>(used_splits));
  auto launch = [&](auto real_zero, auto& device_bodies) {
    using Real = decltype(real_zero);
    if (from_host) {
      if (device_bodies.size() < count) device_bodies = cuda::DeviceBuffer<Body<Real>>(count);
      device_bodies.upload(static_cast<const Body<Real>*>(staged), count, stream);
    }
    const Real eps2 = static_cast<Real>(s.softening * s.softening);
    device.start->record(stream);
    if (with_potential)
      gravity_kernel<true, Real><<<grid, kThreads, 0, stream>>>(device_bodies.data(), n, device.i_begin,
                                                               device.i_count, j_per_split, eps2, device.partial.data());
    else
      gravity_kernel<false, Real><<<grid, kThreads, 0, stream>>>(device_bodies.data(), n, device.i_begin,
                                                                device.i_count, j_per_split, eps2, device.partial.data());
    NBKIT_CUDA_CHECK_LAUNCH();
  };
  if (dbl) launch(double{}, device.bodies64);
  else launch(float{}, device.bodies32);
  sum_splits<<<(device.i_count + 255) / 256, 256, 0, stream>>>(device.partial.data(), used_splits, device.i_count,
                                                               with_potential ? 4 : 3, device.out.data());
  NBKIT_CUDA_CHECK_LAUNCH();
}

}  // namespace

void GpuForces::compute(const Bodies& bodies, Accelerations& out, bool with_potential, Targets targets,
                        bool split_as_one_gpu) {
  State& s = *state_;
  const std::size_t count = bodies.size();
  const std::size_t first = std::min(targets.first, count), last = std::min(targets.last, count);
  out.resize(count);
  out.has_potential = with_potential;
  if (count == 0) return;
  if (count > static_cast<std::size_t>(INT_MAX / 2))
    throw Error("the GPU N-body path takes at most " + std::to_string(INT_MAX / 2) + " bodies, got " +
                std::to_string(count));
  const int n = static_cast<int>(count);
  const bool dbl = s.double_precision;
  // Stage the bodies once in page-locked memory; every device copies them from there.
  if (dbl && s.staged64.size() < count) s.staged64 = cuda::PinnedBuffer<Body<double>>(count);
  if (!dbl && s.staged32.size() < count) s.staged32 = cuda::PinnedBuffer<Body<float>>(count);
  for (std::size_t i = 0; i < count; ++i) {
    if (dbl) s.staged64[i] = {bodies.x[i], bodies.y[i], bodies.z[i], bodies.mass[i]};
    else s.staged32[i] = {static_cast<float>(bodies.x[i]), static_cast<float>(bodies.y[i]),
                          static_cast<float>(bodies.z[i]), static_cast<float>(bodies.mass[i])};
  }
  if (s.results.size() < count * kComponents) s.results = cuda::PinnedBuffer<double>(count * kComponents);
  const int components = with_potential ? 4 : 3;
  const std::size_t device_count = s.devices.size();
  const std::size_t share = last > first ? last - first : 0;
  for (std::size_t d = 0; d < device_count; ++d) {
    State::Device& device = *s.devices[d];
    device.i_begin = static_cast<int>(first + share * d / device_count);
    device.i_count = static_cast<int>(first + share * (d + 1) / device_count) - device.i_begin;
    if (device.i_count == 0) continue;
    NBKIT_CUDA_CHECK(cudaSetDevice(device.index));
    const cudaStream_t stream = *device.stream;
    launch_gravity(s, device, n, with_potential, dbl ? static_cast<const void*>(s.staged64.data())
                                                     : static_cast<const void*>(s.staged32.data()),
                   true, split_as_one_gpu);
    device.stop->record(stream);
    NBKIT_CUDA_CHECK(cudaMemcpyAsync(s.results.data() + static_cast<std::size_t>(kComponents) * device.i_begin,
                                     device.out.data(), sizeof(double) * components * device.i_count,
                                     cudaMemcpyDeviceToHost, stream));
  }
  s.kernel_seconds = 0;
  for (const auto& device : s.devices) {
    if (device->i_count == 0) continue;
    NBKIT_CUDA_CHECK(cudaSetDevice(device->index));
    NBKIT_CUDA_CHECK(cudaStreamSynchronize(*device->stream));
    s.kernel_seconds = std::max(s.kernel_seconds, device->stop->seconds_since(*device->start));
    const double* result = s.results.data() + static_cast<std::size_t>(kComponents) * device->i_begin;
    const std::size_t m = static_cast<std::size_t>(device->i_count), first = static_cast<std::size_t>(device->i_begin);
    std::copy(result, result + m, out.ax.begin() + first);
    std::copy(result + m, result + 2 * m, out.ay.begin() + first);
    std::copy(result + 2 * m, result + 3 * m, out.az.begin() + first);
    if (with_potential) std::copy(result + 3 * m, result + 4 * m, out.potential.begin() + first);
  }
}

void GpuForces::compute_on_device(const DeviceBodies& b) {
  State& s = *state_;
  if (s.devices.size() != 1 || s.devices.front()->index != b.device)
    throw Error("bodies in the memory of GPU " + std::to_string(b.device) + " run on that GPU alone: pick it with gpus=" +
                std::to_string(b.device) + " (this engine has " + description() + ")");
  if (b.n == 0) return;
  if (b.n > INT_MAX / 2)
    throw Error("the GPU N-body path takes at most " + std::to_string(INT_MAX / 2) + " bodies, got " + std::to_string(b.n));
  const int n = static_cast<int>(b.n);
  State::Device& device = *s.devices.front();
  NBKIT_CUDA_CHECK(cudaSetDevice(device.index));
  const cudaStream_t stream = *device.stream;
  wait_for_producer(b, stream);
  device.i_begin = 0, device.i_count = n;
  if (device.flags.size() < 2) device.flags = cuda::DeviceBuffer<int>(2);
  const int none[2] = {INT_MAX, INT_MAX};
  device.flags.upload(none, 2, stream);
  const int blocks = (n + 255) / 256;
  auto pack = [&](auto real_zero, auto& device_bodies) {
    using Real = decltype(real_zero);
    if (device_bodies.size() < static_cast<std::size_t>(n)) device_bodies = cuda::DeviceBuffer<Body<Real>>(n);
    pack_device_bodies<Real><<<blocks, 256, 0, stream>>>(b, device_bodies.data(), device.flags.data());
    NBKIT_CUDA_CHECK_LAUNCH();
  };
  if (s.double_precision) pack(double{}, device.bodies64);
  else pack(float{}, device.bodies32);
  const bool with_potential = b.potentials != nullptr;
  launch_gravity(s, device, n, with_potential, nullptr, false);
  scatter_results<false><<<blocks, 256, 0, stream>>>(n, nullptr, device.out.data(), b.accelerations, b.potentials,
                                                     device.flags.data() + 1);
  NBKIT_CUDA_CHECK_LAUNCH();
  device.stop->record(stream);
  int flags[2];
  device.flags.download(flags, 2, stream);
  NBKIT_CUDA_CHECK(cudaStreamSynchronize(stream));
  s.kernel_seconds = device.stop->seconds_since(*device.start);
  if (flags[0] != INT_MAX)
    throw Error("body " + std::to_string(flags[0] + 1) +
                ": its position is not finite or its mass is not a positive finite number");
  if (flags[1] != INT_MAX)
    throw Error("the acceleration of body " + std::to_string(flags[1] + 1) + " is not finite: the sums overflowed");
}

double GpuForces::last_kernel_seconds() const { return state_->kernel_seconds; }

std::string GpuForces::description() const {
  const auto& devices = state_->devices;
  bool same = true;
  for (const auto& device : devices) same = same && device->name == devices.front()->name;
  if (devices.size() == 1) return "GPU " + std::to_string(devices.front()->index) + " (" + devices.front()->name + ")";
  if (same) return std::to_string(devices.size()) + " x " + devices.front()->name;
  std::string names;
  for (const auto& device : devices) names += (names.empty() ? "" : " + ") + device->name;
  return names;
}

}  // namespace nbkit::nbody
