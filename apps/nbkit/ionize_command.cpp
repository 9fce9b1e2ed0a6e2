// nbkit ionize: place counter-ions and salt around a structure from its potential map.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <memory>
#include <set>

#include "command.hpp"
#include "nbkit/core/error.hpp"
#include "nbkit/core/progress.hpp"
#include "nbkit/core/resources.hpp"
#include "nbkit/io/atomic_file.hpp"
#include "nbkit/io/png.hpp"
#include "nbkit/io/structure.hpp"
#include "nbkit/ionize.hpp"
#include "options.hpp"

namespace nbkit::cli {

namespace {

struct IonizeArguments {
  std::string input, output, pdb, png, method = "direct", cation = "Na+", anion = "Cl-";
  int cations = -1, anions = -1;
  bool neutralize = false;
  double ionic_strength = 0;
  double spacing = 1.0, padding = 12.0, min_distance_solute = 5.0, min_distance_ion = 5.0;
  double dielectric = 78.54, cutoff = 12.0;
  RunOptions run;  // the maps' backend, precision, threads and GPUs; -q; --report
};

bool has_extension(const std::string& path, std::initializer_list<const char*> extensions) {
  std::string name = path;
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
  for (const char* e : extensions)
    if (name.ends_with(e)) return true;
  return false;
}

// The output files' names, formats and distinctness, before the map is computed.
std::string check_outputs(const IonizeArguments& args) {
  if (io::guess_structure_format(args.input) != io::StructureFormat::pqr)
    throw Error(args.input + ": ionize reads PQR files (make one with pdb2pqr, or with 'nbkit map --charges')");
  std::string stem = std::filesystem::path(args.input).stem().string();
  if (stem.ends_with(".pqr")) stem.resize(stem.size() - 4);  // x.pqr.gz
  const std::string output = args.output.empty() ? stem + "-ions.pqr" : args.output;
  if (!has_extension(output, {".pqr"}))
    throw Error("-o " + output + ": ionize writes a PQR file (the structure with the ions): name it .pqr");
  if (!args.pdb.empty() && !has_extension(args.pdb, {".pdb", ".ent"}))
    throw Error("--pdb " + args.pdb + ": writes PDB format: name it .pdb");
  if (!args.png.empty() && !has_extension(args.png, {".png"})) throw Error("--png " + args.png + ": name it .png");
  io::check_distinct_files({{args.input, "INPUT"}},
                           {{output, "-o"}, {args.pdb, "--pdb"}, {args.png, "--png"}, {args.run.report, "--report"}});
  for (const std::string& path : {output, args.pdb, args.png, args.run.report})
    if (!path.empty()) io::check_writable(path);
  return output;
}

IonizeOptions ionize_options(const IonizeArguments& args, const Atoms& structure, const Lattice& lattice) {
  IonizeOptions options;
  options.map.method = parse_map_method(args.method);
  refuse_if_given(args.run.given, "--cutoff",
                  options.map.method == MapMethod::cutoff || options.map.method == MapMethod::msm,
                  "applies to --method cutoff or msm, not " + args.method);
  options.map.backend = parse_backend(args.run.backend);
  options.map.precision = parse_precision(args.run.precision);
  options.map.threads = threads_option(args.run.threads, args.run.quiet);
  options.map.dielectric = args.dielectric;
  options.map.cutoff = args.cutoff;
  args.run.refuse_gpus_on_the_cpu();
  options.map.gpus = args.run.gpu_list();
  options.cation = ion_species(args.cation);
  options.anion = ion_species(args.anion);
  options.min_distance_solute = args.min_distance_solute;
  options.min_distance_ion = args.min_distance_ion;
  if (args.neutralize || args.ionic_strength > 0) {
    if (args.cations >= 0 || args.anions >= 0)
      throw Error("--cations/--anions give the counts; --neutralize and --ionic-strength compute them: use one way");
    // The lattice's box stands for the solvent box (its volume; the structure's own is not
    // subtracted, as autoionize does not).
    const Vec3 e = lattice.extent();
    ion_counts(structure.net_charge(), args.ionic_strength, e.x * e.y * e.z, &options.cations, &options.anions);
  } else {
    if (args.cations < 0 && args.anions < 0) throw Error("give --cations N and/or --anions M, or --neutralize");
    options.cations = std::max(args.cations, 0);
    options.anions = std::max(args.anions, 0);
  }
  return options;
}

double ions_per_second(const IonizeResult& result) {
  return result.ions.empty() ? 0.0
                             : static_cast<double>(result.ions.size()) /
                                   std::max(1e-9, result.seconds - result.initial_map_stats.seconds);
}

nlohmann::json ionize_report(const IonizeArguments& args, const Atoms& structure, const Lattice& lattice,
                             const IonizeOptions& options, const IonizeResult& result, const std::string& output) {
  const MapStats& map = result.initial_map_stats;
  nlohmann::json report = run_report("ionize", args.run, map.backend, map.detail, map.notice);
  report["input"] = {{"file", args.input}, {"atoms", structure.size()}, {"net_charge", structure.net_charge()}};
  report["lattice"] = {{"origin", {lattice.origin.x, lattice.origin.y, lattice.origin.z}},
                       {"spacing", lattice.spacing},
                       {"dims", {lattice.dims[0], lattice.dims[1], lattice.dims[2]}}};
  report["parameters"] = {{"method", to_string(options.map.method)},
                          {"dielectric", options.map.dielectric},
                          {"precision", to_string(options.map.precision)},
                          {"min_distance_solute_angstrom", options.min_distance_solute},
                          {"min_distance_ion_angstrom", options.min_distance_ion}};
  nlohmann::json& ions = report["ions"];
  ions = nlohmann::json::array();
  for (const PlacedIon& ion : result.ions)
    ions.push_back({{"species", ion.species.name},
                    {"position", {ion.position.x, ion.position.y, ion.position.z}},
                    {"potential_kT_per_e", ion.potential},
                    {"energy_kT", ion.energy}});
  report["timing_seconds"] = {{"initial_map", map.seconds}, {"total", result.seconds}};
  report["rates"] = {{"ions_per_second_after_the_map", ions_per_second(result)}};
  report["outputs"] = {{"pqr", output}};
  if (!args.pdb.empty()) report["outputs"]["pdb"] = args.pdb;
  if (!args.png.empty()) report["outputs"]["png"] = args.png;
  return report;
}

void print_ions(const Atoms& structure, const Lattice& lattice, const IonizeOptions& options,
                const IonizeResult& result, const std::string& output) {
  fmt::print("{:>4} {:>5} {:>9} {:>9} {:>9} {:>12} {:>12}\n", "ion", "kind", "x", "y", "z", "V (kT/e)", "qV (kT)");
  for (std::size_t n = 0; n < result.ions.size(); ++n) {
    const PlacedIon& ion = result.ions[n];
    fmt::print("{:>4} {:>5} {:>9.3f} {:>9.3f} {:>9.3f} {:>12.4f} {:>12.4f}\n", n + 1, ion.species.name, ion.position.x,
               ion.position.y, ion.position.z, ion.potential, ion.energy);
  }
  fmt::print("nbkit ionize: {} and {} around {} (net charge {:+.2f} e), {}x{}x{} lattice at {} A, "
             "{:.3f} s ({:.1f} ions/s after the map), {} -> {}\n",
             count_of(options.cations, "cation"), count_of(options.anions, "anion"),
             count_of(static_cast<std::int64_t>(structure.size()), "atom"), structure.net_charge(), lattice.dims[0],
             lattice.dims[1], lattice.dims[2], lattice.spacing, result.seconds, ions_per_second(result),
             result.initial_map_stats.detail, output);
}

int run_ionize(const IonizeArguments& args) {
  const std::string output = check_outputs(args);
  const Atoms structure = io::read_atoms(args.input);
  const Lattice lattice = lattice_around(structure, args.spacing, args.padding);
  IonizeOptions options = ionize_options(args, structure, lattice);
  ResourcePlan plan("nbkit ionize");
  plan.memory(2 * 8 * static_cast<std::uint64_t>(lattice.size()), "the map and the allowed points");
  plan.check();
  std::string backend_notice;
  options.map.backend = resolve_backend(options.map.backend, &backend_notice);
  notice(backend_notice, args.run.quiet);

  ProgressBar bar("ionize", !args.run.quiet);
  options.progress = [&bar](double fraction) { bar.update(fraction); };
  const IonizeResult result = place_ions(structure, lattice, options);
  bar.finish();
  std::vector<io::ExtraAtom> ions;
  for (const PlacedIon& ion : result.ions)
    ions.push_back({ion.species.residue, ion.position, ion.species.charge, ion.species.radius});
  const int models = io::write_pqr_with_atoms(
      args.input, ions, output,
      fmt::format("nbkit ionize: {} placed at the lowest q V on the lattice",
                  count_of(static_cast<std::int64_t>(ions.size()), "ion")));
  if (models > 1)
    notice(fmt::format("{} has {} models: the ions were placed around model 1, and the outputs hold model 1 only",
                       args.input, models),
           args.run.quiet);
  if (!args.pdb.empty()) io::write_pqr_as_pdb(args.input, ions, args.pdb);
  if (!args.png.empty()) {
    // Cations and anions in their own colours, with a legend.
    io::SliceMarkers cations{options.cation.name, {250, 210, 40}, {}}, anions{options.anion.name, {40, 200, 60}, {}};
    for (const PlacedIon& ion : result.ions) (ion.species.charge > 0 ? cations : anions).positions.push_back(ion.position);
    io::SliceSpec slice;
    if (!result.ions.empty()) slice.coordinate = result.ions.front().position.z;  // through the first ion
    io::write_slice_png(args.png, result.map, slice, {cations, anions}, 3.0);
  }
  write_report(args.run.report, ionize_report(args, structure, lattice, options, result, output));
  if (!args.run.quiet) print_ions(structure, lattice, options, result, output);
  return 0;
}

}  // namespace

Action setup_ionize(CLI::App& app) {
  auto args = std::make_shared<IonizeArguments>();
  app.description(
      "Place ions around a structure as VMD's cionize does: each at the lattice point of lowest energy q V that keeps "
      "its distances, the map then updated by that ion's own potential.\n"
      "Example: nbkit ionize data/1a63.pqr --neutralize --ionic-strength 0.15 -o 1a63-ions.pqr --png ions.png");
  app.add_option("input", args->input, "PQR file")->required();
  app.add_option("-o,--output", args->output, "PQR file with the ions appended (default: INPUT-ions.pqr)");
  app.add_option("--pdb", args->pdb, "also a PDB file of the structure with the ions (chain I), for viewers");
  app.add_option("--cations", args->cations, "number of cations");
  app.add_option("--anions", args->anions, "number of anions");
  app.add_flag("--neutralize", args->neutralize, "counter-ions for the structure's net charge (with --ionic-strength: salt too)");
  app.add_option("--ionic-strength", args->ionic_strength, "mol/L of salt in the lattice's box, as autoionize counts it");
  app.add_option("--cation", args->cation, "Na+, K+, Li+, Cs+, Mg2+, Ca2+, Zn2+")->capture_default_str();
  app.add_option("--anion", args->anion, "Cl-, Br-")->capture_default_str();
  app.add_option("--min-distance-solute", args->min_distance_solute, "Angstrom from every structure atom")->capture_default_str();
  app.add_option("--min-distance-ion", args->min_distance_ion, "Angstrom between ions")->capture_default_str();
  app.add_option("--method", args->method, "potential: direct, mdh, cutoff or msm")->capture_default_str();
  app.add_option("--cutoff", args->cutoff, "cutoff (cutoff, msm), Angstrom")->capture_default_str();
  app.add_option("--dielectric", args->dielectric, "relative permittivity")->capture_default_str();
  app.add_option("--spacing", args->spacing, "lattice spacing, Angstrom")->capture_default_str();
  app.add_option("--padding", args->padding, "lattice margin around the structure, Angstrom")->capture_default_str();
  app.add_option("--png", args->png, "PNG: a map slice through the first ion with the ions marked");
  add_run_options(app, args->run,
                  {"", "the maps: single (float32 arithmetic, float64 sums) or double", "", "no progress bar, no table"});
  return [args, &app]() {
    args->run.given = given_options(app);
    return run_ionize(*args);
  };
}

}  // namespace nbkit::cli
