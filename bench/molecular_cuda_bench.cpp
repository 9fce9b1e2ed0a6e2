// Benchmark of a biomolecular system's whole force evaluation on one GPU (issue 18): the solvated
// protein of bench/md_protein_bench.py (FKBP12 in TIP3P, 30,683 atoms; write it with
// `md_protein_bench.py NBKIT --write-system DIR`) and its periodic copies (md::replicate) to
// 122,732 (2x2x1) and 981,856 (4x4x2) atoms: OpenMM's benchmark sizes (DHFR 23,558, ApoA1
// 92,224, STMV 1,067,095) in one family. PME at tolerance 5e-4, 9 A cutoff, order 5, the
// dispersion correction, every bonded term; a 2 A list skin.
//  - the GPU (md::MolecularGpuForces) in mixed precision (float32 pairs, float64 sums) and in
//    float64: an evaluation's phases (positions up, bonded terms, the list check, the pairs with
//    the excluded pairs' PME correction, PME's mesh by its own phases, the per-atom sums, forces
//    down), the median of 10 after 3 to warm up, with the list kept; and a list rebuild (one atom
//    moved past half the skin), the median of 5;
//  - the peer, measured in this run: nbkit's CPU (md::MolecularCpuForces, every core, float64,
//    its cell list kept) on the same system, the median of 3 (one at the largest size), and the
//    GPU's speed-up over it; the mixed forces' RMS difference from float64, relative.
//   bench_molecular_cuda PRMTOP INPCRD [--json FILE] [--quick]   (--quick: the two smaller sizes)
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "bench_args.hpp"
#include "md/molecular_cpu.hpp"
#include "md/molecular_gpu.hpp"
#include "nbkit/core/error.hpp"
#include "nbkit/io/amber.hpp"
#include "nbkit/md/molecular_forces.hpp"

namespace {

using nbkit::Vec3;
using Clock = std::chrono::steady_clock;
namespace md = nbkit::md;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct GpuResult {
  md::MolecularGpuForces::Phases phases;  // medians
  double rebuild = 0;                     // the list phase of an evaluation that rebuilds it
  std::vector<Vec3> force;
  std::string description;
};

GpuResult run_gpu(const md::Topology& t, const std::vector<Vec3>& x, const nbkit::PeriodicBox& box,
                  const md::NonbondedSettings& s, bool single) {
  md::MolecularGpuForces gpu(t, s, 0, single, 2.0);
  gpu.time_phases();
  GpuResult r;
  r.description = gpu.description();
  std::vector<md::MolecularGpuForces::Phases> runs;
  for (int rep = 0; rep < 13; ++rep) {
    md::MolecularForces f = gpu.evaluate(x, box);
    if (rep == 0) r.force = std::move(f.force);
    if (rep >= 3) runs.push_back(gpu.phase_seconds());
  }
  auto med = [&](auto member) {
    std::vector<double> v;
    for (const auto& p : runs) v.push_back(p.*member);
    return median(v);
  };
  using P = md::MolecularGpuForces::Phases;
  r.phases.upload = med(&P::upload), r.phases.bonded = med(&P::bonded), r.phases.list = med(&P::list);
  r.phases.pairs = med(&P::pairs), r.phases.mesh = med(&P::mesh), r.phases.finish = med(&P::finish);
  r.phases.download = med(&P::download), r.phases.total = med(&P::total);
  for (int ph = 0; ph < 5; ++ph) {
    std::vector<double> v;
    for (const auto& p : runs) v.push_back(p.mesh_phases[ph]);
    r.phases.mesh_phases[ph] = median(v);
  }
  // Rebuilds: atom 1 moved 1.5 A (past half the 2 A skin) and back, alternately.
  std::vector<Vec3> moved = x;
  moved[0].x += 1.5;
  std::vector<double> builds;
  const std::int64_t before = gpu.list_builds();
  for (int rep = 0; rep < 5; ++rep) {
    gpu.evaluate(rep % 2 ? x : moved, box);
    builds.push_back(gpu.phase_seconds().list);
  }
  if (gpu.list_builds() != before + 5) throw nbkit::Error("the list was not rebuilt when an atom moved past the skin");
  r.rebuild = median(builds);
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: bench_molecular_cuda PRMTOP INPCRD [--json FILE] [--quick]\n");
    return 2;
  }
  const std::string prmtop = argv[1], inpcrd = argv[2];
  argv[2] = argv[0];
  const auto args = nbkit::bench::parse_bench_args(argc - 2, argv + 2, "bench_molecular_cuda PRMTOP INPCRD");
  if (!args) return 2;
  try {
    const md::Topology protein = nbkit::io::read_prmtop(prmtop);
    const md::Coordinates coordinates = nbkit::io::read_inpcrd(inpcrd, protein.size());
    const int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    md::NonbondedSettings s;
    s.method = md::NonbondedSettings::Method::pme, s.cutoff = 9, s.ewald_tolerance = 5e-4;
    std::vector<std::array<int, 3>> copies{{1, 1, 1}, {2, 2, 1}, {4, 4, 2}};
    if (args->quick) copies.pop_back();
    nlohmann::json results = nlohmann::json::array();
    std::string gpu_name;
    for (const auto& c : copies) {
      const md::Replicated r = md::replicate(protein, coordinates, c);
      const md::Topology& t = r.topology;
      const std::vector<Vec3>& x = r.coordinates.positions;
      const nbkit::PeriodicBox box = *r.coordinates.box;
      const GpuResult mixed = run_gpu(t, x, box, s, true);
      const GpuResult full = run_gpu(t, x, box, s, false);
      gpu_name = mixed.description.substr(0, mixed.description.find(','));
      double error = 0, size = 0;
      for (std::size_t i = 0; i < x.size(); ++i)
        error += std::pow(nbkit::norm(mixed.force[i] - full.force[i]), 2), size += std::pow(nbkit::norm(full.force[i]), 2);
      const double rms = std::sqrt(error / size);
      md::MolecularCpuForces cpu(t, s, nbkit::Backend::cpu, threads, 2.0);
      cpu.evaluate(x, box);  // builds the cell list
      std::vector<double> cpu_times;
      for (int rep = 0; rep < (c[0] * c[1] * c[2] > 8 ? 1 : 3); ++rep) {
        const auto start = Clock::now();
        cpu.evaluate(x, box);
        cpu_times.push_back(std::chrono::duration<double>(Clock::now() - start).count());
      }
      const double cpu_time = median(cpu_times);
      if (results.empty()) {
        std::printf("Solvated FKBP12 and its copies: PME (tolerance 5e-4, order 5), 9 A cutoff, dispersion "
                    "correction, 2 A skin; %s; CPU peer: %d threads, float64\n",
                    gpu_name.c_str(), threads);
        std::printf("%9s %7s | %7s %7s %7s %7s %7s %7s %7s | %8s %8s | %8s %7s | %9s\n", "atoms", "arith", "up",
                    "bonded", "check", "pairs", "PME", "sums", "down", "total ms", "rebuild", "CPU ms", "GPU x",
                    "mixed err");
      }
      for (const GpuResult* g : {&mixed, &full}) {
        const auto& p = g->phases;
        std::printf("%9zu %7s | %7.3f %7.3f %7.3f %7.3f %7.3f %7.3f %7.3f | %8.3f %8.3f | %8.1f %7.1f | %9.1e\n",
                    x.size(), g == &mixed ? "mixed" : "float64", 1e3 * p.upload, 1e3 * p.bonded, 1e3 * p.list,
                    1e3 * p.pairs, 1e3 * p.mesh, 1e3 * p.finish, 1e3 * p.download, 1e3 * p.total, 1e3 * g->rebuild,
                    1e3 * cpu_time, cpu_time / p.total, rms);
        std::printf("%9s %7s | %6.0f%% %6.0f%% %6.0f%% %6.0f%% %6.0f%% %6.0f%% %6.0f%% |\n", "", "share",
                    100 * p.upload / p.total, 100 * p.bonded / p.total, 100 * p.list / p.total,
                    100 * p.pairs / p.total, 100 * p.mesh / p.total, 100 * p.finish / p.total,
                    100 * p.download / p.total);
        results.push_back({{"atoms", x.size()},
                           {"copies", c},
                           {"arithmetic", g == &mixed ? "mixed" : "float64"},
                           {"gpu_seconds",
                            {{"upload", p.upload}, {"bonded", p.bonded}, {"list_check", p.list}, {"pairs", p.pairs},
                             {"pme", p.mesh}, {"pme_phases", p.mesh_phases}, {"sums", p.finish},
                             {"download", p.download}, {"total", p.total}}},
                           {"list_rebuild_seconds", g->rebuild},
                           {"cpu_seconds", cpu_time},
                           {"cpu_threads", threads},
                           {"gpu_over_cpu_speedup", cpu_time / p.total},
                           {"mixed_force_rms_relative_to_float64", rms}});
      }
      // float32 positions (wrapped into the box) round separations to ~ulp(edge): ~1e-5 relative
      // at 100 A edges, growing with the box (OpenMM's mixed precision keeps float32 positions
      // too); a bug shows as 1e-3 or more.
      if (!(rms < 1e-4)) {
        std::fprintf(stderr, "mixed precision's forces differ from float64's by %.2e (relative RMS)\n", rms);
        return 1;
      }
    }
    if (!args->json_path.empty()) {
      std::ofstream out(args->json_path);
      out << nlohmann::json{{"gpu", gpu_name}, {"input", prmtop}, {"results", results}}.dump(2) << "\n";
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_molecular_cuda: %s\n", e.what());
    return 1;
  }
  return 0;
}
