// nbkit md: a Lennard-Jones molecular dynamics run described by a small TOML file (see
// README.md's "Molecular dynamics" and examples/in.lj.toml), with LAMMPS's units, definitions and files.
#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <toml++/toml.h>

#include "command.hpp"
#include "nbkit/core/backend.hpp"
#include "nbkit/core/error.hpp"
#include "nbkit/core/progress.hpp"
#include "nbkit/io/atomic_file.hpp"
#include "nbkit/io/dcd.hpp"
#include "nbkit/io/lammps_data.hpp"
#include "nbkit/md.hpp"

namespace nbkit::cli {

namespace {

struct MdArguments {
  std::string config, output, backend = "auto", precision = "single";
  int threads = 0, gpu = 0;
  bool quiet = false, precision_given = false;
};

// Typed access to the TOML tables with errors that name the file, the key and its line.
class Config {
 public:
  explicit Config(const std::string& path) : path_(path) {
    try {
      root_ = toml::parse_file(path);
    } catch (const toml::parse_error& e) {
      throw Error(fmt::format("{}:{}:{}: {}", path, e.source().begin.line, e.source().begin.column, e.description()));
    }
  }
  [[noreturn]] void fail(const toml::node* node, const std::string& key, const std::string& what) const {
    if (node && node->source().begin.line > 0)
      throw Error(fmt::format("{}:{}: {}: {}", path_, node->source().begin.line, key, what));
    throw Error(fmt::format("{}: {}: {}", path_, key, what));
  }
  const toml::node* find(const std::string& key) const { return root_.at_path(key).node(); }
  double number(const std::string& key, std::optional<double> fallback, bool positive = false) const {
    const toml::node* node = find(key);
    if (!node) {
      if (!fallback) fail(nullptr, key, "missing (a number)");
      return *fallback;
    }
    const auto value = node->value<double>();
    if (!value || !std::isfinite(*value)) fail(node, key, "expected a number");
    if (positive && !(*value > 0)) fail(node, key, "expected a positive number");
    return *value;
  }
  std::int64_t integer(const std::string& key, std::optional<std::int64_t> fallback, std::int64_t least = 0) const {
    const toml::node* node = find(key);
    if (!node) {
      if (!fallback) fail(nullptr, key, "missing (an integer)");
      return *fallback;
    }
    const auto value = node->value<std::int64_t>();
    if (!value || !node->is_integer()) fail(node, key, "expected an integer");
    if (*value < least) fail(node, key, fmt::format("expected at least {}", least));
    return *value;
  }
  std::string text(const std::string& key, std::optional<std::string> fallback) const {
    const toml::node* node = find(key);
    if (!node) {
      if (!fallback) fail(nullptr, key, "missing (a string)");
      return *fallback;
    }
    const auto value = node->value<std::string>();
    if (!value || !node->is_string()) fail(node, key, "expected a string");
    return *value;
  }
  bool flag(const std::string& key, bool fallback) const {
    const toml::node* node = find(key);
    if (!node) return fallback;
    if (!node->is_boolean()) fail(node, key, "expected true or false");
    return *node->value<bool>();
  }
  // Refuses keys this version does not know (a typo would otherwise be ignored silently).
  void check_keys(const std::string& table, std::initializer_list<const char*> known) const {
    const toml::node* node = table.empty() ? &root_ : find(table);
    if (!node) return;
    const toml::table* t = node->as_table();
    if (!t) fail(node, table, "expected a table");
    for (const auto& [key, value] : *t) {
      bool ok = false;
      for (const char* k : known) ok = ok || key.str() == k;
      if (!ok) fail(&value, (table.empty() ? "" : table + ".") + std::string(key.str()), "unknown key");
    }
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  toml::table root_;
};

std::string output_path(const std::string& directory, const std::string& name) {
  return (std::filesystem::path(directory) / name).string();
}

int run_md(const MdArguments& args) {
  const Config c(args.config);
  c.check_keys("", {"units", "system", "pair", "neighbor", "run", "output"});
  c.check_keys("system", {"data", "lattice", "density", "cells", "temperature", "seed"});
  c.check_keys("pair", {"style", "cutoff", "shift", "mixing", "coeffs", "exclusions", "coulomb_cutoff", "dielectric"});
  c.check_keys("neighbor", {"skin"});
  c.check_keys("run", {"timestep", "steps", "thermo", "ensemble", "temperature", "damping", "seed"});
  c.check_keys("output", {"directory", "dcd_every", "data"});
  const md::Units units = md::parse_units(c.text("units", "lj"));
  const std::filesystem::path base = std::filesystem::path(c.path()).parent_path();

  // The system: a LAMMPS data file, or an fcc lattice as in.lj builds it.
  md::System system;
  std::vector<double> file_epsilon, file_sigma;
  if (c.find("system.data")) {
    if (c.find("system.lattice")) c.fail(c.find("system.lattice"), "system.lattice", "give data or lattice, not both");
    const std::filesystem::path data = base / c.text("system.data", std::nullopt);
    io::LammpsData read = io::read_lammps_data(data.string(), units);
    system = std::move(read.system);
    file_epsilon = std::move(read.pair_epsilon);
    file_sigma = std::move(read.pair_sigma);
  } else {
    const std::string lattice = c.text("system.lattice", "fcc");
    if (lattice != "fcc") c.fail(c.find("system.lattice"), "system.lattice", "only fcc in this version");
    const toml::node* cells = c.find("system.cells");
    const toml::array* list = cells ? cells->as_array() : nullptr;
    if (!list || list->size() != 3) c.fail(cells, "system.cells", "expected three integers, e.g. [20, 20, 20]");
    int n[3];
    for (int a = 0; a < 3; ++a) {
      const auto v = (*list)[a].value<std::int64_t>();
      if (!v || *v < 1 || *v > 100000) c.fail(cells, "system.cells", "expected three positive integers");
      n[a] = static_cast<int>(*v);
    }
    system = md::fcc_lattice(c.number("system.density", std::nullopt, true), n[0], n[1], n[2]);
    system.units = units;
  }
  if (c.find("system.temperature"))
    md::assign_velocities(system, c.number("system.temperature", std::nullopt),
                          static_cast<std::uint64_t>(c.integer("system.seed", 87287, 0)));

  // Pair coefficients: [pair] coeffs per type, else the data file's Pair Coeffs; mixed.
  const double cutoff = c.number("pair.cutoff", 2.5, true);
  const std::string style = c.text("pair.style", "lj/cut");
  if (style != "lj/cut" && style != "lj/cut/coul/dsf")
    c.fail(c.find("pair.style"), "pair.style", "expected lj/cut or lj/cut/coul/dsf (shifted-force Coulomb, alpha 0)");
  if (style == "lj/cut" && (c.find("pair.coulomb_cutoff") || c.find("pair.dielectric")))
    c.fail(c.find("pair.coulomb_cutoff") ? c.find("pair.coulomb_cutoff") : c.find("pair.dielectric"), "pair.style",
           "Coulomb settings need style lj/cut/coul/dsf");
  if (style == "lj/cut/coul/dsf" && !system.has_charges)
    c.fail(c.find("pair.style"), "pair.style", "lj/cut/coul/dsf needs charges (a data file in the charge style)");
  const std::string mixing = c.text("pair.mixing", "geometric");
  if (mixing != "geometric" && mixing != "arithmetic")
    c.fail(c.find("pair.mixing"), "pair.mixing", "expected geometric or arithmetic");
  std::vector<double> epsilon = file_epsilon, sigma = file_sigma;
  if (const toml::node* coeffs = c.find("pair.coeffs")) {
    const toml::array* list = coeffs->as_array();
    if (!list) c.fail(coeffs, "pair.coeffs", "expected an array of {type, epsilon, sigma} tables");
    epsilon.assign(system.types(), 0.0), sigma.assign(system.types(), 0.0);
    for (const toml::node& entry : *list) {
      const toml::table* t = entry.as_table();
      const auto type = t ? (*t)["type"].value<std::int64_t>() : std::nullopt;
      const auto eps = t ? (*t)["epsilon"].value<double>() : std::nullopt;
      const auto sig = t ? (*t)["sigma"].value<double>() : std::nullopt;
      if (!type || !eps || !sig) c.fail(&entry, "pair.coeffs", "each entry needs type, epsilon and sigma");
      if (*type < 1 || *type > system.types())
        c.fail(&entry, "pair.coeffs", fmt::format("type {} outside 1..{}", *type, system.types()));
      if (!(*eps >= 0) || !(*sig > 0)) c.fail(&entry, "pair.coeffs", "epsilon must not be negative, sigma must be positive");
      epsilon[*type - 1] = *eps, sigma[*type - 1] = *sig;
    }
  }
  if (epsilon.empty()) {
    if (system.types() != 1)
      c.fail(nullptr, "pair.coeffs", "missing: give epsilon and sigma for every type (or Pair Coeffs in the data file)");
    epsilon = {1.0}, sigma = {1.0};  // reduced units' one type
  }
  for (int t = 0; t < system.types(); ++t)
    if (!(sigma[t] > 0)) c.fail(c.find("pair.coeffs"), "pair.coeffs", fmt::format("no coefficients for type {}", t + 1));
  md::ForceField field = md::ForceField::mixed(epsilon, sigma, cutoff, mixing == "arithmetic");
  field.shift = c.flag("pair.shift", false);
  if (style == "lj/cut/coul/dsf") {
    field.coulomb_cutoff = c.number("pair.coulomb_cutoff", cutoff, true);
    field.dielectric = c.number("pair.dielectric", 1.0, true);
  }
  if (const toml::node* ex = c.find("pair.exclusions")) {
    const toml::array* list = ex->as_array();
    if (!list) c.fail(ex, "pair.exclusions", "expected an array of [id, id] pairs");
    for (const toml::node& entry : *list) {
      const toml::array* pair = entry.as_array();
      const auto a = pair && pair->size() == 2 ? (*pair)[0].value<std::int64_t>() : std::nullopt;
      const auto b = pair && pair->size() == 2 ? (*pair)[1].value<std::int64_t>() : std::nullopt;
      if (!a || !b) c.fail(&entry, "pair.exclusions", "expected [id, id]");
      auto index_of = [&](std::int64_t id) {
        const auto it = std::lower_bound(system.id.begin(), system.id.end(), id);
        if (it == system.id.end() || *it != id) c.fail(&entry, "pair.exclusions", fmt::format("no atom with ID {}", id));
        return static_cast<std::int64_t>(it - system.id.begin());
      };
      field.exclusions.push_back({index_of(*a), index_of(*b)});
    }
  }

  const double dt = c.number("run.timestep", units == md::Units::lj ? 0.005 : 1.0, true);
  const std::int64_t steps = c.integer("run.steps", std::nullopt, 0);
  const std::int64_t every = c.integer("run.thermo", 100, 1);
  const std::string ensemble = c.text("run.ensemble", "nve");
  std::unique_ptr<md::Langevin> thermostat;
  if (ensemble == "langevin")
    thermostat = std::make_unique<md::Langevin>(c.number("run.temperature", std::nullopt), c.number("run.damping", std::nullopt, true),
                                                static_cast<std::uint64_t>(c.integer("run.seed", 48279, 0)));
  else if (ensemble != "nve")
    c.fail(c.find("run.ensemble"), "run.ensemble", "expected nve or langevin");
  const double skin = c.number("neighbor.skin", units == md::Units::lj ? 0.3 : 2.0, false);
  const std::string directory = args.output.empty() ? c.text("output.directory", "md-out") : args.output;
  const std::int64_t dcd_every = c.integer("output.dcd_every", 0, 0);
  const std::string final_data = c.text("output.data", "final.data");

  // The backend: the GPU engine (NVE or Langevin, boxes longer than twice the cutoff plus
  // skin) or the CPU path (everything; float64 only).
  const Backend requested = parse_backend(args.backend);
  const Precision precision = parse_precision(args.precision);
  if (requested == Backend::reference) throw Error("--backend: expected auto, cpu or cuda for md");
  bool fits_gpu = true;
  for (int a = 0; a < 3; ++a) fits_gpu = fits_gpu && system.box.length(a) > 2 * (field.reach() + skin);
  const bool use_gpu = requested == Backend::cuda || (requested == Backend::automatic && fits_gpu && !list_gpus().empty());
  if (use_gpu) {
    std::string why;
    if (list_gpus(&why).empty()) throw Error("--backend cuda: no GPU is usable: " + why);
  }
  if (!use_gpu && requested == Backend::cpu && precision == Precision::single && args.precision_given)
    throw Error("--precision single: the CPU MD path computes in double; leave --precision out or use --backend cuda");

  std::filesystem::create_directories(directory);
  md::wrap_into_box(system);
  md::NeighborList list(field.reach(), skin);
  md::Forces forces;
  std::unique_ptr<md::GpuEngine> gpu;
  if (use_gpu) {
    md::GpuEngine::Options options;
    options.device = args.gpu;
    options.double_precision = precision == Precision::double_;
    gpu = std::make_unique<md::GpuEngine>(system, field, skin, options);
    if (thermostat) gpu->apply_thermostat(*thermostat, dt);
  } else {
    list.build(system, field);
    md::forces_cpu(system, field, list, forces, args.threads);
    if (thermostat) thermostat->apply(system, forces, dt);
  }
  const std::string backend_name =
      gpu ? "GPU: " + gpu->description() : fmt::format("CPU, {} threads, float64", args.threads > 0 ? args.threads : hardware_threads());

  std::vector<io::DcdFrame> frames;
  auto snapshot = [&] {
    if (gpu) gpu->download(system);
    io::DcdFrame frame;
    frame.x.assign(system.x.begin(), system.x.end());
    frame.y.assign(system.y.begin(), system.y.end());
    frame.z.assign(system.z.begin(), system.z.end());
    frame.cell = std::array<double, 6>{system.box.length(0), 90.0, system.box.length(1), 90.0, 90.0, system.box.length(2)};
    frames.push_back(std::move(frame));
  };
  if (dcd_every > 0) snapshot();
  const std::string thermo_path = output_path(directory, "thermo.csv");
  const auto start = std::chrono::steady_clock::now();
  md::Thermo last{};
  io::write_atomically(thermo_path, [&](const std::string& temporary) {
    std::ofstream csv(temporary);
    csv << fmt::format("# nbkit md: {} atoms, units {}, {}, cutoff {}, skin {}, dt {}\n", system.size(), to_string(units),
                       thermostat ? fmt::format("Langevin T {}", thermostat->temperature()) : std::string("NVE"), cutoff,
                       skin, dt);
    csv << "step,temperature,potential,kinetic,total,pressure\n";
    const bool terminal = !args.quiet;
    auto report = [&](std::int64_t step) {
      last = gpu ? gpu->thermo(step) : md::thermo(system, forces, step);
      csv << fmt::format("{},{:.12g},{:.12g},{:.12g},{:.12g},{:.12g}\n", step, last.temperature, last.potential,
                         last.kinetic, last.total, last.pressure);
      if (terminal)
        fmt::print("{:>10} {:>14.8f} {:>14.8f} {:>14.8f} {:>14.8f} {:>14.8f}\n", step, last.temperature, last.potential,
                   last.kinetic, last.total, last.pressure);
    };
    if (terminal) fmt::print("{:>10} {:>14} {:>14} {:>14} {:>14} {:>14}\n", "Step", "Temp", "PotEng", "KinEng", "TotEng", "Press");
    report(0);
    for (std::int64_t step = 1; step <= steps; ++step) {
      if (gpu) gpu->step(dt, step % every == 0 || step == steps, thermostat.get());
      else md::verlet_step(system, forces, field, list, dt, args.threads, thermostat.get());
      if (step % every == 0 || step == steps) report(step);
      if (dcd_every > 0 && step % dcd_every == 0) snapshot();
    }
    if (!csv) throw Error(thermo_path + ": write failed");
  });
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (gpu) gpu->download(system);
  if (dcd_every > 0) io::write_dcd(output_path(directory, "trajectory.dcd"), frames, dt);
  io::write_lammps_data(output_path(directory, final_data), system, epsilon, sigma,
                        fmt::format("nbkit md after {} steps", steps), style);
  if (!args.quiet) {
    const double rate = static_cast<double>(system.size()) * static_cast<double>(std::max<std::int64_t>(steps, 1)) / seconds;
    fmt::print("nbkit md: {} atoms, {} steps of {} ({} units), {:.3f} s, {:.3g} atom-steps/s ({}, {} list builds)\n",
               system.size(), steps, dt, to_string(units), seconds, rate, backend_name, gpu ? gpu->builds() : list.builds());
    fmt::print("  {}{}, {}\n", thermo_path, dcd_every > 0 ? ", " + output_path(directory, "trajectory.dcd") : std::string(),
               output_path(directory, final_data));
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
  app.add_option("--gpu", args->gpu, "the GPU to run on (index)")->capture_default_str();
  app.add_option("--threads", args->threads, "CPU threads (0: all)")->capture_default_str();
  app.add_flag("-q,--quiet", args->quiet, "no thermo on the terminal, no summary");
  return [args, precision]() {
    args->precision_given = precision->count() > 0;
    return run_md(*args);
  };
}

}  // namespace nbkit::cli
