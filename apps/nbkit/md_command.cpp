// nbkit md: a molecular dynamics run described by a small TOML file (README.md's "Molecular
// dynamics", examples/in.lj.toml), with LAMMPS's units, definitions and files. The run itself
// is md::Simulation's; this shell reads the TOML, checks the outputs, and writes the thermo
// table, the trajectory, the final data file and the report.
#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <memory>
#include <optional>

#include "command.hpp"
#include "nbkit/core/error.hpp"
#include "nbkit/core/progress.hpp"
#include "nbkit/core/resources.hpp"
#include "nbkit/core/units.hpp"
#include "nbkit/io/amber.hpp"
#include "nbkit/io/atomic_file.hpp"
#include "nbkit/io/checkpoint.hpp"
#include "nbkit/io/dcd.hpp"
#include "nbkit/io/lammps_data.hpp"
#include "nbkit/io/line_log.hpp"
#include "nbkit/io/md_config.hpp"
#include "nbkit/io/md_pictures.hpp"
#include "nbkit/md/molecular_forces.hpp"
#include "nbkit/md/simulation.hpp"
#include "options.hpp"

namespace nbkit::cli {

namespace {

struct MdArguments {
  std::string config, output, restart;
  bool time_phases = false;
  RunOptions run;
};

struct MdPaths {
  std::string thermo, picture, dcd, data, checkpoint;  // dcd, checkpoint empty: none
  MdPaths(const std::string& directory, const io::MdConfig& config) {
    const std::filesystem::path d(directory);
    thermo = (d / "thermo.csv").string();
    picture = (d / "thermo.png").string();
    dcd = config.dcd_every > 0 ? (d / "trajectory.dcd").string() : "";
    data = (d / config.final_data).string();
    checkpoint = config.checkpoint_every > 0 ? (d / "checkpoint.chk").string() : "";
  }
};

// The run's output files, checked before it starts: none replaces an input, the disk holds
// them. (md::Simulation checks the memory of the run itself.)
void check_outputs(const MdArguments& args, const io::MdConfig& config, const MdPaths& paths) {
  std::vector<io::NamedFile> inputs{{args.config, "the TOML file"},
                                    {config.data_file, "[system] data"},
                                    {config.topology_file, "[system] prmtop or psf"},
                                    {config.coordinates_file, "[system] coordinates"}};
  for (const std::string& p : config.parameter_files) inputs.push_back({p, "[system] parameters"});
  if (!args.restart.empty()) inputs.push_back({args.restart, "--restart"});
  io::check_distinct_files(inputs,
                           {{paths.thermo, "thermo.csv"},
                            {paths.picture, "thermo.png"},
                            {paths.dcd, "trajectory.dcd"},
                            {paths.data, "[output] data"},
                            {paths.checkpoint, "checkpoint.chk"},
                            {args.run.report, "--report"}});
  if (!args.run.report.empty()) io::check_writable(args.run.report);  // before the run, not after it
  ResourcePlan plan("nbkit md");
  const auto atoms = static_cast<std::int64_t>(config.system.size());
  const std::int64_t frames = config.dcd_every > 0 ? config.steps / config.dcd_every + 1 : 0;
  if (frames > 0) {
    plan.disk(paths.dcd, io::dcd_file_bytes(atoms, frames, true), count_of(frames, "frame"));
    plan.memory(12 * static_cast<std::uint64_t>(atoms), "a trajectory frame");
  }
  plan.disk(paths.thermo, static_cast<std::uint64_t>(config.steps / config.thermo_every + 2) * 96, "the thermo table");
  plan.disk(paths.picture, 3u << 20, "the thermo picture");
  if (!paths.checkpoint.empty())
    plan.disk(paths.checkpoint, io::checkpoint_file_bytes(static_cast<std::uint64_t>(atoms)), "the checkpoint");
  plan.disk(paths.data, io::lammps_data_file_bytes(config.system.size()),
            config.molecular ? "the final restart" : "the final data file");
  plan.check();
}

md::Simulation make_simulation(io::MdConfig& config, const RunOptions& run, bool time_phases) {
  md::SimulationOptions options;
  options.backend = run.backend_requested();
  options.precision = run.precision_given();
  options.threads = threads_option(run.threads, run.quiet);
  options.gpus = run.gpu_list();
  options.skin = config.skin;
  options.time_phases = time_phases;
  const md::Integrator integrator = io::integrator_of(config);
  if (config.molecular) return md::Simulation(std::move(config.system), std::move(*config.molecular), integrator, options);
  return md::Simulation(std::move(config.system), config.field, integrator, options);
}

// The thermo table (thermo.csv, and LAMMPS-style rows on a terminal) and the DCD trajectory
// grow as the run goes, each row and frame on the disk when it is made, so a crash or
// Ctrl-C keeps everything up to that step.
// Biomolecular runs add each force term's energy to the table's row (kcal/mol).
// The thermo rows kept for thermo.png: time, temperature, potential and total energy, and the
// density (biomolecular runs) or the pressure.
struct ThermoHistory {
  std::vector<double> time, temperature, potential, total, last;
};

md::Reporters reporters(const io::MdConfig& config, md::Simulation& simulation, std::int64_t atoms,
                        const MdPaths& paths, bool terminal, io::LineLog& csv, std::unique_ptr<io::DcdWriter>& dcd,
                        ProgressBar& bar, ThermoHistory& history) {
  md::Reporters r;
  r.thermo_every = config.thermo_every;
  // Biomolecular rows add the box volume (A^3), the density (g/cm^3) and the rate since the last
  // row (ns/day; nan on the first row), then each term's energy.
  double total_mass = 0;
  if (simulation.molecular_field())
    for (double m : simulation.molecular_field()->topology.mass) total_mass += m;
  struct Clock {
    std::chrono::steady_clock::time_point at = std::chrono::steady_clock::now();
    std::int64_t step = -1;
  };
  auto clock = std::make_shared<Clock>();
  const double timestep = config.timestep;
  r.thermo = [&csv, &bar, &simulation, &history, terminal, total_mass, clock, timestep](const md::Thermo& t) {
    const bool molecular = simulation.molecular_field() != nullptr;
    history.time.push_back(static_cast<double>(t.step) * timestep * (molecular ? 1e-3 : 1.0));
    history.temperature.push_back(t.temperature), history.potential.push_back(t.potential);
    history.total.push_back(t.total);
    history.last.push_back(molecular ? total_mass * units::gram_per_mole_per_cubic_angstrom / simulation.box().volume()
                                     : t.pressure);
    std::string terms;
    if (const auto energy = simulation.energy_terms()) {
      const double volume = simulation.box().volume();
      const auto now = std::chrono::steady_clock::now();
      const double seconds = std::chrono::duration<double>(now - clock->at).count();
      const double ns_per_day = clock->step >= 0 && seconds > 0
                                    ? static_cast<double>(t.step - clock->step) * timestep * 1e-6 / seconds * 86400.0
                                    : std::nan("");
      clock->at = now, clock->step = t.step;
      terms = fmt::format(",{:.12g},{:.8g},{:.6g}", volume, total_mass * units::gram_per_mole_per_cubic_angstrom / volume,
                          ns_per_day);
      for (const auto& [name, value] : energy->named()) terms += fmt::format(",{:.12g}", value);
    }
    csv.write(fmt::format("{},{:.12g},{:.12g},{:.12g},{:.12g},{:.12g}{}\n", t.step, t.temperature, t.potential,
                          t.kinetic, t.total, t.pressure, terms));
    bar.clear();
    if (terminal)
      fmt::print("{:>10} {:>14.8f} {:>14.8f} {:>14.8f} {:>14.8f} {:>14.8f}\n", t.step, t.temperature, t.potential,
                 t.kinetic, t.total, t.pressure);
  };
  r.frame_every = config.dcd_every;
  if (config.dcd_every > 0) {
    dcd = std::make_unique<io::DcdWriter>(paths.dcd, atoms, config.timestep, true);
    const md::MolecularForceField* molecular = simulation.molecular_field();
    r.frame = [&dcd, molecular, frame = std::make_shared<io::DcdFrame>(),
               whole = std::make_shared<md::System>()](const md::System& state, std::int64_t) {
      const md::System* s = &state;
      if (molecular && molecular->nonbonded.periodic()) {  // molecules whole, as VMD and cpptraj expect
        *whole = state;
        md::whole_molecules(molecular->topology, *whole);
        s = whole.get();
      }
      frame->x.assign(s->x.begin(), s->x.end());
      frame->y.assign(s->y.begin(), s->y.end());
      frame->z.assign(s->z.begin(), s->z.end());
      frame->cell = std::array<double, 6>{s->box.length(0), 90.0, s->box.length(1), 90.0, 90.0, s->box.length(2)};
      dcd->append(*frame);
    };
  }
  // ns/day on the bar for biomolecular runs (fs steps), the step rate otherwise.
  const auto start = std::chrono::steady_clock::now();
  const std::int64_t steps = config.steps;
  const bool molecular = simulation.molecular_field() != nullptr;
  r.progress = [&bar, start, steps, timestep, molecular](double fraction) {
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const double done = fraction * static_cast<double>(steps);
    if (seconds <= 0) return bar.update(fraction);
    bar.update(fraction, molecular ? fmt::format("{:.3g} ns/day", done * timestep * 1e-6 / seconds * 86400.0)
                                   : fmt::format("{:.3g} steps/s", done / seconds));
  };
  return r;
}

int run_md(const MdArguments& args) {
  io::MdConfig config = io::read_md_config(args.config);  // its system moves into the simulation
  const std::string directory = args.output.empty() ? config.directory : args.output;
  const MdPaths paths(directory, config);
  check_outputs(args, config, paths);
  const std::int64_t steps = config.steps;
  const std::size_t atoms = config.system.size();
  if (config.molecular && config.molecular->nonbonded.style == md::NonbondedSettings::CutoffStyle::charmm &&
      config.molecular->nonbonded.method != md::NonbondedSettings::Method::no_cutoff)
    notice("cutoff_style charmm switches the Coulomb energy: its gradient puts large forces on charges between the "
           "switch distance and the cutoff and heats water (Steinbach & Brooks, J. Comput. Chem. 15, 667 (1994)); "
           "LAMMPS's lj/charmm/coul/charmm switches the force alone, which does not conserve energy. For dynamics "
           "cutoff_style openmm (a reaction field) is the sound choice",
           args.run.quiet);
  if (args.time_phases && !config.molecular) throw Error("--time-phases times biomolecular runs");
  md::Simulation simulation = make_simulation(config, args.run, args.time_phases);
  notice(simulation.notice(), args.run.quiet);
  if (const md::MolecularForceField* molecular = simulation.molecular_field())
    notice(md::pme_mesh_notice(molecular->nonbonded, simulation.state().box), args.run.quiet);
  if (!args.restart.empty()) {  // go on from a checkpoint: its atoms, box, forces, step, thermostat stream
    if (config.minimize)
      throw Error("--restart goes on from a checkpoint's state: leave [minimize] out of " + args.config);
    simulation.restore(io::read_checkpoint(args.restart));
  }
  std::optional<md::MinimizeResult> minimized;
  if (config.minimize) {  // L-BFGS to the force tolerance before the first step
    ProgressBar bar("minimize", !args.run.quiet);
    md::MinimizeOptions options;
    options.tolerance = config.minimize->tolerance, options.max_iterations = config.minimize->max_iterations;
    options.progress = [&bar](double fraction) { bar.update(fraction); };
    minimized = simulation.minimize(options);
    bar.finish();
    const md::MinimizeResult& m = *minimized;
    if (!args.run.quiet)
      fmt::print("minimized: {:.6g} -> {:.6g} kcal/mol, largest force {:.3g} -> {:.3g} kcal/mol/A ({} {:.3g}), {} "
                 "iterations, {} evaluations, {:.3f} s ({:.3g} evaluations/s)\n",
                 m.initial_energy, m.final_energy, m.initial_max_force, m.final_max_force,
                 m.converged ? "converged below" : "NOT converged to", config.minimize->tolerance, m.iterations,
                 m.evaluations, m.seconds, m.seconds > 0 ? static_cast<double>(m.evaluations) / m.seconds : 0.0);
    if (!m.converged)
      notice(fmt::format("minimisation stopped with the largest force at {:.3g} kcal/mol/A, above the tolerance {:.3g} "
                         "({}): the run goes on from there",
                         m.final_max_force, config.minimize->tolerance,
                         config.minimize->max_iterations > 0 && m.iterations >= config.minimize->max_iterations
                             ? "the iteration limit"
                             : "no line search step lowered the energy further"),
             args.run.quiet);
  }
  std::filesystem::create_directories(directory);
  io::LineLog csv(paths.thermo);
  const md::System& system = simulation.state();
  std::string ensemble =
      config.langevin ? fmt::format("Langevin T {}", config.langevin->temperature) : std::string("NVE");
  if (config.langevin_middle)
    ensemble = fmt::format("{} T {} K friction {}/ps (Langevin middle)", config.barostat ? "NPT" : "NVT",
                           config.langevin_middle->temperature, 1e3 * config.langevin_middle->friction);
  if (config.barostat)
    ensemble += fmt::format(", {} Monte Carlo barostat {} bar every {} steps",
                            config.barostat->anisotropic ? "anisotropic" : "isotropic", config.barostat->pressure,
                            config.barostat->frequency);
  if (config.constraints.any())
    ensemble += fmt::format(", constraints {}{} ({} in all)", md::to_string(config.constraints.bonds),
                            config.constraints.rigid_water ? " + rigid water" : "", simulation.constraint_count());
  if (config.hydrogen_mass) ensemble += fmt::format(", hydrogen mass {} g/mol", *config.hydrogen_mass);
  std::string term_columns;
  if (const md::MolecularForceField* molecular = simulation.molecular_field()) {
    const md::NonbondedSettings& nb = molecular->nonbonded;
    csv.write(fmt::format("# nbkit md: {} atoms, {}, units real, {}, nonbonded {}{}, dt {} fs; energies kcal/mol\n",
                          atoms, molecular->topology.source, ensemble, md::to_string(nb.method),
                          nb.method == md::NonbondedSettings::Method::no_cutoff
                              ? std::string()
                              : fmt::format(" cutoff {} ({})", nb.cutoff, md::to_string(nb.style)),
                          config.timestep));
    term_columns = ",volume,density,ns_per_day";
    for (const auto& [name, value] : md::EnergyTerms{}.named()) term_columns += std::string(",") + name;
  } else {
    csv.write(fmt::format("# nbkit md: {} atoms, units {}, {}, cutoff {}, skin {}, dt {}\n", atoms,
                          to_string(system.units), ensemble, simulation.force_field().cutoff, config.skin,
                          config.timestep));
  }
  csv.write("step,temperature,potential,kinetic,total,pressure" + term_columns + "\n");
  const bool terminal = !args.run.quiet;
  if (terminal) fmt::print("{:>10} {:>14} {:>14} {:>14} {:>14} {:>14}\n", "Step", "Temp", "PotEng", "KinEng", "TotEng", "Press");
  ProgressBar bar("md", terminal);  // on stderr between the thermo rows (terminals only)
  std::unique_ptr<io::DcdWriter> dcd;
  ThermoHistory history;
  md::Reporters on_the_way =
      reporters(config, simulation, static_cast<std::int64_t>(atoms), paths, terminal, csv, dcd, bar, history);
  if (!paths.checkpoint.empty()) {
    on_the_way.checkpoint_every = config.checkpoint_every;
    on_the_way.checkpoint = [&simulation, &paths](std::int64_t) {
      io::write_checkpoint(paths.checkpoint, simulation.checkpoint());
    };
  }
  const md::RunSummary summary = simulation.run(steps, on_the_way);
  bar.finish();
  // The last step's checkpoint, where the interval did not end on it.
  if (!paths.checkpoint.empty() && simulation.step_count() % config.checkpoint_every != 0)
    io::write_checkpoint(paths.checkpoint, simulation.checkpoint());
  if (dcd) dcd->close();
  {  // thermo.png: what the table holds, for a look
    const bool real = system.units == md::Units::real;
    const std::string energy = real ? " (kcal/mol)" : " (per atom)";
    io::write_thermo_png(paths.picture, history.time, real ? "time (ps)" : "time (lj units)",
                         {{real ? "temperature (K)" : "temperature", history.temperature},
                          {"potential energy" + energy, history.potential},
                          {"total energy" + energy, history.total},
                          {simulation.molecular_field() ? "density (g/cm3)" : "pressure", history.last}});
  }
  if (const md::MolecularForceField* molecular = simulation.molecular_field()) {
    md::System restart = simulation.state();  // molecules whole, as AMBER's iwrap and OpenMM expect
    if (molecular->nonbonded.periodic()) md::whole_molecules(molecular->topology, restart);
    io::write_rst7(paths.data, restart, fmt::format("nbkit md after {} steps", simulation.step_count()),
                   1e-3 * config.timestep * static_cast<double>(simulation.step_count()));
  }
  else
    io::write_lammps_data(paths.data, simulation.state(), config.type_epsilon, config.type_sigma,
                          fmt::format("nbkit md after {} steps", steps), config.pair_style, config.pair_ij);
  nlohmann::json report = run_report("md", args.run, simulation.backend(), simulation.description(), simulation.notice());
  report["input"] = {{"file", args.config}, {"atoms", summary.atoms}, {"units", to_string(system.units)}};
  report["run"] = {{"steps", steps}, {"timestep", config.timestep}, {"list_builds", simulation.list_builds()},
                   {"last_step", simulation.step_count()}};
  if (!args.restart.empty()) report["run"]["restart"] = args.restart;
  report["timing_seconds"] = {{"run", summary.seconds}};
  report["rates"] = {{"atom_steps_per_second", summary.atom_steps_per_second()}};
  if (simulation.molecular_field() && summary.seconds > 0)
    report["rates"]["ns_per_day"] = static_cast<double>(steps) * config.timestep * 1e-6 / summary.seconds * 86400.0;
  if (const auto p = simulation.step_phases(); p && p->steps > 0) {
    const double per = 1e3 / static_cast<double>(p->steps);  // ms per step
    report["phases_ms_per_step"] = {{"steps", p->steps},       {"evaluations", p->evaluations},
                                    {"integrate", p->integrate * per}, {"constraints", p->constraints * per},
                                    {"forces", p->forces * per},       {"barostat", p->barostat * per},
                                    {"gpu_upload", p->upload * per},   {"gpu_bonded", p->bonded * per},
                                    {"gpu_list", p->list * per},       {"gpu_pairs", p->pairs * per},
                                    {"gpu_mesh", p->mesh * per},       {"gpu_finish", p->finish * per},
                                    {"gpu_download", p->download * per}};
    if (!args.run.quiet)
      fmt::print("phases, ms per step: integrate {:.3f}, constraints {:.3f}, forces {:.3f} (GPU: upload {:.3f}, bonded "
                 "{:.3f}, list {:.3f}, pairs {:.3f}, mesh {:.3f}, sums {:.3f}, download {:.3f}), barostat {:.3f}\n",
                 p->integrate * per, p->constraints * per, p->forces * per, p->upload * per, p->bonded * per,
                 p->list * per, p->pairs * per, p->mesh * per, p->finish * per, p->download * per, p->barostat * per);
  }
  if (const md::MolecularForceField* molecular = simulation.molecular_field()) {
    const md::NonbondedSettings& nb = molecular->nonbonded;
    report["nonbonded"] = {{"method", md::to_string(nb.method)}, {"cutoff", nb.cutoff}};
    if (nb.method == md::NonbondedSettings::Method::pme) {  // at the final box (a barostat moves it)
      const md::PmeParameters pme = md::pme_parameters(nb, simulation.state().box);
      report["nonbonded"]["ewald_alpha"] = pme.alpha;
      report["nonbonded"]["pme_mesh"] = pme.mesh;
      report["nonbonded"]["pme_mesh_sizes"] = nb.pme_mesh ? "given" : nb.pme_fft_sizes ? "fft" : "reference";
    }
  }
  if (simulation.constraint_count() > 0)
    report["constraints"] = {{"bonds", md::to_string(config.constraints.bonds)},
                             {"rigid_water", config.constraints.rigid_water},
                             {"tolerance", config.constraints.tolerance},
                             {"count", simulation.constraint_count()},
                             {"largest_deviation", simulation.largest_constraint_deviation()}};
  if (const auto tally = simulation.barostat_tally()) {
    report["barostat"] = {{"pressure_bar", config.barostat->pressure},
                          {"anisotropic", config.barostat->anisotropic},
                          {"attempted", tally->attempted},
                          {"accepted", tally->accepted},
                          {"final_volume", simulation.state().box.volume()}};
  }
  const md::Thermo last = simulation.thermo();
  report["final_thermo"] = {{"step", last.step}, {"temperature", last.temperature}, {"potential", last.potential},
                            {"kinetic", last.kinetic}, {"total", last.total}, {"pressure", last.pressure}};
  if (const auto terms = simulation.energy_terms()) {
    nlohmann::json energy;
    for (const auto& [name, value] : terms->named()) energy[name] = value;
    energy["total"] = terms->total();
    report["final_energy_kcal_per_mol"] = energy;
  }
  if (minimized)
    report["minimization"] = {{"tolerance", config.minimize->tolerance},
                              {"converged", minimized->converged},
                              {"initial_energy", minimized->initial_energy},
                              {"final_energy", minimized->final_energy},
                              {"initial_max_force", minimized->initial_max_force},
                              {"final_max_force", minimized->final_max_force},
                              {"iterations", minimized->iterations},
                              {"evaluations", minimized->evaluations},
                              {"seconds", minimized->seconds}};
  report["outputs"] = {{"thermo", paths.thermo}, {"thermo_picture", paths.picture}, {"data", paths.data}};
  if (dcd) report["outputs"]["trajectory"] = paths.dcd;
  if (!paths.checkpoint.empty()) report["outputs"]["checkpoint"] = paths.checkpoint;
  write_report(args.run.report, report);
  if (!args.run.quiet) {
    fmt::print("nbkit md: {}, {} of {} ({} units), {:.3f} s, {:.3g} atom-steps/s ({}, {} list builds)\n",
               count_of(summary.atoms, "atom"), count_of(steps, "step"), config.timestep, to_string(system.units),
               summary.seconds, summary.atom_steps_per_second(), simulation.description(), simulation.list_builds());
    fmt::print("  {}, {}{}, {}\n", paths.thermo, paths.picture, dcd ? ", " + paths.dcd : std::string(), paths.data);
  }
  return 0;
}

}  // namespace

Action setup_md(CLI::App& app) {
  auto args = std::make_shared<MdArguments>();
  app.description(
      "Molecular dynamics described by a TOML file: Lennard-Jones (LAMMPS's lj/cut, units lj or real) from a LAMMPS "
      "data file or an fcc lattice, or a biomolecular system from an AMBER prmtop, a CHARMM psf or a LAMMPS data "
      "file (PME, MSM or a reaction field); NVE or Langevin, on the CPU or GPU; thermo on the terminal and in "
      "thermo.csv, trajectory.dcd for VMD, a final data or rst7 file.\n"
      "Example: nbkit md examples/in.lj.toml");
  app.add_option("config", args->config, "the run's TOML file (keys: README.md, \"Molecular dynamics\"; example: examples/in.lj.toml)")->required()->check(CLI::ExistingFile);
  app.add_option("-o,--output", args->output, "output directory (overrides [output] directory)");
  app.add_option("--restart", args->restart,
                 "go on from a checkpoint.chk that [output] checkpoint_every wrote (biomolecular runs): its atoms, "
                 "velocities, box, forces, step and thermostat stream, bit for bit; the TOML's steps more steps")
      ->check(CLI::ExistingFile);
  app.add_flag("--time-phases", args->time_phases,
               "biomolecular runs: time the step's phases (integration, constraints, forces and the GPU's share, "
               "barostat) and print them and put them in the report");
  add_run_options(app, args->run,
                  {"auto (the GPU when usable: for Lennard-Jones when the box is longer than twice cutoff + skin, for "
                   "biomolecular systems when periodic; else the CPU), cuda, cpu or reference (every periodic image, "
                   "one thread, float64: small systems)",
                   "on the GPU: single (float32 pair forces, float64 sums, positions and velocities, as OpenMM's mixed "
                   "precision; the default with a periodic box) or double; the CPU and reference engines compute in "
                   "double",
                   "the GPU to run on: all or 1 (the first), or an index like 2, (MD runs on one GPU)",
                   "no thermo on the terminal, no summary"});
  return [args, &app]() {
    args->run.given = given_options(app);
    return run_md(*args);
  };
}

}  // namespace nbkit::cli
