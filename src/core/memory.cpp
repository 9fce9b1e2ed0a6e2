#include "nbkit/core/memory.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "nbkit/core/error.hpp"

namespace nbkit {

namespace {
std::uint64_t meminfo_available() {
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  std::uint64_t kib = 0;
  std::string unit;
  while (meminfo >> key >> kib >> unit)
    if (key == "MemAvailable:") return kib * 1024;
  return 0;
}

std::uint64_t cgroup_remaining() {
  std::ifstream max_file("/sys/fs/cgroup/memory.max"), current_file("/sys/fs/cgroup/memory.current");
  std::string max_text;
  std::uint64_t current = 0;
  if (!(max_file >> max_text) || max_text == "max" || !(current_file >> current)) return 0;
  const std::uint64_t limit = std::stoull(max_text);
  return limit > current ? limit - current : 1;
}
}  // namespace

std::uint64_t available_memory_bytes() {
  if (const char* forced = std::getenv("NBKIT_MEMORY_LIMIT")) {
    try {
      return std::stoull(forced);
    } catch (const std::exception&) {
      throw Error(fmt::format("NBKIT_MEMORY_LIMIT='{}' is not a number of bytes", forced));
    }
  }
  const std::uint64_t machine = meminfo_available();
  const std::uint64_t cgroup = cgroup_remaining();
  if (machine == 0) return cgroup;
  return cgroup == 0 ? machine : std::min(machine, cgroup);
}

void check_memory(std::uint64_t bytes, const std::string& what) {
  const std::uint64_t available = available_memory_bytes();
  if (available != 0 && bytes > available)
    throw MemoryError(fmt::format("{} needs {} of memory but only {} are available", what,
                                  format_bytes(bytes), format_bytes(available)));
}

std::string format_bytes(std::uint64_t bytes) {
  const double b = static_cast<double>(bytes);
  if (b >= 1024.0 * 1024 * 1024) return fmt::format("{:.2f} GiB", b / (1024.0 * 1024 * 1024));
  if (b >= 1024.0 * 1024) return fmt::format("{:.1f} MiB", b / (1024.0 * 1024));
  if (b >= 1024.0) return fmt::format("{:.1f} KiB", b / 1024.0);
  return fmt::format("{} B", bytes);
}

std::uint64_t parse_bytes(const std::string& text, const std::string& option) {
  const auto refuse = [&] {
    return Error(fmt::format("{} {}: expected a size such as 8G, 500M or a number of bytes", option, text));
  };
  std::size_t end = 0;
  double value = 0;
  try {
    value = std::stod(text, &end);
  } catch (const std::exception&) {
    throw refuse();
  }
  std::string unit = text.substr(end);
  for (const char* suffix : {"iB", "B"})
    if (unit.size() > std::string(suffix).size() - 1 && unit.ends_with(suffix) && unit != suffix) {
      unit.resize(unit.size() - std::string(suffix).size());
      break;
    }
  double scale = 1;
  if (unit.empty() || unit == "B") scale = 1;
  else if (unit == "k" || unit == "K") scale = 1024.0;
  else if (unit == "M" || unit == "m") scale = 1024.0 * 1024;
  else if (unit == "G" || unit == "g") scale = 1024.0 * 1024 * 1024;
  else if (unit == "T" || unit == "t") scale = 1024.0 * 1024 * 1024 * 1024;
  else throw refuse();
  const double bytes = value * scale;
  if (!(bytes >= 1) || bytes > 1.8e19) throw refuse();
  return static_cast<std::uint64_t>(bytes);
}

}  // namespace nbkit
