// Benchmark of particle-mesh Ewald's reciprocal part (issue 18): water boxes of ~24,000,
// ~98,000 and ~986,000 atoms (TIP3P's geometry and charges, one molecule per 3.104 A cell:
// 0.0334 molecules/A^3, randomly turned), at OpenMM's parameters for tolerance 5e-4 and a 9 A
// cutoff (alpha and the mesh from md::ewald_parameters), B-splines of order 5, float64.
//  - the GPU (md::PmeGpu): each phase's time (spread with the conversion from fixed point,
//    forward FFT, convolution with its sums, inverse FFT, gather), the median of 20 evaluations
//    after 3 to warm up, and each phase's share;
//  - the ceiling, measured in this run: the GPU's memory bandwidth (a device-to-device copy).
//    The mesh phases (conversion, both FFTs, convolution) must at least move ~88 bytes per
//    mesh point (8 + 8 to convert; an FFT reads and writes the mesh once at least: 8 + 8 real,
//    8 + 8 complex per point of the half spectrum's 16 bytes per two points; the convolution
//    reads and writes the half spectrum), so bandwidth / 88 bytes bounds them; the ratio is printed;
//  - the peer, measured in this run: nbkit's CPU mesh (md::PmeCpu, FFTW on every core; its
//    spreading on one thread) on the same charges, the median of 3, and the agreement of the
//    two energies.
//   bench_pme_cuda [--json FILE] [--quick]      (--quick: the two smaller boxes)
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "bench_args.hpp"
#include "memory_bandwidth.cuh"
#include "cuda/device_buffer.hpp"
#include "md/cuda/pme.cuh"
#include "md/ewald.hpp"
#include "md/pme.hpp"
#include "nbkit/core/units.hpp"

namespace {

using nbkit::Vec3;
using V3 = nbkit::md::Vector3<double>;
using Clock = std::chrono::steady_clock;

struct Water {
  std::vector<Vec3> x;
  std::vector<double> q;
  nbkit::PeriodicBox box;
};

// n^3 TIP3P molecules (O-H 0.9572 A, H-O-H 104.52 degrees; charges -0.834, +0.417), one per
// cell of a cubic lattice, each turned by a random rotation.
Water water_box(int n) {
  const double cell = 3.104, bond = 0.9572, half_angle = 0.5 * 104.52 * 3.14159265358979323846 / 180;
  Water w;
  w.box = nbkit::PeriodicBox::from_edges({n * cell, n * cell, n * cell});
  std::mt19937_64 rng(7);
  std::normal_distribution<double> normal;
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j)
      for (int k = 0; k < n; ++k) {
        // A random orthonormal frame (Gram-Schmidt of two Gaussian vectors).
        Vec3 a{normal(rng), normal(rng), normal(rng)}, b{normal(rng), normal(rng), normal(rng)};
        a = (1 / nbkit::norm(a)) * a;
        b = b - (a.x * b.x + a.y * b.y + a.z * b.z) * a;
        b = (1 / nbkit::norm(b)) * b;
        const Vec3 o{(i + 0.5) * cell, (j + 0.5) * cell, (k + 0.5) * cell};
        w.x.push_back(o);
        w.x.push_back(o + bond * (std::cos(half_angle) * a + std::sin(half_angle) * b));
        w.x.push_back(o + bond * (std::cos(half_angle) * a - std::sin(half_angle) * b));
        w.q.insert(w.q.end(), {-0.834, 0.417, 0.417});
      }
  return w;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const auto args = nbkit::bench::parse_bench_args(argc, argv, "bench_pme_cuda");
  if (!args) return 2;
  cudaDeviceProp properties{};
  BENCH_CHECK(cudaGetDeviceProperties(&properties, 0));
  const double bandwidth = nbkit::bench::memory_bandwidth();
  const int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::printf("PME's reciprocal part, tolerance 5e-4, cutoff 9 A, order 5, float64; %s (%.0f GB/s measured); "
              "CPU: %d threads\n",
              properties.name, bandwidth * 1e-9, threads);
  std::printf("%9s %12s %8s | %8s %8s %8s %8s %8s %9s | %7s | %9s %7s | %8s\n", "atoms", "mesh", "alpha", "spread",
              "fft", "conv", "ifft", "gather", "total ms", "mesh/bw", "CPU ms", "GPU x", "dE rel");
  nlohmann::json results = nlohmann::json::array();
  std::vector<int> sides{20, 32, 69};
  if (args->quick) sides.pop_back();
  const double k = nbkit::units::coulomb_constant_kcal;
  for (int side : sides) {
    const Water w = water_box(side);
    const int n = static_cast<int>(w.x.size());
    const nbkit::md::EwaldParameters p = nbkit::md::ewald_parameters(w.box, 9.0, 5e-4);
    cudaStream_t stream;
    BENCH_CHECK(cudaStreamCreate(&stream));
    nbkit::cuda::DeviceBuffer<V3> x(static_cast<std::size_t>(n)), force(static_cast<std::size_t>(n));
    nbkit::cuda::DeviceBuffer<double> q(static_cast<std::size_t>(n)), sums(2);
    std::vector<V3> host(w.x.size());
    for (std::size_t i = 0; i < w.x.size(); ++i) host[i] = {w.x[i].x, w.x[i].y, w.x[i].z};
    x.upload(host.data(), host.size(), stream);
    q.upload(w.q.data(), w.q.size(), stream);
    double gpu_energy = 0;
    std::array<std::vector<double>, 5> phases;
    {
      nbkit::md::PmeGpu pme(p.pme_grid, 5, p.alpha, w.q, stream);
      pme.time_phases();
      for (int rep = 0; rep < 23; ++rep) {
        pme.evaluate(x.data(), q.data(), n, w.box, k, force.data(), sums.data(), stream);
        const auto t = pme.phase_seconds();
        if (rep >= 3)
          for (int ph = 0; ph < 5; ++ph) phases[ph].push_back(t[ph]);
      }
      double e_v[2];
      sums.download(e_v, 2, stream);
      BENCH_CHECK(cudaStreamSynchronize(stream));
      gpu_energy = e_v[0];
    }
    BENCH_CHECK(cudaStreamDestroy(stream));
    std::array<double, 5> phase{};
    double total = 0;
    for (int ph = 0; ph < 5; ++ph) phase[ph] = median(phases[ph]), total += phase[ph];
    const double points = static_cast<double>(p.pme_grid[0]) * p.pme_grid[1] * p.pme_grid[2];
    const double mesh_bound = 88 * points / bandwidth, mesh_time = phase[1] + phase[2] + phase[3];
    nbkit::md::PmeCpu cpu(p.pme_grid, 5, p.alpha, threads);
    std::vector<double> cpu_times;
    double cpu_energy = 0;
    for (int rep = 0; rep < 3; ++rep) {
      const auto start = Clock::now();
      cpu_energy = cpu.evaluate(w.x, w.q, w.box, k).energy;
      cpu_times.push_back(std::chrono::duration<double>(Clock::now() - start).count());
    }
    const double cpu_time = median(cpu_times);
    const double agreement = std::abs(gpu_energy - cpu_energy) / std::abs(cpu_energy);
    const std::string mesh = std::to_string(p.pme_grid[0]) + "x" + std::to_string(p.pme_grid[1]) + "x" +
                             std::to_string(p.pme_grid[2]);
    std::printf("%9d %12s %8.4f | %8.3f %8.3f %8.3f %8.3f %8.3f %9.3f | %7.2f | %9.1f %7.1f | %8.1e\n", n, mesh.c_str(),
                p.alpha, 1e3 * phase[0], 1e3 * phase[1], 1e3 * phase[2], 1e3 * phase[3], 1e3 * phase[4], 1e3 * total,
                mesh_bound / mesh_time, 1e3 * cpu_time, cpu_time / total, agreement);
    std::printf("%9s %12s %8s | %7.0f%% %7.0f%% %7.0f%% %7.0f%% %7.0f%% %9s |\n", "", "share", "", 100 * phase[0] / total,
                100 * phase[1] / total, 100 * phase[2] / total, 100 * phase[3] / total, 100 * phase[4] / total, "");
    results.push_back({{"atoms", n},
                       {"mesh", p.pme_grid},
                       {"alpha", p.alpha},
                       {"gpu_seconds", {{"spread", phase[0]}, {"forward_fft", phase[1]}, {"convolution", phase[2]},
                                        {"inverse_fft", phase[3]}, {"gather", phase[4]}, {"total", total}}},
                       {"mesh_phases_bandwidth_bound_ratio", mesh_bound / mesh_time},
                       {"cpu_seconds", cpu_time},
                       {"cpu_threads", threads},
                       {"gpu_over_cpu_speedup", cpu_time / total},
                       {"energy_relative_difference", agreement}});
    if (!(agreement < 1e-9)) {
      std::fprintf(stderr, "the GPU's energy %.12g differs from the CPU's %.12g\n", gpu_energy, cpu_energy);
      return 1;
    }
  }
  if (!args->json_path.empty()) {
    std::ofstream out(args->json_path);
    out << nlohmann::json{{"gpu", properties.name}, {"bandwidth_bytes_per_second", bandwidth}, {"results", results}}.dump(2)
        << "\n";
  }
  return 0;
}
