// nbkit rdf: the radial distribution function g(r) between two atom groups over a trajectory,
// normalised as MDAnalysis's InterRDF, with the running coordination number (CSV, PNG).
#include <fmt/format.h>

#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>

#include "command.hpp"
#include "nbkit/analysis.hpp"
#include "nbkit/core/error.hpp"
#include "nbkit/core/progress.hpp"
#include "nbkit/io/atomic_file.hpp"
#include "nbkit/io/md_pictures.hpp"
#include "options.hpp"
#include "trajectory_frames.hpp"

namespace nbkit::cli {

namespace {

struct RdfArguments {
  std::string topology, trajectory, output = "rdf.csv", png;
  std::string select_a, select_b, indices_a, indices_b;
  std::string exclude = "none", norm = "rdf";
  analysis::RdfOptions options;
  FrameRange frames;
  RunOptions run;  // --backend, --gpus, --threads, -q, --report (no --precision: distances are float64)
};

// A group from --select-X or --indices-X (one of them; B defaults to A's).
std::vector<std::int32_t> group(const analysis::AtomTable& table, const std::string& expression,
                                const std::string& file, char name) {
  if (!expression.empty() && !file.empty())
    throw Error(fmt::format("--select-{0} and --indices-{0} choose group {1} two ways: use one", static_cast<char>(name + 32), name));
  std::vector<std::int32_t> atoms =
      file.empty() ? analysis::select_atoms(table, expression) : analysis::read_index_file(file, table.size());
  if (atoms.empty())
    throw Error(fmt::format("group {}: \"{}\" selects none of the {} atoms of {}", name, expression, table.size(), table.source));
  return atoms;
}

std::string describe(const std::string& expression, const std::string& file) {
  return file.empty() ? "\"" + expression + "\"" : "the indices in " + file;
}

void write_csv(const std::string& path, const RdfArguments& args, const analysis::RdfResult& r, std::size_t na,
               std::size_t nb) {
  io::write_atomically(path, [&](const std::string& target) {
    std::ofstream out(target);
    out << fmt::format("# nbkit {} rdf: {} over {} (first {}, last {}, stride {}), {} frames\n", build_info().version,
                       args.topology, args.trajectory, args.frames.first, args.frames.last, args.frames.stride, r.frames);
    out << fmt::format("# group A: {} ({} atoms); group B: {} ({} atoms); exclude {}; norm {}\n",
                       describe(args.select_a, args.indices_a), na,
                       describe(args.select_b.empty() && args.indices_b.empty() ? args.select_a : args.select_b,
                                args.indices_b.empty() && args.select_b.empty() ? args.indices_a : args.indices_b),
                       nb, args.exclude, args.norm);
    out << fmt::format("# pairs per frame {}, mean volume {} A^3; g = count / (frames * shell volume * pairs / volume)"
                       " as MDAnalysis's InterRDF; coordination: B atoms within r_hi of an A atom, on average\n",
                       r.pairs, r.mean_volume);
    out << "r_lo,r_hi,r,count,g,coordination\n";
    for (std::size_t k = 0; k < r.counts.size(); ++k)
      out << fmt::format("{},{},{},{},{},{}\n", r.edges[k], r.edges[k + 1], 0.5 * (r.edges[k] + r.edges[k + 1]),
                         r.counts[k], r.g[k], r.coordination[k]);
    out.flush();
    if (!out) throw Error(path + ": write failed (disk full?)");
  });
}

int run_rdf(RdfArguments& args, const CLI::App& app) {
  const auto start = std::chrono::steady_clock::now();
  args.run.given = given_options(app);
  args.options.exclude = analysis::parse_rdf_exclusion(args.exclude);
  args.options.norm = analysis::parse_rdf_norm(args.norm);
  args.options.threads = threads_option(args.run.threads, args.run.quiet);
  args.options.backend = args.run.backend_requested();
  args.run.refuse_gpus_on_the_cpu();
  args.options.gpus = args.run.gpu_list();
  refuse_if_given(args.run.given, "--volume",
                  args.options.norm == analysis::RdfNorm::rdf || args.options.norm == analysis::RdfNorm::vmd,
                  "normalises g(r) (--norm rdf or vmd)");
  if (args.select_a.empty() && args.indices_a.empty()) throw Error("choose group A with --select-a or --indices-a");
  if (!args.png.empty() && !args.png.ends_with(".png")) throw Error("--png " + args.png + ": name it .png");
  io::check_distinct_files({{args.topology, "TOPOLOGY"}, {args.trajectory, "TRAJECTORY"},
                            {args.indices_a, "--indices-a"}, {args.indices_b, "--indices-b"}},
                           {{args.output, "-o"}, {args.png, "--png"}, {args.run.report, "--report"}});
  for (const std::string& path : {args.output, args.png, args.run.report})
    if (!path.empty()) io::check_writable(path);

  const analysis::AtomTable table = analysis::read_atom_table(args.topology);
  std::vector<std::int32_t> a = group(table, args.select_a, args.indices_a, 'A');
  const bool b_given = !args.select_b.empty() || !args.indices_b.empty();
  std::vector<std::int32_t> b = b_given ? group(table, args.select_b, args.indices_b, 'B') : a;
  const std::size_t na = a.size(), nb = b.size();
  analysis::Rdf rdf(table, std::move(a), std::move(b), args.options);
  notice(rdf.result().notice, args.run.quiet);

  TrajectoryFrames frames(args.trajectory, args.frames, table.size(), args.topology);
  // The next frame is read while this one is counted (on the GPUs the whole count overlaps the disk).
  frames.read_ahead();
  ProgressBar bar("g(r)", !args.run.quiet);
  const long long expected = frames.expected();
  do {
    const auto& f = frames.frame();
    std::optional<analysis::Cell> cell;
    try {
      if (f.cell) cell = analysis::cell_from_dcd(*f.cell);
    } catch (const Error& e) {
      throw Error(fmt::format("{}: frame {}: {}", args.trajectory, frames.index(), e.what()));
    }
    rdf.add_frame(f.x.data(), f.y.data(), f.z.data(), cell);
    bar.update(expected > 0 ? static_cast<double>(rdf.frames()) / static_cast<double>(expected) : 0.0,
               fmt::format("{} frames", rdf.frames()));  // XTC and TRR: a count alone
  } while (frames.advance());
  bar.finish();
  const analysis::RdfResult result = rdf.result();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  ProgressBar write_bar("writing " + args.output, !args.run.quiet);
  write_csv(args.output, args, result, na, nb);
  std::vector<double> r(result.counts.size());
  for (std::size_t k = 0; k < r.size(); ++k) r[k] = 0.5 * (result.edges[k] + result.edges[k + 1]);
  const std::string g_label = args.norm == "rdf" || args.norm == "vmd"
                                  ? "g(r)"
                                  : (args.norm == "density" ? "density (1/A^3)" : "count per frame");
  if (!args.png.empty())
    io::write_thermo_png(args.png, r, "r (A)", {{g_label, result.g}, {"coordination number", result.coordination}});
  write_bar.finish();

  std::size_t peak = 0;
  for (std::size_t k = 1; k < result.g.size(); ++k)
    if (result.g[k] > result.g[peak]) peak = k;
  if (!args.run.quiet)
    fmt::print("nbkit rdf: {} x {} atoms, {} frames, {} to {} A in {} bins: highest g {:.4g} at {:.4g} A; "
               "{:.3g} distances/s on {}, {:.3g} s; wrote {}{}\n",
               with_commas(static_cast<std::int64_t>(na)), with_commas(static_cast<std::int64_t>(nb)), result.frames,
               args.options.rmin, args.options.rmax, args.options.bins, result.g[peak], r[peak],
               static_cast<double>(result.distances) / seconds, result.detail, seconds, args.output,
               args.png.empty() ? "" : " and " + args.png);
  if (!args.run.report.empty()) {
    nlohmann::json report = run_report("rdf", args.run, result.backend, result.detail, result.notice);
    report["rdf"] = {{"topology", args.topology}, {"trajectory", args.trajectory}, {"frames", result.frames},
                     {"atoms_a", na}, {"atoms_b", nb}, {"pairs", result.pairs}, {"mean_volume", result.mean_volume},
                     {"rmin", args.options.rmin}, {"rmax", args.options.rmax}, {"bins", args.options.bins},
                     {"exclude", args.exclude}, {"norm", args.norm}, {"distances", result.distances},
                     {"seconds", seconds}, {"output", args.output}};
    write_report(args.run.report, report);
  }
  return 0;
}

}  // namespace

Action setup_rdf(CLI::App& app) {
  auto args = std::make_shared<RdfArguments>();
  app.add_option("TOPOLOGY", args->topology, "the atoms: CHARMM .psf, AMBER .prmtop, .pqr, .pdb or .cif")->required();
  app.add_option("TRAJECTORY", args->trajectory,
                 "the frames: DCD (with its unit cells for periodic g(r)), XTC or TRR (GROMACS), or a "
                 "multi-model PQR/PDB/mmCIF")
      ->required();
  app.add_option("--select-a", args->select_a,
                 "group A: name, resname, element (wildcards * ?), resid, index (0-based; ranges 1:10), all, none, "
                 "and, or, not, ( ); e.g. \"resname WAT and name O\"");
  app.add_option("--select-b", args->select_b, "group B, as --select-a (default: group A)");
  app.add_option("--indices-a", args->indices_a, "group A as 0-based atom indices in a text file");
  app.add_option("--indices-b", args->indices_b, "group B as 0-based atom indices in a text file");
  app.add_option("--rmin", args->options.rmin, "start of the histogram (Angstrom)")->capture_default_str();
  app.add_option("--rmax", args->options.rmax, "end of the histogram (Angstrom; at most half the cell's narrowest width)")
      ->capture_default_str();
  app.add_option("--bins", args->options.bins, "histogram bins")->capture_default_str();
  app.add_option("--exclude", args->exclude,
                 "leave out pairs within one residue or molecule (InterRDF's exclusion_block): none, residue, "
                 "molecule (psf or prmtop); an atom with itself is always left out")
      ->capture_default_str();
  app.add_option("--norm", args->norm,
                 "rdf (g(r) as InterRDF: summed counts over the mean volume), vmd (g(r) as VMD's measure gofr: each "
                 "frame over its own volume, averaged), density (per shell volume) or none (counts per frame)")
      ->capture_default_str();
  app.add_option("--volume", args->options.volume,
                 "volume (A^3) for g(r) of frames without a unit cell (--norm vmd: default 30 A^3 a group-A atom, as VMD)");
  app.add_option("--first", args->frames.first, "first frame (0-based)")->capture_default_str();
  app.add_option("--last", args->frames.last, "last frame (-1: the end)")->capture_default_str();
  app.add_option("--stride", args->frames.stride, "every stride-th frame")->capture_default_str();
  app.add_option("-o,--output", args->output, "CSV: r_lo, r_hi, r, count, g, coordination")->capture_default_str();
  app.add_option("--png", args->png, "a plot of g(r) and the coordination number");
  app.add_option("--backend", args->run.backend,
                 "auto (the GPUs when usable, else the CPU), cpu or cuda: the same counts either way")
      ->capture_default_str();
  app.add_option("--gpus", args->run.gpus, "GPUs for --backend cuda/auto: all, a count N, or indices like 0,2")
      ->capture_default_str();
  app.add_option("--threads", args->run.threads, "CPU threads (0: all)")->capture_default_str();
  app.add_flag("-q,--quiet", args->run.quiet, "no progress bar, no summary");
  app.add_option("--report", args->run.report, "a JSON record of the run");
  app.description(
      "The radial distribution function g(r) between atom groups A and B over a trajectory, normalised as "
      "MDAnalysis's InterRDF (minimum images in each frame's cell, orthorhombic or triclinic), with the running "
      "coordination number. Writes CSV, optionally a PNG plot and a JSON report.\n"
      "Example: nbkit rdf water.prmtop water.dcd --select-a \"name O\" --rmax 10 --bins 100 --png g_oo.png");
  return [args, &app] { return run_rdf(*args, app); };
}

}  // namespace nbkit::cli
