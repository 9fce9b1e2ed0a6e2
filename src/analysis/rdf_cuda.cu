// g(r) on the GPUs (rdf_gpus.hpp). Per frame and GPU: the groups' float32 coordinates copied in
// (gathered on the host into page-locked memory, one copy), each atom placed in its cell
// (place_in_cell of rdf_pairs-inl.hpp, the host's arithmetic without fused multiply-adds), a
// stable radix sort by cell (so within a cell the group's order: the host's sort, and the same
// order on every GPU, which split A by position in it), the cells' starts by a scan, then the
// pair kernel: one thread per group-A atom and per column of three neighbouring cells (9 per
// atom: many more threads than atoms, so a 33,000-atom group fills an H100), candidates screened
// and binned in float32 where float32 cannot be wrong, else by the float64 tests of
// rdf_pairs-inl.hpp, a block's counts in a shared-memory histogram added into the GPU's 64-bit
// one at the end (Levine, Stone and Kohlmeyer 2011, section 3: per-block histograms merged
// once). Integer counts, so the result does not depend on the order threads finish in, nor on
// how A is split among GPUs. The frame's counts come back into page-locked memory; the host
// collects them while the next frame is read.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "analysis/rdf_gpus.hpp"
#include "cuda/check.hpp"
#include "cuda/device_buffer.hpp"
#include "cuda/pinned_buffer.hpp"
#include "cuda/primitives.hpp"
#include "cuda/stream.hpp"
#include "nbkit/core/backend.hpp"
#include "nbkit/core/error.hpp"

namespace nbkit::analysis::detail {

namespace {

constexpr int kThreads = 128;
// Shared histograms while a block's counts fit 32 bits (kThreads atoms, each paired with at most
// every B atom) and the bins fit the 48 KiB a block has without asking for more; else each pair
// adds to the GPU's histogram.
constexpr int kMostSharedBins = 12288;

int blocks_for(std::int64_t n, int threads = 256) { return static_cast<int>((n + threads - 1) / threads); }

// A group's atoms sorted by cell on one GPU: wrapped positions, flat cells, atom indices and
// residues or molecules (group: empty without exclusions).
struct SortedGroup {
  std::int64_t n = 0;
  cuda::DeviceBuffer<std::int32_t> atom_list, group_list;  // the group's atoms and their groups, in its order
  cuda::DeviceBuffer<float> position;                      // 3 n: x..., y..., z...
  cuda::DeviceBuffer<double> wrapped;                      // 3 n, in the group's order
  cuda::DeviceBuffer<std::int32_t> key, sorted_key, order, sorted_order;
  cuda::DeviceBuffer<std::int32_t> count, start;  // cells + 1
  cuda::DeviceBuffer<double> x, y, z;             // sorted
  cuda::DeviceBuffer<std::int32_t> cell, atom, group;
  cuda::DeviceBuffer<float4> packed;              // sorted: x, y, z in float32 and the atom's index (the screen's)
};

// Each atom's flat cell (the sort key), its wrapped position, and the cells' atom counts.
__global__ void place_atoms(PairGrid grid, std::int64_t n, const float* __restrict__ position,
                            std::int32_t* __restrict__ key, std::int32_t* __restrict__ order,
                            double* __restrict__ wrapped, std::int32_t* __restrict__ count) {
  const std::int64_t j = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (j >= n) return;
  double w[3];
  const int c = place_in_cell(grid, position[j], position[n + j], position[2 * n + j], w);
  key[j] = c;
  order[j] = static_cast<std::int32_t>(j);
  wrapped[j] = w[0], wrapped[n + j] = w[1], wrapped[2 * n + j] = w[2];
  atomicAdd(&count[c], 1);
}

// The sorted arrays: slot s holds the group's atom order[s].
__global__ void gather_sorted(std::int64_t n, const std::int32_t* __restrict__ order,
                              const std::int32_t* __restrict__ sorted_key, const double* __restrict__ wrapped,
                              const std::int32_t* __restrict__ atom_list, const std::int32_t* __restrict__ group_list,
                              double* __restrict__ x, double* __restrict__ y, double* __restrict__ z,
                              std::int32_t* __restrict__ cell, std::int32_t* __restrict__ atom,
                              std::int32_t* __restrict__ group, float4* __restrict__ packed) {
  const std::int64_t s = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (s >= n) return;
  const std::int32_t j = order[s];
  x[s] = wrapped[j], y[s] = wrapped[n + j], z[s] = wrapped[2 * n + j];
  cell[s] = sorted_key[s];
  atom[s] = atom_list[j];
  if (group_list) group[s] = group_list[j];
  packed[s] = make_float4(static_cast<float>(x[s]), static_cast<float>(y[s]), static_cast<float>(z[s]),
                          __int_as_float(atom_list[j]));
}

// How far float32 may take a pair from where float64 puts it: a pair passed over by the screen
// is beyond rmax in float64, and a pair binned in float32 is in the bin float64 puts it in.
// Coordinates of size up to `reach` round to float32 within reach 2^-24 each, so a difference
// is within twice that plus its own rounding (the error vector at most sqrt(3) 2 reach 2^-24
// long); the sum of squares and its root add a few units of float32's last place of r, and the
// edges rounded to float32 one more of rmax. 16 (reach + rmax) 2^-24 covers all of it, with
// room for the comparisons' own rounding.
struct FloatScreen {
  float rmax2;  // (rmax + slack)^2, rounded up: r2 beyond it is beyond rmax
  float slack;  // twice the most r in float32 and an edge in float32 may be off together
  float rmin, scale;
};

FloatScreen float_screen(const PairGrid& grid, const BinRule& rule) {
  FloatScreen f;
  const double slack = 16 * (grid.reach + rule.rmax) * 0x1p-24;
  const double bound = (rule.rmax + slack) * (rule.rmax + slack) * (1 + 0x1p-20);
  f.rmax2 = static_cast<float>(bound);
  if (static_cast<double>(f.rmax2) < bound) f.rmax2 = std::nextafter(f.rmax2, INFINITY);
  f.slack = static_cast<float>(2 * slack);
  f.rmin = static_cast<float>(rule.rmin), f.scale = static_cast<float>(rule.scale);
  return f;
}

// Queries [first, last) of sorted A against B: blockIdx.y picks the column (ox, oy) of three
// neighbouring cells (oz = -1, 0, 1) each thread visits. Each candidate is screened in float32
// (one 16-byte load: position and atom index), which leaves about one in seven (rmax 15 A: the
// sphere in 27 cells of rmax); those are binned in float32 where the distance is farther than
// float32's error from both edges of its bin (all but a fraction of a percent of them at 0.1 A
// bins), and the rest in float64 exactly as the host does (rdf_pairs-inl.hpp). So the counts
// are the host's, and a warp's step costs little more when one of its lanes has a pair in
// range (with the float64 distance, root and bin on that path a step took 70 instructions,
// measured by Nsight Compute on an H100; a warp queue for them did not help).
template <bool kExclude>
__global__ void count_pairs(PairGrid grid, BinRule rule, FloatScreen screen, const float4* __restrict__ b_packed,
                            const float* __restrict__ edges_f, const double* __restrict__ ax,
                            const double* __restrict__ ay, const double* __restrict__ az,
                            const std::int32_t* __restrict__ a_cell, const std::int32_t* __restrict__ a_atom,
                            const std::int32_t* __restrict__ a_group, std::int64_t first, std::int64_t last,
                            bool shared_bins, unsigned long long* __restrict__ histogram,
                            unsigned long long* __restrict__ distances) {
  extern __shared__ unsigned int local[];
  if (shared_bins) {
    for (int k = threadIdx.x; k < rule.bins; k += blockDim.x) local[k] = 0;
    __syncthreads();
  }
  const auto add = [&](int k) {
    if (shared_bins)
      atomicAdd(&local[k], 1u);
    else
      atomicAdd(&histogram[k], 1ull);
  };
  const std::int64_t p = first + static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  std::uint64_t tested = 0;
  if (p < last) {
    const double x[3] = {ax[p], ay[p], az[p]};
    int c[3];
    cell_coordinates(grid, a_cell[p], c);
    const std::int32_t atom = a_atom[p], group = kExclude ? a_group[p] : -1;
    for (int oz = -1; oz <= 1; ++oz) {
      const int o[3] = {static_cast<int>(blockIdx.y) / 3 - 1, static_cast<int>(blockIdx.y) % 3 - 1, oz};
      double origin[3];
      const int f = neighbour_cell(grid, x, c, o, origin);
      if (f < 0) continue;
      const float fx = static_cast<float>(origin[0]), fy = static_cast<float>(origin[1]), fz = static_cast<float>(origin[2]);
      const std::int32_t end = grid.start[f + 1];
      std::uint32_t in_cell = 0;
      for (std::int32_t s = grid.start[f]; s < end; ++s) {
        const float4 b = b_packed[s];
        if (__float_as_int(b.w) == atom || (kExclude && grid.group[s] == group)) continue;
        ++in_cell;
        const float dx = b.x - fx, dy = b.y - fy, dz = b.z - fz;
        const float r2 = dx * dx + dy * dy + dz * dz;
        if (r2 > screen.rmax2) continue;
        const float r = sqrtf(r2);
        const int k = min(max(static_cast<int>((r - screen.rmin) * screen.scale), 0), rule.bins - 1);
        if (r - screen.slack >= edges_f[k] && r + screen.slack < edges_f[k + 1]) {
          add(k);
        } else {  // near an edge of its bin, or out of range: float64, as the host
          const double d2 = squared_distance(grid, s, origin);
          if (!maybe_in_range(d2, rule)) continue;
          const int exact = bin_of_squared(d2, rule);
          if (exact >= 0) add(exact);
        }
      }
      tested += in_cell;
    }
  }
  // One atomic a warp for the distances tested.
  for (int offset = 16; offset > 0; offset /= 2) tested += __shfl_down_sync(0xffffffffu, tested, offset);
  if ((threadIdx.x & 31u) == 0 && tested) atomicAdd(distances, static_cast<unsigned long long>(tested));
  if (shared_bins) {
    __syncthreads();
    for (int k = threadIdx.x; k < rule.bins; k += blockDim.x)
      if (local[k]) atomicAdd(&histogram[k], static_cast<unsigned long long>(local[k]));
  }
}

template <class T>
void ensure(cuda::DeviceBuffer<T>& buffer, std::size_t count) {
  if (buffer.size() < count) buffer = cuda::DeviceBuffer<T>(std::max<std::size_t>(count, buffer.size() * 3 / 2));
}

}  // namespace

struct RdfGpus::State {
  struct Device {
    int index = 0;
    std::string name;
    cuda::Stream stream;
    cuda::DeviceBuffer<double> edges;
    cuda::DeviceBuffer<float> edges_f;  // rounded to float32: the float32 binning's
    SortedGroup b, a;  // a: unused when A is B
    cuda::DeviceBuffer<unsigned long long> histogram;  // bins, then the distances tested
    cuda::DeviceBuffer<unsigned char> scratch;         // CUB's
    explicit Device(const GpuInfo& gpu) : index(gpu.index), name(gpu.name) {}
  };
  std::vector<std::unique_ptr<Device>> devices;
  int bins = 0;
  bool a_is_b = false, groups = false;
  std::vector<std::int32_t> a, b;                    // the groups' atoms, for the gather
  cuda::PinnedBuffer<float> positions;               // 3 nb, then 3 na (unless A is B)
  cuda::PinnedBuffer<unsigned long long> counts;     // per GPU: bins + 1
  bool in_flight = false;
};

RdfGpus::RdfGpus(const std::vector<int>& gpus, const std::vector<double>& edges, const std::vector<std::int32_t>& a,
                 const std::vector<std::int32_t>& b, const std::vector<std::int32_t>& group)
    : state_(std::make_unique<State>()) {
  State& s = *state_;
  int previous = 0;
  NBKIT_CUDA_CHECK(cudaGetDevice(&previous));
  s.bins = static_cast<int>(edges.size()) - 1;
  s.a_is_b = a == b;
  s.groups = !group.empty();
  s.a = a, s.b = b;
  const std::size_t nb = b.size(), na = s.a_is_b ? 0 : a.size();
  s.positions = cuda::PinnedBuffer<float>(3 * (nb + na));
  const std::vector<float> edges_f(edges.begin(), edges.end());
  for (const GpuInfo& gpu : resolve_gpus(gpus)) {
    NBKIT_CUDA_CHECK(cudaSetDevice(gpu.index));
    auto d = std::make_unique<State::Device>(gpu);
    d->edges = cuda::DeviceBuffer<double>(edges.size());
    d->edges.upload(edges.data(), edges.size(), d->stream);
    d->edges_f = cuda::DeviceBuffer<float>(edges.size());
    d->edges_f.upload(edges_f.data(), edges.size(), d->stream);
    d->histogram = cuda::DeviceBuffer<unsigned long long>(s.bins + 1);
    for (SortedGroup* g : {&d->b, &d->a}) {
      const std::vector<std::int32_t>& atoms = g == &d->b ? b : a;
      if (g == &d->a && s.a_is_b) continue;
      g->n = static_cast<std::int64_t>(atoms.size());
      std::vector<std::int32_t> groups(s.groups ? atoms.size() : 0);
      for (std::size_t j = 0; j < groups.size(); ++j) groups[j] = group[atoms[j]];
      g->atom_list = cuda::DeviceBuffer<std::int32_t>(atoms.size());
      g->atom_list.upload(atoms.data(), atoms.size(), d->stream);
      if (s.groups) {
        g->group_list = cuda::DeviceBuffer<std::int32_t>(groups.size());
        g->group_list.upload(groups.data(), groups.size(), d->stream);
        g->group = cuda::DeviceBuffer<std::int32_t>(atoms.size());
      }
      g->position = cuda::DeviceBuffer<float>(3 * atoms.size());
      g->wrapped = cuda::DeviceBuffer<double>(3 * atoms.size());
      for (auto* v : {&g->key, &g->sorted_key, &g->order, &g->sorted_order, &g->cell, &g->atom})
        *v = cuda::DeviceBuffer<std::int32_t>(atoms.size());
      for (auto* v : {&g->x, &g->y, &g->z}) *v = cuda::DeviceBuffer<double>(atoms.size());
      g->packed = cuda::DeviceBuffer<float4>(atoms.size());
      NBKIT_CUDA_CHECK(cudaStreamSynchronize(d->stream));  // `groups` is a local
    }
    s.devices.push_back(std::move(d));
  }
  s.counts = cuda::PinnedBuffer<unsigned long long>(s.devices.size() * (s.bins + 1));
  cudaSetDevice(previous);
}

RdfGpus::~RdfGpus() {
  if (!state_) return;
  for (auto& d : state_->devices) {  // each buffer freed on its own device, after its last work
    cudaSetDevice(d->index);
    cudaStreamSynchronize(d->stream);
    d.reset();
  }
}

std::string RdfGpus::detail() const {
  const auto& d = state_->devices;
  return d.empty() ? "" : d.front()->name + " x" + std::to_string(d.size());
}

namespace {

// Sorts one group of the frame (its float32 coordinates already in g.position) into the grid's cells.
void sort_group(SortedGroup& g, const PairGrid& grid, cuda::DeviceBuffer<unsigned char>& scratch, cudaStream_t stream) {
  const int cells = grid.n[0] * grid.n[1] * grid.n[2];
  ensure(g.count, cells + 1), ensure(g.start, cells + 1);
  NBKIT_CUDA_CHECK(cudaMemsetAsync(g.count.data(), 0, sizeof(std::int32_t) * (cells + 1), stream));
  place_atoms<<<blocks_for(g.n), 256, 0, stream>>>(grid, g.n, g.position.data(), g.key.data(), g.order.data(),
                                                   g.wrapped.data(), g.count.data());
  NBKIT_CUDA_CHECK_LAUNCH();
  int bits = 1;
  while ((1 << bits) < cells) ++bits;
  std::size_t sort_bytes = 0, scan_bytes = 0;
  NBKIT_CUDA_CHECK(cuda::sort_pairs(nullptr, sort_bytes, g.key.data(), g.sorted_key.data(), g.order.data(),
                                    g.sorted_order.data(), g.n, 0, bits, stream));
  NBKIT_CUDA_CHECK(cuda::exclusive_sum(nullptr, scan_bytes, g.count.data(), g.start.data(), cells + 1, stream));
  ensure(scratch, std::max(sort_bytes, scan_bytes));
  sort_bytes = scan_bytes = scratch.size();
  // Stable: atoms of one cell keep the group's order, as the host's counting sort keeps it.
  NBKIT_CUDA_CHECK(cuda::sort_pairs(scratch.data(), sort_bytes, g.key.data(), g.sorted_key.data(), g.order.data(),
                                    g.sorted_order.data(), g.n, 0, bits, stream));
  NBKIT_CUDA_CHECK(
      cuda::exclusive_sum(scratch.data(), scan_bytes, g.count.data(), g.start.data(), cells + 1, stream));
  gather_sorted<<<blocks_for(g.n), 256, 0, stream>>>(
      g.n, g.sorted_order.data(), g.sorted_key.data(), g.wrapped.data(), g.atom_list.data(),
      g.group_list.size() ? g.group_list.data() : nullptr, g.x.data(), g.y.data(), g.z.data(), g.cell.data(),
      g.atom.data(), g.group.size() ? g.group.data() : nullptr, g.packed.data());
  NBKIT_CUDA_CHECK_LAUNCH();
}

// A group's coordinates, gathered into page-locked memory as x..., y..., z....
void gather(const std::vector<std::int32_t>& atoms, const float* x, const float* y, const float* z, float* out) {
  const std::size_t n = atoms.size();
  for (std::size_t j = 0; j < n; ++j) {
    const std::int32_t i = atoms[j];
    out[j] = x[i], out[n + j] = y[i], out[2 * n + j] = z[i];
  }
}

}  // namespace

void RdfGpus::submit(const float* x, const float* y, const float* z, const PairGrid& layout, const BinRule& rule) {
  State& s = *state_;
  if (s.in_flight) throw Error("g(r): a frame was submitted to the GPUs before the last one was collected");
  int previous = 0;
  NBKIT_CUDA_CHECK(cudaGetDevice(&previous));
  const std::size_t nb = s.b.size();
  gather(s.b, x, y, z, s.positions.data());
  if (!s.a_is_b) gather(s.a, x, y, z, s.positions.data() + 3 * nb);
  const std::int64_t devices = static_cast<std::int64_t>(s.devices.size());
  const bool shared_bins = rule.bins <= kMostSharedBins && static_cast<double>(kThreads) * nb < 4.0e9;
  const FloatScreen screen = float_screen(layout, rule);
  for (std::int64_t n = 0; n < devices; ++n) {
    State::Device& d = *s.devices[n];
    NBKIT_CUDA_CHECK(cudaSetDevice(d.index));
    d.b.position.upload(s.positions.data(), 3 * nb, d.stream);
    sort_group(d.b, layout, d.scratch, d.stream);
    if (!s.a_is_b) {
      d.a.position.upload(s.positions.data() + 3 * nb, 3 * d.a.n, d.stream);
      sort_group(d.a, layout, d.scratch, d.stream);
    }
    const SortedGroup& a = s.a_is_b ? d.b : d.a;
    NBKIT_CUDA_CHECK(cudaMemsetAsync(d.histogram.data(), 0, sizeof(unsigned long long) * (s.bins + 1), d.stream));
    // Group A in contiguous parts of its cell order, one per GPU; every GPU has all of B.
    const std::int64_t first = a.n * n / devices, last = a.n * (n + 1) / devices;
    if (last > first) {
      PairGrid grid = layout;
      grid.start = d.b.start.data(), grid.x = d.b.x.data(), grid.y = d.b.y.data(), grid.z = d.b.z.data();
      grid.atom = d.b.atom.data();
      grid.group = s.groups ? d.b.group.data() : nullptr;
      BinRule device_rule = rule;
      device_rule.edges = d.edges.data();
      const dim3 blocks(static_cast<unsigned>(blocks_for(last - first, kThreads)), 9);
      const auto kernel = s.groups ? count_pairs<true> : count_pairs<false>;
      kernel<<<blocks, kThreads, shared_bins ? sizeof(unsigned int) * rule.bins : 0, d.stream>>>(
          grid, device_rule, screen, d.b.packed.data(), d.edges_f.data(), a.x.data(), a.y.data(), a.z.data(),
          a.cell.data(), a.atom.data(), s.groups ? a.group.data() : nullptr, first, last, shared_bins,
          d.histogram.data(), d.histogram.data() + s.bins);
      NBKIT_CUDA_CHECK_LAUNCH();
    }
    d.histogram.download(s.counts.data() + n * (s.bins + 1), s.bins + 1, d.stream);
  }
  s.in_flight = true;
  cudaSetDevice(previous);
}

bool RdfGpus::collect(std::uint64_t* histogram, std::uint64_t* distances) {
  State& s = *state_;
  if (!s.in_flight) return false;
  s.in_flight = false;
  int previous = 0;
  NBKIT_CUDA_CHECK(cudaGetDevice(&previous));
  // The frame's counts, GPU by GPU in order (integers: the order changes nothing but is fixed).
  for (std::size_t n = 0; n < s.devices.size(); ++n) {
    State::Device& d = *s.devices[n];
    NBKIT_CUDA_CHECK(cudaSetDevice(d.index));
    NBKIT_CUDA_CHECK(cudaStreamSynchronize(d.stream));
    const unsigned long long* part = s.counts.data() + n * (s.bins + 1);
    for (int k = 0; k < s.bins; ++k) histogram[k] += part[k];
    *distances += part[s.bins];
  }
  cudaSetDevice(previous);
  return true;
}

}  // namespace nbkit::analysis::detail
