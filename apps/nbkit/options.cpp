#include "options.hpp"

#include <fmt/format.h>

#include <cmath>
#include <sstream>
#include <vector>

#include <fstream>

#include "nbkit/core/backend.hpp"
#include "nbkit/core/error.hpp"
#include "nbkit/io/atomic_file.hpp"

namespace nbkit::cli {

namespace {
std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> parts;
  std::stringstream stream(text);
  std::string part;
  while (std::getline(stream, part, ',')) parts.push_back(part);
  if (!text.empty() && text.back() == ',') parts.emplace_back();
  return parts;
}

double parse_double(const std::string& text, const std::string& option) {
  try {
    std::size_t used = 0;
    const double v = std::stod(text, &used);
    if (used != text.size() || !std::isfinite(v)) throw std::invalid_argument("");
    return v;
  } catch (const std::exception&) {
    throw Error(option + ": expected a finite number, got '" + text + "'");
  }
}
}  // namespace

Vec3 parse_triple(const std::string& text, const std::string& option, bool allow_single) {
  const auto parts = split_commas(text);
  if (allow_single && parts.size() == 1) {
    const double v = parse_double(parts[0], option);
    return {v, v, v};
  }
  if (parts.size() != 3)
    throw Error(option + ": expected three comma-separated numbers x,y,z" + (allow_single ? " or one number" : "") +
                ", got '" + text + "'");
  return {parse_double(parts[0], option), parse_double(parts[1], option), parse_double(parts[2], option)};
}

std::array<std::int64_t, 3> parse_dims(const std::string& text, const std::string& option) {
  const auto parts = split_commas(text);
  if (parts.size() != 3) throw Error(option + ": expected three comma-separated whole numbers nx,ny,nz, got '" + text + "'");
  std::array<std::int64_t, 3> dims{};
  for (int a = 0; a < 3; ++a) {
    try {
      std::size_t used = 0;
      dims[a] = std::stoll(parts[a], &used);
      if (used != parts[a].size() || dims[a] < 1) throw std::invalid_argument("");
    } catch (const std::exception&) {
      throw Error(option + ": expected three positive whole numbers nx,ny,nz, got '" + text + "'");
    }
  }
  return dims;
}

std::vector<int> parse_gpus(const std::string& text) {
  if (text.empty() || text == "all") return {};
  const auto fail = [&]() -> std::vector<int> {
    throw Error("--gpus: expected all, a count N, or a list of device indices like 0,2 (one device: 3,), got '" +
                text + "'");
  };
  auto parse_int = [&](const std::string& part) {
    std::size_t used = 0;
    int value = -1;
    try {
      value = std::stoi(part, &used);
    } catch (const std::exception&) {
      fail();
    }
    if (used != part.size() || value < 0) fail();
    return value;
  };
  if (text.find(',') == std::string::npos) {
    const int count = parse_int(text);
    if (count < 1) fail();
    std::vector<int> devices;
    for (int d = 0; d < count; ++d) devices.push_back(d);
    return devices;
  }
  std::vector<int> devices;
  for (const auto& part : split_commas(text))
    if (!part.empty()) devices.push_back(parse_int(part));
  if (devices.empty()) fail();
  return devices;
}

std::string count_of(std::int64_t n, const std::string& noun) {
  return with_commas(n) + " " + noun + (n == 1 ? "" : "s");
}

void notice(const std::string& text, bool quiet) {
  if (!quiet && !text.empty()) fmt::print(stderr, "nbkit: notice: {}\n", text);
}

int threads_option(int requested, bool quiet) {
  std::string why;
  const int threads = resolve_threads(requested, &why);
  notice(why, quiet);
  return threads;
}

std::set<std::string> given_options(const CLI::App& app) {
  std::set<std::string> given;
  for (const CLI::Option* option : app.get_options())
    if (option->count() > 0) given.insert(option->get_name());
  for (const CLI::App* group : app.get_subcommands([](const CLI::App*) { return true; }))
    if (group->get_name().empty()) {  // an option group, not a subcommand
      const auto inner = given_options(*group);
      given.insert(inner.begin(), inner.end());
    }
  return given;
}

void refuse_if_given(const std::set<std::string>& given, const std::string& option, bool applies,
                     const std::string& why) {
  if (!applies && given.count(option)) throw Error(option + " " + why);
}

std::function<void(double)> write_progress(ProgressBar& bar) {
  return [&bar](double fraction) { bar.update(fraction); };
}

std::string with_commas(std::int64_t n) {
  std::string digits = std::to_string(n < 0 ? -n : n), out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return n < 0 ? "-" + out : out;
}

std::optional<Precision> RunOptions::precision_given() const {
  if (!given.count("--precision")) return std::nullopt;
  return parse_precision(precision);
}

void RunOptions::refuse_gpus_on_the_cpu() const {
  const Backend requested = backend_requested();
  refuse_if_given(given, "--gpus", requested == Backend::automatic || requested == Backend::cuda,
                  "picks GPUs for --backend auto or cuda, not " + to_string(requested));
}

void add_run_options(CLI::App& app, RunOptions& options, const RunOptionHelp& help) {
  auto text = [](const std::string& own, const char* common) { return own.empty() ? std::string(common) : own; };
  app.add_option("--backend", options.backend,
                 text(help.backend, "auto (the GPUs when usable, else the CPU), cpu, cuda or reference (float64, slow)"))
      ->capture_default_str();
  app.add_option("--precision", options.precision,
                 text(help.precision, "single (float32 arithmetic, float64 sums) or double"))
      ->capture_default_str();
  app.add_option("--threads", options.threads, "CPU threads (0: all)")->capture_default_str();
  app.add_option("--gpus", options.gpus,
                 text(help.gpus, "GPUs for --backend cuda/auto: all, a count N, or indices like 0,2 (one: 3,)"))
      ->capture_default_str();
  app.add_flag("-q,--quiet", options.quiet, text(help.quiet, "no progress bar, no summary"));
  app.add_option("--report", options.report, "JSON record of the run: inputs, parameters, backend, timings, rates");
}

nlohmann::json run_report(const std::string& command, const RunOptions& options, Backend backend_used,
                          const std::string& detail, const std::string& notice) {
  nlohmann::json report;
  report["nbkit_version"] = build_info().version;
  report["command"] = command;
  report["backend"] = {{"requested", options.backend}, {"used", to_string(backend_used)}, {"detail", detail}};
  if (!notice.empty()) report["backend"]["notice"] = notice;
  return report;
}

void write_report(const std::string& path, const nlohmann::json& report) {
  if (path.empty()) return;
  io::write_atomically(path, [&](const std::string& temporary) {
    std::ofstream file(temporary);
    file << report.dump(2) << "\n";
    if (!file) throw Error(path + ": write failed");
  });
}

}  // namespace nbkit::cli
