// Benchmark of MD on the GPU: atom-steps per second of LAMMPS's in.lj (fcc at density 0.8442,
// T 1.44, lj/cut 2.5, skin 0.3, NVE, dt 0.005, thermo every 100 steps) with md::GpuEngine,
// float32 and float64, at 32,000 atoms and at 1,024,000 (LAMMPS's -var x 4 -var y 4 -var z 2),
// the whole step timed (list rebuilds, the host's flag read, thermo sums included).
//  - the ceiling, measured in this run: the GPU's memory bandwidth (a device-to-device copy);
//    the step must at least stream its neighbour list once (4 bytes a neighbour, ~78
//    neighbours within cutoff + skin at this density), so bandwidth / (4 x neighbours) bounds
//    the atom-steps per second; the ratio is printed.
//  - the peer: LAMMPS/KOKKOS on one MI250X die, 2.4e8 atom-steps/s for in.lj at ~1M atoms
//    (the published figure the issue cites; no LAMMPS GPU build exists on this machine).
//   bench_md_cuda [--json FILE] [--quick]      (--quick: fewer steps)
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bench_args.hpp"
#include "memory_bandwidth.cuh"
#include "nbkit/core/backend.hpp"
#include "nbkit/md.hpp"

namespace {

using Clock = std::chrono::steady_clock;
constexpr double kPublishedKokkosMi250x = 2.4e8;


struct Result {
  std::string name;
  std::size_t atoms;
  bool double_precision;
  int steps;
  double seconds, rate, builds, neighbors;
};

Result run(const char* name, int cx, int cy, int cz, bool double_precision, int steps, bool langevin = false,
           bool step_graphs = true,
           nbkit::md::GpuEngine::Options::PairKernel kernel = nbkit::md::GpuEngine::Options::PairKernel::verlet_list) {
  using namespace nbkit::md;
  System s = fcc_lattice(0.8442, cx, cy, cz);
  assign_velocities(s, 1.44, 87287);
  const ForceField f = ForceField::mixed({1.0}, {1.0}, 2.5);
  GpuEngine::Options options;
  options.double_precision = double_precision;
  options.step_graphs = step_graphs;
  options.pair_kernel = kernel;
  GpuEngine engine(s, f, 0.3, options);
  // With langevin: fix langevin at T 1.44, damping 1 (one more kernel a step).
  Langevin thermostat(1.44, 1.0, 5);
  Langevin* thermostat_or_none = langevin ? &thermostat : nullptr;
  if (langevin) engine.apply_thermostat(thermostat, 0.005);
  for (int step = 1; step <= 100; ++step) engine.step(0.005, step % 100 == 0, thermostat_or_none);  // warm-up
  engine.thermo(100);
  const std::int64_t builds_before = engine.builds();
  const auto start = Clock::now();
  for (int step = 1; step <= steps; ++step) engine.step(0.005, step % 100 == 0 || step == steps, thermostat_or_none);
  engine.thermo(steps);  // waits for the last step
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  const double neighbors = 0.8442 * 4.0 / 3.0 * M_PI * std::pow(2.8, 3);
  return {name,
          s.size(),
          double_precision,
          steps,
          seconds,
          static_cast<double>(s.size()) * steps / seconds,
          static_cast<double>(engine.builds() - builds_before),
          neighbors};
}

}  // namespace

int main(int argc, char** argv) {
  const auto parsed = nbkit::bench::parse_bench_args(argc, argv, "bench_md_cuda");
  if (!parsed) return 2;
  const auto gpus = nbkit::list_gpus();
  if (gpus.empty()) {
    std::printf("bench_md_cuda: no GPU, nothing measured\n");
    return 0;
  }
  const double bandwidth = nbkit::bench::memory_bandwidth();
  std::printf("bench_md_cuda: in.lj (fcc 0.8442, T 1.44, lj/cut 2.5, skin 0.3, NVE, dt 0.005) on %s\n",
              gpus[0].name.c_str());
  std::printf("ceiling: memory bandwidth %.3g B/s measured here; streaming a list of ~78 neighbours once "
              "bounds a step at %.3g atom-steps/s\n",
              bandwidth, bandwidth / (4 * 0.8442 * 4.0 / 3.0 * M_PI * std::pow(2.8, 3)));
  std::printf("%-26s %9s %9s %6s %8s %12s %9s %10s\n", "system", "atoms", "precision", "steps", "builds",
              "atom-steps/s", "of bound", "x KOKKOS*");
  std::vector<Result> results;
  const int small_steps = parsed->quick ? 1000 : 4000, large_steps = parsed->quick ? 300 : 1000;
  for (const bool double_precision : {false, true}) {
    results.push_back(run("in.lj 20x20x20", 20, 20, 20, double_precision, small_steps));
    results.push_back(run("in.lj x4 y4 z2 (80x80x40)", 80, 80, 40, double_precision, large_steps));
  }
  results.push_back(run("80x80x40, langevin", 80, 80, 40, false, large_steps, true));
  // The host deciding every rebuild (a sync a step) instead of the graph's conditional node.
  results.push_back(run("20x20x20, sync each step", 20, 20, 20, false, small_steps, false, false));
  results.push_back(run("80x80x40, sync each step", 80, 80, 40, false, large_steps, false, false));
  // The slides' patch-pair kernel (no list) in place of the Verlet list.
  // The slides' patch-pair kernel (no list) and cluster pairs (tiles of 32) in place of the
  // Verlet list.
  using Kernel = nbkit::md::GpuEngine::Options::PairKernel;
  results.push_back(run("20x20x20, patch pairs", 20, 20, 20, false, small_steps, false, true, Kernel::patch_pairs));
  results.push_back(run("80x80x40, patch pairs", 80, 80, 40, false, large_steps, false, true, Kernel::patch_pairs));
  results.push_back(run("20x20x20, cluster pairs", 20, 20, 20, false, small_steps, false, true, Kernel::cluster_pairs));
  results.push_back(run("80x80x40, cluster pairs", 80, 80, 40, false, large_steps, false, true, Kernel::cluster_pairs));
  nlohmann::json rows = nlohmann::json::array();
  for (const Result& r : results) {
    const double bound = bandwidth / (4 * r.neighbors);
    std::printf("%-26s %9zu %9s %6d %8.0f %12.3g %8.1f%% %10.2f\n", r.name.c_str(), r.atoms,
                r.double_precision ? "float64" : "float32", r.steps, r.builds, r.rate, 100 * r.rate / bound,
                r.rate / kPublishedKokkosMi250x);
    rows.push_back({{"system", r.name},
                    {"atoms", r.atoms},
                    {"precision", r.double_precision ? "float64" : "float32"},
                    {"steps", r.steps},
                    {"seconds", r.seconds},
                    {"list_builds", r.builds},
                    {"atom_steps_per_second", r.rate},
                    {"list_stream_bound", bound},
                    {"of_bound", r.rate / bound}});
  }
  std::printf("* LAMMPS/KOKKOS, one MI250X die, in.lj ~1M atoms: %.2g atom-steps/s (published)\n", kPublishedKokkosMi250x);
  if (!parsed->json_path.empty()) {
    std::ofstream(parsed->json_path) << nlohmann::json{{"benchmark", "md_cuda"},
                                                       {"gpu", gpus[0].name},
                                                       {"memory_bandwidth", bandwidth},
                                                       {"peer_kokkos_mi250x", kPublishedKokkosMi250x},
                                                       {"results", rows}}
                                            .dump(2);
    std::printf("wrote %s\n", parsed->json_path.c_str());
  }
  return 0;
}
