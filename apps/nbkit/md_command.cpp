// nbkit md: a Lennard-Jones molecular dynamics run described by a small TOML file (see
// README.md's "Molecular dynamics" and examples/in.lj.toml), with LAMMPS's units, definitions and files.
#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <memory>

#include "command.hpp"
#include "nbkit/core/backend.hpp"
#include "nbkit/core/error.hpp"
#include "nbkit/core/progress.hpp"
#include "nbkit/io/atomic_file.hpp"
#include "nbkit/io/dcd.hpp"
#include "nbkit/core/resources.hpp"
#include "nbkit/io/lammps_data.hpp"
#include "nbkit/io/line_log.hpp"
#include "nbkit/io/md_config.hpp"
#include "nbkit/md.hpp"
#include "options.hpp"

namespace nbkit::cli {

namespace {

struct MdArguments {
  std::string config, output, backend = "auto", precision = "single";
  int threads = 0, gpu = 0;
  bool quiet = false, precision_given = false, gpu_given = false;
};

std::string output_path(const std::string& directory, const std::string& name) {
  return (std::filesystem::path(directory) / name).string();
}

// The run's output files, checked before it starts: none replaces an input, the disk holds
// them, memory holds the run.
void check_outputs(const MdArguments& args, const io::MdConfig& run, const std::string& directory, int threads,
                   bool gpu) {
  const std::string thermo = output_path(directory, "thermo.csv"), dcd = output_path(directory, "trajectory.dcd"),
                    data = output_path(directory, run.final_data);
  io::check_distinct_files({{args.config, "the TOML file"}, {run.data_file, "[system] data"}},
                           {{thermo, "thermo.csv"}, {run.dcd_every > 0 ? dcd : "", "trajectory.dcd"},
                            {data, "[output] data"}});
  ResourcePlan plan("nbkit md");
  plan.memory(md::run_memory_bytes(run.system, run.field, run.skin, gpu ? 1 : threads),
              count_of(static_cast<std::int64_t>(run.system.size()), "atom") + (gpu ? " (host copy)" : ""));
  const std::int64_t frames = run.dcd_every > 0 ? run.steps / run.dcd_every + 1 : 0;
  if (frames > 0) {
    plan.disk(dcd, io::dcd_file_bytes(static_cast<std::int64_t>(run.system.size()), frames, true),
              count_of(frames, "frame"));
    plan.memory(12 * static_cast<std::uint64_t>(run.system.size()), "a trajectory frame");
  }
  plan.disk(thermo, static_cast<std::uint64_t>(run.steps / run.thermo_every + 2) * 96, "the thermo table");
  plan.disk(data, io::lammps_data_file_bytes(run.system.size()), "the final data file");
  plan.check();
}

// The backend: the GPU engine (NVE or Langevin, boxes longer than twice the cutoff plus
// skin) or the CPU path (everything; float64 only).
bool use_gpu(const MdArguments& args, const io::MdConfig& run) {
  const Backend requested = parse_backend(args.backend);
  const Precision precision = parse_precision(args.precision);
  if (requested == Backend::reference) throw Error("--backend: expected auto, cpu or cuda for md");
  bool fits_gpu = true;
  for (int a = 0; a < 3; ++a) fits_gpu = fits_gpu && run.system.box.length(a) > 2 * (run.field.reach() + run.skin);
  if (requested == Backend::cpu && args.gpu_given) throw Error("--gpu picks the GPU of --backend cuda or auto, not cpu");
  std::string why;
  const bool usable = !list_gpus(&why).empty();
  const bool gpu = requested == Backend::cuda || (requested == Backend::automatic && fits_gpu && usable);
  if (gpu && !usable) throw Error("--backend cuda: no GPU is usable: " + why);
  if (!gpu && requested == Backend::cpu && precision == Precision::single && args.precision_given)
    throw Error("--precision single: the CPU MD path computes in double; leave --precision out or use --backend cuda");
  // --backend auto on the CPU says why, before the run (as the other commands do).
  if (!gpu && requested == Backend::automatic && build_info().cuda_compiled)
    notice(usable ? "the box is not longer than twice (cutoff + skin) along every axis, which the GPU engine needs; "
                    "running on the CPU"
                  : why + "; running on the CPU",
           args.quiet);
  return gpu;
}

// A thermo row that is not finite ends the run: the atoms overlapped or the step is too long.
void check_thermo(const md::Thermo& t) {
  if (std::isfinite(t.temperature) && std::isfinite(t.potential) && std::isfinite(t.pressure)) return;
  throw Error(fmt::format("step {}: the energy or pressure is not finite (T {}, PotEng {}, Press {}): atoms overlap or "
                          "the time step is too long; the outputs hold the steps before",
                          t.step, t.temperature, t.potential, t.pressure));
}

int run_md(const MdArguments& args) {
  io::MdConfig run = io::read_md_config(args.config);
  md::System& system = run.system;
  const md::ForceField& field = run.field;
  const double dt = run.timestep;
  const int threads = threads_option(args.threads, args.quiet);
  const std::string directory = args.output.empty() ? run.directory : args.output;
  const bool gpu_run = use_gpu(args, run);
  check_outputs(args, run, directory, threads, gpu_run);
  std::unique_ptr<md::Langevin> thermostat;
  if (run.langevin)
    thermostat = std::make_unique<md::Langevin>(run.langevin->temperature, run.langevin->damping, run.langevin->seed);

  std::filesystem::create_directories(directory);
  md::wrap_into_box(system);
  md::NeighborList list(field.reach(), run.skin);
  md::Forces forces;
  std::unique_ptr<md::GpuEngine> gpu;
  if (gpu_run) {
    md::GpuEngine::Options options;
    options.device = args.gpu;
    options.double_precision = parse_precision(args.precision) == Precision::double_;
    gpu = std::make_unique<md::GpuEngine>(system, field, run.skin, options);
    if (thermostat) gpu->apply_thermostat(*thermostat, dt);
  } else {
    list.build(system, field);
    md::forces_cpu(system, field, list, forces, threads);
    if (thermostat) thermostat->apply(system, forces, dt);
  }
  const std::string backend_name =
      gpu ? "GPU: " + gpu->description() : fmt::format("CPU, {} threads, float64", threads);

  // The trajectory and the thermo table grow as the run goes, each row and frame on the disk
  // when it is made, so a crash or Ctrl-C keeps everything up to that step.
  const std::string dcd_path = output_path(directory, "trajectory.dcd");
  std::unique_ptr<io::DcdWriter> dcd;
  if (run.dcd_every > 0) dcd = std::make_unique<io::DcdWriter>(dcd_path, static_cast<std::int64_t>(system.size()), dt, true);
  io::DcdFrame frame;
  auto snapshot = [&] {
    if (gpu) gpu->download(system);
    frame.x.assign(system.x.begin(), system.x.end());
    frame.y.assign(system.y.begin(), system.y.end());
    frame.z.assign(system.z.begin(), system.z.end());
    frame.cell = std::array<double, 6>{system.box.length(0), 90.0, system.box.length(1), 90.0, 90.0, system.box.length(2)};
    dcd->append(frame);
  };
  if (dcd) snapshot();
  const std::string thermo_path = output_path(directory, "thermo.csv");
  io::LineLog csv(thermo_path);
  auto csv_line = [&](const std::string& line) { csv.write(line); };
  const auto start = std::chrono::steady_clock::now();
  md::Thermo last{};
  csv_line(fmt::format("# nbkit md: {} atoms, units {}, {}, cutoff {}, skin {}, dt {}\n", system.size(),
                       to_string(system.units),
                       thermostat ? fmt::format("Langevin T {}", thermostat->temperature()) : std::string("NVE"),
                       field.cutoff, run.skin, dt));
  csv_line("step,temperature,potential,kinetic,total,pressure\n");
  const bool terminal = !args.quiet;
  ProgressBar bar("md", terminal);  // on stderr between the thermo rows (terminals only)
  auto report = [&](std::int64_t step) {
    last = gpu ? gpu->thermo(step) : md::thermo(system, forces, step);
    check_thermo(last);
    csv_line(fmt::format("{},{:.12g},{:.12g},{:.12g},{:.12g},{:.12g}\n", step, last.temperature, last.potential,
                         last.kinetic, last.total, last.pressure));
    bar.clear();
    if (terminal)
      fmt::print("{:>10} {:>14.8f} {:>14.8f} {:>14.8f} {:>14.8f} {:>14.8f}\n", step, last.temperature, last.potential,
                 last.kinetic, last.total, last.pressure);
  };
  if (terminal) fmt::print("{:>10} {:>14} {:>14} {:>14} {:>14} {:>14}\n", "Step", "Temp", "PotEng", "KinEng", "TotEng", "Press");
  report(0);
  for (std::int64_t step = 1; step <= run.steps; ++step) {
    const bool thermo_step = step % run.thermo_every == 0 || step == run.steps;
    if (gpu) gpu->step(dt, thermo_step, thermostat.get());
    else md::verlet_step(system, forces, field, list, dt, threads, thermostat.get());
    if (thermo_step) report(step);
    if (dcd && step % run.dcd_every == 0) snapshot();
    bar.update(static_cast<double>(step) / static_cast<double>(run.steps));
  }
  bar.finish();
  if (dcd) dcd->close();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (gpu) gpu->download(system);
  const std::string data_path = output_path(directory, run.final_data);
  io::write_lammps_data(data_path, system, run.type_epsilon, run.type_sigma,
                        fmt::format("nbkit md after {} steps", run.steps), run.pair_style, run.pair_ij);
  if (!args.quiet) {
    const double rate = static_cast<double>(system.size()) * static_cast<double>(std::max<std::int64_t>(run.steps, 1)) / seconds;
    fmt::print("nbkit md: {}, {} of {} ({} units), {:.3f} s, {:.3g} atom-steps/s ({}, {} list builds)\n",
               count_of(static_cast<std::int64_t>(system.size()), "atom"), count_of(run.steps, "step"), dt,
               to_string(system.units), seconds, rate, backend_name, gpu ? gpu->builds() : list.builds());
    fmt::print("  {}{}, {}\n", thermo_path, dcd ? ", " + dcd_path : std::string(), data_path);
  }
  return 0;
}

}  // namespace

Action setup_md(CLI::App& app) {
  auto args = std::make_shared<MdArguments>();
  app.description(
      "Lennard-Jones molecular dynamics (LAMMPS's lj/cut, units lj or real) described by a TOML file: the system "
      "from a LAMMPS data file or an fcc lattice, NVE or Langevin, on the CPU or GPU; thermo on the terminal and in "
      "thermo.csv, trajectory.dcd for VMD, a final LAMMPS data file.\n"
      "Example: nbkit md examples/in.lj.toml");
  app.add_option("config", args->config, "the run's TOML file (keys: README.md, \"Molecular dynamics\"; example: examples/in.lj.toml)")->required()->check(CLI::ExistingFile);
  app.add_option("-o,--output", args->output, "output directory (overrides [output] directory)");
  app.add_option("--backend", args->backend,
                 "auto (the GPU for NVE runs in boxes longer than twice cutoff + skin, else the CPU), cuda or cpu")
      ->capture_default_str();
  auto* precision = app.add_option("--precision", args->precision,
                                   "on the GPU: single (float32 pair forces, float64 positions and velocities) or "
                                   "double; the CPU path is double")
                        ->capture_default_str();
  auto* gpu_option = app.add_option("--gpu", args->gpu, "the GPU to run on (index)")->capture_default_str();
  app.add_option("--threads", args->threads, "CPU threads (0: all)")->capture_default_str();
  app.add_flag("-q,--quiet", args->quiet, "no thermo on the terminal, no summary");
  return [args, precision, gpu_option]() {
    args->precision_given = precision->count() > 0;
    args->gpu_given = gpu_option->count() > 0;
    return run_md(*args);
  };
}

}  // namespace nbkit::cli
