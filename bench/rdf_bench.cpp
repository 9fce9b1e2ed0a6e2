// Benchmark of g(r): the oxygen-oxygen g(r) of a 100,000-atom water box (33,334 molecules at
// 0.0334 per A^3, a 99.9 A cube; oxygens on a jittered lattice, each frame jittered anew), rmax
// 15 A in 150 bins, on the CPU (every thread) and on the GPUs, measured in the same run. Rates:
// frames/s, distances computed per second (the cell lists' candidates), and all-pairs-equivalent
// pairs per second (nA (nA - 1) per frame over the time: the "1.1e12 pair distances" for
// 1,000 frames), with the time for 1,000 frames extrapolated, and the GPU/CPU ratio.
// MDAnalysis's InterRDF on the same box is bench/rdf_mdanalysis.py (not on the GPU machine).
//   bench_rdf [--json FILE] [--quick]
// The whole job (the "1,000-frame job ... bounded by reading the trajectory"), when
// NBKIT_RDF_JOB=DIR names a folder and NBKIT names the nbkit command: the box written there as
// a PQR and a 1,000-frame DCD (1.2 GB), the DCD dropped from the page cache, then `nbkit rdf`
// run on it whole (reading, counting, writing), beside a plain read of the same file from the
// disk, also out of the page cache.
#include <fmt/format.h>

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <vector>

#include "bench_args.hpp"
#include "nbkit/analysis.hpp"
#include "nbkit/core/backend.hpp"
#include "nbkit/io/dcd.hpp"

namespace {

using nbkit::analysis::AtomTable;

struct Box {
  AtomTable table;
  double edge = 0;
  std::vector<std::vector<float>> x, y, z;  // per frame
};

Box water_box(int molecules, int frames) {
  Box box;
  box.edge = std::cbrt(molecules / 0.0334);
  const int n = static_cast<int>(std::ceil(std::cbrt(static_cast<double>(molecules))));
  const double spacing = box.edge / n;
  std::mt19937 rng(2011);
  std::vector<int> sites(n * n * n);
  for (int i = 0; i < n * n * n; ++i) sites[i] = i;
  std::shuffle(sites.begin(), sites.end(), rng);
  sites.resize(molecules);
  for (int m = 0; m < molecules; ++m)
    for (const char* name : {"OW", "HW1", "HW2"}) {
      box.table.name.push_back(name);
      box.table.residue_name.push_back("WAT");
      box.table.element.push_back(name[0] == 'O' ? "O" : "H");
      box.table.residue_number.push_back(m + 1);
      box.table.residue.push_back(m);
      box.table.molecule.push_back(m);
    }
  std::normal_distribution<double> jitter(0, 0.25);
  for (int f = 0; f < frames; ++f) {
    std::vector<float> x, y, z;
    for (int m = 0; m < molecules; ++m) {
      const int s = sites[m];
      const double o[3] = {(s / (n * n) + 0.5) * spacing + jitter(rng), (s / n % n + 0.5) * spacing + jitter(rng),
                           (s % n + 0.5) * spacing + jitter(rng)};
      const double h[2][3] = {{0.9572, 0, 0}, {-0.2400, 0.9266, 0}};  // 104.52 degrees
      x.push_back(static_cast<float>(o[0])), y.push_back(static_cast<float>(o[1])), z.push_back(static_cast<float>(o[2]));
      for (const auto& d : h)
        x.push_back(static_cast<float>(o[0] + d[0])), y.push_back(static_cast<float>(o[1] + d[1])),
            z.push_back(static_cast<float>(o[2] + d[2]));
    }
    box.x.push_back(std::move(x)), box.y.push_back(std::move(y)), box.z.push_back(std::move(z));
  }
  return box;
}

struct Timing {
  double seconds = 0;
  nbkit::analysis::RdfResult result;
};

Timing time_rdf(const Box& box, nbkit::Backend backend) {
  nbkit::analysis::RdfOptions options;
  options.rmax = 15, options.bins = 150, options.backend = backend;
  const auto oxygens = nbkit::analysis::select_atoms(box.table, "name OW");
  nbkit::analysis::Rdf rdf(box.table, oxygens, oxygens, options);
  const auto cell = nbkit::analysis::cell_from_lengths_angles(box.edge, box.edge, box.edge, 90, 90, 90);
  // One frame first (the GPUs' buffers, the OpenMP team), then the timed frames.
  rdf.add_frame(box.x[0].data(), box.y[0].data(), box.z[0].data(), cell);
  Timing t;
  nbkit::analysis::Rdf timed(box.table, oxygens, oxygens, options);
  const auto start = std::chrono::steady_clock::now();
  for (std::size_t f = 0; f < box.x.size(); ++f) timed.add_frame(box.x[f].data(), box.y[f].data(), box.z[f].data(), cell);
  t.result = timed.result();  // waits for the last frame the GPUs count
  t.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return t;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Drops a file's pages from the page cache (written back first), so the next read is the disk's.
void evict(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) return;
  ::fdatasync(fd);
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  ::close(fd);
}

// Seconds to read a file through, in 16 MiB reads.
double read_through(const std::string& path) {
  std::vector<char> block(std::size_t{16} << 20);
  const auto start = std::chrono::steady_clock::now();
  std::ifstream in(path, std::ios::binary);
  while (in.read(block.data(), static_cast<std::streamsize>(block.size())) || in.gcount() > 0) {
  }
  return seconds_since(start);
}

// The whole `nbkit rdf` job over a 1,000-frame DCD of the box, read from the disk.
nlohmann::json whole_job(const Box& box, const std::string& dir, const std::string& nbkit, bool gpu) {
  namespace fs = std::filesystem;
  fs::create_directories(dir);
  const std::string pqr = (fs::path(dir) / "water.pqr").string(), dcd = (fs::path(dir) / "water.dcd").string();
  {
    std::ofstream out(pqr);
    for (std::size_t i = 0; i < box.table.name.size(); ++i)
      out << fmt::format("ATOM  {:5d} {:<4s} WAT  {:4d}    {:8.3f}{:8.3f}{:8.3f} {:7.4f} {:6.4f}\n", i % 100000 + 1,
                         box.table.name[i], box.table.residue_number[i] % 10000, box.x[0][i], box.y[0][i], box.z[0][i],
                         box.table.name[i] == "OW" ? -0.834 : 0.417, 1.5);
  }
  const int frames = 1000;
  const auto written = std::chrono::steady_clock::now();
  {
    nbkit::io::DcdWriter writer(dcd, static_cast<std::int64_t>(box.table.name.size()), 1.0, true);
    nbkit::io::DcdFrame frame;
    frame.cell = std::array<double, 6>{box.edge, 90, box.edge, 90, 90, box.edge};
    for (int f = 0; f < frames; ++f) {
      const std::size_t k = static_cast<std::size_t>(f) % box.x.size();
      frame.x = box.x[k], frame.y = box.y[k], frame.z = box.z[k];
      writer.append(frame);
    }
    writer.close();
  }
  const double write_seconds = seconds_since(written);
  const double bytes = static_cast<double>(fs::file_size(dcd));
  evict(dcd);
  const double read_seconds = read_through(dcd);
  // nbkit's DCD reader alone, frame by frame, also from the disk.
  evict(dcd);
  const auto reading = std::chrono::steady_clock::now();
  {
    nbkit::io::DcdReader reader(dcd);
    nbkit::io::DcdFrame frame;
    while (reader.next(frame)) {
    }
  }
  const double reader_seconds = seconds_since(reading);
  nlohmann::json json = {{"frames", frames}, {"dcd_bytes", bytes}, {"dcd_write_seconds", write_seconds},
                         {"plain_read_seconds", read_seconds}, {"dcd_reader_seconds", reader_seconds}};
  fmt::print("whole job: {} frames, DCD of {:.2f} GB; a plain read of it from the disk {:.2f} s ({:.2f} GB/s); "
             "nbkit's DCD reader alone {:.2f} s\n",
             frames, bytes / 1e9, read_seconds, bytes / read_seconds / 1e9, reader_seconds);
  // The GPUs over every frame; the CPU's cores over 50 frames (its rate is steady; 1,000 would take
  // a minute or more); one core over 5 frames: MDAnalysis's InterRDF is serial, and
  // bench/rdf_mdanalysis.py measures its ratio to nbkit on one core where both are installed.
  struct Run {
    const char* name;
    const char* backend;
    int threads, frames;
  };
  // The GPUs' job of one frame is the fixed cost (start, the topology, the GPUs' set-up, the
  // output): the whole job less it is what the frames cost, set beside the plain read.
  for (const Run& run : {Run{"cuda_one_frame", "cuda", 0, 1}, Run{"cuda", "cuda", 0, frames}, Run{"cpu", "cpu", 0, 50},
                         Run{"cpu_one_thread", "cpu", 1, 5}}) {
    const std::string backend = run.backend;
    if (backend == "cuda" && !gpu) continue;
    const int last = run.frames - 1;
    evict(dcd);
    const std::string csv = (fs::path(dir) / fmt::format("g-{}.csv", run.name)).string();
    const std::string command = fmt::format("{} rdf {} {} --select-a \"name OW\" --rmax 15 --bins 150 --last {} "
                                            "--backend {} --threads {} -q -o {}",
                                            nbkit, pqr, dcd, last, backend, run.threads, csv);
    const auto start = std::chrono::steady_clock::now();
    const int status = std::system(command.c_str());
    const double seconds = seconds_since(start);
    if (status != 0) {
      fmt::print("  {} failed ({})\n", command, status);
      continue;
    }
    const double per_1000 = seconds * frames / (last + 1);
    fmt::print("  nbkit rdf --backend {}{}: {} frames in {:.2f} s (1,000 frames: {:.2f} s; {:.2f} of the plain read's time)\n",
               backend, run.threads == 1 ? " --threads 1" : "", last + 1, seconds, per_1000, read_seconds / per_1000);
    json[run.name] = {{"frames", last + 1}, {"seconds", seconds}, {"seconds_per_1000_frames", per_1000},
                      {"plain_read_over_job", read_seconds / per_1000}};
    if (std::string(run.name) == "cuda" && json.contains("cuda_one_frame")) {
      const double fixed = json["cuda_one_frame"]["seconds"].get<double>();
      const double frames_seconds = seconds - fixed;
      const double read_share = read_seconds * (last) / (last + 1);  // the plain read of the frames after the first
      const double reader_share = reader_seconds * (last) / (last + 1);
      fmt::print("  the frames after the first: {:.2f} s (the job less its one-frame run's {:.2f} s) for {} frames, "
                 "beside {:.2f} s to read them plainly ({:.2f} of its rate) and {:.2f} s for nbkit's DCD reader "
                 "alone ({:.2f} of its rate)\n",
                 frames_seconds, fixed, last, read_share, read_share / frames_seconds, reader_share,
                 reader_share / frames_seconds);
      json["cuda"]["fixed_seconds"] = fixed;
      json["cuda"]["frames_seconds"] = frames_seconds;
      json["cuda"]["plain_read_over_frames"] = read_share / frames_seconds;
      json["cuda"]["dcd_reader_over_frames"] = reader_share / frames_seconds;
    }
  }
  fs::remove(dcd), fs::remove(pqr);
  return json;
}

}  // namespace

int main(int argc, char** argv) {
  const auto args = nbkit::bench::parse_bench_args(argc, argv, "bench_rdf");
  if (!args) return 2;
  const int molecules = 33334;
  const int cpu_frames = args->quick ? 2 : 5, gpu_frames = args->quick ? 20 : 100;
  const bool gpu = !nbkit::list_gpus().empty();
  const Box box = water_box(molecules, gpu ? gpu_frames : cpu_frames);
  Box cpu_box = box;
  cpu_box.x.resize(cpu_frames), cpu_box.y.resize(cpu_frames), cpu_box.z.resize(cpu_frames);
  const double na = molecules;
  fmt::print("g(r) O-O of {} water molecules ({} atoms) in a {:.1f} A cube, rmax 15 A, 150 bins\n", molecules,
             3 * molecules, box.edge);
  fmt::print("{:<34} {:>7} {:>10} {:>14} {:>16} {:>14} {:>10} {:>10}\n", "backend", "frames", "frames/s", "distances/s",
             "all-pairs eq./s", "1,000 frames", "preparing", "waiting");
  nlohmann::json json = {{"molecules", molecules}, {"edge", box.edge}, {"rmax", 15}, {"bins", 150}};
  std::vector<Timing> timings;
  for (const auto backend : {nbkit::Backend::cpu, nbkit::Backend::cuda}) {
    if (backend == nbkit::Backend::cuda && !gpu) continue;
    const Timing t = time_rdf(backend == nbkit::Backend::cpu ? cpu_box : box, backend);
    const double frames = static_cast<double>(t.result.frames);
    const double rate = frames / t.seconds;
    // preparing: the host's checks and cell layout (and on the CPU its sort into cells);
    // waiting: the host idle until the GPUs' counts came (each frame is sorted and counted
    // there while the host prepares the next).
    fmt::print("{:<34} {:>7} {:>10.2f} {:>14.3e} {:>16.3e} {:>12.2f} s {:>8.3f} s {:>8.3f} s\n", t.result.detail,
               t.result.frames, rate, static_cast<double>(t.result.distances) / t.seconds, na * (na - 1) * rate,
               1000 / rate, t.result.prepare_seconds, t.result.wait_seconds);
    json[nbkit::to_string(backend)] = {{"detail", t.result.detail}, {"frames", t.result.frames}, {"seconds", t.seconds},
                                       {"distances_per_second", static_cast<double>(t.result.distances) / t.seconds},
                                       {"all_pairs_equivalent_per_second", na * (na - 1) * rate},
                                       {"prepare_seconds", t.result.prepare_seconds},
                                       {"wait_seconds", t.result.wait_seconds}};
    timings.push_back(t);
  }
  if (timings.size() == 2) {
    const double ratio = (timings[1].result.frames / timings[1].seconds) / (timings[0].result.frames / timings[0].seconds);
    fmt::print("GPU / CPU: {:.1f}x\n", ratio);
    json["gpu_over_cpu"] = ratio;
    // The same histogram both ways on the first frames (the GPU test checks it exactly).
  }
  const char* job_dir = std::getenv("NBKIT_RDF_JOB");
  const char* nbkit = std::getenv("NBKIT");
  if (job_dir && nbkit) json["whole_job"] = whole_job(box, job_dir, nbkit, gpu);
  if (!args->json_path.empty()) std::ofstream(args->json_path) << json.dump(2) << "\n";
  return 0;
}
