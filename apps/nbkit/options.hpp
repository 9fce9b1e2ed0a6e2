#pragma once
// Option parsing shared by subcommands.
#include <CLI/CLI.hpp>

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "nbkit/core/backend.hpp"
#include "nbkit/core/progress.hpp"
#include "nbkit/core/vec3.hpp"

namespace nbkit::cli {

// "x,y,z" (three numbers) -> Vec3; with allow_single, "a" means (a, a, a).
Vec3 parse_triple(const std::string& text, const std::string& option, bool allow_single = false);
std::array<std::int64_t, 3> parse_dims(const std::string& text, const std::string& option);

// --gpus: "all" -> {} (every GPU), "N" -> {0..N-1}, "i,j,..." (or "i,") -> those devices.
std::vector<int> parse_gpus(const std::string& text);

// "12345678" -> "12,345,678"
std::string with_commas(std::int64_t n);
// "1 atom", "2,065 atoms"
std::string count_of(std::int64_t n, const std::string& noun);

// "nbkit: notice: TEXT" on stderr, unless quiet or empty. Notices come before the work they
// concern (a progress bar would otherwise hide or follow them).
void notice(const std::string& text, bool quiet);

// --threads, decided in one place for every command (nbkit::resolve_threads): negative
// counts refused, absurd ones cut to the machine's threads with a notice.
int threads_option(int requested, bool quiet);

// The options given on the command line (long names, "--cutoff"), option groups included.
std::set<std::string> given_options(const CLI::App& app);

// Refuses an option that the run would ignore: "--cutoff applies to --method cutoff or msm,
// not direct". Silently ignored options are how wrong maps get made.
void refuse_if_given(const std::set<std::string>& given, const std::string& option, bool applies,
                     const std::string& why);

// A progress bar for a write, drawn as bars are (terminal only, not with -q).
std::function<void(double)> write_progress(ProgressBar& bar);

// The run options every command takes, with one meaning everywhere: where the work runs
// (--backend), in what arithmetic (--precision), on how many CPU threads (--threads) and
// which GPUs (--gpus), quietly (-q), and a JSON record of the run (--report FILE.json).
struct RunOptions {
  std::string backend = "auto", precision = "single", gpus = "all", report;
  int threads = 0;
  bool quiet = false;
  std::set<std::string> given;  // the options given (given_options), filled before the run
  Backend backend_requested() const { return parse_backend(backend); }
  // --precision when given (a command whose engines have one arithmetic refuses the other).
  std::optional<Precision> precision_given() const;
  std::vector<int> gpu_list() const { return parse_gpus(gpus); }
  // --gpus given with --backend cpu or reference would be ignored: refused.
  void refuse_gpus_on_the_cpu() const;
};
// What a command does with them, for --help (empty: the common text).
struct RunOptionHelp {
  std::string backend, precision, gpus, quiet;
};
// Adds the run options to `app` (a command or its "run" option group).
void add_run_options(CLI::App& app, RunOptions& options, const RunOptionHelp& help = {});

// The JSON report every command writes with --report, one shape: what ran and where, then the
// command's own sections. `backend_used`/`detail` say what ran ("cuda", "NVIDIA H100, float32").
nlohmann::json run_report(const std::string& command, const RunOptions& options, Backend backend_used,
                          const std::string& detail, const std::string& notice = "");
// Written atomically; nothing when `path` is empty.
void write_report(const std::string& path, const nlohmann::json& report);

}  // namespace nbkit::cli
