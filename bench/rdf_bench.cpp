// Benchmark of g(r): the oxygen-oxygen g(r) of a 100,000-atom water box (33,334 molecules at
// 0.0334 per A^3, a 99.9 A cube; oxygens on a jittered lattice, each frame jittered anew), rmax
// 15 A in 150 bins, on the CPU (every thread) and on the GPUs, measured in the same run. Rates:
// frames/s, distances computed per second (the cell lists' candidates), and all-pairs-equivalent
// pairs per second (nA (nA - 1) per frame over the time: the "1.1e12 pair distances" for
// 1,000 frames), with the time for 1,000 frames extrapolated, and the GPU/CPU ratio.
// MDAnalysis's InterRDF on the same box is bench/rdf_mdanalysis.py (not on the GPU machine).
//   bench_rdf [--json FILE] [--quick]
#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <vector>

#include "bench_args.hpp"
#include "nbkit/analysis.hpp"
#include "nbkit/core/backend.hpp"

namespace {

using nbkit::analysis::AtomTable;

struct Box {
  AtomTable table;
  double edge = 0;
  std::vector<std::vector<float>> x, y, z;  // per frame
};

Box water_box(int molecules, int frames) {
  Box box;
  box.edge = std::cbrt(molecules / 0.0334);
  const int n = static_cast<int>(std::ceil(std::cbrt(static_cast<double>(molecules))));
  const double spacing = box.edge / n;
  std::mt19937 rng(2011);
  std::vector<int> sites(n * n * n);
  for (int i = 0; i < n * n * n; ++i) sites[i] = i;
  std::shuffle(sites.begin(), sites.end(), rng);
  sites.resize(molecules);
  for (int m = 0; m < molecules; ++m)
    for (const char* name : {"OW", "HW1", "HW2"}) {
      box.table.name.push_back(name);
      box.table.residue_name.push_back("WAT");
      box.table.element.push_back(name[0] == 'O' ? "O" : "H");
      box.table.residue_number.push_back(m + 1);
      box.table.residue.push_back(m);
      box.table.molecule.push_back(m);
    }
  std::normal_distribution<double> jitter(0, 0.25);
  for (int f = 0; f < frames; ++f) {
    std::vector<float> x, y, z;
    for (int m = 0; m < molecules; ++m) {
      const int s = sites[m];
      const double o[3] = {(s / (n * n) + 0.5) * spacing + jitter(rng), (s / n % n + 0.5) * spacing + jitter(rng),
                           (s % n + 0.5) * spacing + jitter(rng)};
      const double h[2][3] = {{0.9572, 0, 0}, {-0.2400, 0.9266, 0}};  // 104.52 degrees
      x.push_back(static_cast<float>(o[0])), y.push_back(static_cast<float>(o[1])), z.push_back(static_cast<float>(o[2]));
      for (const auto& d : h)
        x.push_back(static_cast<float>(o[0] + d[0])), y.push_back(static_cast<float>(o[1] + d[1])),
            z.push_back(static_cast<float>(o[2] + d[2]));
    }
    box.x.push_back(std::move(x)), box.y.push_back(std::move(y)), box.z.push_back(std::move(z));
  }
  return box;
}

struct Timing {
  double seconds = 0;
  nbkit::analysis::RdfResult result;
};

Timing time_rdf(const Box& box, nbkit::Backend backend) {
  nbkit::analysis::RdfOptions options;
  options.rmax = 15, options.bins = 150, options.backend = backend;
  const auto oxygens = nbkit::analysis::select_atoms(box.table, "name OW");
  nbkit::analysis::Rdf rdf(box.table, oxygens, oxygens, options);
  const auto cell = nbkit::analysis::cell_from_lengths_angles(box.edge, box.edge, box.edge, 90, 90, 90);
  // One frame first (the GPUs' buffers, the OpenMP team), then the timed frames.
  rdf.add_frame(box.x[0].data(), box.y[0].data(), box.z[0].data(), cell);
  Timing t;
  nbkit::analysis::Rdf timed(box.table, oxygens, oxygens, options);
  const auto start = std::chrono::steady_clock::now();
  for (std::size_t f = 0; f < box.x.size(); ++f) timed.add_frame(box.x[f].data(), box.y[f].data(), box.z[f].data(), cell);
  t.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  t.result = timed.result();
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  const auto args = nbkit::bench::parse_bench_args(argc, argv, "bench_rdf");
  if (!args) return 2;
  const int molecules = 33334;
  const int cpu_frames = args->quick ? 2 : 5, gpu_frames = args->quick ? 20 : 100;
  const bool gpu = !nbkit::list_gpus().empty();
  const Box box = water_box(molecules, gpu ? gpu_frames : cpu_frames);
  Box cpu_box = box;
  cpu_box.x.resize(cpu_frames), cpu_box.y.resize(cpu_frames), cpu_box.z.resize(cpu_frames);
  const double na = molecules;
  fmt::print("g(r) O-O of {} water molecules ({} atoms) in a {:.1f} A cube, rmax 15 A, 150 bins\n", molecules,
             3 * molecules, box.edge);
  fmt::print("{:<34} {:>7} {:>10} {:>14} {:>16} {:>14}\n", "backend", "frames", "frames/s", "distances/s",
             "all-pairs eq./s", "1,000 frames");
  nlohmann::json json = {{"molecules", molecules}, {"edge", box.edge}, {"rmax", 15}, {"bins", 150}};
  std::vector<Timing> timings;
  for (const auto backend : {nbkit::Backend::cpu, nbkit::Backend::cuda}) {
    if (backend == nbkit::Backend::cuda && !gpu) continue;
    const Timing t = time_rdf(backend == nbkit::Backend::cpu ? cpu_box : box, backend);
    const double frames = static_cast<double>(t.result.frames);
    const double rate = frames / t.seconds;
    fmt::print("{:<34} {:>7} {:>10.2f} {:>14.3e} {:>16.3e} {:>12.2f} s\n", t.result.detail, t.result.frames, rate,
               static_cast<double>(t.result.distances) / t.seconds, na * (na - 1) * rate, 1000 / rate);
    json[nbkit::to_string(backend)] = {{"detail", t.result.detail}, {"frames", t.result.frames}, {"seconds", t.seconds},
                                       {"distances_per_second", static_cast<double>(t.result.distances) / t.seconds},
                                       {"all_pairs_equivalent_per_second", na * (na - 1) * rate}};
    timings.push_back(t);
  }
  if (timings.size() == 2) {
    const double ratio = (timings[1].result.frames / timings[1].seconds) / (timings[0].result.frames / timings[0].seconds);
    fmt::print("GPU / CPU: {:.1f}x\n", ratio);
    json["gpu_over_cpu"] = ratio;
    // The same histogram both ways on the first frames (the GPU test checks it exactly).
  }
  if (!args->json_path.empty()) std::ofstream(args->json_path) << json.dump(2) << "\n";
  return 0;
}
