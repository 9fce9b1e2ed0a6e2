// Benchmark of cutoff maps on the CPU (atoms in bins, linear time): lattice points and
// in-cutoff pair evaluations per second, on water-density boxes (0.1 atoms/A^3), with the
// direct method's rate on the same input beside it, and the time per atom at fixed
// density to show linear growth.
//   bench_map_cutoff [--json FILE] [--quick]
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <vector>

#include "bench_args.hpp"
#include "cutoff_pairs.hpp"
#include "nbkit/core/backend.hpp"
#include "nbkit/maps.hpp"
#include "test_support.hpp"

namespace {

struct Row {
  std::string name;
  std::size_t atoms;
  nbkit::Lattice lattice;
};

}  // namespace

int main(int argc, char** argv) {
  const auto parsed = nbkit::bench::parse_bench_args(argc, argv, "bench_map_cutoff");
  if (!parsed) return 2;
  const double cutoff = 12.0, density = 0.1;
  std::vector<Row> rows;
  {  // the anchor's input: Parboil cutcp, 256x256x64 at 0.5 A, 50,000 atoms in the lattice's box
    Row r{"anchor 256x256x64", 50000, {}};
    r.lattice.spacing = 0.5;
    r.lattice.dims = {256, 256, 64};
    rows.push_back(r);
  }
  // Fixed density, growing boxes: time should grow linearly with atoms.
  for (const std::size_t n : parsed->quick ? std::vector<std::size_t>{12500, 50000}
                                           : std::vector<std::size_t>{12500, 25000, 50000, 100000}) {
    const double edge = std::cbrt(static_cast<double>(n) / density);
    Row r{fmt::format("water box {:.0f} A", edge), n, {}};
    r.lattice.spacing = 0.5;
    const std::int64_t points = static_cast<std::int64_t>(edge / 0.5) + 1;
    r.lattice.dims = {points, points, points};
    rows.push_back(r);
  }
  nlohmann::json results = nlohmann::json::array();
  fmt::print("nbkit CPU cutoff map benchmark: {} threads, SIMD {}, cutoff {} A, smoothing cutcp, 0.5 A spacing,\n"
             "random atoms at {} per A^3 in the lattice's box\n",
             nbkit::hardware_threads(), nbkit::simd_target(), cutoff, density);
  fmt::print("{:>18} {:>8} {:>13} {:>8} {:>12} {:>12} {:>12} {:>10} {:>9}\n", "input", "atoms", "lattice", "seconds",
             "points/s", "pairs/s", "direct/s*", "x direct", "ns/atom");
  for (const Row& r : rows) {
    const nbkit::Vec3 extent = r.lattice.extent();
    const nbkit::Atoms atoms = nbkit::test::random_atoms(r.atoms, {0, 0, 0}, extent, 23);
    nbkit::MapOptions options;
    options.method = nbkit::MapMethod::cutoff;
    options.backend = nbkit::Backend::cpu;
    options.cutoff = cutoff;
    nbkit::MapStats stats;
    nbkit::compute_map(atoms, r.lattice, options, &stats);
    const double seconds = stats.seconds;
    const double pairs = nbkit::bench::pairs_per_point(atoms, r.lattice, cutoff, 400) * static_cast<double>(r.lattice.size());
    // The direct method on the same input, on a few rows (each row costs the same).
    nbkit::MapOptions direct;
    direct.backend = nbkit::Backend::cpu;
    const std::int64_t sample_rows = std::max<std::int64_t>(2, static_cast<std::int64_t>(4e9 / (r.lattice.dims[2] * static_cast<double>(r.atoms))));
    std::vector<double> out(static_cast<std::size_t>(sample_rows * r.lattice.dims[2]));
    nbkit::MapStats direct_stats;
    nbkit::compute_map_rows(atoms, r.lattice, direct, 0, std::min(sample_rows, r.lattice.rows()), out.data(), &direct_stats);
    const double direct_points_per_second = direct_stats.points_per_second();
    fmt::print("{:>18} {:>8} {:>13} {:>8.3f} {:>12.3e} {:>12.3e} {:>12.3e} {:>10.1f} {:>9.1f}\n", r.name, r.atoms,
               fmt::format("{}x{}x{}", r.lattice.dims[0], r.lattice.dims[1], r.lattice.dims[2]), seconds,
               stats.points_per_second(), pairs / seconds, direct_points_per_second,
               stats.points_per_second() / direct_points_per_second, seconds / r.atoms * 1e9);
    results.push_back({{"input", r.name},
                       {"atoms", r.atoms},
                       {"lattice", r.lattice.dims},
                       {"seconds", seconds},
                       {"lattice_points_per_second", stats.points_per_second()},
                       {"in_cutoff_pairs_per_second", pairs / seconds},
                       {"direct_lattice_points_per_second", direct_points_per_second},
                       {"threads", nbkit::hardware_threads()}});
  }
  fmt::print("points/s and pairs/s: whole call (binning included); pairs: atoms within the cutoff of a point,\n"
             "from 400 sampled points; direct/s*: the direct method's lattice points per second on the same input,\n"
             "measured on its first rows; ns/atom: seconds per atom at fixed density (flat = linear time).\n");
  if (!parsed->json_path.empty()) {
    std::ofstream(parsed->json_path) << nlohmann::json{{"benchmark", "map_cutoff_cpu"}, {"results", results}}.dump(2) << "\n";
    fmt::print("wrote {}\n", parsed->json_path);
  }
  return 0;
}
