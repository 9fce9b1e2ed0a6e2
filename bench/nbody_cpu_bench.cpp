// Benchmark of N-body forces on the CPU: body-body interactions per second (and GFLOP/s at
// the conventional 20 flops per interaction) of nbkit's SIMD loop on 1 thread and on all,
// beside the plain scalar loop a user would write (float32, 1/sqrtf, compiled with the
// project's flags: no fast-math, so it stays scalar), measured in the same run.
//   bench_nbody_cpu [--json FILE] [--quick]
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <vector>

#include "bench_args.hpp"
#include "nbkit/core/backend.hpp"
#include "nbkit/nbody.hpp"

namespace {

using Clock = std::chrono::steady_clock;

// The plain loop: one body i against all j, float32, softened.
void scalar_forces(const std::vector<float>& x, const std::vector<float>& y, const std::vector<float>& z,
                   const std::vector<float>& m, std::size_t first, std::size_t last, float eps2, std::vector<float>& ax) {
  const std::size_t n = x.size();
  for (std::size_t i = first; i < last; ++i) {
    float fx = 0, fy = 0, fz = 0;
    for (std::size_t j = 0; j < n; ++j) {
      const float dx = x[j] - x[i], dy = y[j] - y[i], dz = z[j] - z[i];
      const float r2 = dx * dx + dy * dy + dz * dz + eps2;
      const float inv = 1.0f / std::sqrt(r2);
      const float s = m[j] * inv * inv * inv;
      fx += s * dx, fy += s * dy, fz += s * dz;
    }
    ax[i] = fx + fy + fz;
  }
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const auto parsed = nbkit::bench::parse_bench_args(argc, argv, "bench_nbody_cpu");
  if (!parsed) return 2;
  const int threads = nbkit::hardware_threads();
  fmt::print("nbkit CPU N-body benchmark: SIMD {}, {} threads; Plummer sphere, softening 0.01, float32 forces with\n"
             "float64 sums, one force evaluation (median of 3)\n",
             nbkit::nbody::nbody_cpu_target_name(), threads);
  fmt::print("{:>9} {:>13} {:>13} {:>13} {:>10} {:>10}\n", "N", "scalar loop", "1 thread", "all threads", "x scalar",
             "GFLOP/s");
  nlohmann::json results = nlohmann::json::array();
  for (const std::size_t n : parsed->quick ? std::vector<std::size_t>{4096, 16384}
                                           : std::vector<std::size_t>{4096, 16384, 131072}) {
    const nbkit::nbody::Bodies bodies = nbkit::nbody::plummer(n, 3);
    std::vector<float> x(n), y(n), z(n), m(n), out(n);
    for (std::size_t i = 0; i < n; ++i) x[i] = float(bodies.x[i]), y[i] = float(bodies.y[i]), z[i] = float(bodies.z[i]), m[i] = float(bodies.mass[i]);
    // The scalar loop on enough bodies i for ~2e8 interactions.
    const std::size_t rows = std::min<std::size_t>(n, std::max<std::size_t>(16, static_cast<std::size_t>(2e8 / n)));
    std::vector<double> scalar_times;
    for (int r = 0; r < 3; ++r) {
      const auto start = Clock::now();
      scalar_forces(x, y, z, m, 0, rows, 1e-4f, out);
      scalar_times.push_back(std::chrono::duration<double>(Clock::now() - start).count());
    }
    const double scalar_rate = static_cast<double>(rows) * n / median(scalar_times);
    auto rate = [&](int t) {
      nbkit::nbody::ForceOptions o;
      o.threads = t;
      nbkit::nbody::Accelerations acc;
      std::vector<double> times;
      for (int r = 0; r < 3; ++r) {
        const auto start = Clock::now();
        nbkit::nbody::accelerations(bodies, o, acc);
        times.push_back(std::chrono::duration<double>(Clock::now() - start).count());
      }
      return static_cast<double>(n) * n / median(times);
    };
    const double one = rate(1), all = rate(threads);
    fmt::print("{:>9} {:>13.3e} {:>13.3e} {:>13.3e} {:>10.1f} {:>10.1f}\n", n, scalar_rate, one, all, one / scalar_rate,
               all * 20 / 1e9);
    results.push_back({{"n", n},
                       {"scalar_loop_interactions_per_second", scalar_rate},
                       {"one_thread_interactions_per_second", one},
                       {"all_threads_interactions_per_second", all},
                       {"threads", threads},
                       {"simd_target", nbkit::nbody::nbody_cpu_target_name()}});
  }
  fmt::print("interactions/s counts N^2 pairs (self pairs included, as the CUDA sample counts them); x scalar: one\n"
             "thread over the scalar loop (the issue's target: 10 per core); GFLOP/s: all threads at 20 flops each.\n");
  if (!parsed->json_path.empty()) {
    std::ofstream(parsed->json_path) << nlohmann::json{{"benchmark", "nbody_cpu"}, {"results", results}}.dump(2) << "\n";
    fmt::print("wrote {}\n", parsed->json_path);
  }
  return 0;
}
