// nbkit ionize: place counter-ions and salt around a structure from its potential map.
#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>

#include "command.hpp"
#include "nbkit/core/error.hpp"
#include "nbkit/core/progress.hpp"
#include "nbkit/io/atomic_file.hpp"
#include "nbkit/io/png.hpp"
#include "nbkit/io/structure.hpp"
#include "nbkit/ionize.hpp"
#include "options.hpp"

namespace nbkit::cli {

namespace {

struct IonizeArguments {
  std::string input, output, pdb, png, method = "direct", backend = "auto", cation = "Na+", anion = "Cl-", gpus = "all";
  int cations = -1, anions = -1;
  bool neutralize = false;
  double ionic_strength = 0;
  double spacing = 1.0, padding = 12.0, min_distance_solute = 5.0, min_distance_ion = 5.0;
  double dielectric = 78.54, cutoff = 12.0;
  bool quiet = false;
};

// The input's records (a PQR file) without its END, then the ions, then END.
std::string pqr_with_ions(const std::string& input, const IonizeResult& result) {
  std::ifstream in(input);
  if (!in) throw Error(input + ": cannot open");
  std::ostringstream out;
  std::string line;
  int serial = 0;
  while (std::getline(in, line)) {
    if (line.rfind("END", 0) == 0 && line.rfind("ENDMDL", 0) != 0) continue;
    out << line << "\n";
    if (line.rfind("ATOM", 0) == 0 || line.rfind("HETATM", 0) == 0) ++serial;
  }
  out << "REMARK   nbkit ionize: " << result.ions.size() << " ions placed at the lowest q V on the lattice\n";
  int residue = 0;
  for (const PlacedIon& ion : result.ions) {
    out << fmt::format("HETATM{:5d} {:<4s} {:<3s} {:5d}    {:8.3f}{:8.3f}{:8.3f} {:7.4f} {:6.4f}\n", ++serial % 100000,
                       ion.species.residue, ion.species.residue, ++residue % 10000, ion.position.x, ion.position.y,
                       ion.position.z, ion.species.charge, ion.species.radius);
  }
  out << "END\n";
  return out.str();
}

int run_ionize(const IonizeArguments& args) {
  if (io::guess_structure_format(args.input) != io::StructureFormat::pqr)
    throw Error(args.input + ": ionize reads PQR files (make one with pdb2pqr, or with 'nbkit map --charges')");
  const Atoms structure = io::read_atoms(args.input);
  const Lattice lattice = lattice_around(structure, args.spacing, args.padding);
  IonizeOptions options;
  options.map.method = parse_map_method(args.method);
  options.map.backend = parse_backend(args.backend);
  options.map.dielectric = args.dielectric;
  options.map.cutoff = args.cutoff;
  options.map.gpus = parse_gpus(args.gpus);
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
  const std::string output = args.output.empty() ? std::filesystem::path(args.input).stem().string() + "-ions.pqr" : args.output;
  io::check_writable(output);
  if (!args.png.empty()) io::check_writable(args.png);
  if (!args.pdb.empty()) io::check_writable(args.pdb);

  ProgressBar bar("ionize", !args.quiet);
  options.progress = [&bar](double fraction) { bar.update(fraction); };
  const IonizeResult result = place_ions(structure, lattice, options);
  bar.finish();
  io::write_atomically(output, [&](const std::string& temporary) {
    std::ofstream(temporary) << pqr_with_ions(args.input, result);
  });
  if (!args.pdb.empty()) {
    std::vector<io::ExtraAtom> ions;
    for (const PlacedIon& ion : result.ions) ions.push_back({ion.species.residue, ion.position});
    io::write_pqr_as_pdb(args.input, ions, args.pdb);
  }
  if (!args.png.empty()) {
    std::vector<Vec3> positions;
    for (const PlacedIon& ion : result.ions) positions.push_back(ion.position);
    io::SliceSpec slice;
    if (!result.ions.empty()) slice.coordinate = result.ions.front().position.z;  // through the first ion
    io::write_slice_png(args.png, result.map, slice, positions, 3.0);
  }
  if (!args.quiet) {
    fmt::print("{:>4} {:>5} {:>9} {:>9} {:>9} {:>12} {:>12}\n", "ion", "kind", "x", "y", "z", "V (kT/e)", "qV (kT)");
    for (std::size_t n = 0; n < result.ions.size(); ++n) {
      const PlacedIon& ion = result.ions[n];
      fmt::print("{:>4} {:>5} {:>9.3f} {:>9.3f} {:>9.3f} {:>12.4f} {:>12.4f}\n", n + 1, ion.species.name, ion.position.x,
                 ion.position.y, ion.position.z, ion.potential, ion.energy);
    }
    fmt::print("nbkit ionize: {} cations and {} anions around {} atoms (net charge {:+.2f} e), {}x{}x{} lattice at {} A, "
               "{:.3f} s ({:.1f} ions/s after the map), {} -> {}\n",
               options.cations, options.anions, structure.size(), structure.net_charge(), lattice.dims[0],
               lattice.dims[1], lattice.dims[2], lattice.spacing, result.seconds,
               result.ions.empty() ? 0.0
                                   : static_cast<double>(result.ions.size()) /
                                         std::max(1e-9, result.seconds - result.initial_map_stats.seconds),
               result.initial_map_stats.detail, output);
  }
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
  app.add_option("--backend", args->backend, "auto, cpu, cuda or reference")->capture_default_str();
  app.add_option("--gpus", args->gpus, "GPUs for the maps: all, N or i,j")->capture_default_str();
  app.add_option("--png", args->png, "PNG: a map slice through the first ion with the ions marked");
  app.add_flag("-q,--quiet", args->quiet, "no progress bar, no table");
  return [args]() { return run_ionize(*args); };
}

}  // namespace nbkit::cli
