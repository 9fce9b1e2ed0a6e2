#pragma once
// Option parsing shared by subcommands.
#include <CLI/CLI.hpp>

#include <array>
#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <vector>

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

}  // namespace nbkit::cli
