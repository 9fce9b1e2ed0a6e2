// nbkit energy: the single-point energy of a biomolecular system, term by term, and its forces
// (md::molecular_forces). What a user checks a setup with before running dynamics, and what the
// tests compare with OpenMM and LAMMPS.
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>

#include "command.hpp"
#include "nbkit/core/error.hpp"
#include "nbkit/core/units.hpp"
#include "nbkit/io/atomic_file.hpp"
#include "nbkit/io/molecular_files.hpp"
#include "nbkit/io/lammps_data.hpp"
#include "nbkit/io/structure.hpp"
#include "nbkit/md/molecular_forces.hpp"
#include "options.hpp"

namespace nbkit::cli {

namespace {

constexpr double kKilojoulePerKcal = 4.184;

struct EnergyArguments {
  std::string topology, coordinates, forces;
  std::vector<std::string> parameters;  // CHARMM parameter and stream files
  std::string box;                      // a,b,c (Angstrom): the periodic box, where the files give none
  std::string special_bonds;            // LAMMPS's special_bonds arguments, for a data file
  std::string method = "auto", style = "openmm", electrostatics, dispersion = "auto";
  double cutoff = 10, reaction_field_dielectric = 78.3, switch_distance = 0, ewald_tolerance = 5e-4;
  int pme_order = 5;
  double msm_spacing = 1.5, ewald_alpha = 0;
  std::string pme_mesh;  // a,b,c
  std::string pme_mesh_sizes = "reference";
  std::string msm_interpolation = "cubic";
  RunOptions run;
};

// A LAMMPS data file by its name: data.NAME, NAME.data or NAME.lmp.
bool is_lammps_data(const std::string& path) {
  const std::string e = io::lower_extension(path);
  return e == ".data" || e == ".lmp" || std::filesystem::path(path).filename().string().rfind("data.", 0) == 0;
}

// The topology, and the coordinates from their own file or (LAMMPS) from the topology's.
struct Inputs {
  md::Topology topology;
  md::Coordinates coordinates;
  bool lammps = false, charmm = false;
};

md::Coordinates read_coordinates(const std::string& path, std::size_t atoms);

Inputs read_inputs(const std::string& topology, const std::string& coordinates,
                   const std::vector<std::string>& parameters, const std::string& special_bonds) {
  Inputs in;
  if (!special_bonds.empty() && !is_lammps_data(topology))
    throw Error("--special-bonds: LAMMPS's 1-2, 1-3 and 1-4 factors go with a LAMMPS data file; " + topology +
                " defines its own");
  if (is_lammps_data(topology)) {
    if (!coordinates.empty())
      throw Error(coordinates + ": a LAMMPS data file holds its own coordinates: give the data file alone");
    if (!parameters.empty()) throw Error("--parameters: CHARMM parameter files go with a psf, not with " + topology);
    const io::LammpsData data = io::read_lammps_data(topology, md::Units::real);
    in.topology = io::molecular_topology(data, topology,
                                         special_bonds.empty() ? io::SpecialBonds{} : io::parse_special_bonds(special_bonds));
    const md::System& s = data.system;
    for (std::size_t i = 0; i < s.size(); ++i) in.coordinates.positions.push_back({s.x[i], s.y[i], s.z[i]});
    in.coordinates.box = s.box;
    in.lammps = true;
    return in;
  }
  in.topology = io::read_molecular_topology(topology, parameters);
  in.charmm = io::lower_extension(topology) == ".psf";
  if (coordinates.empty())
    throw Error(topology + ": needs a coordinate file (AMBER inpcrd or rst7, CHARMM crd, or PDB)");
  in.coordinates = read_coordinates(coordinates, in.topology.size());
  return in;
}

md::Coordinates read_coordinates(const std::string& path, std::size_t atoms) {
  const std::string e = io::lower_extension(path);
  if (e == ".pdb" || e == ".ent") {
    const auto models = io::read_models(path);
    if (models.front().size() != atoms)
      throw Error(fmt::format("{}: {} atoms, the topology has {}", path, models.front().size(), atoms));
    md::Coordinates c;
    for (std::size_t i = 0; i < atoms; ++i) c.positions.push_back(models.front().position(i));
    return c;
  }
  return io::read_molecular_coordinates(path, atoms);
}

// --forces: one line per atom, "index fx fy fz" in kcal/mol/Angstrom after '#' comments
// (numpy.loadtxt reads it; 17 significant digits keep every bit of a double).
void write_forces(const std::string& path, const md::MolecularForces& result, const std::string& what) {
  io::write_atomically(path, [&](const std::string& temporary) {
    std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::fopen(temporary.c_str(), "w"), &std::fclose);
    if (!f) throw Error(path + ": cannot write");
    fmt::print(f.get(), "# nbkit energy forces: {}\n# atom (1-based) fx fy fz in kcal/mol/Angstrom\n", what);
    for (std::size_t i = 0; i < result.force.size(); ++i)
      fmt::print(f.get(), "{} {:.17g} {:.17g} {:.17g}\n", i + 1, result.force[i].x, result.force[i].y,
                 result.force[i].z);
    if (std::fflush(f.get()) != 0 || std::ferror(f.get())) throw Error(path + ": write failed");
  });
}

md::NonbondedSettings settings_of(const EnergyArguments& args, const std::optional<PeriodicBox>& box, const Inputs& in,
                                  std::string& notice_text) {
  md::NonbondedSettings s;
  if (in.lammps) s.coulomb_constant = units::lammps_real::qqr2e;  // the program the file comes from
  s.style = md::parse_cutoff_style(args.style);
  if (!args.electrostatics.empty()) {
    for (const char* option : {"--nonbonded", "--cutoff-style"})
      if (args.run.given.count(option))
        throw Error(fmt::format("--electrostatics sets the method and the cutoff style: give it or {}, not both", option));
    md::set_electrostatics(args.electrostatics, box.has_value(), s);
  } else if (args.method == "auto") {
    s.method = box ? md::NonbondedSettings::Method::cutoff_periodic : md::NonbondedSettings::Method::no_cutoff;
    if (box)
      notice_text = "the system has a periodic box: cutoff-periodic with a reaction field (--nonbonded no-cutoff or "
                    "cutoff to choose otherwise, --electrostatics pme for particle-mesh Ewald)";
  } else {
    s.method = md::parse_nonbonded_method(args.method);
  }
  const bool cut = s.method != md::NonbondedSettings::Method::no_cutoff;
  refuse_if_given(args.run.given, "--cutoff", cut, "no-cutoff sums every pair");
  refuse_if_given(args.run.given, "--switch-distance", cut, "no-cutoff sums every pair");
  refuse_if_given(args.run.given, "--reaction-field-dielectric", cut, "no-cutoff has no reaction field");
  refuse_if_given(args.run.given, "--cutoff-style", cut, "no-cutoff sums every pair");
  refuse_if_given(args.run.given, "--reaction-field-dielectric",
                  s.style == md::NonbondedSettings::CutoffStyle::openmm, "the charmm style has no reaction field");
  const bool pme = s.method == md::NonbondedSettings::Method::pme;
  refuse_if_given(args.run.given, "--reaction-field-dielectric", !pme, "pme has no reaction field");
  refuse_if_given(args.run.given, "--ewald-tolerance", pme, "only pme has an Ewald tolerance");
  refuse_if_given(args.run.given, "--pme-order", pme, "only pme has B-splines");
  const bool msm = s.method == md::NonbondedSettings::Method::msm;
  refuse_if_given(args.run.given, "--reaction-field-dielectric", !msm, "msm has no reaction field");
  refuse_if_given(args.run.given, "--msm-spacing", msm, "only msm has grids");
  refuse_if_given(args.run.given, "--msm-interpolation", msm, "only msm has grids");
  if (args.msm_interpolation != "cubic" && args.msm_interpolation != "quintic")
    throw Error("--msm-interpolation: cubic or quintic, not '" + args.msm_interpolation + "'");
  s.msm_spacing = args.msm_spacing;
  s.msm_quintic = args.msm_interpolation == "quintic";
  refuse_if_given(args.run.given, "--ewald-alpha", pme, "only pme has an Ewald alpha");
  refuse_if_given(args.run.given, "--pme-mesh", pme, "only pme has a mesh");
  refuse_if_given(args.run.given, "--pme-mesh-sizes", pme, "only pme has a mesh");
  if (args.pme_mesh_sizes != "reference" && args.pme_mesh_sizes != "fft")
    throw Error("--pme-mesh-sizes: reference or fft, not '" + args.pme_mesh_sizes + "'");
  if (args.run.given.count("--pme-mesh-sizes") && !args.pme_mesh.empty())
    throw Error("--pme-mesh-sizes: --pme-mesh gives the mesh outright");
  s.pme_fft_sizes = args.pme_mesh_sizes == "fft";
  if (args.run.given.count("--ewald-alpha")) s.ewald_alpha = args.ewald_alpha;
  if (!args.pme_mesh.empty()) {
    const Vec3 mesh = parse_triple(args.pme_mesh, "--pme-mesh", true);
    std::array<int, 3> points{};
    for (int a = 0; a < 3; ++a) {
      if (mesh[a] != std::floor(mesh[a]) || mesh[a] > 4096)
        throw Error("--pme-mesh: three whole numbers of mesh points, e.g. 64,64,64");
      points[static_cast<std::size_t>(a)] = static_cast<int>(mesh[a]);
    }
    s.pme_mesh = points;
  }
  s.ewald_tolerance = args.ewald_tolerance;
  s.pme_order = args.pme_order;
  s.cutoff = args.cutoff;
  s.reaction_field_dielectric = args.reaction_field_dielectric;
  if (args.run.given.count("--switch-distance")) s.switch_distance = args.switch_distance;
  // The tail correction as each format's own program has it: on for AMBER (and OpenMM), off for
  // CHARMM (OpenMM's CharmmPsfFile, NAMD's LJcorrection) and LAMMPS (pair_modify tail no).
  if (args.dispersion == "auto") {
    s.dispersion_correction = !in.lammps && !in.charmm;
  } else if (args.dispersion == "on" || args.dispersion == "off") {
    s.dispersion_correction = args.dispersion == "on";
    if (s.dispersion_correction && !s.periodic())
      throw Error("--dispersion-correction on: the correction needs a periodic box (a periodic method)");
  } else {
    throw Error("--dispersion-correction: expected on, off or auto, not '" + args.dispersion + "'");
  }
  if (!s.periodic()) s.dispersion_correction = false;
  return s;
}

int run_energy(const EnergyArguments& args) {
  const Backend backend = args.run.backend_requested();
  const Precision precision = args.run.precision_given().value_or(Precision::double_);
  args.run.refuse_gpus_on_the_cpu();
  std::vector<io::NamedFile> inputs{{args.topology, "the topology"}, {args.coordinates, "the coordinates"}};
  for (const std::string& p : args.parameters) inputs.push_back({p, "--parameters"});
  io::check_distinct_files(inputs, {{args.forces, "--forces"}, {args.run.report, "--report"}});
  for (const std::string& out : {args.forces, args.run.report})
    if (!out.empty()) io::check_writable(out);
  const Inputs in = read_inputs(args.topology, args.coordinates, args.parameters, args.special_bonds);
  const md::Topology& topology = in.topology;
  const md::Coordinates& coordinates = in.coordinates;
  std::optional<PeriodicBox> box = coordinates.box ? coordinates.box : topology.box;
  if (!args.box.empty()) {
    if (box) throw Error("--box: the files give a periodic box already");
    box = PeriodicBox::from_edges(parse_triple(args.box, "--box", true));
  }
  std::string notice_text;
  const md::NonbondedSettings settings = settings_of(args, box, in, notice_text);
  notice(notice_text, args.run.quiet);
  const int threads = threads_option(args.run.threads, args.run.quiet);
  // auto: the CPU, whose cell list beats the GPU's every-pair test for a single evaluation,
  // unless --gpus names a GPU.
  const Backend used = backend != Backend::automatic ? backend
                       : args.run.given.count("--gpus") ? Backend::cuda
                                                        : Backend::cpu;
  if (precision == Precision::single && used != Backend::cuda)
    throw Error("--precision single (mixed: float32 pairs, float64 sums) is the GPU's: add --backend cuda");
  const std::vector<int> gpus = used == Backend::cuda ? args.run.gpu_list() : std::vector<int>{};
  const auto start = std::chrono::steady_clock::now();
  const md::MolecularForces result =
      md::molecular_forces(topology, coordinates.positions, box, settings, used, threads, gpus, precision);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const std::string gpu_detail =
      std::string(settings.periodic() ? ", pair list" : ", every pair") +
      (precision == Precision::single ? ", mixed precision (float32 pairs, float64 sums)" : ", float64");
  const std::string detail = used == Backend::reference ? "every pair, 1 thread, float64"
                             : used == Backend::cuda    ? resolve_gpu(gpus).name + gpu_detail
                                                        : fmt::format("{} threads, float64", threads);
  const std::string what = fmt::format("{}, {}, {}", topology.source, count_of(static_cast<std::int64_t>(topology.size()), "atom"),
                                       md::to_string(settings.method));
  if (!args.forces.empty()) write_forces(args.forces, result, what);
  nlohmann::json report = run_report("energy", args.run, used, detail, notice_text);
  report["input"] = {{"topology", args.topology}, {"coordinates", args.coordinates}, {"atoms", topology.size()}};
  report["nonbonded"] = {{"method", md::to_string(settings.method)},
                         {"electrostatics", md::electrostatics_name(settings)},
                         {"dispersion_correction", settings.dispersion_correction}};
  if (settings.method != md::NonbondedSettings::Method::no_cutoff) {
    report["nonbonded"]["cutoff"] = settings.cutoff;
    if (settings.method == md::NonbondedSettings::Method::pme) {
      const md::PmeParameters p = md::pme_parameters(settings, *box);
      report["nonbonded"]["pme"] = {{"ewald_tolerance", settings.ewald_tolerance}, {"alpha_per_angstrom", p.alpha},
                                    {"mesh", p.mesh}, {"order", settings.pme_order},
                                    {"mesh_sizes", settings.pme_fft_sizes ? "fft" : "reference"}};
    } else if (settings.method == md::NonbondedSettings::Method::msm) {
      report["nonbonded"]["msm"] = {{"spacing", settings.msm_spacing},
                                    {"interpolation", settings.msm_quintic ? "quintic" : "cubic"},
                                    {"splitting", "taylor2"}};
    } else {
      report["nonbonded"]["reaction_field_dielectric"] = settings.reaction_field_dielectric;
    }
    if (settings.switch_distance) report["nonbonded"]["switch_distance"] = *settings.switch_distance;
    report["nonbonded"]["cutoff_style"] = md::to_string(settings.style);
  }
  report["nonbonded"]["coulomb_constant"] = settings.coulomb_constant;
  nlohmann::json kcal, kj;
  for (const auto& [name, value] : result.energy.named()) kcal[name] = value, kj[name] = value * kKilojoulePerKcal;
  kcal["total"] = result.energy.total(), kj["total"] = result.energy.total() * kKilojoulePerKcal;
  report["energy_kcal_per_mol"] = kcal;
  report["energy_kj_per_mol"] = kj;
  report["timing_seconds"] = {{"evaluation", seconds}};
  report["rates"] = {{"evaluations_per_second", seconds > 0 ? 1 / seconds : 0.0}};
  report["outputs"] = nlohmann::json::object();
  if (!args.forces.empty()) report["outputs"]["forces"] = args.forces;
  write_report(args.run.report, report);
  if (!args.run.quiet) {
    fmt::print("{:<22} {:>20} {:>20}\n", "term", "kcal/mol", "kJ/mol");
    for (const auto& [name, value] : result.energy.named())
      fmt::print("{:<22} {:>20.10f} {:>20.10f}\n", name, value, value * kKilojoulePerKcal);
    fmt::print("{:<22} {:>20.10f} {:>20.10f}\n", "total", result.energy.total(),
               result.energy.total() * kKilojoulePerKcal);
    fmt::print("nbkit energy: {}, {:.3f} s ({}, {})\n", what, seconds, to_string(used), detail);
  }
  return 0;
}

}  // namespace

Action setup_energy(CLI::App& app) {
  auto args = std::make_shared<EnergyArguments>();
  app.description(
      "The energy of a biomolecular system term by term (bond, angle, Urey-Bradley, dihedral, improper, CMAP, "
      "Lennard-Jones, Coulomb, 1-4 Lennard-Jones, 1-4 Coulomb) in kcal/mol and kJ/mol, and its forces, as OpenMM's "
      "Reference platform computes them.\n"
      "Example: nbkit energy protein.prmtop protein.inpcrd --nonbonded no-cutoff --forces forces.txt\n"
      "         nbkit energy step5.psf step5.crd -p par_all36m_prot.prm -p toppar_water_ions.str");
  app.add_option("topology", args->topology,
                 "AMBER prmtop (.prmtop, .parm7), CHARMM psf (.psf, with --parameters), or a LAMMPS data file of atom style full or molecular (data.NAME, "
                 "NAME.data: coordinates and box inside; LAMMPS's Coulomb constant)")
      ->required()
      ->check(CLI::ExistingFile);
  app.add_option("coordinates", args->coordinates,
                 "AMBER inpcrd/rst7 (with the box, if any), CHARMM crd (.crd, .cor) or PDB, in the topology's atom "
                 "order (not with a LAMMPS data file)")
      ->check(CLI::ExistingFile);
  app.add_option("-p,--parameters", args->parameters,
                 "a CHARMM parameter or stream file (.prm, .par, .str) for a psf; repeat it for several, in CHARMM's "
                 "order (a later file's entries replace an earlier one's)")
      ->check(CLI::ExistingFile);
  app.add_option("--special-bonds", args->special_bonds,
                 "for a LAMMPS data file, its input script's special_bonds: charmm (the default: 1-2, 1-3 and 1-4 "
                 "pairs left out), amber, or \"lj 0 0 0.5 coul 0 0 0.8333\"");
  app.add_option("--box", args->box,
                 "the periodic box's edges a,b,c (Angstrom, orthorhombic) where the files give none (a psf with a crd: "
                 "CHARMM-GUI's box size)");
  app.add_option("--nonbonded", args->method,
                 "no-cutoff (every pair), cutoff (reaction field, no box), cutoff-periodic (reaction field, minimum "
                 "images), pme (particle-mesh Ewald), msm (multilevel summation), or auto: cutoff-periodic when the files give a "
                 "box, else no-cutoff")
      ->capture_default_str();
  app.add_option("--electrostatics", args->electrostatics,
                 "the Coulomb treatment in one word, instead of --nonbonded and --cutoff-style: pme, msm (multilevel "
                 "summation), reaction-field, shifted-force, coulomb (every pair, no cutoff) or none (no electrostatics)");
  app.add_option("--dispersion-correction", args->dispersion,
                 "the long-range Lennard-Jones (tail) correction of the periodic methods: on, off, or auto (on for "
                 "AMBER files as in OpenMM and AMBER; off for CHARMM and LAMMPS files as in their programs)")
      ->capture_default_str();
  app.add_option("--cutoff", args->cutoff, "nonbonded cutoff (Angstrom)")->capture_default_str();
  app.add_option("--ewald-tolerance", args->ewald_tolerance,
                 "pme: the Ewald error tolerance; alpha and the mesh follow from it as OpenMM derives them")
      ->capture_default_str();
  app.add_option("--pme-order", args->pme_order, "pme: the B-splines' order (4, 5 or 6)")->capture_default_str();
  app.add_option("--ewald-alpha", args->ewald_alpha, "pme: Ewald's alpha (1/Angstrom), instead of the tolerance's");
  app.add_option("--pme-mesh", args->pme_mesh, "pme: the mesh a,b,c (points per edge), instead of the tolerance's");
  app.add_option("--pme-mesh-sizes", args->pme_mesh_sizes,
                 "pme: the tolerance's mesh as OpenMM's Reference platform has it (reference), or each edge rounded "
                 "up to a product of 2, 3, 5 and 7 as its CUDA and CPU platforms round it (fft); [nonbonded] "
                 "pme_mesh_sizes in nbkit md")
      ->capture_default_str();
  app.add_option("--msm-spacing", args->msm_spacing,
                 "msm: the finest grid's spacing (Angstrom, at most half the cutoff)")
      ->capture_default_str();
  app.add_option("--msm-interpolation", args->msm_interpolation, "msm: cubic or quintic (C1 both)")
      ->capture_default_str();
  app.add_option("--switch-distance", args->switch_distance,
                 "switch Lennard-Jones off from this distance to the cutoff (Angstrom; OpenMM's switching function)");
  app.add_option("--cutoff-style", args->style,
                 "openmm (Coulomb with a reaction field, Lennard-Jones cut or switched by OpenMM's function), charmm "
                 "(CHARMM's switch on Lennard-Jones and Coulomb from --switch-distance: LAMMPS's lj/charmm/coul/charmm) "
                 "or shifted-force (shifted-force Coulomb; Lennard-Jones cut, or CHARMM-switched from "
                 "--switch-distance as NAMD's switchdist)")
      ->capture_default_str();
  app.add_option("--reaction-field-dielectric", args->reaction_field_dielectric,
                 "the dielectric beyond the cutoff (the reaction field)")
      ->capture_default_str();
  app.add_option("--forces", args->forces, "write every atom's force (kcal/mol/Angstrom; text: atom fx fy fz)");
  add_run_options(app, args->run,
                  {"auto or cpu (all threads, a cell list with a cutoff), cuda (one GPU: a pair list with a periodic "
                   "box, else every pair), or reference (every pair, one thread)",
                   "double (float64, the default), or single with --backend cuda and a periodic box (mixed: float32 "
                   "pair arithmetic, float64 sums, as OpenMM's mixed precision)", "the GPU of --backend cuda (its index)",
                   "no table, no summary"});
  return [args, &app]() {
    args->run.given = given_options(app);
    return run_energy(*args);
  };
}

}  // namespace nbkit::cli
