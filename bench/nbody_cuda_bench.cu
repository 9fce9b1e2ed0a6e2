// Benchmark of GPU N-body forces: body-body interactions per second (and GFLOP/s at the
// conventional 20 flops per interaction) of nbkit's CUDA path at N = 16,384, 131,072 and
// 1,048,576, one force evaluation each (median of several), beside
//  - the ceiling: float32 FFMA instructions per second measured by a microkernel in this run
//    (ffma_ceiling.cuh: 12 float32-pipe instructions and an rsqrt an interaction);
//  - the CUDA sample's design (GPU Gems 3 ch. 31) re-implemented and measured here, and the
//    sample's own published rates on an H100/H200 (issue 6: 0.49e12, 1.46e12, 1.58e12);
//  - the accuracy against float64 sums on a sample of bodies;
//  - several GPUs against one, where the machine has them.
//   bench_nbody_cuda [--json FILE] [--quick]
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
#include "ffma_ceiling.cuh"
#include "nbkit/core/backend.hpp"
#include "nbkit/nbody.hpp"
#include "nbody_gems_kernel.cuh"

namespace {

using Clock = std::chrono::steady_clock;
using namespace nbkit;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct Timing {
  double kernel = 0, wall = 0;  // median seconds: kernels alone (CUDA events), whole compute()
};

Timing time_engine(nbody::ForceEngine& engine, const nbody::Bodies& bodies, bool with_potential, int repeats) {
  nbody::Accelerations acc;
  engine.compute(bodies, acc, with_potential);  // warm-up: buffers allocated, clocks up
  std::vector<double> kernel, wall;
  for (int r = 0; r < repeats; ++r) {
    const auto start = Clock::now();
    engine.compute(bodies, acc, with_potential);
    wall.push_back(std::chrono::duration<double>(Clock::now() - start).count());
    kernel.push_back(engine.last_kernel_seconds());
  }
  return {median(kernel), median(wall)};
}

// Largest relative error of the acceleration over a sample of bodies against float64 sums.
double sampled_error(const nbody::Bodies& b, const nbody::Accelerations& a, double softening) {
  double worst = 0;
  for (std::size_t i = 0; i < b.size(); i += b.size() / 61 + 1) {
    double ax = 0, ay = 0, az = 0;
    for (std::size_t j = 0; j < b.size(); ++j) {
      if (j == i) continue;
      const double dx = b.x[j] - b.x[i], dy = b.y[j] - b.y[i], dz = b.z[j] - b.z[i];
      const double u = 1 / std::sqrt(dx * dx + dy * dy + dz * dz + softening * softening);
      const double s = b.mass[j] * u * u * u;
      ax += s * dx, ay += s * dy, az += s * dz;
    }
    const double norm = std::sqrt(ax * ax + ay * ay + az * az);
    worst = std::max(worst, std::sqrt(std::pow(a.ax[i] - ax, 2) + std::pow(a.ay[i] - ay, 2) + std::pow(a.az[i] - az, 2)) / norm);
  }
  return worst;
}

}  // namespace

int main(int argc, char** argv) {
  const auto parsed = bench::parse_bench_args(argc, argv, "bench_nbody_cuda");
  if (!parsed) return 2;
  std::string why;
  const std::vector<GpuInfo> gpus = list_gpus(&why);
  if (gpus.empty()) {
    std::printf("bench_nbody_cuda: skipped: %s\n", why.c_str());
    return 0;
  }
  const double softening = 0.01;
  const int repeats = parsed->quick ? 3 : 7;
  const double ffma = bench::measure_ffma_per_second();
  const double ceiling12 = ffma / 12, ceiling13 = ffma / 13;
  std::printf("nbkit CUDA N-body benchmark on %s (%d SMs), %zu GPU(s); Plummer sphere, softening %.2g, float32 with\n"
              "float64 sums, one force evaluation (median of %d), interactions = N^2 as the CUDA sample counts them\n",
              gpus[0].name.c_str(), gpus[0].multiprocessors, gpus.size(), softening, repeats);
  std::printf("ceiling: %.3e FFMA/s = %.1f TFLOP/s float32 measured in this run: %.3e interactions/s at 12 FP32\n"
              "instructions each, %.3e at 13 (the rsqrt's issue slot counted)\n\n",
              ffma, 2 * ffma / 1e12, ceiling12, ceiling13);
  std::printf("%9s %11s %8s %7s %11s %11s %11s %7s %11s %9s\n", "N", "kernel/s", "GFLOP/s", "ceil13", "+potential",
              "whole call", "GPU Gems", "x Gems", "sample pub.", "max err");
  const double published[] = {0.49e12, 1.46e12, 1.58e12};  // issue 6: the CUDA sample on an H100/H200
  const std::vector<std::size_t> sizes = {16384, 131072, 1048576};
  nlohmann::json results = nlohmann::json::array();
  nbody::ForceOptions options;
  options.backend = Backend::cuda;
  options.softening = softening;
  options.gpus = {0};
  nbody::ForceEngine engine(options);
  for (std::size_t k = 0; k < sizes.size(); ++k) {
    const std::size_t n = sizes[k];
    const nbody::Bodies bodies = nbody::plummer(n, 3);
    const double pairs = static_cast<double>(n) * static_cast<double>(n);
    const Timing plain = time_engine(engine, bodies, false, repeats);
    const Timing potential = time_engine(engine, bodies, true, repeats);
    std::vector<float> packed(4 * n);
    for (std::size_t i = 0; i < n; ++i) {
      packed[4 * i] = static_cast<float>(bodies.x[i]), packed[4 * i + 1] = static_cast<float>(bodies.y[i]);
      packed[4 * i + 2] = static_cast<float>(bodies.z[i]), packed[4 * i + 3] = static_cast<float>(bodies.mass[i]);
    }
    const double gems = pairs / bench::time_gems_kernel(packed, static_cast<float>(softening * softening), repeats);
    nbody::Accelerations acc;
    engine.compute(bodies, acc, false);
    const double error = sampled_error(bodies, acc, softening);
    const double rate = pairs / plain.kernel;
    std::printf("%9zu %11.3e %8.0f %6.1f%% %11.3e %11.3e %11.3e %7.2f %11.3e %9.1e\n", n, rate, rate * 20 / 1e9,
                100 * rate / ceiling13, pairs / potential.kernel, pairs / plain.wall, gems, rate / gems, published[k],
                error);
    results.push_back({{"n", n},
                       {"kernel_interactions_per_second", rate},
                       {"gflops_at_20", rate * 20 / 1e9},
                       {"with_potential_interactions_per_second", pairs / potential.kernel},
                       {"whole_call_interactions_per_second", pairs / plain.wall},
                       {"gems_design_interactions_per_second", gems},
                       {"cuda_sample_published_interactions_per_second", published[k]},
                       {"ceiling_ffma_per_second", ffma},
                       {"fraction_of_ceiling13", rate / ceiling13},
                       {"max_relative_error_sampled", error},
                       {"gpu", gpus[0].name}});
  }
  // float64 throughout, for the record.
  nbody::ForceOptions dbl = options;
  dbl.precision = Precision::double_;
  nbody::ForceEngine dbl_engine(dbl);
  const nbody::Bodies mid = nbody::plummer(131072, 3);
  const double dbl_rate = 131072.0 * 131072.0 / time_engine(dbl_engine, mid, false, repeats).kernel;
  std::printf("--precision double, N = 131072: %.3e interactions/s\n", dbl_rate);
  nlohmann::json multi = nlohmann::json::object();
  if (gpus.size() > 1) {
    nbody::ForceOptions all = options;
    all.gpus.clear();
    nbody::ForceEngine all_engine(all);
    const nbody::Bodies big = nbody::plummer(1048576, 3);
    const double pairs = 1048576.0 * 1048576.0;
    const Timing one = time_engine(engine, big, false, repeats), many = time_engine(all_engine, big, false, repeats);
    std::printf("%zu GPUs, N = 1048576: kernels %.3e interactions/s (%.2f x one GPU), whole call %.3e (%.2f x)\n",
                gpus.size(), pairs / many.kernel, one.kernel / many.kernel, pairs / many.wall, one.wall / many.wall);
    multi = {{"gpus", gpus.size()}, {"n", 1048576},
             {"kernel_interactions_per_second", pairs / many.kernel}, {"speedup_kernels", one.kernel / many.kernel},
             {"whole_call_interactions_per_second", pairs / many.wall}, {"speedup_whole_call", one.wall / many.wall}};
  }
  std::printf("\nkernel/s: nbkit's kernels alone (CUDA events; accelerations only, what a step needs), ceil13: of the\n"
              "ceiling at 13 issue slots an interaction; +potential: the diagnostics steps' kernels; whole call:\n"
              "compute() with the upload and download; GPU Gems: the CUDA sample's design measured here; sample pub.:\n"
              "the sample's published rate on an H100/H200; max err: largest relative acceleration error of 62\n"
              "sampled bodies against float64 sums. Targets (issue 6): >= 2.1e12 for N >= 131072, >= 1.2e12 at 16384.\n");
  if (!parsed->json_path.empty()) {
    std::ofstream(parsed->json_path) << nlohmann::json{{"benchmark", "nbody_cuda"},
                                                       {"results", results},
                                                       {"double_precision_131072", dbl_rate},
                                                       {"multi_gpu", multi}}
                                            .dump(2)
                                     << "\n";
    std::printf("wrote %s\n", parsed->json_path.c_str());
  }
  return 0;
}
