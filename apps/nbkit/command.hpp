#pragma once
// One file per subcommand (gemmi's prog/ habit); main.cpp holds the dispatch table.
#include <CLI/CLI.hpp>

#include <functional>

namespace nbkit::cli {

// A subcommand registers its options on `app` and returns the action to run once the
// command line is parsed; the action returns the exit status.
using Action = std::function<int()>;
using Setup = Action (*)(CLI::App& app);

struct Command {
  const char* name;
  const char* description;
  Setup setup;
};

Action setup_map(CLI::App& app);
Action setup_info(CLI::App& app);
Action setup_nbody(CLI::App& app);
Action setup_ionize(CLI::App& app);
Action setup_md(CLI::App& app);
Action setup_energy(CLI::App& app);
Action setup_rdf(CLI::App& app);

}  // namespace nbkit::cli
