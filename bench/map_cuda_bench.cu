// Benchmark of GPU potential maps: atom-lattice evaluations per second of nbkit's CUDA
// path on 256x256x64 and 512x512x128 lattices at 0.5 A with 1k to 1M atoms, beside
//  - the ceiling: the special-function unit's rsqrt rate, measured by a microkernel here;
//  - the slides' simple kernel (one thread per point) and unroll-8-coalesced kernel
//    (seed 000, "DCS CUDA"; atoms in constant memory in 4000-atom chunks, one launch per
//    plane per chunk), written from the slides as baselines;
//  - several GPUs against one, where the machine has them.
//   bench_map_cuda [--json FILE] [--quick] [--only end-to-end[:LATTICE:ATOMS]]
// --only end-to-end: the small direct maps alone (1,000 and 10,000 atoms on both lattices,
// float32, median of 7 calls), kernels against the whole call (issue 24, item 4); with
// :256x256x64:10000, that row alone (for a profiler).
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cuda/check.hpp"
#include "cuda/device_buffer.hpp"
#include "nbkit/core/backend.hpp"
#include "nbkit/core/lattice.hpp"
#include "nbkit/io/pqr.hpp"
#include "nbkit/maps.hpp"
#include "bench_args.hpp"
#include "rsqrt_ceiling.cuh"
#include "test_support.hpp"

namespace {

using nbkit::cuda::DeviceBuffer;

// ---- the slides' kernels -----------------------------------------------------------
constexpr int kMaxConstantAtoms = 4000;
__constant__ float4 constant_atoms[kMaxConstantAtoms];

// "DCS CUDA Block/Grid Decomposition (non-unrolled)": one thread per lattice point of
// one plane; atoms in constant memory with dz^2 precomputed in .z.
__global__ void slides_simple_kernel(int numatoms, float gridspacing, float* energygrid, int nx) {
  const unsigned xindex = blockIdx.x * blockDim.x + threadIdx.x;
  const unsigned yindex = blockIdx.y * blockDim.y + threadIdx.y;
  const unsigned outaddr = nx * yindex + xindex;
  const float coorx = gridspacing * xindex, coory = gridspacing * yindex;
  float energyval = 0.0f;
  for (int atomid = 0; atomid < numatoms; atomid++) {
    const float dx = coorx - constant_atoms[atomid].x;
    const float dy = coory - constant_atoms[atomid].y;
    energyval += constant_atoms[atomid].w * rsqrtf(dx * dx + dy * dy + constant_atoms[atomid].z);
  }
  energygrid[outaddr] += energyval;
}

// "Const+Loop Unrolling+Coalescing": 8 points a thread, BLOCKSIZE_X apart.
constexpr int kUnroll = 8, kBlockX = 16, kBlockY = 16;
__global__ void slides_unroll8_coalesced_kernel(int numatoms, float gridspacing, float* energygrid, int nx) {
  const unsigned xindex = blockIdx.x * blockDim.x * kUnroll + threadIdx.x;
  const unsigned yindex = blockIdx.y * blockDim.y + threadIdx.y;
  const unsigned outaddr = nx * yindex + xindex;
  const float coory = gridspacing * yindex, coorx = gridspacing * xindex;
  const float gridspacing_coalesce = gridspacing * kBlockX;
  float e1 = 0, e2 = 0, e3 = 0, e4 = 0, e5 = 0, e6 = 0, e7 = 0, e8 = 0;
  for (int atomid = 0; atomid < numatoms; atomid++) {
    const float dy = coory - constant_atoms[atomid].y;
    const float dyz2 = dy * dy + constant_atoms[atomid].z;
    const float q = constant_atoms[atomid].w;
    const float dx1 = coorx - constant_atoms[atomid].x, dx2 = dx1 + gridspacing_coalesce,
                dx3 = dx2 + gridspacing_coalesce, dx4 = dx3 + gridspacing_coalesce,
                dx5 = dx4 + gridspacing_coalesce, dx6 = dx5 + gridspacing_coalesce,
                dx7 = dx6 + gridspacing_coalesce, dx8 = dx7 + gridspacing_coalesce;
    e1 += q * rsqrtf(dx1 * dx1 + dyz2);
    e2 += q * rsqrtf(dx2 * dx2 + dyz2);
    e3 += q * rsqrtf(dx3 * dx3 + dyz2);
    e4 += q * rsqrtf(dx4 * dx4 + dyz2);
    e5 += q * rsqrtf(dx5 * dx5 + dyz2);
    e6 += q * rsqrtf(dx6 * dx6 + dyz2);
    e7 += q * rsqrtf(dx7 * dx7 + dyz2);
    e8 += q * rsqrtf(dx8 * dx8 + dyz2);
  }
  energygrid[outaddr] += e1;
  energygrid[outaddr + 1 * kBlockX] += e2;
  energygrid[outaddr + 2 * kBlockX] += e3;
  energygrid[outaddr + 3 * kBlockX] += e4;
  energygrid[outaddr + 4 * kBlockX] += e5;
  energygrid[outaddr + 5 * kBlockX] += e6;
  energygrid[outaddr + 6 * kBlockX] += e7;
  energygrid[outaddr + 7 * kBlockX] += e8;
}

// Runs a slides kernel over `planes` planes of an nx x ny lattice (nx, ny multiples of the
// block tile, as the slides pad), all atoms in 4000-atom chunks: host loop as the slides'
// (copy a chunk to constant memory, launch, next). Returns evaluations per second.
double run_slides_kernel(bool unrolled, const nbkit::Atoms& atoms, int nx, int ny, int planes, double spacing) {
  DeviceBuffer<float> grid(static_cast<std::size_t>(nx) * ny);
  NBKIT_CUDA_CHECK(cudaMemset(grid.data(), 0, grid.size() * sizeof(float)));
  std::vector<float4> chunk;
  const dim3 block(kBlockX, kBlockY);
  const dim3 blocks(unrolled ? nx / (kBlockX * kUnroll) : nx / kBlockX, ny / kBlockY);
  cudaEvent_t start, stop;
  NBKIT_CUDA_CHECK(cudaEventCreate(&start));
  NBKIT_CUDA_CHECK(cudaEventCreate(&stop));
  NBKIT_CUDA_CHECK(cudaEventRecord(start));
  for (int k = 0; k < planes; ++k) {
    const float z = static_cast<float>(k * spacing);
    for (std::size_t base = 0; base < atoms.size(); base += kMaxConstantAtoms) {
      const std::size_t count = std::min<std::size_t>(kMaxConstantAtoms, atoms.size() - base);
      chunk.resize(count);
      for (std::size_t n = 0; n < count; ++n) {
        const float dz = z - static_cast<float>(atoms.z[base + n]);
        chunk[n] = make_float4(static_cast<float>(atoms.x[base + n]), static_cast<float>(atoms.y[base + n]), dz * dz,
                               static_cast<float>(atoms.charge[base + n]));
      }
      NBKIT_CUDA_CHECK(cudaMemcpyToSymbol(constant_atoms, chunk.data(), count * sizeof(float4)));
      if (unrolled)
        slides_unroll8_coalesced_kernel<<<blocks, block>>>(static_cast<int>(count), static_cast<float>(spacing),
                                                           grid.data(), nx);
      else
        slides_simple_kernel<<<blocks, block>>>(static_cast<int>(count), static_cast<float>(spacing), grid.data(), nx);
      NBKIT_CUDA_CHECK_LAUNCH();
    }
  }
  NBKIT_CUDA_CHECK(cudaEventRecord(stop));
  NBKIT_CUDA_CHECK(cudaEventSynchronize(stop));
  float ms = 0;
  NBKIT_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
  return static_cast<double>(nx) * ny * planes * atoms.size() / (ms * 1e-3);
}

struct Timing {
  double wall_rate = 0, kernel_rate = 0, error = 0;
};

Timing run_nbkit(const nbkit::Atoms& atoms, const nbkit::Lattice& lattice, std::vector<int> gpus, int repeats,
                 bool check, nbkit::MapMethod method = nbkit::MapMethod::direct) {
  nbkit::MapOptions options;
  options.method = method;
  options.backend = nbkit::Backend::cuda;
  options.gpus = std::move(gpus);
  nbkit::MapStats stats;
  std::vector<double> out(static_cast<std::size_t>(lattice.size()));
  std::vector<double> walls, kernels;
  nbkit::compute_map_rows(atoms, lattice, options, 0, lattice.rows(), out.data(), &stats);  // warm-up
  for (int r = 0; r < repeats; ++r) {
    std::fill(out.begin(), out.end(), std::nan(""));  // poisoned
    nbkit::compute_map_rows(atoms, lattice, options, 0, lattice.rows(), out.data(), &stats);
    walls.push_back(stats.seconds);
    kernels.push_back(stats.kernel_seconds);
  }
  std::sort(walls.begin(), walls.end());
  std::sort(kernels.begin(), kernels.end());
  Timing t;
  t.wall_rate = stats.evaluations / walls[walls.size() / 2];
  t.kernel_rate = stats.evaluations / kernels[kernels.size() / 2];
  if (check) {  // two rows against the float64 reference
    nbkit::MapOptions reference = options;
    reference.backend = nbkit::Backend::reference;
    reference.precision = nbkit::Precision::double_;
    const std::int64_t nz = lattice.dims[2], first = lattice.rows() / 2 + 7;
    std::vector<double> exact(static_cast<std::size_t>(2 * nz));
    nbkit::compute_map_rows(atoms, lattice, reference, first, first + 2, exact.data());
    std::vector<double> fast(out.begin() + first * nz, out.begin() + (first + 2) * nz);
    t.error = nbkit::test::relative_rms(fast, exact);
  }
  return t;
}

// float32 GPU map of a bundled protein (0.5 A, 10 A padding) against the float64 reference
// on 48 rows spread over the lattice: where issue 24 states the direct kernels' accuracy.
double protein_error(const std::string& file, nbkit::MapMethod method) {
  const nbkit::Atoms atoms = nbkit::io::read_pqr(nbkit::test::data_file(file));
  const nbkit::Lattice lattice = nbkit::lattice_around(atoms, 0.5, 10.0);
  nbkit::MapOptions options;
  options.method = method;
  options.backend = nbkit::Backend::cuda;
  const std::int64_t nz = lattice.dims[2], rows = lattice.rows();
  std::vector<double> map(static_cast<std::size_t>(lattice.size()));
  nbkit::compute_map_rows(atoms, lattice, options, 0, rows, map.data());
  nbkit::MapOptions reference = options;
  reference.backend = nbkit::Backend::reference;
  reference.precision = nbkit::Precision::double_;
  std::vector<double> fast, exact;
  for (int s = 0; s < 48; ++s) {
    const std::int64_t row = (2 * s + 1) * rows / 96;
    std::vector<double> one(static_cast<std::size_t>(nz));
    nbkit::compute_map_rows(atoms, lattice, reference, row, row + 1, one.data());
    exact.insert(exact.end(), one.begin(), one.end());
    fast.insert(fast.end(), map.begin() + row * nz, map.begin() + (row + 1) * nz);
  }
  return nbkit::test::relative_rms(fast, exact);
}

}  // namespace

int main(int argc, char** argv) {
  const auto parsed = nbkit::bench::parse_bench_args(argc, argv, "bench_map_cuda");
  if (!parsed) return 2;
  const std::string json_path = parsed->json_path;
  const bool quick = parsed->quick;
  std::string why;
  const auto gpus = nbkit::list_gpus(&why);
  if (gpus.empty()) {
    std::printf("bench_map_cuda: skipped: %s\n", why.c_str());
    return 0;
  }
  if (parsed->only.rfind("end-to-end", 0) == 0) {
    const std::string one_case = parsed->only.size() > 10 ? parsed->only.substr(10) : "";  // ":256x256x64:10000"
    std::printf("nbkit CUDA direct maps on %s, float32, median of 7 calls: kernels (CUDA events) against the\n"
                "whole compute_map_rows call into a caller's pageable buffer\n",
                gpus[0].name.c_str());
    std::printf("%-12s %8s %11s %11s %10s %10s %7s\n", "lattice", "atoms", "kernel/s", "end-to-end", "kernel ms",
                "call ms", "ratio");
    for (const std::array<std::int64_t, 3> dims : {std::array<std::int64_t, 3>{256, 256, 64}, {512, 512, 128}})
      for (const std::size_t n : {std::size_t{1000}, std::size_t{10000}}) {
        const std::string name = std::to_string(dims[0]) + "x" + std::to_string(dims[1]) + "x" + std::to_string(dims[2]);
        if (!one_case.empty() && one_case != ":" + name + ":" + std::to_string(n)) continue;
        nbkit::Lattice lattice;
        lattice.spacing = 0.5;
        lattice.dims = dims;
        const nbkit::Atoms atoms = nbkit::test::random_atoms(n, {0, 0, 0}, lattice.extent(), 17);
        const Timing t = run_nbkit(atoms, lattice, {0}, 7, false);
        const double evaluations = static_cast<double>(n) * static_cast<double>(lattice.size());
        std::printf("%-12s %8zu %11.3e %11.3e %10.3f %10.3f %7.2f\n", name.c_str(), n,
                    t.kernel_rate, t.wall_rate, 1e3 * evaluations / t.kernel_rate, 1e3 * evaluations / t.wall_rate,
                    t.wall_rate / t.kernel_rate);
      }
    return 0;
  }
  if (!parsed->only.empty()) {
    std::fprintf(stderr, "bench_map_cuda: --only takes end-to-end\n");
    return 2;
  }
  int clock_khz = 0;
  cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0);
  const double ceiling = nbkit::bench::measure_rsqrt_ceiling();
  std::printf("nbkit CUDA map benchmark on %s (%d SMs, %d MHz max), %zu GPU(s)\n", gpus[0].name.c_str(),
              gpus[0].multiprocessors, clock_khz / 1000, gpus.size());
  std::printf("ceiling: rsqrt.approx (MUFU) %.3e /s measured by a microkernel in this run\n\n", ceiling);
  std::printf("%-12s %8s %11s %11s %7s %11s %11s %8s %9s\n", "lattice", "atoms", "kernel/s", "end-to-end", "ceil%",
              "slides-1pt", "slides-u8", "x u8", "rel RMS");
  nlohmann::json results = nlohmann::json::array();
  const std::vector<std::array<std::int64_t, 3>> lattices = {{256, 256, 64}, {512, 512, 128}};
  const std::vector<std::size_t> atom_counts =
      quick ? std::vector<std::size_t>{1000, 100000} : std::vector<std::size_t>{1000, 10000, 100000, 1000000};
  for (const auto& dims : lattices)
    for (const std::size_t n : atom_counts) {
      nbkit::Lattice lattice;
      lattice.spacing = 0.5;
      lattice.dims = dims;
      const nbkit::Vec3 extent = lattice.extent();
      const nbkit::Atoms atoms = nbkit::test::random_atoms(n, {0, 0, 0}, extent, 17);
      const bool big = static_cast<double>(n) * lattice.size() > 2e12;
      const Timing t = run_nbkit(atoms, lattice, {0}, big ? 1 : 3, true);
      // Baselines in the slides' layout (x fastest, planes along z), on enough planes for
      // a stable rate: each plane costs the same.
      const int planes = static_cast<int>(std::max<std::int64_t>(1, std::min<std::int64_t>(
                                                                     dims[2], static_cast<std::int64_t>(4e10 / (static_cast<double>(n) * dims[0] * dims[1])))));
      const double simple = run_slides_kernel(false, atoms, static_cast<int>(dims[0]), static_cast<int>(dims[1]), planes, 0.5);
      const double unrolled = run_slides_kernel(true, atoms, static_cast<int>(dims[0]), static_cast<int>(dims[1]), planes, 0.5);
      const std::string name = std::to_string(dims[0]) + "x" + std::to_string(dims[1]) + "x" + std::to_string(dims[2]);
      std::printf("%-12s %8zu %11.3e %11.3e %6.1f%% %11.3e %11.3e %8.2f %9.1e\n", name.c_str(), n, t.kernel_rate,
                  t.wall_rate, 100 * t.kernel_rate / ceiling, simple, unrolled, t.kernel_rate / unrolled, t.error);
      results.push_back({{"lattice", dims},
                         {"atoms", n},
                         {"kernel_evaluations_per_second", t.kernel_rate},
                         {"end_to_end_evaluations_per_second", t.wall_rate},
                         {"rsqrt_ceiling_per_second", ceiling},
                         {"ratio_to_ceiling", t.kernel_rate / ceiling},
                         {"slides_simple_kernel_evaluations_per_second", simple},
                         {"slides_unroll8_coalesced_evaluations_per_second", unrolled},
                         {"baseline_planes_measured", planes},
                         {"relative_rms_error_float32", t.error},
                         {"gpu", gpus[0].name}});
    }
  // Debye-Hueckel (mdh): an rsqrt and an exp a evaluation, both on the special-function unit.
  const double mdh_ceiling = nbkit::bench::measure_rsqrt_ceiling(true);
  std::printf("\nmdh (Debye-Hueckel, 0.15 M), float32; ceiling: rsqrt + ex2 (MUFU) %.3e /s measured in this run\n",
              mdh_ceiling);
  nlohmann::json mdh = nlohmann::json::array();
  for (const std::size_t n : {std::size_t{100000}}) {
    nbkit::Lattice lattice;
    lattice.spacing = 0.5;
    lattice.dims = {512, 512, 128};
    const nbkit::Atoms atoms = nbkit::test::random_atoms(n, {0, 0, 0}, lattice.extent(), 17);
    const Timing t = run_nbkit(atoms, lattice, {0}, 3, true, nbkit::MapMethod::mdh);
    std::printf("%-12s %8zu %11.3e %11.3e %6.1f%% %9.1e\n", "512x512x128", n, t.kernel_rate, t.wall_rate,
                100 * t.kernel_rate / mdh_ceiling, t.error);
    mdh.push_back({{"lattice", lattice.dims},
                   {"atoms", n},
                   {"kernel_evaluations_per_second", t.kernel_rate},
                   {"end_to_end_evaluations_per_second", t.wall_rate},
                   {"rsqrt_ex2_ceiling_per_second", mdh_ceiling},
                   {"ratio_to_ceiling", t.kernel_rate / mdh_ceiling},
                   {"relative_rms_error_float32", t.error}});
  }
  std::printf("\nfloat32 error against float64 on the bundled proteins (0.5 A, 48 rows):\n");
  nlohmann::json proteins = nlohmann::json::array();
  for (const char* file : {"1a63.pqr", "hca.pqr"})
    for (const auto method : {nbkit::MapMethod::direct, nbkit::MapMethod::mdh}) {
      const double error = protein_error(file, method);
      const std::string name = nbkit::to_string(method);
      std::printf("  %-9s %-6s rel RMS %.2e\n", file, name.c_str(), error);
      proteins.push_back({{"input", file}, {"method", name}, {"relative_rms_error_float32", error}});
    }
  nlohmann::json multi = nlohmann::json::array();
  if (gpus.size() >= 2) {
    std::vector<int> all;
    for (const auto& g : gpus) all.push_back(g.index);
    std::printf("\nmulti-GPU, 512x512x128, end to end (upload, kernels, download):\n");
    for (const std::size_t n : {std::size_t{100000}, std::size_t{1000000}}) {
      nbkit::Lattice lattice;
      lattice.spacing = 0.5;
      lattice.dims = {512, 512, 128};
      const nbkit::Atoms atoms = nbkit::test::random_atoms(n, {0, 0, 0}, lattice.extent(), 17);
      const int repeats = n > 100000 ? 1 : 3;
      const Timing one = run_nbkit(atoms, lattice, {0}, repeats, false);
      const Timing several = run_nbkit(atoms, lattice, all, repeats, false);
      std::printf("  %8zu atoms: 1 GPU %.3e /s, %zu GPUs %.3e /s, %.2f x\n", n, one.wall_rate, gpus.size(),
                  several.wall_rate, several.wall_rate / one.wall_rate);
      multi.push_back({{"atoms", n}, {"gpus", gpus.size()}, {"one_gpu_per_second", one.wall_rate},
                       {"all_gpus_per_second", several.wall_rate}, {"speedup", several.wall_rate / one.wall_rate}});
    }
  }
  std::printf("\nkernel/s: nbkit's kernels alone (CUDA events), end-to-end: compute_map_rows wall time including\n"
              "upload and download; ceil%%: kernel rate over the rsqrt ceiling; slides-1pt and slides-u8: the slides'\n"
              "simple and unroll-8-coalesced kernels (constant memory, 4000-atom chunks, a launch per plane and\n"
              "chunk), measured on a subset of planes; x u8: nbkit over slides-u8; rel RMS: float32 against the\n"
              "float64 reference on two rows.\n");
  if (!json_path.empty()) {
    std::ofstream(json_path) << nlohmann::json{{"benchmark", "map_cuda"}, {"results", results}, {"mdh", mdh}, {"proteins", proteins}, {"multi_gpu", multi}}.dump(2)
                             << "\n";
    std::printf("wrote %s\n", json_path.c_str());
  }
  return 0;
}
