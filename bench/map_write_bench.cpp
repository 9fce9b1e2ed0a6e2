// The map writers' rate against the disk's (issue 21): each format written from slabs of a
// potential-like field, the disk's rate measured between two passes with a plain sequential
// write of the same number of bytes (O_DIRECT, 16 MiB blocks: dd oflag=direct), and the ratio.
//   bench_map_write [--points N] [--slab-rows R] [--formats dx,dx.gz,dxbin,mrc] [--dir DIR]
//                   [--threads T] [--json FILE]
#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>
#include <vector>

#include <CLI/CLI.hpp>
#include <fstream>

#include "nbkit/core/backend.hpp"
#include "nbkit/io/map_files.hpp"

namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// The disk's rate: `bytes` written with O_DIRECT from one aligned 16 MiB block, as dd
// oflag=direct writes (buffered where the file system refuses it), the file removed after.
double plain_write_seconds(const std::string& path, std::uint64_t bytes) {
  constexpr std::size_t kBlock = std::size_t{16} << 20;
  std::unique_ptr<char, void (*)(void*)> block(static_cast<char*>(std::aligned_alloc(4096, kBlock)), &std::free);
  std::memset(block.get(), 'x', kBlock);
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_DIRECT, 0644);
  if (fd < 0) fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) throw std::runtime_error("cannot write " + path);
  const auto start = std::chrono::steady_clock::now();
  for (std::uint64_t left = bytes / kBlock * kBlock; left > 0;) {
    const ssize_t n = ::write(fd, block.get(), kBlock);
    if (n != static_cast<ssize_t>(kBlock)) throw std::runtime_error("write failed: " + path);
    left -= kBlock;
  }
  ::close(fd);
  const double seconds = seconds_since(start) * static_cast<double>(bytes) / static_cast<double>(bytes / kBlock * kBlock);
  std::filesystem::remove(path);
  return seconds;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("The map writers' rate against a plain sequential write of the same bytes");
  std::int64_t n = 512, slab_rows = 16384;
  std::string formats = "dx,dx.gz,dxbin,mrc", dir = std::filesystem::temp_directory_path().string(), json_path;
  int threads = 0;
  app.add_option("--points", n, "lattice points per axis")->capture_default_str();
  app.add_option("--slab-rows", slab_rows, "rows per slab handed to the writer")->capture_default_str();
  app.add_option("--formats", formats)->capture_default_str();
  app.add_option("--dir", dir, "where the files go (the disk measured)")->capture_default_str();
  app.add_option("--threads", threads, "formatting threads (0: all)");
  app.add_option("--json", json_path);
  CLI11_PARSE(app, argc, argv);
  nbkit::Lattice lattice;
  lattice.origin = {-64, -64, -64};
  lattice.spacing = 128.0 / static_cast<double>(n);
  lattice.dims = {n, n, n};
  // A slab of a Coulomb-like field (values over several decades, both signs), reused for every
  // slab: the writers' cost depends on the values' digits, not on where they came from.
  const std::int64_t nz = n, rows = std::min(slab_rows, lattice.rows());
  std::vector<double> slab(static_cast<std::size_t>(rows * nz));
  for (std::size_t p = 0; p < slab.size(); ++p) {
    const double x = std::sin(0.001 * static_cast<double>(p)) * 20, y = std::cos(0.0007 * static_cast<double>(p)) * 20;
    slab[p] = 332.0 * (1.0 / (0.5 + std::hypot(x - 3, y)) - 0.7 / (0.5 + std::hypot(x + 4, y - 2)));
  }
  fmt::print("bench_map_write: {}^3 = {} points, slabs of {} rows, {} threads, files in {}\n", n, lattice.size(), rows,
             threads > 0 ? threads : nbkit::hardware_threads(), dir);
  nlohmann::json results = {{"points", lattice.size()}, {"slab_rows", rows}, {"formats", nlohmann::json::array()}};
  std::stringstream list(formats);
  for (std::string format; std::getline(list, format, ',');) {
    const std::string path = (std::filesystem::path(dir) / ("bench-map-write." + format)).string();
    // The format's file size first (a written file), then the disk's rate for that size, then the
    // format again: both timed writes start from the same page-cache state (a file of that size
    // just removed).
    std::uint64_t bytes = 0;
    double format_seconds = 0, disk_seconds = 0;
    for (int pass = 0; pass < 2; ++pass) {
      const auto start = std::chrono::steady_clock::now();
      nbkit::io::write_map_file(
          path, lattice, {"bench_map_write"},
          [&](nbkit::io::MapFileWriter& writer) {
            for (std::int64_t r = 0; r < lattice.rows(); r += rows)
              writer.write(slab.data(), (std::min(lattice.rows(), r + rows) - r) * nz);
          },
          threads);
      format_seconds = seconds_since(start);
      bytes = std::filesystem::file_size(path);
      std::filesystem::remove(path);
      if (pass == 0) disk_seconds = plain_write_seconds(path + ".plain", bytes);
    }
    const double rate = static_cast<double>(bytes) / format_seconds, disk = static_cast<double>(bytes) / disk_seconds;
    fmt::print("  {:7s} {:7.2f} GB in {:6.2f} s = {:5.2f} GB/s ({:6.1f} M values/s); plain write {:5.2f} GB/s: {:.2f} of it\n",
               format, bytes / 1e9, format_seconds, rate / 1e9, lattice.size() / format_seconds / 1e6, disk / 1e9,
               rate / disk);
    results["formats"].push_back({{"format", format}, {"bytes", bytes}, {"seconds", format_seconds},
                                  {"bytes_per_second", rate}, {"disk_bytes_per_second", disk}, {"of_disk", rate / disk}});
  }
  if (!json_path.empty()) std::ofstream(json_path) << results.dump(1) << "\n";
  return 0;
}
