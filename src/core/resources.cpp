#include "nbkit/core/resources.hpp"

#include <fmt/format.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include <cstdlib>
#include <filesystem>
#include <map>

#include "nbkit/core/error.hpp"
#include "nbkit/core/memory.hpp"

namespace nbkit {

namespace {

std::string parts_list(const std::vector<std::pair<std::string, std::uint64_t>>& parts) {
  std::string text;
  for (const auto& [what, bytes] : parts) text += (text.empty() ? "" : ", ") + what + " " + format_bytes(bytes);
  return text;
}

// The directory whose file system will hold `path` (symbolic links followed, as the write does).
std::filesystem::path holding_directory(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code error;
  fs::path target = fs::weakly_canonical(fs::absolute(path, error), error);
  if (error) target = fs::absolute(path);
  if (fs::is_directory(target, error)) return target;
  // The nearest folder that exists (an output folder is made when the run starts).
  fs::path folder = target.parent_path();
  while (!folder.empty() && folder != folder.root_path() && !fs::is_directory(folder, error)) folder = folder.parent_path();
  return folder.empty() ? fs::current_path() : folder;
}

}  // namespace

void ResourcePlan::memory(std::uint64_t bytes, std::string what) { memory_.push_back({bytes, std::move(what), ""}); }

void ResourcePlan::disk(const std::string& path, std::uint64_t bytes, std::string what) {
  disk_.push_back({bytes, std::move(what), path});
}

std::uint64_t ResourcePlan::memory_bytes() const {
  std::uint64_t total = 0;
  for (const Part& p : memory_) total += p.bytes;
  return total;
}

void ResourcePlan::check() const {
  const std::uint64_t need = memory_bytes();
  const std::uint64_t available = available_memory_bytes();
  if (available != 0 && need > available) {
    std::vector<std::pair<std::string, std::uint64_t>> parts;
    for (const Part& p : memory_) parts.emplace_back(p.what, p.bytes);
    throw MemoryError(fmt::format("{} needs {} of memory ({}) but only {} are available", run_, format_bytes(need),
                                  parts_list(parts), format_bytes(available)));
  }
  // Files grouped by the file system (device) that holds them.
  struct Device {
    std::string directory;
    std::uint64_t bytes = 0, available = 0;
    std::vector<std::pair<std::string, std::uint64_t>> parts;
  };
  std::map<unsigned long long, Device> devices;
  for (const Part& p : disk_) {
    const std::filesystem::path directory = holding_directory(p.path);
    struct stat info {};
    const unsigned long long device = ::stat(directory.c_str(), &info) == 0 ? info.st_dev : 0;
    Device& d = devices[device];
    if (d.directory.empty()) {
      d.directory = directory.string();
      d.available = available_disk_bytes(p.path);
    }
    d.bytes += p.bytes;
    d.parts.emplace_back(p.what + " (" + p.path + ")", p.bytes);
  }
  for (const auto& [device, d] : devices)
    if (d.available != 0 && d.bytes > d.available)
      throw DiskError(fmt::format("{} would write {} to {} ({}) but only {} are free there", run_, format_bytes(d.bytes),
                                  d.directory, parts_list(d.parts), format_bytes(d.available)));
}

std::uint64_t available_disk_bytes(const std::string& path) {
  if (const char* forced = std::getenv("NBKIT_DISK_LIMIT")) {
    try {
      return std::stoull(forced);
    } catch (const std::exception&) {
      throw Error(fmt::format("NBKIT_DISK_LIMIT='{}' is not a number of bytes", forced));
    }
  }
  struct statvfs info {};
  if (::statvfs(holding_directory(path).c_str(), &info) != 0) return 0;
  return static_cast<std::uint64_t>(info.f_bavail) * info.f_frsize;
}

}  // namespace nbkit
