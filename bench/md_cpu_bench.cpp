// Benchmark of MD on the CPU: atom-steps per second of LAMMPS's in.lj (fcc at density
// 0.8442, T 1.44, lj/cut 2.5, skin 0.3, NVE, dt 0.005, 100 steps) with nbkit's neighbour-list
// path on one thread and on all, beside LAMMPS itself (Debian's lmp, its own in.lj input:
// serial, and on all cores: -sf omp where lmp has the OPENMP package, else MPI ranks)
// measured in the same run.
// LAMMPS's rate is from its "Loop time" (the 100 steps, setup excluded), nbkit's likewise.
//   bench_md_cpu [--json FILE] [--quick]      (--quick: 32,000 atoms only; else also 864,000)
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <unistd.h>

#include "bench_args.hpp"
#include "nbkit/core/backend.hpp"
#include "nbkit/md.hpp"

namespace {

using Clock = std::chrono::steady_clock;

// Seconds of nbkit's 100 steps of in.lj with `replicas` copies of the 20^3-cell box per axis.
double nbkit_seconds(int replicas, int threads, std::int64_t* builds) {
  using namespace nbkit::md;
  System s = fcc_lattice(0.8442, 20 * replicas, 20 * replicas, 20 * replicas);
  assign_velocities(s, 1.44, 87287);
  const ForceField f = ForceField::mixed({1.0}, {1.0}, 2.5);
  NeighborList list(2.5, 0.3);
  list.build(s, f);
  Forces forces;
  forces_cpu(s, f, list, forces, threads);
  const auto start = Clock::now();
  for (int step = 0; step < 100; ++step) verlet_step(s, forces, f, list, 0.005, threads);
  *builds = list.builds();
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// LAMMPS's loop time for in.lj, or nothing when lmp is missing or fails. On several threads:
// the OPENMP package (-sf omp) where the build has it, else as many MPI ranks (Debian's
// lammps has no OPENMP package); `how` says which ran.
// `checked`: nbkit's rebuild policy (neigh_modify every 1 delay 0 check yes: rebuilt when an
// atom has moved half the skin) instead of in.lj's every 20 steps unchecked.
std::optional<double> lammps_seconds(int replicas, int threads, std::string* how = nullptr, bool checked = false) {
  if (std::system("command -v lmp >/dev/null 2>&1") != 0) return std::nullopt;
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / fmt::format("nbkit-bench-md-{}", ::getpid());
  std::filesystem::create_directories(dir);
  std::ofstream((dir / "in.lj").string())
      << "# LAMMPS's bench/in.lj\nvariable x index 1\nvariable y index 1\nvariable z index 1\n"
         "variable xx equal 20*$x\nvariable yy equal 20*$y\nvariable zz equal 20*$z\n"
         "units lj\natom_style atomic\nlattice fcc 0.8442\nregion box block 0 ${xx} 0 ${yy} 0 ${zz}\n"
         "create_box 1 box\ncreate_atoms 1 box\nmass 1 1.0\nvelocity all create 1.44 87287 loop geom\n"
         "pair_style lj/cut 2.5\npair_coeff 1 1 1.0 1.0 2.5\nneighbor 0.3 bin\n"
      << (checked ? "neigh_modify delay 0 every 1 check yes\n" : "neigh_modify delay 0 every 20 check no\n")
      << "fix 1 all nve\nrun 100\n";
  auto run = [&](const std::string& launcher, const std::string& accelerate) -> std::optional<double> {
    const std::string command =
        fmt::format("cd {} && OMP_NUM_THREADS={} {}lmp -in in.lj -var x {} -var y {} -var z {}{} -log log.lammps "
                    "-screen none -nocite > /dev/null 2>&1",
                    dir.string(), threads > 1 && accelerate.empty() ? 1 : threads, launcher, replicas, replicas, replicas,
                    accelerate);
    if (std::system(command.c_str()) != 0) return std::nullopt;
    std::ifstream log((dir / "log.lammps").string());
    std::string line;
    std::optional<double> seconds;
    while (std::getline(log, line))
      if (line.rfind("Loop time of ", 0) == 0) seconds = std::stod(line.substr(13));
    return seconds;
  };
  std::optional<double> seconds;
  if (threads <= 1) {
    seconds = run("", "");
    if (how) *how = "serial";
  } else if ((seconds = run("", fmt::format(" -sf omp -pk omp {}", threads)))) {
    if (how) *how = fmt::format("-sf omp, {} threads", threads);
  } else if (std::system("command -v mpirun >/dev/null 2>&1") == 0 &&
             (seconds = run(fmt::format("mpirun --allow-run-as-root --oversubscribe -np {} ", threads), ""))) {
    if (how) *how = fmt::format("{} MPI ranks (no OPENMP package in this lmp)", threads);
  }
  std::filesystem::remove_all(dir);
  return seconds;
}

}  // namespace

int main(int argc, char** argv) {
  const auto parsed = nbkit::bench::parse_bench_args(argc, argv, "bench_md_cpu");
  if (!parsed) return 2;
  const int threads = nbkit::hardware_threads();
  fmt::print("nbkit CPU MD benchmark: LAMMPS's in.lj (lj/cut 2.5, skin 0.3, NVE, 100 steps), {} threads;\n"
             "atom-steps per second of the 100 steps (setup excluded), nbkit beside LAMMPS in the same run\n",
             threads);
  fmt::print("{:>9} {:>13} {:>13} {:>13} {:>13} {:>10} {:>14} {:>10}\n", "atoms", "nbkit 1 thr", "nbkit all",
             "LAMMPS 1 proc", "LAMMPS all", "x LAMMPS", "LAMMPS checked", "x checked");
  std::string how;
  nlohmann::json results = nlohmann::json::array();
  for (const int replicas : parsed->quick ? std::vector<int>{1} : std::vector<int>{1, 3}) {
    const double atoms = 32000.0 * replicas * replicas * replicas;
    std::int64_t builds = 0;
    const double one = atoms * 100 / nbkit_seconds(replicas, 1, &builds);
    const double all = atoms * 100 / nbkit_seconds(replicas, threads, &builds);
    const auto lammps_one = lammps_seconds(replicas, 1), lammps_all = lammps_seconds(replicas, threads, &how);
    const auto lammps_checked = lammps_seconds(replicas, threads, nullptr, true);
    const double l1 = lammps_one ? atoms * 100 / *lammps_one : 0, la = lammps_all ? atoms * 100 / *lammps_all : 0;
    const double lc = lammps_checked ? atoms * 100 / *lammps_checked : 0;
    fmt::print("{:>9.0f} {:>13.3e} {:>13.3e} {:>13} {:>13} {:>10} {:>14} {:>10}\n", atoms, one, all,
               lammps_one ? fmt::format("{:.3e}", l1) : "n/a", lammps_all ? fmt::format("{:.3e}", la) : "n/a",
               lammps_all ? fmt::format("{:.2f}", all / la) : "n/a", lammps_checked ? fmt::format("{:.3e}", lc) : "n/a",
               lammps_checked ? fmt::format("{:.2f}", all / lc) : "n/a");
    results.push_back({{"atoms", atoms},
                       {"threads", threads},
                       {"nbkit_one_thread_atom_steps_per_second", one},
                       {"nbkit_all_threads_atom_steps_per_second", all},
                       {"nbkit_list_builds", builds},
                       {"lammps_one_thread_atom_steps_per_second", l1},
                       {"lammps_all_cores_atom_steps_per_second", la},
                       {"lammps_all_cores_how", how},
                       {"lammps_all_cores_checked_atom_steps_per_second", lc}});
  }
  fmt::print("LAMMPS all: {}.\n", how.empty() ? "did not run" : how);
  fmt::print("x LAMMPS: nbkit on all threads over LAMMPS on all cores (the issue's CPU target: >= 1).\n"
             "nbkit rebuilds its list when an atom has moved half the skin (checked every step); LAMMPS's in.lj\n"
             "rebuilds every 20 steps unchecked; \"LAMMPS checked\" is LAMMPS on all cores with nbkit's policy\n"
             "(neigh_modify every 1 delay 0 check yes).\n");
  if (!parsed->json_path.empty()) {
    std::ofstream(parsed->json_path) << nlohmann::json{{"benchmark", "md_cpu"}, {"results", results}}.dump(2) << "\n";
    fmt::print("wrote {}\n", parsed->json_path);
  }
  return 0;
}
