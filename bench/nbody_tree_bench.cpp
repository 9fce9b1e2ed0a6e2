// Benchmark of the Barnes-Hut tree: bodies per second per force evaluation (tree build and walk
// included, host-device copies too on the GPU; the build and walk timed apart) at several N; on
// the GPU also from bodies already in its memory (ForceEngine::compute_on_device, as a GPU
// integrator, CuPy or PyTorch hold them: no staging, no copies), with and without the potentials
// (a step between diagnostics needs the accelerations alone); with the error percentiles of that
// setting against float64 all pairs on a sample of bodies, and all pairs on the same backend in
// the same run where it takes under a few seconds (the crossover). The peer is the figure
// Ryoanji publishes (Bonsai-style Barnes-Hut with EXAFMM kernels: 62.2e6 bodies/s on one A100
// at 67 million bodies, theta 0.5, quadrupoles), printed beside ours with its accuracy setting.
//   bench_nbody_tree [--backend cpu|cuda] [--sizes N,N,...] [--theta T,T,...] [--json FILE] [--quick]
#include <fmt/format.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#if NBKIT_BENCH_CUDA
#include <cuda_runtime.h>
#endif

#include "nbkit/core/backend.hpp"
#include "nbkit/core/error.hpp"
#include "nbkit/nbody.hpp"

namespace {

using Clock = std::chrono::steady_clock;
using nbkit::nbody::Accelerations;
using nbkit::nbody::Bodies;

double seconds_of(const std::function<void()>& f) {
  const auto start = Clock::now();
  f();
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Relative acceleration errors of the sampled bodies against float64 sums over all bodies.
std::vector<double> sampled_errors(const Bodies& b, const Accelerations& a, double softening, std::size_t samples) {
  const std::size_t n = b.size(), stride = std::max<std::size_t>(1, n / samples);
  std::vector<std::size_t> picked;
  for (std::size_t i = 0; i < n && picked.size() < samples; i += stride) picked.push_back(i);
  std::vector<double> errors(picked.size());
  const double eps2 = softening * softening;
#pragma omp parallel for schedule(dynamic, 1)
  for (std::int64_t s = 0; s < static_cast<std::int64_t>(picked.size()); ++s) {
    const std::size_t i = picked[static_cast<std::size_t>(s)];
    double ax = 0, ay = 0, az = 0;
    for (std::size_t j = 0; j < n; ++j) {
      if (j == i) continue;
      const double dx = b.x[j] - b.x[i], dy = b.y[j] - b.y[i], dz = b.z[j] - b.z[i];
      const double u = 1 / std::sqrt(dx * dx + dy * dy + dz * dz + eps2);
      const double f = b.mass[j] * u * u * u;
      ax += f * dx, ay += f * dy, az += f * dz;
    }
    const double ex = a.ax[i] - ax, ey = a.ay[i] - ay, ez = a.az[i] - az;
    errors[static_cast<std::size_t>(s)] = std::sqrt(ex * ex + ey * ey + ez * ez) / std::sqrt(ax * ax + ay * ay + az * az);
  }
  std::sort(errors.begin(), errors.end());
  return errors;
}

#if NBKIT_BENCH_CUDA
constexpr bool kCudaBuild = true;

// The bodies in GPU 0's memory as float64 (positions (n, 3), masses (n,)) with room for the
// results: a GPU run's state between steps.
class BodiesOnGpu {
 public:
  explicit BodiesOnGpu(const Bodies& b) : n_(b.size()) {
    std::vector<double> positions(3 * n_);
    for (std::size_t i = 0; i < n_; ++i) positions[3 * i] = b.x[i], positions[3 * i + 1] = b.y[i], positions[3 * i + 2] = b.z[i];
    for (auto [p, count] : {std::pair{&positions_, 3 * n_}, {&masses_, n_}, {&accelerations_, 3 * n_}, {&potentials_, n_}})
      if (cudaMalloc(p, count * sizeof(double)) != cudaSuccess) throw nbkit::Error("cudaMalloc failed");
    cudaMemcpy(positions_, positions.data(), 3 * n_ * sizeof(double), cudaMemcpyHostToDevice);
    cudaMemcpy(masses_, b.mass.data(), n_ * sizeof(double), cudaMemcpyHostToDevice);
  }
  ~BodiesOnGpu() {
    for (double* p : {positions_, masses_, accelerations_, potentials_}) cudaFree(p);
  }
  BodiesOnGpu(const BodiesOnGpu&) = delete;
  BodiesOnGpu& operator=(const BodiesOnGpu&) = delete;
  nbkit::nbody::DeviceBodies view(bool with_potential) const {
    nbkit::nbody::DeviceBodies d;
    d.n = static_cast<std::int64_t>(n_), d.positions = positions_, d.masses = masses_;
    d.accelerations = accelerations_, d.potentials = with_potential ? potentials_ : nullptr;
    return d;
  }

 private:
  std::size_t n_;
  double *positions_ = nullptr, *masses_ = nullptr, *accelerations_ = nullptr, *potentials_ = nullptr;
};
#else
constexpr bool kCudaBuild = false;
#endif

double median_of_3(const std::function<void()>& f) {
  std::vector<double> times;
  for (int r = 0; r < 3; ++r) times.push_back(seconds_of(f));
  std::sort(times.begin(), times.end());
  return times[1];
}

double percentile(const std::vector<double>& sorted, double q) {
  return sorted[std::min(sorted.size() - 1, static_cast<std::size_t>(q * static_cast<double>(sorted.size())))];
}

}  // namespace

int main(int argc, char** argv) {
  std::string backend = "cpu", json_path;
  std::vector<std::size_t> sizes;
  std::vector<double> thetas;
  bool quick = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw nbkit::Error(a + " needs a value");
      return argv[++i];
    };
    if (a == "--backend") backend = value();
    else if (a == "--theta") {
      std::string list = value();
      for (std::size_t from = 0; from <= list.size();) {
        const std::size_t comma = std::min(list.find(',', from), list.size());
        thetas.push_back(std::stod(list.substr(from, comma - from)));
        from = comma + 1;
      }
    }
    else if (a == "--json") json_path = value();
    else if (a == "--quick") quick = true;
    else if (a == "--sizes") {
      std::string list = value();
      for (std::size_t from = 0; from <= list.size();) {
        const std::size_t comma = std::min(list.find(',', from), list.size());
        sizes.push_back(static_cast<std::size_t>(std::stod(list.substr(from, comma - from))));
        from = comma + 1;
      }
    } else {
      fmt::print(stderr, "usage: bench_nbody_tree [--backend cpu|cuda] [--sizes N,...] [--theta T,T,...] [--json FILE] [--quick]\n");
      return 2;
    }
  }
  if (thetas.empty()) thetas = {0.5};
  if (sizes.empty())
    sizes = quick ? std::vector<std::size_t>{16384, 131072}
                  : (backend == "cuda" ? std::vector<std::size_t>{65536, 262144, 1048576, 10000000, 67108864}
                                       : std::vector<std::size_t>{16384, 131072, 1048576});
  nbkit::nbody::ForceOptions tree;
  tree.backend = nbkit::parse_backend(backend);
  tree.method = nbkit::nbody::GravityMethod::tree;
  tree.softening = 1e-3;
  nbkit::nbody::ForceOptions pairs = tree;
  pairs.method = nbkit::nbody::GravityMethod::all_pairs;
  nbkit::nbody::ForceEngine tree_engine(tree), pairs_engine(pairs);
  fmt::print("nbkit Barnes-Hut benchmark: {}; Plummer spheres, softening 1e-3;\n"
             "one force evaluation (median of 3 after one untimed), tree build, walk and copies included;\n"
             "errors against float64 all pairs on up to 2000 sampled bodies\n",
             tree_engine.description());
  const bool on_gpu = kCudaBuild && tree.backend == nbkit::Backend::cuda;
  if (on_gpu)
    fmt::print("\"on GPU\": bodies already in GPU memory (no staging, no copies), with potentials; \"step\": the same "
               "without potentials, a step's evaluation\n");
  fmt::print("{:>5} {:>10} {:>9} {:>10} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>11} {:>8}", "theta", "N", "tree s",
             "bodies/s", "build s", "walk s", "err 50%", "err 99%", "err 99.9%", "err max", "all pairs s", "speedup");
  if (on_gpu) fmt::print(" {:>9} {:>10} {:>9} {:>10}", "on GPU s", "bodies/s", "step s", "bodies/s");
  fmt::print("\n");
  nlohmann::json results = nlohmann::json::array();
  for (const std::size_t n : sizes) {
    const Bodies b = nbkit::nbody::plummer(n, 7);
    double pair_seconds = -1;  // measured once a size
    for (const double theta : thetas) {
    tree.tree.theta = theta;
    tree_engine = nbkit::nbody::ForceEngine(tree);
    Accelerations a;
    tree_engine.compute(b, a, true);
    std::vector<double> times;
    double build = 0, walk = 0;
    for (int r = 0; r < 3; ++r) {
      times.push_back(seconds_of([&] { tree_engine.compute(b, a, true); }));
      build += tree_engine.last_tree_timings().build / 3, walk += tree_engine.last_tree_timings().walk / 3;
    }
    std::sort(times.begin(), times.end());
    const double t = times[1];
    const std::size_t samples = std::max<std::size_t>(64, std::min<std::size_t>(2000, static_cast<std::size_t>(4e10 / static_cast<double>(n))));
    const std::vector<double> errors = sampled_errors(b, a, tree.softening, samples);
    // All pairs where one evaluation takes seconds at most (N^2 / rate: ~2e12/s on an H100, ~1e10/s on 2 cores).
    const double pair_rate_guess = tree.backend == nbkit::Backend::cuda ? 2e12 : 1e10;
    if (pair_seconds < 0) pair_seconds = 0;
    if (pair_seconds == 0 && static_cast<double>(n) * static_cast<double>(n) / pair_rate_guess < 3) {
      Accelerations p;
      pairs_engine.compute(b, p, true);
      pair_seconds = seconds_of([&] { pairs_engine.compute(b, p, true); });
    }
    fmt::print("{:>5} {:>10} {:>9.4f} {:>10.3g} {:>9.4f} {:>9.4f} {:>9.2e} {:>9.2e} {:>9.2e} {:>9.2e} {:>11} {:>8}", theta,
               n, t, static_cast<double>(n) / t, build, walk, percentile(errors, 0.5), percentile(errors, 0.99),
               percentile(errors, 0.999), errors.back(), pair_seconds > 0 ? fmt::format("{:.4f}", pair_seconds) : "-",
               pair_seconds > 0 ? fmt::format("{:.1f}x", pair_seconds / t) : "-");
    nlohmann::json row = {{"n", n}, {"theta", theta}, {"tree_seconds", t}, {"bodies_per_second", static_cast<double>(n) / t},
                          {"build_seconds", build}, {"walk_seconds", walk}, {"error_p50", percentile(errors, 0.5)},
                          {"error_p99", percentile(errors, 0.99)}, {"error_p999", percentile(errors, 0.999)},
                          {"error_max", errors.back()}, {"samples", errors.size()}, {"all_pairs_seconds", pair_seconds}};
#if NBKIT_BENCH_CUDA
    if (on_gpu) {
      const BodiesOnGpu resident(b);
      tree_engine.compute_on_device(resident.view(true));  // untimed
      const double with = median_of_3([&] { tree_engine.compute_on_device(resident.view(true)); });
      const double step = median_of_3([&] { tree_engine.compute_on_device(resident.view(false)); });
      fmt::print(" {:>9.4f} {:>10.3g} {:>9.4f} {:>10.3g}", with, static_cast<double>(n) / with, step,
                 static_cast<double>(n) / step);
      row["on_gpu_seconds"] = with, row["on_gpu_bodies_per_second"] = static_cast<double>(n) / with;
      row["step_seconds"] = step, row["step_bodies_per_second"] = static_cast<double>(n) / step;
    }
#endif
    fmt::print("\n");
    std::fflush(stdout);
    results.push_back(row);
    }
  }
  if (tree.backend == nbkit::Backend::cuda)
    fmt::print("peer (published): Ryoanji, one A100, 67.1M bodies, theta 0.5, quadrupoles: 62.2e6 bodies/s; an H100 "
               "has ~2.5x an A100's float32 rate (target 150e6)\n");
  if (!json_path.empty()) {
    std::ofstream out(json_path);
    out << nlohmann::json{{"benchmark", "nbody_tree"}, {"engine", tree_engine.description()},
                          {"results", results}}
               .dump(2)
        << "\n";
  }
  return 0;
}
