// nbkit: the command-line tool. Library code throws; here errors become one line on
// stderr and a non-zero exit status.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <array>

#include "command.hpp"
#include "nbkit/core/backend.hpp"
#include "nbkit/core/error.hpp"

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

}  // namespace

int main(int argc, char** argv) {
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
    fmt::print(stderr, "nbkit: error: {}\n", error.what());
    return 2;
  }
  try {
    for (std::size_t i = 0; i < subcommands.size(); ++i)
      if (subcommands[i]->parsed()) return actions[i]();
  } catch (const nbkit::Error& error) {
    fmt::print(stderr, "nbkit: error: {}\n", error.what());
    return 1;
  } catch (const std::bad_alloc&) {
    fmt::print(stderr, "nbkit: error: out of memory: the run needs more than this machine can give (a smaller "
                       "lattice, fewer atoms or bodies, or a machine with more memory)\n");
    return 1;
  } catch (const std::length_error&) {
    fmt::print(stderr, "nbkit: error: a size beyond what this machine can hold was asked for; check the counts and "
                       "sizes on the command line and in the input files\n");
    return 1;
  } catch (const std::exception& error) {
    // Input is checked before it reaches the standard library: this is a bug to report.
    fmt::print(stderr, "nbkit: error: internal error ({}): a bug in nbkit; please report it with the command line\n",
               error.what());
    return 3;
  }
  return 0;
}
