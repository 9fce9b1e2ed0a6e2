// nbkit map's writing: a map computed and written a slab at a time, by one process or by the
// ranks of an mpirun job (issues 21 and 22), and a trajectory's combined map the same way.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <filesystem>

#include "map_command.hpp"
#include "nbkit/core/error.hpp"
#include "nbkit/core/progress.hpp"
#include "nbkit/io/map_files.hpp"

namespace nbkit::cli {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::uint64_t file_bytes(const std::string& path) {
  std::error_code error;
  const auto bytes = std::filesystem::file_size(path, error);
  return error ? 0 : static_cast<std::uint64_t>(bytes);
}

namespace {

// A rank failing on purpose as it writes (NBKIT_FAIL_RANK=R): how the tests check that a failing
// rank ends the whole job with its message and leaves no output. NBKIT_FAIL_HOW=kill: the rank
// is killed instead (SIGKILL, as the kernel's out-of-memory killer or a scheduler does), with no
// chance to say or clean anything; mpirun then stops the others, whose signal handlers remove
// the job's temporary.
void fail_if_asked() {
  const char* rank = std::getenv("NBKIT_FAIL_RANK");
  if (!rank || std::atoi(rank) != Ranks::world().rank()) return;
  const char* how = std::getenv("NBKIT_FAIL_HOW");
  if (how && std::string(how) == "kill") std::raise(SIGKILL);
  throw Error(fmt::format("rank {} fails as NBKIT_FAIL_RANK asks (a test of a failing rank)", rank));
}

}  // namespace

// The lattice's rows among the job's ranks by their measured speed (measure_map_rows_per_second:
// every rank times rows in the middle of the lattice, as many as its speed needs, at most a
// quarter of its share); one rank: all of them.
RankRows share_rows(const Atoms& atoms, const Lattice& lattice, const MapOptions& options) {
  const Ranks& ranks = Ranks::world();
  RankRows rows;
  rows.bounds = {0, lattice.rows()};
  if (!ranks.distributed()) return rows;
  const std::int64_t share = std::max<std::int64_t>(1, lattice.rows() / ranks.size());
  // From 4 rows, grown until the rows beyond one take 0.1 s: each rank's sample fits its speed (a
  // CPU rank beside an H100 stops at a few rows, not the 1.7 s a fixed sample of 450 rows took).
  rows.rates = ranks.all_gather(
      measure_map_rows_per_second(atoms, lattice, options, std::min<std::int64_t>(4, share),
                                  std::max<std::int64_t>(1, share / 4), 0.1));
  rows.bounds = split_rows_by_rate(lattice.rows(), rows.rates);
  return rows;
}

// The map computed slab by slab and written as each slab is done, with its statistics and the
// --png plane collected on the way: the map is never whole in memory unless it fits.
void compute_and_write(const MapArguments& args, const Atoms& atoms, const Lattice& lattice, MapOptions options,
                       const std::string& output, const std::vector<std::string>& comments, io::SlicePlane* plane,
                       const RankRows& rows, ComputedMap& out) {
  ProgressBar bar(fmt::format("{} map -> {}", to_string(options.method), output), !args.run.quiet);
  options.progress = [&bar](double fraction) { bar.update(fraction); };
  const auto opened = std::chrono::steady_clock::now();
  auto last_written = opened;
  bool first = true;
  io::write_map_file(Ranks::world(), output, lattice, comments, rows.begin(), rows.end(), [&](io::MapFileWriter& writer) {
    stream_map_rows(
        atoms, lattice, options, rows.begin(), rows.end(), out.slabs.slab_rows,
        [&](const MapSlab& slab) {
          const auto start = std::chrono::steady_clock::now();
          if (first) out.before_first_write = std::chrono::duration<double>(start - opened).count(), first = false;
          const std::int64_t count = (slab.row_end - slab.row_begin) * lattice.dims[2];
          fail_if_asked();
          writer.write(slab.values, count);
          out.write_seconds += seconds_since(start);
          if (plane) plane->add(slab);
          last_written = std::chrono::steady_clock::now();
        },
        &out.stats, out.slabs.overlap);
    const auto start = std::chrono::steady_clock::now();
    bar.finish();
    out.write_bytes = writer.bytes_written();
    out.write_seconds += seconds_since(start);
  }, options.threads);
  out.after_last_write = seconds_since(last_written);
  out.write_bytes = std::max(out.write_bytes, file_bytes(output));
  out.low = out.stats.min_value, out.high = out.stats.max_value;
  const Ranks& ranks = Ranks::world();
  if (!ranks.distributed()) return;
  // The job's figures: the slowest rank's times, every rank's points, the values' span.
  const bool none = rows.begin() == rows.end();
  out.low = ranks.all_min(none ? HUGE_VAL : out.low), out.high = ranks.all_max(none ? -HUGE_VAL : out.high);
  out.stats.min_value = out.low, out.stats.max_value = out.high;
  out.stats.seconds = ranks.all_max(out.stats.seconds);
  out.stats.kernel_seconds = ranks.all_max(out.stats.kernel_seconds);
  out.stats.lattice_points = ranks.all_sum(out.stats.lattice_points);
  out.stats.evaluations = ranks.all_sum(out.stats.evaluations);
  out.write_seconds = ranks.all_max(out.write_seconds);
  out.stats.detail += fmt::format("; {} ranks", ranks.size());
  if (plane) plane->gather(ranks, rows.bounds);
}

// A trajectory's combined map a slab at a time, the frames read again for every slab (the
// library's stream_frame_maps says why), each slab written as it is finished.
// Under mpirun the frames are dealt among the ranks by their measured speed and every rank
// computes its frames' maps of the whole slab; their exact sums merged, each rank finishes and
// writes its own rows (stream_frame_maps_across): one process's bits, for any rank count.
void combine_and_write(const MapArguments& args, MapInputs& in, const Lattice& lattice, MapOptions options,
                       const std::string& output, double kappa, io::SlicePlane* plane, const RankRows& rows,
                       ComputedMap& out) {
  ProgressBar bar(fmt::format("{} map of the frames -> {}", to_string(options.method), output), !args.run.quiet);
  options.progress = nullptr;
  const long long expected = in.frames->expected();
  const std::int64_t slabs = out.slabs.slabs;
  bool first_frame = true;
  double low = HUGE_VAL, high = -HUGE_VAL;
  // The header is written before the frames are read: their count where the file says it (DCD,
  // models), as the in-memory path writes it; XTC and TRR say "the frames".
  const std::vector<std::string> comments =
      map_comments(args, in.atoms, options, kappa, expected > 0 ? static_cast<int>(expected) : -1);
  io::write_map_file(
      Ranks::world(), output, lattice, comments, rows.begin(), rows.end(),
      [&](io::MapFileWriter& writer) {
        const auto rewind = [&] {  // the frames from the first again (the first slab's are loaded already)
          if (first_frame) return;
          in.frames = std::make_unique<TrajectoryFrames>(args.trajectory, FrameRange{args.first, args.last, args.stride},
                                                         in.input_atoms, args.input);
          first_frame = true;
        };
        const auto next_frame = [&](Atoms& target) {
          if (first_frame) {
            first_frame = false;
            in.frames->load(target, in.selected);
            return true;
          }
          if (!in.frames->advance()) return false;
          in.frames->load(target, in.selected);
          return true;
        };
        const auto skip_frame = [&] {  // another rank's frame: passed over unread (DCD)
          if (first_frame) return !(first_frame = false);
          return in.frames->advance(false);
        };
        const auto consume = [&](const MapSlab& slab) {
          const auto start = std::chrono::steady_clock::now();
          const std::int64_t count = (slab.row_end - slab.row_begin) * lattice.dims[2];
          fail_if_asked();
          writer.write(slab.values, count);
          out.write_seconds += seconds_since(start);
          const auto [slab_low, slab_high] = std::minmax_element(slab.values, slab.values + count);
          low = std::min(low, *slab_low), high = std::max(high, *slab_high);
          if (plane) plane->add(slab);
        };
        const auto on_frame = [&](std::int64_t slab, int frame) {
          if (expected > 0)
            bar.update((static_cast<double>(slab - 1) + static_cast<double>(frame) / static_cast<double>(expected)) /
                       static_cast<double>(slabs));
          else
            bar.update(static_cast<double>(slab - 1) / static_cast<double>(slabs),
                       fmt::format("slab {} of {}, {} frames", slab, slabs, frame));
        };
        const Combine combine = parse_combine(args.combine);
        if (Ranks::world().distributed())
          stream_frame_maps_across(Ranks::world(), in.atoms, lattice, options, combine, out.slabs.slab_rows,
                                   rows.bounds, rows.rates, rewind, next_frame, skip_frame, consume, on_frame,
                                   &out.trajectory);
        else
          stream_frame_maps(in.atoms, lattice, options, combine, out.slabs.slab_rows, rewind, next_frame, consume,
                            on_frame, &out.trajectory);
        bar.finish();
        out.write_bytes = writer.bytes_written();
      },
      options.threads);
  out.write_bytes = std::max(out.write_bytes, file_bytes(output));
  out.low = low, out.high = high;
  out.stats = out.trajectory.last_frame;
  out.stats.seconds = out.trajectory.seconds;
  out.stats.lattice_points = static_cast<double>(lattice.size()) * out.trajectory.frames;
  out.stats.evaluations = 0;
  out.stats.detail += fmt::format("; frames combined on the host, read {} times (once a slab)", slabs);
  const Ranks& ranks = Ranks::world();
  if (ranks.distributed()) {  // the job's figures, as compute_and_write gathers them
    const bool none = rows.begin() == rows.end();
    out.low = ranks.all_min(none ? HUGE_VAL : out.low), out.high = ranks.all_max(none ? -HUGE_VAL : out.high);
    out.stats.seconds = ranks.all_max(out.stats.seconds);
    out.trajectory.seconds = out.stats.seconds;
    out.trajectory.frames = static_cast<int>(ranks.all_max(out.trajectory.frames));
    out.stats.lattice_points = static_cast<double>(lattice.size()) * out.trajectory.frames;
    out.write_seconds = ranks.all_max(out.write_seconds);
    out.stats.detail += fmt::format("; frames dealt among {} ranks by speed, their exact sums merged", ranks.size());
    if (plane) plane->gather(ranks, rows.bounds);
  }
  notice(out.stats.notice, args.run.quiet);
}

}  // namespace nbkit::cli
