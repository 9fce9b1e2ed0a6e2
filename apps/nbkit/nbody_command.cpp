// nbkit nbody: a gravitational N-body run (Plummer sphere, leapfrog) with diagnostics.
#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>

#include "command.hpp"
#include "nbkit/core/error.hpp"
#include "nbkit/core/progress.hpp"
#include "nbkit/io/atomic_file.hpp"
#include "nbkit/nbody.hpp"
#include "options.hpp"

namespace nbkit::cli {

namespace {

struct NbodyArguments {
  std::size_t plummer = 0;
  std::uint64_t seed = 1;
  double softening = 0.01, dt = 1.0 / 128;
  std::optional<long long> steps;
  std::optional<double> time;
  int every = 1;
  std::string output = "nbody-out", backend = "auto", precision = "single";
  int threads = 0;
  bool quiet = false;
};

int run_nbody(const NbodyArguments& args) {
  if (args.plummer == 0) throw Error("--plummer N: give the number of bodies (initial conditions from files: not yet)");
  if (!(args.dt > 0) || !std::isfinite(args.dt)) throw Error(fmt::format("--dt must be positive, got {}", args.dt));
  if (args.steps && args.time) throw Error("--steps and --time both give the run's length: use one");
  if (args.every < 1) throw Error("--every must be at least 1");
  const long long steps = args.steps ? *args.steps
                          : args.time ? static_cast<long long>(std::llround(*args.time / args.dt))
                                      : static_cast<long long>(std::llround(2 * std::sqrt(2.0) / args.dt));
  if (steps < 0) throw Error("--steps must not be negative");
  nbody::ForceOptions options;
  options.softening = args.softening;
  options.backend = parse_backend(args.backend);
  options.precision = parse_precision(args.precision);
  options.threads = args.threads;
  std::string notice;
  if (options.backend == Backend::automatic) {
    options.backend = Backend::cpu;  // the GPU path is not in this version
    notice = "the N-body GPU path is not in this version; running on the CPU";
  }
  std::filesystem::create_directories(args.output);
  const std::string log_path = (std::filesystem::path(args.output) / "diagnostics.csv").string();
  io::check_writable(log_path);

  const auto start = std::chrono::steady_clock::now();
  nbody::Bodies bodies = nbody::plummer(args.plummer, args.seed);
  nbody::Accelerations acc;
  nbody::accelerations(bodies, options, acc);
  const nbody::Diagnostics first = nbody::diagnose(bodies, acc, 0);
  nbody::Diagnostics last = first;
  double worst = 0;
  io::write_atomically(log_path, [&](const std::string& temporary) {
    std::ofstream log(temporary);
    log << "# nbkit nbody: Henon units (G = M = 1, E = -1/4); Plummer sphere of " << args.plummer << " bodies, seed "
        << args.seed << ", softening " << args.softening << ", dt " << args.dt << ", leapfrog KDK\n";
    log << "time,kinetic,potential,total,relative_energy_error,px,py,pz,lx,ly,lz,virial_ratio\n";
    auto write = [&](const nbody::Diagnostics& d) {
      log << fmt::format("{:.9g},{:.17g},{:.17g},{:.17g},{:.6e},{:.6e},{:.6e},{:.6e},{:.6e},{:.6e},{:.6e},{:.9g}\n",
                         d.time, d.kinetic, d.potential, d.total, d.total / first.total - 1, d.momentum[0],
                         d.momentum[1], d.momentum[2], d.angular_momentum[0], d.angular_momentum[1],
                         d.angular_momentum[2], d.virial_ratio);
    };
    write(first);
    ProgressBar bar("nbody", !args.quiet);
    for (long long k = 1; k <= steps; ++k) {
      nbody::leapfrog_step(bodies, acc, args.dt, options);
      if (k % args.every == 0 || k == steps) {
        last = nbody::diagnose(bodies, acc, static_cast<double>(k) * args.dt);
        worst = std::max(worst, std::fabs(last.total / first.total - 1));
        write(last);
      }
      bar.update(static_cast<double>(k) / static_cast<double>(std::max(steps, 1LL)));
    }
    bar.finish();
    if (!log) throw Error(log_path + ": write failed");
  });
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!notice.empty() && !args.quiet) fmt::print(stderr, "nbkit: notice: {}\n", notice);
  if (!args.quiet) {
    const double interactions = static_cast<double>(args.plummer) * static_cast<double>(args.plummer) *
                                static_cast<double>(steps + 1);
    fmt::print("nbkit nbody: {} bodies, {} steps of {} to t = {:.4g}, {:.3f} s, {:.3g} interactions/s ({})\n",
               args.plummer, steps, args.dt, static_cast<double>(steps) * args.dt, seconds, interactions / seconds,
               options.backend == Backend::reference ? "float64 reference"
                                                     : fmt::format("CPU {}, {}", nbody::nbody_cpu_target_name(),
                                                                   to_string(options.precision)));
    fmt::print("  energy {:.9g} -> {:.9g}, largest |dE/E| {:.2e}, virial ratio {:.3f} -> {:.3f}; log {}\n", first.total,
               last.total, worst, first.virial_ratio, last.virial_ratio, log_path);
  }
  return 0;
}

}  // namespace

Action setup_nbody(CLI::App& app) {
  auto args = std::make_shared<NbodyArguments>();
  app.description(
      "Gravitational N-body run in Henon units (G = M = 1, E = -1/4): all-pairs Plummer-softened gravity, "
      "kick-drift-kick leapfrog, diagnostics (energies, momentum, angular momentum, virial ratio) in a CSV log.\n"
      "Example: nbkit nbody --plummer 4096 --softening 0.01 --dt 0.0078125 --time 2.83 -o run");
  app.add_option("--plummer", args->plummer, "initial conditions: a Plummer sphere of N bodies")->required();
  app.add_option("--seed", args->seed, "random seed of the initial conditions")->capture_default_str();
  app.add_option("--softening", args->softening, "Plummer softening length eps (N-body units)")->capture_default_str();
  app.add_option("--dt", args->dt, "time step (N-body units)")->capture_default_str();
  app.add_option("--steps", args->steps, "number of steps (default: one crossing time, 2 sqrt 2)");
  app.add_option("--time", args->time, "length of the run (N-body units) instead of --steps");
  app.add_option("--every", args->every, "diagnostics every K steps")->capture_default_str();
  app.add_option("-o,--output", args->output, "output directory (diagnostics.csv)")->capture_default_str();
  app.add_option("--backend", args->backend, "auto, cpu or reference (float64, slow)")->capture_default_str();
  app.add_option("--precision", args->precision, "single (float32 forces, float64 sums) or double")->capture_default_str();
  app.add_option("--threads", args->threads, "CPU threads (0: all)")->capture_default_str();
  app.add_flag("-q,--quiet", args->quiet, "no progress bar, no summary");
  return [args]() { return run_nbody(*args); };
}

}  // namespace nbkit::cli
