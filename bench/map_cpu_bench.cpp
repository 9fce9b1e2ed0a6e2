// Benchmark of CPU potential maps: atom-lattice evaluations per second of the fast path
// (1 thread and all threads) against the slides' plain scalar loop measured in the same
// run, with the float32 accuracy against the float64 reference on sampled rows.
//
//   bench_map_cpu [--json FILE] [--quick]
//
// Prints a table; writes the same numbers as JSON.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <vector>

#include "nbkit/core/backend.hpp"
#include "nbkit/maps.hpp"
#include "bench_args.hpp"
#include "test_support.hpp"

namespace {

using Clock = std::chrono::steady_clock;

// The slides' "Single Slice DCS: Simple (Slow) C Version" (seed 000; Stone et al. 2007),
// as written there: atoms as (x, y, z, q) floats, one plane at a time, q / sqrtf(r^2).
// The project's usual flags (-O3, no -ffast-math), so the float sum stays in order and
// the loop stays scalar, as a user's plain C loop would.
__attribute__((noinline)) void cenergy(float* energygrid, int gx, int gy, int k, float gridspacing, float z,
                                       const float* atoms, int numatoms) {
  const int atomarrdim = numatoms * 4;
  for (int j = 0; j < gy; j++) {
    const float y = gridspacing * static_cast<float>(j);
    for (int i = 0; i < gx; i++) {
      const float x = gridspacing * static_cast<float>(i);
      float energy = 0.0f;
      for (int n = 0; n < atomarrdim; n += 4) {
        const float dx = x - atoms[n];
        const float dy = y - atoms[n + 1];
        const float dz = z - atoms[n + 2];
        energy += atoms[n + 3] / sqrtf(dx * dx + dy * dy + dz * dz);
      }
      energygrid[gx * gy * k + gx * j + i] = energy;
    }
  }
}

// The same plain loop for the Debye-Hueckel law (the slides' MDH kernel, seed 000, written
// for one CPU thread): atoms as (x, y, z, q, a).
__attribute__((noinline)) void mdh_energy(float* energygrid, int gx, int gy, int k, float gridspacing, float z,
                                          const float* atoms, int numatoms, float kappa) {
  for (int j = 0; j < gy; j++) {
    const float y = gridspacing * static_cast<float>(j);
    for (int i = 0; i < gx; i++) {
      const float x = gridspacing * static_cast<float>(i);
      float energy = 0.0f;
      for (int n = 0; n < numatoms * 5; n += 5) {
        const float dx = x - atoms[n], dy = y - atoms[n + 1], dz = z - atoms[n + 2];
        const float dist = sqrtf(dx * dx + dy * dy + dz * dz);
        energy += atoms[n + 3] * expf(-kappa * (dist - atoms[n + 4])) / ((1.0f + kappa * atoms[n + 4]) * dist);
      }
      energygrid[gx * gy * k + gx * j + i] = energy;
    }
  }
}

template <class F>
double median_seconds(int repeats, F&& f) {
  std::vector<double> times;
  for (int r = 0; r < repeats; ++r) {
    const auto start = Clock::now();
    f();
    times.push_back(std::chrono::duration<double>(Clock::now() - start).count());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

struct Case {
  std::size_t atoms;
  std::array<std::int64_t, 3> dims;
};

}  // namespace

int main(int argc, char** argv) {
  const auto parsed = nbkit::bench::parse_bench_args(argc, argv, "bench_map_cpu");
  if (!parsed) return 2;
  const std::string json_path = parsed->json_path;
  const bool quick = parsed->quick;
  const int threads = nbkit::hardware_threads();
  const int repeats = quick ? 1 : 3;
  const std::vector<Case> cases = {{1000, {96, 96, 128}}, {10000, {48, 48, 128}}, {100000, {16, 16, 128}}};
  nlohmann::json results = nlohmann::json::array();
  fmt::print("nbkit CPU map benchmark: SIMD {}, {} threads, lattice spacing 0.5 A, random atoms in a 40 A cube\n",
             nbkit::simd_target(), threads);
  fmt::print("{:>7} {:>6} {:>12} {:>12} {:>12} {:>12} {:>9} {:>9} {:>10}\n", "atoms", "method", "lattice", "scalar/s",
             "fast 1T/s", "fast all/s", "1T/scalar", "per core", "rel RMS");
  for (const Case& c : cases) {
    const nbkit::Atoms atoms = nbkit::test::random_atoms(c.atoms, {0, 0, 0}, {40, 40, 40}, 42);
    nbkit::Lattice lattice;
    lattice.spacing = 0.5;
    lattice.dims = c.dims;
    lattice.origin = {20 - 0.25 * (c.dims[0] - 1), 20 - 0.25 * (c.dims[1] - 1), 20 - 0.25 * (c.dims[2] - 1)};

    // Scalar loops: a gx x gy slab of one plane in the slides' layout (x fastest); atoms
    // relative to the origin.
    std::vector<float> coulomb_atoms, mdh_atoms;
    for (std::size_t n = 0; n < atoms.size(); ++n) {
      const float p[5] = {static_cast<float>(atoms.x[n] - lattice.origin.x), static_cast<float>(atoms.y[n] - lattice.origin.y),
                          static_cast<float>(atoms.z[n] - lattice.origin.z), static_cast<float>(atoms.charge[n]),
                          static_cast<float>(atoms.radius[n])};
      coulomb_atoms.insert(coulomb_atoms.end(), p, p + 4);
      mdh_atoms.insert(mdh_atoms.end(), p, p + 5);
    }
    const int gx = static_cast<int>(c.dims[2]), gy = quick ? 2 : 4;
    std::vector<float> grid(static_cast<std::size_t>(gx) * gy);
    for (nbkit::MapMethod method : {nbkit::MapMethod::direct, nbkit::MapMethod::mdh}) {
      nbkit::MapOptions options;
      options.method = method;
      options.backend = nbkit::Backend::cpu;
      if (method == nbkit::MapMethod::mdh) options.dielectric = 78.54;
      nbkit::Map map;
      options.threads = 1;
      nbkit::MapStats one{}, all{};
      nbkit::Lattice one_lattice = lattice;
      one_lattice.dims[0] = std::max<std::int64_t>(1, lattice.dims[0] / threads);  // similar run time
      median_seconds(1, [&] { nbkit::compute_map(atoms, one_lattice, options, &one); });  // warm-up
      const double one_seconds = median_seconds(repeats, [&] { nbkit::compute_map(atoms, one_lattice, options, &one); });
      options.threads = threads;
      const double all_seconds = median_seconds(repeats, [&] { map = nbkit::compute_map(atoms, lattice, options, &all); });
      const double one_rate = one.evaluations / one_seconds, all_rate = all.evaluations / all_seconds;

      // Accuracy on sampled rows against the float64 reference.
      nbkit::MapOptions reference = options;
      reference.backend = nbkit::Backend::reference;
      const std::int64_t rows = quick ? 2 : 8, nz = lattice.dims[2];
      std::vector<double> exact(static_cast<std::size_t>(rows * nz)), fast;
      const std::int64_t first = lattice.rows() / 2;
      nbkit::compute_map_rows(atoms, lattice, reference, first, first + rows, exact.data());
      fast.assign(map.values.begin() + first * nz, map.values.begin() + (first + rows) * nz);
      const double error = nbkit::test::relative_rms(fast, exact);

      const float kappa = static_cast<float>(nbkit::screening_kappa(options));
      const double scalar_seconds = median_seconds(repeats, [&] {
        if (method == nbkit::MapMethod::direct)
          cenergy(grid.data(), gx, gy, 0, 0.5f, 3.0f, coulomb_atoms.data(), static_cast<int>(atoms.size()));
        else
          mdh_energy(grid.data(), gx, gy, 0, 0.5f, 3.0f, mdh_atoms.data(), static_cast<int>(atoms.size()), kappa);
      });
      const double scalar_rate = static_cast<double>(gx) * gy * atoms.size() / scalar_seconds;
      const double per_core = one_rate / scalar_rate;
      fmt::print("{:>7} {:>6} {:>12} {:>12.3e} {:>12.3e} {:>12.3e} {:>9.1f} {:>9.1f} {:>10.1e}\n", c.atoms,
                 nbkit::to_string(method), fmt::format("{}x{}x{}", c.dims[0], c.dims[1], c.dims[2]), scalar_rate,
                 one_rate, all_rate, per_core, all_rate / threads / scalar_rate, error);
      results.push_back({{"atoms", c.atoms},
                         {"method", nbkit::to_string(method)},
                         {"lattice", c.dims},
                         {"scalar_loop_evaluations_per_second", scalar_rate},
                         {"fast_1_thread_evaluations_per_second", one_rate},
                         {"fast_all_threads_evaluations_per_second", all_rate},
                         {"threads", threads},
                         {"speedup_per_core_vs_scalar", per_core},
                         {"relative_rms_error_float32", error},
                         {"simd_target", nbkit::simd_target()}});
    }
  }
  fmt::print("scalar: the slides' plain C loop for the same law (1 thread, -O3, no fast-math); 1T/scalar: fast path\n"
             "on 1 thread over the scalar loop; per core: all threads / threads / scalar; rel RMS: float32 against\n"
             "the float64 reference on sampled rows.\n");
  if (!json_path.empty()) {
    std::ofstream(json_path) << nlohmann::json{{"benchmark", "map_cpu"}, {"results", results}}.dump(2) << "\n";
    fmt::print("wrote {}\n", json_path);
  }
  return 0;
}
