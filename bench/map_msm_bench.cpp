// Multilevel summation maps: accuracy against the exact direct sum (relative RMS and
// maximum error for each interpolation, grid spacing and splitting, with the order of
// convergence in h), and the time of each stage against the direct method.
//   bench_map_msm [--json FILE] [--quick]
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bench_args.hpp"
#include "nbkit/core/backend.hpp"
#include "nbkit/io/pqr.hpp"
#include "nbkit/maps.hpp"
#include "test_support.hpp"

namespace {

using nbkit::Atoms;
using nbkit::Lattice;
using nbkit::MapOptions;

struct Input {
  std::string name;
  Atoms atoms;
  Lattice lattice;
  std::int64_t row_step = 1;  // the exact sum on every row_step-th row only (large inputs)
};

// `copies` copies of a protein on a cubic arrangement, 5 A apart: a crowded 100k-atom
// system with the long-range field of many charged molecules.
Atoms protein_cluster(const Atoms& protein, int per_edge_x, int per_edge_y, int per_edge_z) {
  const nbkit::BoundingBox box = nbkit::bounding_box(protein);
  const nbkit::Vec3 pitch = box.upper - box.lower + nbkit::Vec3{5, 5, 5};
  Atoms out;
  for (int a = 0; a < per_edge_x; ++a)
    for (int b = 0; b < per_edge_y; ++b)
      for (int c = 0; c < per_edge_z; ++c)
        for (std::size_t n = 0; n < protein.size(); ++n)
          out.push_back(protein.position(n) + nbkit::Vec3{a * pitch.x, b * pitch.y, c * pitch.z}, protein.charge[n],
                        protein.radius[n]);
  return out;
}

// The map on every row_step-th row.
std::vector<double> sampled_rows(const Input& input, const MapOptions& options, double* seconds) {
  const std::int64_t nz = input.lattice.dims[2];
  std::vector<double> out;
  double total = 0;
  if (input.row_step == 1 || options.method == nbkit::MapMethod::msm) {  // msm: grids once, for the whole map
    nbkit::MapStats stats;
    const nbkit::Map map = nbkit::compute_map(input.atoms, input.lattice, options, &stats);
    if (seconds) *seconds = stats.seconds;
    if (input.row_step == 1) return map.values;
    for (std::int64_t r = 0; r < input.lattice.rows(); r += input.row_step)
      out.insert(out.end(), map.values.begin() + r * nz, map.values.begin() + (r + 1) * nz);
    return out;
  }
  if (input.row_step == 1) {
    nbkit::MapStats stats;
    const nbkit::Map map = nbkit::compute_map(input.atoms, input.lattice, options, &stats);
    if (seconds) *seconds = stats.seconds;
    return map.values;
  }
  std::vector<double> row(static_cast<std::size_t>(nz));
  for (std::int64_t r = 0; r < input.lattice.rows(); r += input.row_step) {
    nbkit::MapStats stats;
    nbkit::compute_map_rows(input.atoms, input.lattice, options, r, r + 1, row.data(), &stats);
    total += stats.seconds;
    out.insert(out.end(), row.begin(), row.end());
  }
  if (seconds) *seconds = total;
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  const auto parsed = nbkit::bench::parse_bench_args(argc, argv, "bench_map_msm");
  if (!parsed) return 2;
  std::vector<Input> inputs;
  for (const char* name : {"1a63.pqr", "hca.pqr"}) {
    Input in{name, nbkit::io::read_pqr(nbkit::test::data_file(name)), {}};
    in.lattice = nbkit::lattice_around(in.atoms, 1.0, 8.0);
    inputs.push_back(std::move(in));
  }
  if (!parsed->quick) {
    Input cluster{"48 x 1a63", protein_cluster(nbkit::io::read_pqr(nbkit::test::data_file("1a63.pqr")), 4, 4, 3), {}};
    cluster.lattice = nbkit::lattice_around(cluster.atoms, 2.0, 8.0);
    cluster.row_step = 23;
    inputs.push_back(std::move(cluster));
  }

  struct Setting {
    nbkit::MsmInterpolation interpolation;
    nbkit::Smoothing splitting;
    double spacing;
  };
  std::vector<Setting> settings;
  for (const double h : {3.0, 2.5, 2.0, 1.5, 1.0}) settings.push_back({nbkit::MsmInterpolation::cubic, nbkit::Smoothing::taylor2, h});
  for (const double h : {3.0, 2.5, 2.0, 1.5, 1.0}) settings.push_back({nbkit::MsmInterpolation::quintic, nbkit::Smoothing::taylor3, h});
  if (!parsed->quick) {
    for (const double h : {3.0, 2.0, 1.0}) settings.push_back({nbkit::MsmInterpolation::cubic, nbkit::Smoothing::taylor1, h});
    for (const double h : {3.0, 2.0, 1.0}) settings.push_back({nbkit::MsmInterpolation::quintic, nbkit::Smoothing::taylor2, h});
  }

  fmt::print("nbkit multilevel summation accuracy: 12 A cutoff, float64, against the exact direct sum (float64)\n");
  fmt::print("{:>10} {:>8} {:>12} {:>8} {:>8} {:>6} {:>10} {:>10} {:>8} {:>8} {:>8}\n", "input", "atoms", "lattice",
             "interp", "split", "h", "rel RMS", "max err", "order", "msm s", "direct s");
  nlohmann::json results = nlohmann::json::array();
  for (const Input& input : inputs) {
    MapOptions exact_options;
    exact_options.backend = nbkit::Backend::cpu;
    exact_options.precision = nbkit::Precision::double_;
    double direct_seconds = 0;
    const std::vector<double> exact = sampled_rows(input, exact_options, &direct_seconds);
    double norm2 = 0;
    for (double v : exact) norm2 += v * v;
    double previous_error = 0, previous_h = 0;
    nbkit::MsmInterpolation previous_ip{};
    nbkit::Smoothing previous_split{};
    for (const Setting& s : settings) {
      MapOptions o = exact_options;
      o.method = nbkit::MapMethod::msm;
      o.msm_interpolation = s.interpolation;
      o.msm_splitting = s.splitting;
      o.msm_spacing = s.spacing;
      double seconds = 0;
      const std::vector<double> msm = sampled_rows(input, o, &seconds);
      double diff2 = 0, max_error = 0;
      for (std::size_t i = 0; i < msm.size(); ++i) {
        diff2 += (msm[i] - exact[i]) * (msm[i] - exact[i]);
        max_error = std::max(max_error, std::fabs(msm[i] - exact[i]));
      }
      const double error = std::sqrt(diff2 / norm2);
      // Order of convergence from the previous, coarser spacing of the same kind.
      std::string order;
      if (previous_h > 0 && previous_ip == s.interpolation && previous_split == s.splitting)
        order = fmt::format("{:.1f}", std::log(previous_error / error) / std::log(previous_h / s.spacing));
      fmt::print("{:>10} {:>8} {:>12} {:>8} {:>8} {:>6.1f} {:>10.2e} {:>10.2e} {:>8} {:>8.2f} {:>8.2f}\n", input.name,
                 input.atoms.size(),
                 fmt::format("{}x{}x{}", input.lattice.dims[0], input.lattice.dims[1], input.lattice.dims[2]),
                 nbkit::to_string(s.interpolation), nbkit::to_string(s.splitting), s.spacing, error, max_error, order,
                 seconds, direct_seconds);
      results.push_back({{"input", input.name},
                         {"atoms", input.atoms.size()},
                         {"lattice", input.lattice.dims},
                         {"lattice_spacing", input.lattice.spacing},
                         {"rows_compared_every", input.row_step},
                         {"interpolation", nbkit::to_string(s.interpolation)},
                         {"splitting", nbkit::to_string(s.splitting)},
                         {"grid_spacing", s.spacing},
                         {"relative_rms_error", error},
                         {"max_abs_error_kT_per_e", max_error},
                         {"msm_seconds", seconds},
                         {"direct_seconds", direct_seconds}});
      previous_error = error;
      previous_h = s.spacing;
      previous_ip = s.interpolation;
      previous_split = s.splitting;
    }
  }
  fmt::print("rel RMS: ||V_msm - V_exact|| / ||V_exact|| over the lattice points (every row_step-th row for the\n"
             "cluster); max err: largest |V_msm - V_exact| in kT/e at 298.15 K; order: log(error ratio) / log(h ratio)\n"
             "against the previous (coarser) spacing of the same interpolation and splitting; msm s, direct s: whole\n"
             "call on this machine's {} threads (CPU, float64).\n",
             nbkit::hardware_threads());
  if (!parsed->json_path.empty()) {
    std::ofstream(parsed->json_path) << nlohmann::json{{"benchmark", "map_msm_accuracy"}, {"results", results}}.dump(2)
                                     << "\n";
    fmt::print("wrote {}\n", parsed->json_path);
  }
  return 0;
}
