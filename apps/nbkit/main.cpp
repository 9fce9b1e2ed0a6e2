// nbkit: the command-line tool. Library code throws; here errors become one line on
// stderr and a non-zero exit status.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <array>

#include "command.hpp"
#include "nbkit/core/backend.hpp"
#include "nbkit/core/error.hpp"
#include "nbkit/core/ranks.hpp"
#include "nbkit/io/atomic_file.hpp"

namespace {

// The dispatch table: one entry per subcommand, with the line `nbkit --help` shows.
constexpr std::array<nbkit::cli::Command, 7> kCommands{{
    {"map", "electrostatic potential map of a molecule on a 3-D lattice (OpenDX, MRC, PNG)", nbkit::cli::setup_map},
    {"ionize", "place counter-ions and salt around a structure at the lowest energies of its potential map",
     nbkit::cli::setup_ionize},
    {"nbody", "gravitational N-body run: Plummer sphere, softened all-pairs gravity, leapfrog, diagnostics",
     nbkit::cli::setup_nbody},
    {"md", "Lennard-Jones molecular dynamics from a TOML file (LAMMPS units and files): NVE or Langevin",
     nbkit::cli::setup_md},
    {"energy", "energy and forces of a biomolecular system (AMBER prmtop), term by term, as OpenMM computes them",
     nbkit::cli::setup_energy},
    {"rdf", "radial distribution function g(r) of two atom groups over a trajectory (CSV, PNG)",
     nbkit::cli::setup_rdf},
    {"info", "version, build, SIMD target, CPU threads and GPUs", nbkit::cli::setup_info},
}};

// An error: one line on stderr and the exit status; in a job of several ranks the failing rank's
// message, then every rank stopped (the others cannot finish the work alone; an output in the
// making is removed by the failing rank (io::write_map_file) and by rank 0's signal handler:
// no partial output).
int fail(const std::string& message, int status) {
  const nbkit::Ranks& ranks = nbkit::Ranks::world();
  if (ranks.distributed()) {
    nbkit::io::remove_registered_paths();  // the job's temporaries: MPI_Abort's kill may come unseen
    ranks.abort(message, status);
  }
  fmt::print(stderr, "nbkit: error: {}\n", message);
  return status;
}

int run(int argc, char** argv);

}  // namespace

int main(int argc, char** argv) {
  nbkit::Ranks::Session session(argc, argv);  // MPI, when mpirun (or mpiexec, srun) started us
  return run(argc, argv);
}

namespace {

int run(int argc, char** argv) {
  CLI::App app{"nbkit: fast sums of pairwise particle interactions on CPUs and NVIDIA GPUs.\n"
               "Run 'nbkit COMMAND --help' for a command's options."};
  app.set_version_flag("--version", std::string("nbkit ") + nbkit::build_info().version);
  app.require_subcommand(1);
  app.fallthrough(false);
  std::vector<nbkit::cli::Action> actions(kCommands.size());
  std::vector<CLI::App*> subcommands;
  for (std::size_t i = 0; i < kCommands.size(); ++i) {
    CLI::App* sub = app.add_subcommand(kCommands[i].name, kCommands[i].description);
    actions[i] = kCommands[i].setup(*sub);
    subcommands.push_back(sub);
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    return app.exit(error);
  } catch (const nbkit::Error& error) {
    return fail(error.what(), 2);
  }
  try {
    for (std::size_t i = 0; i < subcommands.size(); ++i) {
      if (!subcommands[i]->parsed()) continue;
      // Under mpirun with several ranks: the commands that share their work among them (issue
      // 22); the others would run as many copies writing the same files.
      const std::string name = kCommands[i].name;
      if (nbkit::Ranks::world().distributed() && name != "map" && name != "nbody" && name != "info")
        throw nbkit::Error(fmt::format("nbkit {} runs in one process: start it without mpirun (under mpirun, nbkit "
                                       "map shares a map's rows among the ranks, nbkit nbody its bodies)",
                                       name));
      return actions[i]();
    }
  } catch (const nbkit::Error& error) {
    return fail(error.what(), 1);
  } catch (const std::bad_alloc&) {
    return fail("out of memory: the run needs more than this machine can give (a smaller lattice, fewer atoms or "
                "bodies, or a machine with more memory)",
                1);
  } catch (const std::length_error&) {
    return fail("a size beyond what this machine can hold was asked for; check the counts and sizes on the command "
                "line and in the input files",
                1);
  } catch (const std::exception& error) {
    // Input is checked before it reaches the standard library: this is a bug to report.
    return fail(fmt::format("internal error ({}): a bug in nbkit; please report it with the command line", error.what()),
                3);
  }
  return 0;
}

}  // namespace
