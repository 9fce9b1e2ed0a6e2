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
#include "nbkit/core/ranks.hpp"
#include "nbkit/core/progress.hpp"
#include "nbkit/core/resources.hpp"
#include "nbkit/io/atomic_file.hpp"
#include "nbkit/io/line_log.hpp"
#include "nbkit/io/nbody_pictures.hpp"
#include "nbkit/io/snapshot.hpp"
#include "nbkit/nbody.hpp"
#include "nbkit/nbody/simulation.hpp"
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
  std::string output = "nbody-out";
  std::string method = "all-pairs", multipole = "quadrupole";
  double theta = 0.5;
  RunOptions run;
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
  plan.memory(nbody::run_memory_bytes(n, nbody::parse_gravity_method(args.method)),
              fmt::format("{} bodies", with_commas(static_cast<std::int64_t>(n))));
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

// The initial conditions: a new Plummer sphere, or the state a snapshot holds (its step, time
// step, softening and seed continue the run bit for bit). A new sphere is made after the
// resource check (a billion bodies are refused before they are drawn).
struct InitialConditions {
  nbody::Bodies bodies;
  io::SnapshotInfo state;
  std::string input;  // the snapshot read, if any
  bool restarting = false, new_sphere = false;
};

InitialConditions initial_conditions(const NbodyArguments& args) {
  InitialConditions ic;
  ic.restarting = !args.restart.empty();
  const int sources = (args.plummer != 0) + ic.restarting + !args.initial.empty();
  if (sources == 0)
    throw Error("give the initial conditions: --plummer N, --initial FILE.hdf5, or --restart SNAPSHOT to continue a run");
  if (sources > 1) throw Error("--plummer, --initial and --restart each give initial conditions: use one");
  if (args.plummer < 0 || args.plummer == 1)
    throw Error(fmt::format("--plummer {}: a Plummer sphere needs at least 2 bodies", args.plummer));
  if (args.steps && args.time) throw Error("--steps and --time both give the run's length: use one");
  if (args.every < 1) throw Error("--every must be at least 1");
  if (args.snapshot_every < 0) throw Error("--snapshot-every must not be negative");
  if (!(args.dt > 0) || !std::isfinite(args.dt)) throw Error(fmt::format("--dt must be positive, got {}", args.dt));
  ic.input = ic.restarting ? args.restart : args.initial;
  if (ic.restarting) {
    ic.bodies = io::read_snapshot(args.restart, &ic.state);
  } else {
    ic.state.dt = args.dt;
    ic.state.softening = args.softening;
    ic.state.seed = args.seed;
  }
  ic.new_sphere = !ic.restarting && args.initial.empty();
  return ic;
}

nbody::ForceOptions force_options(const NbodyArguments& args, double softening) {
  args.run.refuse_gpus_on_the_cpu();
  nbody::ForceOptions options;
  options.softening = softening;
  options.method = nbody::parse_gravity_method(args.method);
  const bool tree = options.method == nbody::GravityMethod::tree;
  if (!tree && args.run.given.count("--theta")) throw Error("--theta is the tree's opening angle: add --method tree");
  if (!tree && args.run.given.count("--multipole")) throw Error("--multipole sets the tree's cells: add --method tree");
  if (args.multipole != "quadrupole" && args.multipole != "monopole")
    throw Error(fmt::format("--multipole {}: quadrupole or monopole", args.multipole));
  options.tree.theta = args.theta;
  options.tree.quadrupole = args.multipole == "quadrupole";
  options.precision = parse_precision(args.run.precision);
  options.threads = threads_option(args.run.threads, args.run.quiet);
  std::string backend_notice;
  Backend requested = args.run.backend_requested();
  std::vector<int> gpus = args.run.gpu_list();
  const Ranks& ranks = Ranks::world();
  if (ranks.distributed()) {  // the machine's GPUs and cores shared among its ranks
    const NodeShare share = share_node(ranks, requested, gpus, args.run.threads == 0 ? 0 : options.threads);
    requested = share.backend, gpus = share.gpus, options.threads = share.threads;
    if (!share.notice.empty() && args.run.given.count("--quiet") == 0)  // every rank says its own
      fmt::print(stderr, "nbkit: note (rank {} of {}): {}\n", ranks.rank(), ranks.size(), share.notice);
  }
  options.backend = resolve_backend(requested, &backend_notice);
  notice(backend_notice, args.run.quiet);
  if (options.backend == Backend::cuda) options.gpus = gpus;
  return options;
}

nlohmann::json nbody_report(const NbodyArguments& args, const nbody::Simulation& simulation,
                            const nbody::RunSummary& summary) {
  const nbody::ForceEngine& forces = simulation.forces();
  nlohmann::json report = run_report("nbody", args.run, forces.backend(), forces.description(), forces.notice());
  report["bodies"] = summary.bodies;
  report["run"] = {{"first_step", summary.first_step}, {"last_step", summary.last_step}, {"dt", simulation.dt()},
                   {"every", args.every}, {"snapshot_every", args.snapshot_every}};
  const nbody::Diagnostics &first = simulation.first_diagnostics(), &last = simulation.last_diagnostics();
  report["energy"] = {{"initial", simulation.initial_energy()}, {"first", first.total}, {"last", last.total},
                      {"largest_relative_error", simulation.largest_energy_error()}};
  report["virial_ratio"] = {{"first", first.virial_ratio}, {"last", last.virial_ratio}};
  report["timing_seconds"] = {{"run", summary.seconds}};
  if (Ranks::world().distributed())
    report["ranks"] = {{"count", Ranks::world().size()},
                       {"wait_seconds", summary.wait_seconds},
                       {"exchange_seconds", summary.exchange_seconds},
                       {"exchange_fraction", summary.seconds > 0 ? summary.exchange_seconds / summary.seconds : 0.0}};
  const nbody::ForceOptions& o = simulation.forces().options();
  report["method"] = nbody::to_string(o.method);
  if (o.method == nbody::GravityMethod::tree)
    report["tree"] = {{"theta", o.tree.theta}, {"multipole", o.tree.quadrupole ? "quadrupole" : "monopole"}};
  // For the tree, interactions_per_second is the all-pairs equivalent (N^2 an evaluation).
  report["rates"] = {{"interactions_per_second", summary.interactions_per_second()},
                     {"bodies_per_second", summary.bodies_per_second()}};
  report["outputs"] = {{"directory", args.output}};
  return report;
}

void print_summary(const nbody::Simulation& simulation, const nbody::RunSummary& summary, const std::string& log_path) {
  const nbody::Diagnostics &first = simulation.first_diagnostics(), &last = simulation.last_diagnostics();
  const bool tree = simulation.forces().options().method == nbody::GravityMethod::tree;
  const std::string rate = tree ? fmt::format("{:.3g} bodies/s (all-pairs equivalent {:.3g} interactions/s)",
                                              summary.bodies_per_second(), summary.interactions_per_second())
                                : fmt::format("{:.3g} interactions/s", summary.interactions_per_second());
  fmt::print("nbkit nbody: {} bodies, steps {} to {} of {} (t = {:.4g}), {:.3f} s, {} ({})\n", summary.bodies,
             summary.first_step, summary.last_step, simulation.dt(),
             static_cast<double>(summary.last_step) * simulation.dt(), summary.seconds, rate,
             simulation.forces().description());
  fmt::print("  energy {:.9g} -> {:.9g}, largest |dE/E| {:.2e}, virial ratio {:.3f} -> {:.3f}; log {}\n", first.total,
             last.total, simulation.largest_energy_error(), first.virial_ratio, last.virial_ratio, log_path);
  if (Ranks::world().distributed())
    fmt::print("  {} ranks: {:.3f} s ({:.1f}% of the run) exchanging the bodies, {:.3f} s waiting for the slowest rank\n",
               Ranks::world().size(), summary.exchange_seconds,
               summary.seconds > 0 ? 100 * summary.exchange_seconds / summary.seconds : 0.0, summary.wait_seconds);
}

// A restart continues with the snapshot's forces unless told otherwise (then it says so: the
// run is no longer the uninterrupted one bit for bit); every run's snapshots record its own.
NbodyArguments with_snapshot_forces(NbodyArguments args, const io::SnapshotInfo& state, bool restarting) {
  if (!restarting) return args;
  const bool given = args.run.given.count("--method") || args.run.given.count("--theta") ||
                     args.run.given.count("--multipole");
  if (!given) {
    args.method = state.method;
    if (state.method == "tree") args.theta = state.theta, args.multipole = state.multipole;
    return args;
  }
  const bool same = args.method == state.method &&
                    (state.method != "tree" || (args.theta == state.theta && args.multipole == state.multipole));
  if (!same)
    notice(fmt::format("the snapshot's run used {}; this one continues with {}: not the uninterrupted run bit for bit",
                       state.method == "tree" ? fmt::format("a tree (theta {:g}, {})", state.theta, state.multipole)
                                              : std::string("all pairs"),
                       args.method == "tree" ? fmt::format("a tree (theta {:g}, {})", args.theta, args.multipole)
                                             : std::string("all pairs")),
           args.run.quiet);
  return args;
}

int run_nbody(const NbodyArguments& given) {
  const Ranks& ranks = Ranks::world();
  NbodyArguments given_args = given;
  if (!ranks.root()) given_args.run.quiet = true;  // under mpirun rank 0 speaks and writes for the job
  InitialConditions ic = initial_conditions(given_args);
  const NbodyArguments args = with_snapshot_forces(given_args, ic.state, ic.restarting);
  io::SnapshotInfo& state = ic.state;
  const double dt = state.dt;
  // --steps and --time count from the initial conditions, so a restart ends where the
  // uninterrupted run would.
  const long long steps = run_steps(args, dt);
  if (steps < state.step)
    throw Error(fmt::format("the run ends at step {}, before the snapshot's step {}", steps, state.step));
  if (!args.initial.empty()) ic.bodies = io::read_snapshot(args.initial);
  check_resources(args, ic.new_sphere ? static_cast<std::size_t>(args.plummer) : ic.bodies.size(), state.step, steps,
                  ic.restarting);
  refuse_overwriting_input(args, ic.input, state.step, steps, ic.restarting);
  // Without HDF5 in this build: no snapshots unless asked for (then an error up front).
  if (!io::snapshots_available() && args.snapshot_every > 0)
    throw Error("--snapshot-every: this build of nbkit has no HDF5 (apt-get install libhdf5-dev, then rebuild)");
  if (ic.new_sphere) ic.bodies = nbody::plummer(static_cast<std::size_t>(args.plummer), args.seed);
  nbody::Simulation simulation(std::move(ic.bodies), dt, force_options(args, state.softening), state.step,
                               ic.restarting ? std::optional<double>(state.initial_energy) : std::nullopt, &ranks);
  notice(simulation.forces().notice(), args.run.quiet);
  if (!io::snapshots_available()) notice("this build has no HDF5: no snapshots are written", args.run.quiet);
  if (!args.run.report.empty()) {  // before the run, not after it
    io::check_distinct_files({{ic.input, "the initial snapshot"}}, {{args.run.report, "--report"}});
    io::check_writable(args.run.report);
  }
  std::filesystem::create_directories(args.output);
  const std::string log_path = (std::filesystem::path(args.output) / "diagnostics.csv").string();
  io::check_writable(log_path);
  std::vector<double> times, errors;
  nbody::RunSummary summary;
  {
    // The log grows row by row (a run killed after hours keeps it); snapshots are atomic.
    std::optional<io::LineLog> log_file;
    if (ranks.root()) log_file.emplace(log_path);
    auto write_log = [&log_file](const std::string& text) {
      if (log_file) log_file->write(text);
    };
    write_log(fmt::format("# nbkit nbody: Henon units (G = M = 1, E = -1/4); {} bodies, seed {}, softening {}, dt {}, "
                          "leapfrog KDK{}\n",
                          simulation.bodies().size(), state.seed, state.softening, dt,
                          ic.restarting ? ", continued from " + args.restart : std::string()));
    write_log("time,kinetic,potential,total,relative_energy_error,px,py,pz,lx,ly,lz,virial_ratio\n");
    ProgressBar bar("nbody", !args.run.quiet);
    nbody::Reporters reporters;
    reporters.diagnostics_every = args.every;
    reporters.diagnostics = [&](const nbody::Diagnostics& d, std::int64_t) {
      const double error = d.total / simulation.initial_energy() - 1;
      write_log(fmt::format("{:.9g},{:.17g},{:.17g},{:.17g},{:.6e},{:.6e},{:.6e},{:.6e},{:.6e},{:.6e},{:.6e},{:.9g}\n",
                            d.time, d.kinetic, d.potential, d.total, error, d.momentum[0], d.momentum[1],
                            d.momentum[2], d.angular_momentum[0], d.angular_momentum[1], d.angular_momentum[2],
                            d.virial_ratio));
      times.push_back(d.time), errors.push_back(error);
    };
    reporters.snapshot_every = args.snapshot_every;
    reporters.snapshot_at_start = !ic.restarting;
    if (io::snapshots_available() && ranks.root())
      reporters.snapshot = [&](const nbody::Bodies& bodies, std::int64_t step) {
        state.step = step;
        state.time = static_cast<double>(step) * dt;
        state.initial_energy = simulation.initial_energy();
        const nbody::ForceOptions& forces = simulation.forces().options();
        state.method = nbody::to_string(forces.method);
        state.theta = forces.method == nbody::GravityMethod::tree ? forces.tree.theta : 0;
        state.multipole = forces.method == nbody::GravityMethod::tree
                              ? (forces.tree.quadrupole ? "quadrupole" : "monopole")
                              : "";
        io::write_snapshot(snapshot_path(args.output, step), bodies, state);
      };
    reporters.progress = [&bar](double f) { bar.update(f); };
    summary = simulation.run_to(steps, reporters);
  }
  // The job's waiting and exchange times: the largest rank's (every rank takes part).
  summary.wait_seconds = ranks.all_max(summary.wait_seconds);
  summary.exchange_seconds = ranks.all_max(summary.exchange_seconds);
  if (!ranks.root()) return 0;
  if (args.png) {
    io::write_density_png((std::filesystem::path(args.output) / "density.png").string(), simulation.bodies(), 2.0,
                          static_cast<double>(steps) * dt);
    io::write_energy_png((std::filesystem::path(args.output) / "energy.png").string(), times, errors);
  }
  write_report(args.run.report, nbody_report(args, simulation, summary));
  if (!args.run.quiet) print_summary(simulation, summary, log_path);
  return 0;
}

}  // namespace

Action setup_nbody(CLI::App& app) {
  auto args = std::make_shared<NbodyArguments>();
  app.description(
      "Gravitational N-body run in Henon units (G = M = 1, E = -1/4): Plummer-softened gravity by all pairs or a "
      "Barnes-Hut tree, "
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
  app.add_option("--method", args->method,
                 "all-pairs (exact to the arithmetic), or tree: Barnes-Hut, O(N log N), at the accuracy --theta gives")
      ->capture_default_str();
  app.add_option("--theta", args->theta,
                 "tree: opening angle in [0, 1]; smaller is more accurate and slower (0.5: 99% of bodies within 1e-3 "
                 "of all pairs)")
      ->capture_default_str();
  app.add_option("--multipole", args->multipole, "tree: the cells' expansion, quadrupole or monopole")
      ->capture_default_str();
  app.add_option("--every", args->every, "diagnostics every K steps")->capture_default_str();
  app.add_option("--snapshot-every", args->snapshot_every,
                 "HDF5 snapshot (GADGET/SWIFT layout) every K steps; 0: the first and the last only")
      ->capture_default_str();
  app.add_flag("--png", args->png, "pictures: density.png (x-y projection of the last state) and energy.png");
  app.add_option("-o,--output", args->output, "output directory (diagnostics.csv, snapshot_*.hdf5, *.png)")
      ->capture_default_str();
  add_run_options(app, args->run,
                  {"", "single (float32 forces, float64 sums) or double",
                   "GPUs to split the bodies over: all, a count N, or indices like 0,2 (one: 3,)", ""});
  return [args, &app]() {
    args->run.given = given_options(app);
    return run_nbody(*args);
  };
}

}  // namespace nbkit::cli
