#pragma once
// nbkit map's pieces shared by its two files: map_command.cpp (the options, the inputs, the
// lattice, the run and its report) and map_writing.cpp (a map computed and written a slab at a
// time, by one process or by the ranks of an mpirun job). Internal to the command.
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "nbkit/core/ranks.hpp"
#include "nbkit/core/units.hpp"
#include "nbkit/io/png.hpp"
#include "nbkit/maps.hpp"
#include "nbkit/trajectory.hpp"
#include "options.hpp"
#include "trajectory_frames.hpp"

namespace nbkit::cli {

// The command line, as CLI11 fills it.
struct MapArguments {
  std::string input, output, png, slice, charges;
  std::string method = "direct", units = "kT/e";
  double spacing = 0.5, padding = 10.0;
  std::string origin, dims, center, length;
  std::optional<double> dielectric;
  double temperature = units::default_temperature;
  double ionic_strength = 0.15;
  double cutoff = 12.0, bin_size = 0;
  std::string smoothing = "cutcp";
  bool periodic = false;
  std::string box;
  double msm_spacing = 0;
  std::string msm_interpolation = "cubic", msm_splitting;
  std::string trajectory, combine = "avg";
  long long first = 0, last = -1, stride = 1;
  bool allow_missing = false;
  std::string save_pqr;
  std::string weight = "number", select;  // density: the Gaussians' weight; the atoms mapped
  double radius_scale = 1.0, sigma = 0;
  bool points = false;
  std::string memory_limit;  // --memory-limit: the map is computed and written in slabs within it
  RunOptions run;  // --backend, --precision, --threads, --gpus, -q, --report; run.given: every option given
};

// The atoms with their charges and radii (pdb2pqr's for --charges), and with a trajectory
// the frames, the first one loaded.
struct MapInputs {
  Atoms atoms;
  std::unique_ptr<TrajectoryFrames> frames;  // null without --trajectory
  std::vector<std::int32_t> selected;        // --select's atoms of the input (empty: all)
  std::size_t input_atoms = 0;               // atoms in the input file (the trajectory's count)
};

// How a map is computed and written: slabs of rows within the memory limit.
struct SlabPlan {
  std::int64_t slab_rows = 0, slabs = 0;
  std::uint64_t limit = 0;   // bytes; 0: none known
  std::uint64_t memory = 0;  // what the run holds at its peak, as counted
  bool overlap = false;      // slab n written while slab n+1 is computed
};

// What a run computed and wrote, for the summary line and the report.
struct ComputedMap {
  MapStats stats;
  TrajectoryMapStats trajectory;
  double low = 0, high = 0;  // the values' span
  SlabPlan slabs;            // how it was computed and written
  double write_seconds = 0;  // writing the map file (overlapping the computation for GPU runs)
  // Streamed maps: from opening the file to its first slab written (buffers, the first slab's
  // computation) and from the last slab written to the file in place (closing, renaming): the
  // parts of the run the disk is idle.
  double before_first_write = 0, after_last_write = 0;
  std::uint64_t write_bytes = 0;
  std::optional<io::SliceInfo> slice;
  std::vector<std::int64_t> rows;  // under mpirun: rank r computed rows [rows[r], rows[r+1])
  std::vector<double> rates;       // each rank's measured rows a second
};

// Under mpirun each rank computes and writes its rows [begin(), end()) of the lattice.
struct RankRows {
  std::vector<std::int64_t> bounds;  // rank r's rows: [bounds[r], bounds[r+1])
  std::vector<double> rates;         // each rank's measured rows a second (empty: one rank)
  std::int64_t begin() const { return bounds[static_cast<std::size_t>(Ranks::world().rank())]; }
  std::int64_t end() const { return bounds[static_cast<std::size_t>(Ranks::world().rank()) + 1]; }
};

double seconds_since(std::chrono::steady_clock::time_point start);
std::uint64_t file_bytes(const std::string& path);  // 0 when it cannot be read

// The map file's comments: what, from what, by which method, on which lattice; `frames` the
// trajectory's count (-1: not known when the header is written).
std::vector<std::string> map_comments(const MapArguments& args, const Atoms& atoms, const MapOptions& options,
                                      double kappa, int frames);

// The lattice's rows among the job's ranks by their measured speed; one rank: all of them.
RankRows share_rows(const Atoms& atoms, const Lattice& lattice, const MapOptions& options);

// One map computed slab by slab and written as each slab is done (this rank's rows under
// mpirun), its statistics and the --png plane collected on the way.
void compute_and_write(const MapArguments& args, const Atoms& atoms, const Lattice& lattice, MapOptions options,
                       const std::string& output, const std::vector<std::string>& comments, io::SlicePlane* plane,
                       const RankRows& rows, ComputedMap& out);

// A trajectory's combined map a slab at a time, each slab written as it is finished (under
// mpirun the frames dealt among the ranks, each writing its rows).
void combine_and_write(const MapArguments& args, MapInputs& in, const Lattice& lattice, MapOptions options,
                       const std::string& output, double kappa, io::SlicePlane* plane, const RankRows& rows,
                       ComputedMap& out);

}  // namespace nbkit::cli
