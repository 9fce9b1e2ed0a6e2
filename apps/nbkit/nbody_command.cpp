// nbkit nbody: a gravitational N-body run (Plummer sphere, leapfrog) with diagnostics.
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <vector>

#include "command.hpp"
#include "nbkit/core/error.hpp"
#include "nbkit/core/progress.hpp"
#include "nbkit/core/resources.hpp"
#include "nbkit/io/atomic_file.hpp"
#include "nbkit/io/line_log.hpp"
#include "nbkit/io/nbody_pictures.hpp"
#include "nbkit/io/snapshot.hpp"
#include "nbkit/nbody.hpp"
#include "options.hpp"

namespace nbkit::cli {

namespace {

struct NbodyArguments {
  long long plummer = 0;
  std::uint64_t seed = 1;
  double softening = 0.01, dt = 1.0 / 128;
  std::optional<long long> steps;
  std::optional<double> time;
  int every = 1;
  long long snapshot_every = 0;
  std::string restart, initial;
  bool png = false;
  std::string output = "nbody-out", backend = "auto", precision = "single", gpus = "all";
  int threads = 0;
  bool quiet = false;
};

std::string snapshot_path(const std::string& directory, long long step) {
  return (std::filesystem::path(directory) / fmt::format("snapshot_{:08d}.hdf5", step)).string();
}

// The longest run accepted: 10^12 steps (a million years of a million-body step each second).
constexpr double kMaxSteps = 1e12;

long long run_steps(const NbodyArguments& args, double dt) {
  if (args.steps) {
    if (*args.steps < 0) throw Error(fmt::format("--steps must not be negative, got {}", *args.steps));
    if (static_cast<double>(*args.steps) > kMaxSteps)
      throw Error(fmt::format("--steps {}: more than the {:g} a run may take", *args.steps, kMaxSteps));
    return *args.steps;
  }
  const double time = args.time.value_or(2 * std::sqrt(2.0));
  if (!(time >= 0) || !std::isfinite(time)) throw Error(fmt::format("--time must be zero or positive, got {}", time));
  if (time / dt > kMaxSteps)
    throw Error(fmt::format("--time {} at --dt {} is {:.3g} steps, more than the {:g} a run may take", time, dt,
                            time / dt, kMaxSteps));
  return static_cast<long long>(std::llround(time / dt));
}

// Memory for the bodies and the force loops, disk for the snapshots and the log, before
// anything is made.
void check_resources(const NbodyArguments& args, std::size_t n, long long first_step, long long steps,
                     bool restarting) {
  ResourcePlan plan("nbkit nbody");
  plan.memory(nbody::run_memory_bytes(n), fmt::format("{} bodies", with_commas(static_cast<std::int64_t>(n))));
  const long long later = steps - first_step;
  long long snapshots = (restarting ? 0 : 1) + 1 + (args.snapshot_every > 0 ? later / args.snapshot_every : 0);
  if (io::snapshots_available())
    plan.disk(snapshot_path(args.output, 0), static_cast<std::uint64_t>(snapshots) * io::snapshot_file_bytes(n),
              fmt::format("{} snapshots", snapshots));
  plan.disk((std::filesystem::path(args.output) / "diagnostics.csv").string(),
            static_cast<std::uint64_t>(later / args.every + 2) * 256, "the diagnostics log");
  plan.check();
}

// A snapshot given as the initial conditions must not be among the snapshots this run writes.
void refuse_overwriting_input(const NbodyArguments& args, const std::string& input, long long first_step,
                              long long steps, bool restarting) {
  if (input.empty() || !std::filesystem::exists(args.output)) return;
  for (const std::filesystem::directory_entry& entry : std::filesystem::directory_iterator(args.output)) {
    long long step = -1;
    if (std::sscanf(entry.path().filename().c_str(), "snapshot_%lld.hdf5", &step) != 1) continue;
    const bool written = (step == 0 && !restarting) || step == steps ||
                         (step > first_step && step < steps && args.snapshot_every > 0 && step % args.snapshot_every == 0);
    if (written) io::check_distinct_files({{input, args.restart.empty() ? "--initial" : "--restart"}},
                                          {{entry.path().string(), "a snapshot of this run"}});
  }
  io::check_distinct_files({{input, "the initial snapshot"}},
                           {{(std::filesystem::path(args.output) / "diagnostics.csv").string(), "diagnostics.csv"},
                            {(std::filesystem::path(args.output) / "density.png").string(), "density.png"},
                            {(std::filesystem::path(args.output) / "energy.png").string(), "energy.png"}});
}

int run_nbody(const NbodyArguments& args) {
  const bool restarting = !args.restart.empty();
  const int sources = (args.plummer != 0) + restarting + !args.initial.empty();
  if (sources == 0)
    throw Error("give the initial conditions: --plummer N, --initial FILE.hdf5, or --restart SNAPSHOT to continue a run");
  if (sources > 1) throw Error("--plummer, --initial and --restart each give initial conditions: use one");
  if (args.plummer < 0 || args.plummer == 1)
    throw Error(fmt::format("--plummer {}: a Plummer sphere needs at least 2 bodies", args.plummer));
  if (args.steps && args.time) throw Error("--steps and --time both give the run's length: use one");
  if (args.every < 1) throw Error("--every must be at least 1");
  if (args.snapshot_every < 0) throw Error("--snapshot-every must not be negative");
  if (!(args.dt > 0) || !std::isfinite(args.dt)) throw Error(fmt::format("--dt must be positive, got {}", args.dt));
  const int threads = threads_option(args.threads, args.quiet);

  // Initial conditions: a new Plummer sphere, or the state a snapshot holds (its step,
  // time step, softening and seed continue the run bit for bit).
  nbody::Bodies bodies;
  io::SnapshotInfo state;
  const std::string input = restarting ? args.restart : args.initial;
  if (restarting) {
    bodies = io::read_snapshot(args.restart, &state);
  } else {
    state.dt = args.dt;
    state.softening = args.softening;
    state.seed = args.seed;
  }
  const double dt = state.dt;
  // --steps and --time count from the initial conditions, so a restart ends where the
  // uninterrupted run would.
  const long long steps = run_steps(args, dt);
  if (steps < state.step)
    throw Error(fmt::format("the run ends at step {}, before the snapshot's step {}", steps, state.step));
  if (!args.initial.empty()) bodies = io::read_snapshot(args.initial);
  const bool new_sphere = !restarting && args.initial.empty();
  check_resources(args, new_sphere ? static_cast<std::size_t>(args.plummer) : bodies.size(), state.step, steps,
                  restarting);
  refuse_overwriting_input(args, input, state.step, steps, restarting);
  if (new_sphere) bodies = nbody::plummer(static_cast<std::size_t>(args.plummer), args.seed);
  nbody::ForceOptions options;
  options.softening = state.softening;
  options.backend = parse_backend(args.backend);
  options.precision = parse_precision(args.precision);
  options.threads = threads;
  const std::vector<int> gpus = parse_gpus(args.gpus);
  options.gpus = options.backend == Backend::cpu || options.backend == Backend::reference ? std::vector<int>{} : gpus;
  ProgressBar bar("nbody", !args.quiet);
  double bar_base = 0, bar_span = 1;  // the fraction of the run one force evaluation covers
  options.progress = [&](double f) { bar.update(bar_base + bar_span * f); };
  std::string backend_notice;
  options.backend = resolve_backend(options.backend, &backend_notice);
  notice(backend_notice, args.quiet);
  nbody::ForceEngine forces(options);  // checks the options before anything is written
  notice(forces.notice(), args.quiet);
  std::filesystem::create_directories(args.output);
  const std::string log_path = (std::filesystem::path(args.output) / "diagnostics.csv").string();
  io::check_writable(log_path);

  const auto start = std::chrono::steady_clock::now();
  nbody::Accelerations acc;
  const long long first_step = state.step;
  const double run_steps_count = static_cast<double>(std::max(steps - first_step, 1LL)) + 1;
  bar_span = 1 / run_steps_count;
  forces.compute(bodies, acc, true);
  const nbody::Diagnostics first = nbody::diagnose(bodies, acc, static_cast<double>(state.step) * dt);
  if (!restarting) state.initial_energy = first.total;
  const double e0 = state.initial_energy;
  nbody::Diagnostics last = first;
  double worst = std::fabs(first.total / e0 - 1);
  std::vector<double> times, errors;
  // Without HDF5 in this build: no snapshots unless asked for (then an error up front).
  if (!io::snapshots_available() && args.snapshot_every > 0)
    throw Error("--snapshot-every: this build of nbkit has no HDF5 (apt-get install libhdf5-dev, then rebuild)");
  if (!io::snapshots_available() && !args.quiet)
    fmt::print(stderr, "nbkit: notice: this build has no HDF5: no snapshots are written\n");
  auto snapshot = [&](long long step) {
    if (!io::snapshots_available()) return;
    state.step = step;
    state.time = static_cast<double>(step) * dt;
    io::write_snapshot(snapshot_path(args.output, step), bodies, state);
  };
  // The log grows row by row (a run killed after hours keeps it); snapshots are atomic.
  {
    io::LineLog log(log_path);
    log.write(fmt::format("# nbkit nbody: Henon units (G = M = 1, E = -1/4); {} bodies, seed {}, softening {}, dt {}, "
                          "leapfrog KDK{}\n",
                          bodies.size(), state.seed, state.softening, dt,
                          restarting ? ", continued from " + args.restart : std::string()));
    log.write("time,kinetic,potential,total,relative_energy_error,px,py,pz,lx,ly,lz,virial_ratio\n");
    auto write = [&](const nbody::Diagnostics& d) {
      log.write(fmt::format("{:.9g},{:.17g},{:.17g},{:.17g},{:.6e},{:.6e},{:.6e},{:.6e},{:.6e},{:.6e},{:.6e},{:.9g}\n",
                            d.time, d.kinetic, d.potential, d.total, d.total / e0 - 1, d.momentum[0], d.momentum[1],
                            d.momentum[2], d.angular_momentum[0], d.angular_momentum[1], d.angular_momentum[2],
                            d.virial_ratio));
      times.push_back(d.time);
      errors.push_back(d.total / e0 - 1);
    };
    write(first);
    if (!restarting) snapshot(0);
    for (long long k = first_step + 1; k <= steps; ++k) {
      // Potentials only where the log needs them; the accelerations are the same bits either way.
      const bool diagnostics_step = k % args.every == 0 || k == steps;
      bar_base = static_cast<double>(k - first_step) / run_steps_count;
      nbody::leapfrog_step(bodies, acc, dt, forces, diagnostics_step);
      if (diagnostics_step) {
        last = nbody::diagnose(bodies, acc, static_cast<double>(k) * dt);
        if (!std::isfinite(last.total))
          throw Error(fmt::format("the energy is not finite at step {} (t = {:.6g}): the run diverged; a smaller --dt "
                                  "or a larger --softening keeps close encounters resolved",
                                  k, static_cast<double>(k) * dt));
        worst = std::max(worst, std::fabs(last.total / e0 - 1));
        write(last);
      }
      if ((args.snapshot_every > 0 && k % args.snapshot_every == 0) || k == steps) snapshot(k);
      bar.update(static_cast<double>(k - first_step + 1) / run_steps_count);
    }
    bar.finish();
  }
  if (args.png) {
    io::write_density_png((std::filesystem::path(args.output) / "density.png").string(), bodies, 2.0,
                          static_cast<double>(steps) * dt);
    io::write_energy_png((std::filesystem::path(args.output) / "energy.png").string(), times, errors);
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!args.quiet) {
    const double n = static_cast<double>(bodies.size());
    const double interactions = n * n * static_cast<double>(steps - first.time / dt + 1);
    fmt::print("nbkit nbody: {} bodies, steps {} to {} of {} (t = {:.4g}), {:.3f} s, {:.3g} interactions/s ({})\n",
               bodies.size(), static_cast<long long>(std::llround(first.time / dt)), steps, dt,
               static_cast<double>(steps) * dt, seconds, interactions / seconds,
               forces.description());
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
  app.add_option("--plummer", args->plummer, "initial conditions: a Plummer sphere of N bodies");
  app.add_option("--initial", args->initial,
                 "initial conditions from an HDF5 snapshot in the GADGET/SWIFT layout (PartType1 Coordinates, "
                 "Velocities, Masses), in N-body units");
  app.add_option("--restart", args->restart,
                 "continue from a snapshot (its time step, softening and seed); --steps/--time count from step 0");
  app.add_option("--seed", args->seed, "random seed of the initial conditions")->capture_default_str();
  app.add_option("--softening", args->softening, "Plummer softening length eps (N-body units)")->capture_default_str();
  app.add_option("--dt", args->dt, "time step (N-body units)")->capture_default_str();
  app.add_option("--steps", args->steps, "number of steps (default: one crossing time, 2 sqrt 2)");
  app.add_option("--time", args->time, "length of the run (N-body units) instead of --steps");
  app.add_option("--every", args->every, "diagnostics every K steps")->capture_default_str();
  app.add_option("--snapshot-every", args->snapshot_every,
                 "HDF5 snapshot (GADGET/SWIFT layout) every K steps; 0: the first and the last only")
      ->capture_default_str();
  app.add_flag("--png", args->png, "pictures: density.png (x-y projection of the last state) and energy.png");
  app.add_option("-o,--output", args->output, "output directory (diagnostics.csv, snapshot_*.hdf5, *.png)")
      ->capture_default_str();
  app.add_option("--backend", args->backend, "auto (the GPUs when usable, else the CPU), cuda, cpu or reference (float64, slow)")
      ->capture_default_str();
  app.add_option("--gpus", args->gpus, "GPUs to split the bodies over: all, a count N, or indices like 0,2")
      ->capture_default_str();
  app.add_option("--precision", args->precision, "single (float32 forces, float64 sums) or double")->capture_default_str();
  app.add_option("--threads", args->threads, "CPU threads (0: all)")->capture_default_str();
  app.add_flag("-q,--quiet", args->quiet, "no progress bar, no summary");
  return [args]() { return run_nbody(*args); };
}

}  // namespace nbkit::cli
