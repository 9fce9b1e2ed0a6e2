// nbkit map: electrostatic potential map of a molecule (the options, the inputs, the lattice,
// the run and its report; the slab-by-slab writing is map_writing.cpp).
#include "map_command.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "command.hpp"
#include "nbkit/analysis.hpp"
#include "nbkit/core/error.hpp"
#include "nbkit/core/memory.hpp"
#include "nbkit/core/progress.hpp"
#include "nbkit/core/ranks.hpp"
#include "nbkit/core/resources.hpp"
#include "nbkit/io/atomic_file.hpp"
#include "nbkit/io/cell.hpp"
#include "nbkit/io/dcd.hpp"
#include "nbkit/io/map_files.hpp"
#include "nbkit/io/png.hpp"
#include "nbkit/io/structure.hpp"
#include "nbkit/maps.hpp"
#include "nbkit/trajectory.hpp"
#include "options.hpp"
#include "trajectory_frames.hpp"

namespace nbkit::cli {

namespace {

Lattice choose_lattice(const MapArguments& args, const Atoms& atoms, const std::optional<PeriodicBox>& periodic_box) {
  const bool explicit_box = !args.origin.empty() || !args.dims.empty();
  const bool centered_box = !args.center.empty() || !args.length.empty();
  if (explicit_box && centered_box) throw Error("--origin/--dims and --center/--length choose the lattice two ways: use one");
  if (periodic_box && !explicit_box && !centered_box) return lattice_spanning_cell(periodic_box->edges(), args.spacing);
  if (explicit_box) {
    if (args.origin.empty() || args.dims.empty()) throw Error("--origin and --dims go together: give both");
    Lattice lattice;
    lattice.origin = parse_triple(args.origin, "--origin");
    lattice.dims = parse_dims(args.dims, "--dims");
    lattice.spacing = args.spacing;
    validate(lattice);
    return lattice;
  }
  if (centered_box) {
    if (args.length.empty()) throw Error("--center needs --length (edge length in Angstrom, one number or x,y,z)");
    const Vec3 length = parse_triple(args.length, "--length", true);
    const BoundingBox box = bounding_box(atoms);
    const Vec3 center = args.center.empty() ? 0.5 * (box.lower + box.upper) : parse_triple(args.center, "--center");
    return lattice_centered(center, length, args.spacing);
  }
  return lattice_around(atoms, args.spacing, args.padding);
}

std::string default_output(const std::string& input) {
  return std::filesystem::path(input).stem().string() + ".dx";
}

// Options that would change nothing in this run are refused, not ignored.
void refuse_ignored_options(const MapArguments& args, MapMethod method) {
  const auto& g = args.run.given;
  const std::string m = to_string(method);
  refuse_if_given(g, "--cutoff", method == MapMethod::cutoff || method == MapMethod::msm,
                  "applies to --method cutoff or msm, not " + m);
  for (const char* option : {"--smoothing", "--bin-size"})
    refuse_if_given(g, option, method == MapMethod::cutoff, "applies to --method cutoff, not " + m);
  for (const char* option : {"--msm-spacing", "--msm-interpolation", "--msm-splitting"})
    refuse_if_given(g, option, method == MapMethod::msm, "applies to --method msm, not " + m);
  refuse_if_given(g, "--ionic-strength", method == MapMethod::mdh, "applies to --method mdh, not " + m);
  const bool density = is_density_method(method);
  for (const char* option : {"--units", "--dielectric", "--temperature"})
    refuse_if_given(g, option, !density, "applies to the potentials, not to --method " + m);
  for (const char* option : {"--weight", "--sigma"})
    refuse_if_given(g, option, method == MapMethod::density, "applies to --method density, not " + m);
  refuse_if_given(g, "--points", method == MapMethod::occupancy, "applies to --method occupancy, not " + m);
  refuse_if_given(g, "--radius-scale", method == MapMethod::density || (method == MapMethod::occupancy && !args.points),
                  "scales the Gaussians' widths (density) or the spheres (occupancy without --points)");
  refuse_if_given(g, "--slice", !args.png.empty(), "chooses the slice of the --png picture: add --png FILE");
  for (const char* option : {"--combine", "--first", "--last", "--stride"})
    refuse_if_given(g, option, !args.trajectory.empty(), "applies to maps of a --trajectory");
  for (const char* option : {"--allow-missing", "--save-pqr"})
    refuse_if_given(g, option, !args.charges.empty(), "applies to PDB/mmCIF input charged with --charges");
  args.run.refuse_gpus_on_the_cpu();
}

MapOptions map_options(const MapArguments& args) {
  MapOptions options;
  options.method = parse_map_method(args.method);
  options.unit = units::parse_potential_unit(args.units);
  options.backend = parse_backend(args.run.backend);
  options.precision = parse_precision(args.run.precision);
  refuse_ignored_options(args, options.method);
  // APBS's mdh is a boundary condition in water: default to water's dielectric there.
  options.dielectric = args.dielectric.value_or(options.method == MapMethod::mdh ? 78.54 : 1.0);
  options.temperature = args.temperature;
  options.ionic_strength = args.ionic_strength;
  options.cutoff = args.cutoff;
  options.smoothing = parse_smoothing(args.smoothing);
  options.bin_size = args.bin_size;
  options.msm_spacing = args.msm_spacing;
  options.msm_interpolation = parse_msm_interpolation(args.msm_interpolation);
  // Hardy's pairings: cubic with the C2 splitting, quintic with C3 (docs/methods.md).
  options.msm_splitting = !args.msm_splitting.empty() ? parse_smoothing(args.msm_splitting)
                          : options.msm_interpolation == MsmInterpolation::cubic ? Smoothing::taylor2
                                                                                 : Smoothing::taylor3;
  options.threads = threads_option(args.run.threads, args.run.quiet);
  options.gpus = parse_gpus(args.run.gpus);
  if (args.weight != "number" && args.weight != "charge") throw Error("--weight " + args.weight + ": expected number or charge");
  options.density_weight = args.weight == "charge" ? DensityWeight::charge : DensityWeight::number;
  options.radius_scale = args.radius_scale;
  options.density_sigma = args.sigma;
  options.occupancy_points = args.points;
  units::potential_prefactor(options.unit, options.dielectric, options.temperature);  // validates both
  return options;
}

// A trajectory's maps are combined whole, in memory: everything the run holds and writes,
// checked once the lattice is known and before any sum: the map and the trajectory's
// accumulators, the writer's copy, the output file.
void check_trajectory_resources(const MapArguments& args, const Lattice& lattice, const std::string& output,
                                bool combined_on_device) {
  const std::uint64_t points = static_cast<std::uint64_t>(lattice.size());
  ResourcePlan plan("nbkit map");
  plan.memory(8 * points, "the map");
  if (!combined_on_device) {
    plan.memory(8 * points, "a frame's map");
    plan.memory(combine_bytes_per_point(parse_combine(args.combine)) * points, "the frames' accumulators");
  }
  plan.memory(io::map_write_memory_bytes(output, lattice), "the writer's buffers");
  plan.disk(output, io::map_file_bytes(output, lattice), "the map");
  plan.check();
}

// The memory limit: --memory-limit, else 3/4 of what the machine has free now (the rest for
// the page cache the writes go through and for the system), else none.
// Under mpirun, per rank: the free memory is shared by the ranks on the machine.
std::uint64_t memory_limit(const MapArguments& args) {
  if (!args.memory_limit.empty()) return parse_bytes(args.memory_limit, "--memory-limit");
  return available_memory_bytes() / 4 * 3 / static_cast<std::uint64_t>(Ranks::world().node_size());
}

// Slabs as large as the limit allows, up to 4 GiB of values: a map that fits is one slab. A
// GPU run writes one slab while the next is computed (its host is free meanwhile): two slabs in
// memory, and at least eight of them for a map over 2 GiB, so that writing overlaps computing.
// A CPU run computes and formats on every core in turn: one slab in memory.
// A trajectory's slabs hold `arrays` values a point (the combined map, a frame's, stdev's M2)
// and are never overlapped.
// `rows`: the rows this process computes (a rank's share under mpirun; -1: all).
SlabPlan plan_slabs(const MapArguments& args, const Atoms& atoms, const Lattice& lattice, const MapOptions& options,
                    const std::string& output, std::uint64_t slice_bytes, int arrays = 0, std::int64_t rows = -1) {
  SlabPlan plan;
  plan.limit = memory_limit(args);
  plan.overlap = arrays == 0 && options.backend == Backend::cuda;
  if (arrays == 0) arrays = plan.overlap ? 2 : 1;
  if (rows < 0) rows = lattice.rows();
  rows = std::max<std::int64_t>(rows, 1);
  const std::int64_t nz = lattice.dims[2];
  const std::uint64_t method = map_method_memory_bytes(atoms, lattice, options);
  const std::uint64_t writer = io::map_write_memory_bytes(output, lattice, options.threads);
  const std::uint64_t fixed = method + writer + slice_bytes;
  // A row's values, twice when overlapping.
  const std::uint64_t per_row = static_cast<std::uint64_t>(nz) * 8 * arrays;
  std::int64_t fit = rows;
  if (plan.limit > 0) {
    const std::uint64_t room = plan.limit > fixed ? (plan.limit - fixed) / per_row : 0;
    fit = static_cast<std::int64_t>(std::min<std::uint64_t>(room, static_cast<std::uint64_t>(rows)));
  }
  if (fit < 1)
    throw MemoryError(fmt::format("nbkit map needs at least {} of memory (the method {}, the writer {}, a row of {} "
                                  "points {}) but the memory limit is {}{}",
                                  format_bytes(fixed + per_row), format_bytes(method), format_bytes(writer + slice_bytes),
                                  nz, format_bytes(per_row), format_bytes(plan.limit),
                                  args.memory_limit.empty() ? " (3/4 of the free memory; --memory-limit sets it)" : ""));
  // Slabs of at most 4 GiB of values: each slab costs a fixed time besides its points (the GPU's
  // cutoff sums bin every atom again: 0.4 s a slab for a million atoms on the H100 machine, where
  // 128 slabs of 512 MiB spent 61 s computing a 2048^3 map, 24 slabs of ~3 GiB 11 s).
  const std::int64_t cap = std::max<std::int64_t>(1, (std::int64_t{4} << 30) / (8 * nz));
  plan.slab_rows = std::min(fit, cap);
  if (plan.overlap && static_cast<std::uint64_t>(rows) * static_cast<std::uint64_t>(nz) * 8 > (std::uint64_t{2} << 30))
    plan.slab_rows = std::min(plan.slab_rows, (rows + 7) / 8);
  plan.slabs = (rows + plan.slab_rows - 1) / plan.slab_rows;
  plan.memory = fixed + per_row * static_cast<std::uint64_t>(plan.slab_rows);
  // Checked against the machine as every run is (the limit may exceed what is free), and the disk.
  ResourcePlan resources("nbkit map");
  resources.memory(static_cast<std::uint64_t>(plan.slab_rows) * per_row,
                   plan.slabs == 1 ? "the map" : fmt::format("slabs of {} rows", plan.slab_rows));
  if (method > 0) resources.memory(method, "the method's atoms and grids");
  if (writer + slice_bytes > 0) resources.memory(writer + slice_bytes, "the writer's buffers");
  resources.disk(output, io::map_file_bytes(output, lattice), "the map");
  resources.check();
  return plan;
}

// The atoms of the input, read (and charged by pdb2pqr, and selected) by rank 0 alone under
// mpirun and broadcast to the others: one reader of the file and one pdb2pqr run for the job
// (a thousand ranks reading one structure file at once is a file system's worst load), 40 bytes
// an atom sent.
void read_structure(const MapArguments& args, MapInputs& in);

MapInputs read_inputs(const MapArguments& args) {
  MapInputs in;
  const Ranks& ranks = Ranks::world();
  if (ranks.root()) read_structure(args, in);
  if (ranks.distributed()) {
    for (std::vector<double>* v : {&in.atoms.x, &in.atoms.y, &in.atoms.z, &in.atoms.charge, &in.atoms.radius})
      ranks.broadcast(*v);
    ranks.broadcast(in.selected);
    std::vector<double> count{static_cast<double>(in.input_atoms)};
    ranks.broadcast(count);
    in.input_atoms = static_cast<std::size_t>(count[0]);
  }
  if (!args.trajectory.empty()) {
    in.frames = std::make_unique<TrajectoryFrames>(args.trajectory, FrameRange{args.first, args.last, args.stride},
                                                   in.input_atoms, args.input);
    in.frames->load(in.atoms, in.selected);
  }
  return in;
}

void read_structure(const MapArguments& args, MapInputs& in) {
  io::ChargeOptions charge_options;
  charge_options.force_field = args.charges;
  charge_options.allow_missing = args.allow_missing;
  charge_options.save_pqr = args.save_pqr;
  std::string charges_notice;
  charge_options.notice = &charges_notice;
  in.atoms = io::read_atoms(args.input, charge_options);
  notice(charges_notice, args.run.quiet);
  const std::size_t all_atoms = in.atoms.size();
  if (!args.select.empty()) {  // the atoms of the selection, in file order
    if (!args.charges.empty())
      throw Error("--select picks atoms of the input file, not of pdb2pqr's output (--charges): make the PQR first "
                  "(--save-pqr) and map that");
    const analysis::AtomTable table = analysis::read_atom_table(args.input);
    if (table.size() != all_atoms)
      throw Error(fmt::format("{}: {} atoms for --select, {} to map", args.input, table.size(), all_atoms));
    in.selected = analysis::select_atoms(table, args.select);
    if (in.selected.empty())
      throw Error(fmt::format("--select \"{}\" selects none of the {} atoms of {}", args.select, all_atoms, args.input));
    Atoms chosen;
    for (std::int32_t i : in.selected)
      chosen.push_back({in.atoms.x[i], in.atoms.y[i], in.atoms.z[i]}, in.atoms.charge[i], in.atoms.radius[i]);
    in.atoms = std::move(chosen);
  }
  in.input_atoms = all_atoms;
}

// --periodic: the box of the input's CRYST1 record or --box, for the methods that have one.
std::optional<PeriodicBox> periodic_box(const MapArguments& args, MapMethod method) {
  if (!args.box.empty() && !args.periodic) throw Error("--box gives the periodic box: add --periodic");
  if (!args.periodic) return std::nullopt;
  if (method != MapMethod::cutoff && method != MapMethod::msm)
    throw Error("--periodic needs --method cutoff or msm: direct and mdh sums over all periodic images do not converge");
  const std::optional<PeriodicBox> box = args.box.empty()
                                             ? io::read_periodic_box(args.input)
                                             : PeriodicBox::from_edges(parse_triple(args.box, "--box", true));
  if (!box)
    throw Error(fmt::format("--periodic: {} has no CRYST1 record (or cell) giving the box; pass --box a,b,c (Angstrom)",
                            args.input));
  return box;
}

// What a periodic run should know before it starts: a net charge (periodic msm needs a
// neutralizing background), a box the lattice does not tile.
void periodic_notices(const MapOptions& options, const Atoms& atoms, const Lattice& lattice, bool quiet) {
  if (!options.periodic_box || quiet) return;
  const double net = atoms.net_charge();
  if (options.method == MapMethod::msm && std::fabs(net) > 1e-3)
    notice(fmt::format("the system's net charge is {:.4g} e: a periodic potential exists only with a neutralizing "
                       "background, and periodic msm's then differs from Ewald's by a constant",
                       net),
           quiet);
  for (int a = 0; a < 3; ++a) {
    const double cells = options.periodic_box->length(a) / lattice.spacing;
    if (std::fabs(cells - std::round(cells)) > 1e-6 * cells) {
      notice(fmt::format("the box edges are not all multiples of the spacing ({} A), so the lattice covers the cell but "
                         "does not repeat exactly across its faces",
                         lattice.spacing),
             quiet);
      return;
    }
  }
}

// The maps of the trajectory's frames combined in memory, with a progress bar.
Map compute_trajectory(const MapArguments& args, MapInputs& in, const Lattice& lattice, MapOptions options,
                       ComputedMap& out) {
  ProgressBar bar(fmt::format("{} map", to_string(options.method)), !args.run.quiet);
  Map map;
  {
    options.progress = nullptr;
    in.frames->read_ahead();  // the next frame from the disk while this one's map is computed
    const long long expected = in.frames->expected();
    bool first_frame = true;
    map = combine_frame_maps(
        in.atoms, lattice, options, parse_combine(args.combine),
        [&](Atoms& target) {
          if (first_frame) return !(first_frame = false);  // already loaded
          if (!in.frames->advance()) return false;
          in.frames->load(target, in.selected);
          return true;
        },
        [&](int done) {  // XTC and TRR do not say how many frames they hold: a count alone
          if (expected > 0)
            bar.update(static_cast<double>(done) / static_cast<double>(expected));
          else
            bar.update(0.0, fmt::format("{} frames", done));
        },
        &out.trajectory);
    out.stats = out.trajectory.last_frame;
    out.stats.seconds = out.trajectory.seconds;
    out.stats.lattice_points *= out.trajectory.frames;
    out.stats.evaluations *= out.trajectory.frames;
    out.stats.detail +=
        out.trajectory.combined_on_device ? "; frames combined on the GPU" : "; frames combined on the host";
  }
  bar.finish();
  notice(out.stats.notice, args.run.quiet);
  const auto [low, high] = std::minmax_element(map.values.begin(), map.values.end());
  out.low = *low, out.high = *high;
  return map;
}

// What the map's values are.
std::string quantity_name(const MapOptions& options) {
  if (options.method == MapMethod::occupancy) return "Occupancy";
  if (options.method == MapMethod::density)
    return options.density_weight == DensityWeight::charge ? "Charge density" : "Number density";
  return "Electrostatic potential";
}

// The method and its parameters in a line, for the map file's comments.
std::string method_line(const MapOptions& options, double kappa) {
  std::string parameters;
  if (options.method == MapMethod::mdh)
    parameters = fmt::format(", ionic strength {} mol/L, kappa {:.6f} 1/A", options.ionic_strength, kappa);
  else if (options.method == MapMethod::cutoff)
    parameters = fmt::format(", cutoff {} A, smoothing {}{}", options.cutoff, to_string(options.smoothing),
                             options.periodic_box
                                 ? fmt::format(", periodic box {} x {} x {} A (minimum image)",
                                               options.periodic_box->length(0), options.periodic_box->length(1),
                                               options.periodic_box->length(2))
                                 : "");
  else if (options.method == MapMethod::msm)
    parameters = fmt::format(", cutoff {} A, {} interpolation, {} splitting, finest grid {} A", options.cutoff,
                             to_string(options.msm_interpolation), to_string(options.msm_splitting),
                             options.msm_spacing > 0 ? options.msm_spacing
                                                     : default_msm_spacing(options.msm_interpolation));
  if (options.method == MapMethod::density)
    return fmt::format("method density (VMD volmap density): each atom a normalised Gaussian of sigma {}, weight {}, "
                       "cut at {} sigma",
                       options.density_sigma > 0 ? fmt::format("{} A", options.density_sigma)
                                                 : fmt::format("{} x its radius", options.radius_scale),
                       options.density_weight == DensityWeight::charge ? "its charge" : "1", kDensityReachSigmas);
  if (options.method == MapMethod::occupancy)
    return options.occupancy_points
               ? "method occupancy (VMD volmap occupancy -points): 1 where an atom's centre lies in the point's voxel"
               : fmt::format("method occupancy (VMD volmap occupancy): 1 within {} x an atom's radius", options.radius_scale);
  return fmt::format("method {}, dielectric {}, temperature {} K{}", to_string(options.method), options.dielectric,
                     options.temperature, parameters);
}

}  // namespace

std::vector<std::string> map_comments(const MapArguments& args, const Atoms& atoms, const MapOptions& options,
                                      double kappa, int frames) {
  std::vector<std::string> comments = {
      fmt::format("{} in {} written by nbkit {}", quantity_name(options), units::to_string(map_unit(options)),
                  build_info().version),
      fmt::format("input {} ({} atoms{}, net charge {:+.4f} e)", args.input, atoms.size(),
                  args.select.empty() ? "" : fmt::format(" selected by \"{}\"", args.select), atoms.net_charge()),
      method_line(options, kappa),
      "vertex-centred lattice: point (i,j,k) at origin + (i,j,k)*delta; x index slowest, z fastest",
  };
  if (!args.trajectory.empty())
    comments.push_back(fmt::format("{} of the maps of {} of {} (first {}, stride {})", args.combine,
                                   frames >= 0 ? fmt::format("{} frames", frames) : "the frames", args.trajectory,
                                   args.first, args.stride));
  return comments;
}

namespace {

struct MapTimes {
  double read = 0, write = 0, total = 0;
};

nlohmann::json map_report(const MapArguments& args, const Atoms& atoms, const Lattice& lattice,
                          const MapOptions& options, double kappa, const ComputedMap& computed, const MapTimes& times,
                          const std::string& output) {
  const std::optional<io::SliceInfo>& slice_info = computed.slice;
  const MapStats& stats = computed.stats;
  nlohmann::json report = run_report("map", args.run, stats.backend, stats.detail, stats.notice);
  report["input"] = {{"file", args.input}, {"atoms", atoms.size()}, {"net_charge", atoms.net_charge()}};
  const auto& n = lattice.dims;
  report["lattice"] = {{"origin", {lattice.origin.x, lattice.origin.y, lattice.origin.z}},
                       {"spacing", lattice.spacing},
                       {"dims", {n[0], n[1], n[2]}},
                       {"points", lattice.size()},
                       {"convention", "vertex-centred, x slowest, z fastest"}};
  nlohmann::json& parameters = report["parameters"];
  parameters = {{"method", to_string(options.method)},
                {"units", units::to_string(options.unit)},
                {"dielectric", options.dielectric},
                {"temperature_K", options.temperature},
                {"precision", to_string(options.precision)}};
  if (options.method == MapMethod::cutoff) {
    parameters["cutoff_angstrom"] = options.cutoff;
    parameters["smoothing"] = to_string(options.smoothing);
    if (options.periodic_box)
      parameters["periodic_box_angstrom"] = {options.periodic_box->length(0), options.periodic_box->length(1),
                                             options.periodic_box->length(2)};
  }
  if (options.method == MapMethod::msm) {
    parameters["cutoff_angstrom"] = options.cutoff;
    parameters["msm_interpolation"] = to_string(options.msm_interpolation);
    parameters["msm_splitting"] = to_string(options.msm_splitting);
    parameters["msm_grid_spacing_angstrom"] =
        options.msm_spacing > 0 ? options.msm_spacing : default_msm_spacing(options.msm_interpolation);
  }
  if (options.method == MapMethod::mdh) {
    parameters["ionic_strength_molar"] = options.ionic_strength;
    parameters["kappa_per_angstrom"] = kappa;
    if (kappa > 0) parameters["debye_length_angstrom"] = 1.0 / kappa;
  }
  if (!args.trajectory.empty())
    report["trajectory"] = {{"file", args.trajectory}, {"combine", args.combine}, {"frames", computed.trajectory.frames},
                            {"first", args.first}, {"last", args.last}, {"stride", args.stride}};
  report["timing_seconds"] = {{"read", times.read}, {"compute", stats.seconds}, {"write", times.write},
                              {"total", times.total}};
  report["output"] = {{"format", io::to_string(io::guess_map_format(output))},
                      {"bytes", computed.write_bytes},
                      {"write_seconds", computed.write_seconds},
                      {"write_bytes_per_second",
                       computed.write_seconds > 0 ? static_cast<double>(computed.write_bytes) / computed.write_seconds : 0.0}};
  if (computed.slabs.slabs > 0)
    report["output"]["slabs"] = {{"count", computed.slabs.slabs},
                                 {"rows_each", computed.slabs.slab_rows},
                                 {"memory_limit_bytes", computed.slabs.limit},
                                 {"memory_counted_bytes", computed.slabs.memory},
                                 {"write_overlaps_compute", computed.slabs.overlap && computed.slabs.slabs > 1}};
  if (computed.before_first_write > 0) {  // one map streamed (not a trajectory's)
    report["output"]["seconds_before_first_write"] = computed.before_first_write;
    report["output"]["seconds_after_last_write"] = computed.after_last_write;
  }
  if (computed.rows.size() > 2) {
    nlohmann::json& ranks = report["ranks"];
    ranks["count"] = computed.rows.size() - 1;
    for (std::size_t r = 0; r + 1 < computed.rows.size(); ++r)
      ranks["rows"].push_back({computed.rows[r], computed.rows[r + 1]});
    ranks["measured_rows_per_second"] = computed.rates;
  }
  if (stats.backend == Backend::cuda) report["timing_seconds"]["gpu_kernels"] = stats.kernel_seconds;
  for (const auto& [stage, seconds] : stats.stage_seconds) report["timing_seconds"]["msm " + stage] = seconds;
  report["rates"] = {{"evaluations", stats.evaluations}, {"evaluations_per_second", stats.evaluations_per_second()},
                     {"lattice_points_per_second", stats.points_per_second()}};
  report[is_density_method(options.method) ? "values" : "potential"] = {
      {"min", computed.low}, {"max", computed.high}, {"unit", units::to_string(map_unit(options))}};
  report["outputs"] = {{"map", output}};
  if (slice_info)
    report["outputs"]["png"] = {{"file", args.png}, {"axis", std::string(1, "xyz"[slice_info->axis])},
                                {"coordinate", slice_info->coordinate}, {"color_range", slice_info->range}};
  return report;
}

// Before a long run: how the map will be computed and written, and how much disk it takes.
void slab_notice(const SlabPlan& plan, const Lattice& lattice, const std::string& output, bool default_limit,
                 bool quiet, int trajectory_arrays = 0) {
  const std::uint64_t bytes = io::map_file_bytes(output, lattice);
  const std::uint64_t values = static_cast<std::uint64_t>(lattice.size()) * 8;
  if (plan.slabs > 1)
    notice(fmt::format("computed and written in {} slabs of {} rows{} within a memory limit of {}{}: the map's values "
                       "take {}{}",
                       plan.slabs, with_commas(plan.slab_rows), plan.overlap ? " (each written while the next is computed)" : "",
                       format_bytes(plan.limit), default_limit ? " (3/4 of the free memory; --memory-limit sets it)" : "",
                       format_bytes(values),
                       trajectory_arrays > 0
                           ? fmt::format(", {} with the frames' accumulators; the frames are read once a slab",
                                         format_bytes(values * static_cast<std::uint64_t>(trajectory_arrays)))
                           : ""),
           quiet);
  if (bytes >= (std::uint64_t{1} << 30))
    notice(fmt::format("{} will take about {} ({}; {} free there)", output, format_bytes(bytes),
                       io::to_string(io::guess_map_format(output)), format_bytes(available_disk_bytes(output))),
           quiet);
}

int run_map(const MapArguments& given) {
  const auto start = std::chrono::steady_clock::now();
  const Ranks& ranks = Ranks::world();
  MapArguments args = given;
  if (!ranks.root()) args.run.quiet = true;  // under mpirun rank 0 speaks for the job
  MapOptions options = map_options(args);
  if (ranks.distributed()) {
    const NodeShare share = share_node(ranks, options.backend, options.gpus, args.run.threads == 0 ? 0 : options.threads);
    options.backend = share.backend, options.gpus = share.gpus, options.threads = share.threads;
    if (!share.notice.empty() && !given.run.quiet)
      fmt::print(stderr, "nbkit: note (rank {} of {}): {}\n", ranks.rank(), ranks.size(), share.notice);
  }
  const double kappa = screening_kappa(options);  // validates dielectric, temperature, ionic strength
  const std::string output = args.output.empty() ? default_output(args.input) : args.output;
  io::guess_map_format(output);
  io::check_distinct_files({{args.input, "INPUT"}, {args.trajectory, "--trajectory"}},
                           {{output, "-o"}, {args.png, "--png"}, {args.run.report, "--report"}, {args.save_pqr, "--save-pqr"}});
  // Fail before the long computation, not after it.
  for (const std::string& path : {output, args.png, args.run.report, args.save_pqr})
    if (!path.empty()) io::check_writable(path);
  const io::SliceSpec slice = io::parse_slice(args.slice);
  MapInputs in = read_inputs(args);  // a trajectory: positions from its first frame used
  MapTimes times;
  times.read = seconds_since(start);
  options.periodic_box = periodic_box(args, options.method);
  const Lattice lattice = choose_lattice(args, in.atoms, options.periodic_box);
  // --backend auto decided now, so that its notice comes before the work (not after the bar).
  std::string backend_notice;
  options.backend = resolve_backend(options.backend, &backend_notice);
  const bool stdev = in.frames && parse_combine(args.combine) == Combine::stdev;
  const io::ColorScale colors =
      stdev || is_density_method(options.method) ? io::ColorScale::sequential : io::ColorScale::diverging;
  ComputedMap computed;
  // A trajectory whose combined map does not fit the memory limit is combined a slab at a time.
  // (8-byte values a point: a frame's map, the finished values and the accumulators.)
  const int trajectory_arrays =
      in.frames ? 2 + static_cast<int>(combine_bytes_per_point(parse_combine(args.combine)) / 8) : 0;
  // Under mpirun each rank combines its frames a slab at a time.
  const bool trajectory_in_slabs =
      in.frames && (ranks.distributed() || (static_cast<std::uint64_t>(lattice.size()) * 8 * trajectory_arrays +
                                                    io::map_write_memory_bytes(output, lattice, options.threads) >
                                                memory_limit(args) &&
                                            memory_limit(args) > 0));
  if (trajectory_in_slabs) {
    std::optional<io::SlicePlane> plane;
    if (!args.png.empty()) plane.emplace(lattice, slice, map_unit(options));
    const RankRows rows = share_rows(in.atoms, lattice, options);
    computed.rows = rows.bounds, computed.rates = rows.rates;
    // Every rank combines its frames' maps of whole slabs; the slabs are the same on every rank.
    computed.slabs = plan_slabs(args, in.atoms, lattice, options, output, plane ? plane->bytes() : 0, trajectory_arrays);
    if (ranks.distributed()) {
      computed.slabs.slab_rows = static_cast<std::int64_t>(ranks.all_min(static_cast<double>(computed.slabs.slab_rows)));
      computed.slabs.slabs = (lattice.rows() + computed.slabs.slab_rows - 1) / computed.slabs.slab_rows;
    }
    notice(backend_notice, args.run.quiet);
    periodic_notices(options, in.atoms, lattice, args.run.quiet);
    slab_notice(computed.slabs, lattice, output, args.memory_limit.empty(), args.run.quiet, trajectory_arrays);
    combine_and_write(args, in, lattice, options, output, kappa, plane ? &*plane : nullptr, rows, computed);
    if (plane && ranks.root()) {
      const auto png_start = std::chrono::steady_clock::now();
      computed.slice = plane->write_png(args.png, colors);
      computed.write_seconds += seconds_since(png_start);
    }
    times.write = computed.write_seconds;
  } else if (in.frames) {
    check_trajectory_resources(args, lattice, output, options.backend == Backend::cuda && map_stays_on_device(options.method));
    notice(backend_notice, args.run.quiet);
    periodic_notices(options, in.atoms, lattice, args.run.quiet);
    const Map map = compute_trajectory(args, in, lattice, options, computed);
    const auto write_start = std::chrono::steady_clock::now();
    {
      ProgressBar write_bar("writing " + output, !args.run.quiet);
      io::write_map(output, map, map_comments(args, in.atoms, options, kappa, computed.trajectory.frames),
                    write_progress(write_bar));
    }
    computed.write_seconds = seconds_since(write_start);
    computed.write_bytes = file_bytes(output);
    if (!args.png.empty()) computed.slice = io::write_slice_png(args.png, map, slice, {}, 0, colors);
    times.write = seconds_since(write_start);
  } else {
    std::optional<io::SlicePlane> plane;
    if (!args.png.empty()) plane.emplace(lattice, slice, map_unit(options));
    const RankRows rows = share_rows(in.atoms, lattice, options);
    computed.rows = rows.bounds, computed.rates = rows.rates;
    computed.slabs =
        plan_slabs(args, in.atoms, lattice, options, output, plane ? plane->bytes() : 0, 0, rows.end() - rows.begin());
    notice(backend_notice, args.run.quiet);
    periodic_notices(options, in.atoms, lattice, args.run.quiet);
    slab_notice(computed.slabs, lattice, output, args.memory_limit.empty(), args.run.quiet);
    compute_and_write(args, in.atoms, lattice, options, output, map_comments(args, in.atoms, options, kappa, 0),
                      plane ? &*plane : nullptr, rows, computed);
    notice(computed.stats.notice, args.run.quiet);
    if (plane && ranks.root()) {
      const auto png_start = std::chrono::steady_clock::now();
      computed.slice = plane->write_png(args.png, colors);
      computed.write_seconds += seconds_since(png_start);
    }
    // Computing and writing overlap on a GPU: the write time is the writer's own.
    times.write = computed.write_seconds;
  }
  times.total = seconds_since(start);
  if (!ranks.root()) return 0;  // rank 0 reports for the job
  write_report(args.run.report, map_report(args, in.atoms, lattice, options, kappa, computed, times, output));

  if (!args.run.quiet) {
    const MapStats& stats = computed.stats;
    const std::string rate = stats.evaluations > 0
                                 ? fmt::format("{:.3g} atom-lattice evaluations/s", stats.evaluations_per_second())
                                 : fmt::format("{:.3g} lattice points/s", stats.points_per_second());
    const auto& n = lattice.dims;
    fmt::print("nbkit map: {}, {}x{}x{} = {} lattice points, {:.3f} s, {} ({}: {})\n",
               count_of(static_cast<std::int64_t>(in.atoms.size()), "atom"), n[0], n[1], n[2],
               with_commas(lattice.size()), stats.seconds, rate, to_string(stats.backend), stats.detail);
    fmt::print("  {} {:.4g} to {:.4g} {} -> {} ({}, {:.3f} s, {}/s{}){}\n",
               is_density_method(options.method) ? "values" : "potential", computed.low, computed.high,
               units::to_string(map_unit(options)), output, format_bytes(computed.write_bytes), computed.write_seconds,
               format_bytes(static_cast<std::uint64_t>(static_cast<double>(computed.write_bytes) /
                                                       std::max(computed.write_seconds, 1e-9))),
               computed.slabs.slabs > 1 ? fmt::format(", {} slabs", computed.slabs.slabs) : "",
               args.png.empty() ? "" : ", " + args.png);
  }
  return 0;
}

}  // namespace

Action setup_map(CLI::App& app) {
  auto args = std::make_shared<MapArguments>();
  app.description(
      "Electrostatic potential of a molecule on a 3-D lattice, as VMD's volmap coulomb or APBS's mdh boundary "
      "condition. Writes OpenDX (.dx) or CCP4/MRC (.mrc, .map, .ccp4), optionally a PNG slice and a JSON report.\n"
      "Example: nbkit map data/1a63.pqr -o 1a63.dx --png 1a63.png");
  app.add_option("input", args->input, "PQR file (or PDB/mmCIF with --charges)")->required();
  app.add_option("-o,--output", args->output, "map file: .dx, .mrc, .map or .ccp4 (default: INPUT's name with .dx)");
  auto* group_method = app.add_option_group("method");
  group_method->add_option("--method", args->method,
                           "direct (Coulomb), mdh (Debye-Hueckel with ion radii), cutoff (short-range, linear time), "
                           "msm (full Coulomb in linear time: multilevel summation); not potentials: density (atoms as "
                           "Gaussians, VMD's volmap density) or occupancy (1 inside an atom, VMD's volmap occupancy)")
      ->capture_default_str();
  group_method->add_option("--cutoff", args->cutoff, "cutoff distance, Angstrom (cutoff; msm: the splitting distance)")->capture_default_str();
  group_method->add_option("--smoothing", args->smoothing,
                           "cutoff method: none, cutcp (q/r (1-r^2/c^2)^2), taylor1..3 (multilevel splitting)")
      ->capture_default_str();
  group_method->add_option("--bin-size", args->bin_size, "cutoff method: atom bin edge, Angstrom (0: cutoff/3)")
      ->capture_default_str();
  group_method->add_option("--msm-spacing", args->msm_spacing,
                           "msm: finest grid spacing h, Angstrom (0: 2 A; 1.5 A with quintic for ~1e-4 accuracy)")
      ->capture_default_str();
  group_method->add_option("--msm-interpolation", args->msm_interpolation, "msm: cubic or quintic")->capture_default_str();
  group_method->add_option("--msm-splitting", args->msm_splitting,
                           "msm: taylor1, taylor2 or taylor3 (default: taylor2 with cubic, taylor3 with quintic)");
  group_method->add_flag("--periodic", args->periodic,
                         "the orthorhombic box of the input's CRYST1 record (or --box): cutoff: minimum-image sums; "
                         "msm: full periodic electrostatics (Ewald's potential, tin-foil boundaries, for neutral "
                         "systems); the lattice spans the cell unless given");
  group_method->add_option("--box", args->box, "with --periodic: box edge lengths a,b,c (Angstrom), cell from (0,0,0)");
  group_method->add_option("--dielectric", args->dielectric, "relative permittivity (default 1; 78.54 for mdh)");
  group_method->add_option("--temperature", args->temperature, "K, for kT/e and kappa")->capture_default_str();
  group_method->add_option("--ionic-strength", args->ionic_strength, "mol/L of 1:1 salt, mdh only")->capture_default_str();
  group_method->add_option("--units", args->units, "kT/e, kcal/mol/e or V")->capture_default_str();
  group_method->add_option("--weight", args->weight, "density: each Gaussian integrates to 1 (number) or the atom's charge")
      ->capture_default_str();
  group_method->add_option("--radius-scale", args->radius_scale,
                           "density: sigma = radius x this; occupancy: the spheres' radius = radius x this")
      ->capture_default_str();
  group_method->add_option("--sigma", args->sigma, "density: one sigma (Angstrom) for every atom instead of the radii");
  group_method->add_flag("--points", args->points,
                         "occupancy: atoms as points (a point is occupied when an atom's centre is in its voxel)");
  group_method->add_option("--select", args->select,
                           "map only these atoms: name, resname, element, resid, index, and/or/not (nbkit rdf's language)");
  group_method->add_option("--charges", args->charges, "for PDB/mmCIF input: run pdb2pqr with this force field (amber, charmm, parse, ...)");
  group_method->add_flag("--allow-missing", args->allow_missing,
                         "with --charges: map without the residues pdb2pqr cannot charge (ligands, metals), "
                         "which are otherwise an error naming them");
  group_method->add_option("--save-pqr", args->save_pqr, "with --charges: keep pdb2pqr's PQR in this file");
  auto* group_lattice = app.add_option_group("lattice");
  group_lattice->add_option("--spacing", args->spacing, "distance between lattice points, Angstrom")->capture_default_str();
  group_lattice->add_option("--padding", args->padding, "margin around the atoms' bounding box, Angstrom")->capture_default_str();
  group_lattice->add_option("--origin", args->origin, "x,y,z of lattice point (0,0,0), Angstrom (with --dims)");
  group_lattice->add_option("--dims", args->dims, "nx,ny,nz lattice points (with --origin)");
  group_lattice->add_option("--center", args->center, "x,y,z centre of the lattice (default: the atoms' centre; with --length)");
  group_lattice->add_option("--length", args->length, "edge length(s) of the lattice, Angstrom: L or Lx,Ly,Lz");
  auto* group_run = app.add_option_group("run");
  add_run_options(*group_run, args->run);
  group_run->add_option("--memory-limit", args->memory_limit,
                        "memory the map may hold, e.g. 8G or 500M (default: 3/4 of the free memory): a larger map is "
                        "computed and written in slabs, so the lattice is limited by the disk, not the memory");
  auto* group_traj = app.add_option_group("trajectory");
  group_traj->add_option("--trajectory", args->trajectory,
                         "trajectory of INPUT's atoms: DCD (CHARMM, NAMD, LAMMPS, OpenMM), XTC or TRR (GROMACS), or a "
                         "multi-model PQR/PDB: the map of every frame, combined");
  group_traj->add_option("--combine", args->combine, "avg, min, max or stdev over the frames")->capture_default_str();
  group_traj->add_option("--first", args->first, "first frame (0-based)")->capture_default_str();
  group_traj->add_option("--last", args->last, "last frame (0-based, inclusive; -1: the end)")->capture_default_str();
  group_traj->add_option("--stride", args->stride, "every stride-th frame")->capture_default_str();
  auto* group_out = app.add_option_group("outputs");
  group_out->add_option("--png", args->png, "PNG picture of a slice through the map");
  group_out->add_option("--slice", args->slice, "slice to draw: z=COORD (Angstrom), y=..., x=...; default: z through the centre");
  return [args, &app]() {
    args->run.given = given_options(app);
    return run_map(*args);
  };
}

}  // namespace nbkit::cli
