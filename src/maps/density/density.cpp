// Density and occupancy maps (maps/density/density.hpp): VMD's volmap density (each atom a
// normalised Gaussian of standard deviation radius x scale, weighted by 1 or its charge) and
// occupancy (1 inside any atom's sphere, or in the voxel of any atom's centre), as the
// Krone-Stone-Ertl-Schulten Gaussian density (EuroVis 2012) is summed: atoms binned in cells of
// the longest reach, every lattice point gathering the 27 cells around it.
#include "maps/density/density.hpp"

#include <fmt/format.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <numbers>

#include "maps/methods.hpp"
#include "nbkit/core/error.hpp"
#include "nbkit/core/progress.hpp"

namespace nbkit::maps {

namespace {

using density::BinnedAtoms;

// Each atom's Gaussian or sphere, relative to the lattice origin, sorted into cells.
BinnedAtoms bin_atoms(const Atoms& atoms, const Lattice& lattice, const MapOptions& options) {
  const bool occupancy = options.method == MapMethod::occupancy;
  const std::size_t n = atoms.size();
  std::vector<double> amplitude(n), exponent(n), reach2(n);
  double reach_max = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double sigma = options.density_sigma > 0 && !occupancy ? options.density_sigma : atoms.radius[i] * options.radius_scale;
    if (!(sigma > 0))
      throw Error(occupancy ? fmt::format("atom {} has radius 0, so no sphere to occupy: give radii, or treat atoms "
                                          "as points (occupancy_points, --points)",
                                          i + 1)
                            : fmt::format("atom {} has radius 0, so no Gaussian width: give radii, or one sigma "
                                          "for every atom (density_sigma, --sigma)",
                                          i + 1));
    if (occupancy) {
      reach2[i] = sigma * sigma;  // the sphere's radius
    } else {
      const double weight = options.density_weight == DensityWeight::charge ? atoms.charge[i] : 1.0;
      amplitude[i] = weight / std::pow(2 * std::numbers::pi * sigma * sigma, 1.5);
      exponent[i] = 1 / (2 * sigma * sigma);
      reach2[i] = kDensityReachSigmas * kDensityReachSigmas * sigma * sigma;
    }
    reach_max = std::max(reach_max, std::sqrt(reach2[i]));
  }
  BinnedAtoms b;
  double lo[3] = {1e300, 1e300, 1e300}, hi[3] = {-1e300, -1e300, -1e300};
  const double* coordinate[3] = {atoms.x.data(), atoms.y.data(), atoms.z.data()};
  const Vec3 origin = lattice.origin;
  for (int k = 0; k < 3; ++k)
    for (std::size_t i = 0; i < n; ++i) {
      const double v = coordinate[k][i] - origin[k];
      lo[k] = std::min(lo[k], v), hi[k] = std::max(hi[k], v);
    }
  // Cells of at least the longest reach, at most 512 across and about two atoms a cell at
  // most (tiny reaches over a wide extent would otherwise make mostly empty cells).
  double size = reach_max, volume = 1;
  for (int k = 0; k < 3; ++k) {
    size = std::max(size, (hi[k] - lo[k]) / 512);
    volume *= std::max(hi[k] - lo[k], reach_max);
  }
  size = std::max(size, std::cbrt(volume / (2.0 * static_cast<double>(n))));
  std::int64_t cells = 1;
  for (int k = 0; k < 3; ++k) {
    b.cells.n[k] = std::max(1, static_cast<int>(std::floor((hi[k] - lo[k]) / size)) + 1);
    b.cells.lo[k] = lo[k];
    cells *= b.cells.n[k];
  }
  b.cells.size = size;
  std::vector<std::int32_t> cell_of(n);
  b.start.assign(cells + 1, 0);
  for (std::size_t i = 0; i < n; ++i) {
    int c[3];
    for (int k = 0; k < 3; ++k)
      c[k] = std::min(b.cells.n[k] - 1, static_cast<int>((coordinate[k][i] - origin[k] - lo[k]) / size));
    cell_of[i] = (c[0] * b.cells.n[1] + c[1]) * b.cells.n[2] + c[2];
    ++b.start[cell_of[i] + 1];
  }
  for (std::int64_t c = 0; c < cells; ++c) b.start[c + 1] += b.start[c];
  std::vector<std::int32_t> fill(b.start.begin(), b.start.end() - 1);
  b.x.resize(n), b.y.resize(n), b.z.resize(n), b.amplitude.resize(n), b.exponent.resize(n), b.reach2.resize(n);
  for (std::size_t i = 0; i < n; ++i) {  // file order within a cell
    const std::int32_t s = fill[cell_of[i]]++;
    b.x[s] = atoms.x[i] - origin.x, b.y[s] = atoms.y[i] - origin.y, b.z[s] = atoms.z[i] - origin.z;
    b.amplitude[s] = amplitude[i], b.exponent[s] = exponent[i], b.reach2[s] = reach2[i];
  }
  b.cells.start = b.start.data();
  b.cells.x = b.x.data(), b.cells.y = b.y.data(), b.cells.z = b.z.data();
  b.cells.amplitude = b.amplitude.data(), b.cells.exponent = b.exponent.data(), b.cells.reach2 = b.reach2.data();
  return b;
}

void density_cpu(const BinnedAtoms& b, bool occupancy, const RowRange& rows, int threads) {
  const Lattice& lattice = *rows.lattice;
  const std::int64_t ny = lattice.dims[1], nz = lattice.dims[2], total = rows.row_end - rows.row_begin;
  const double h = lattice.spacing;
  ParallelProgress progress(rows.progress, total);
#pragma omp parallel for num_threads(threads) schedule(dynamic, 4)
  for (std::int64_t r = 0; r < total; ++r) {
    if (progress.cancelled()) continue;
    const std::int64_t row = rows.row_begin + r, i = row / ny, j = row % ny;
    double* out = rows.out + r * nz;
    for (std::int64_t k = 0; k < nz; ++k)
      out[k] = density::density_at(b.cells, h * static_cast<double>(i), h * static_cast<double>(j),
                                   h * static_cast<double>(k), occupancy, [](double v) { return std::exp(v); });
    progress.done_one();
  }
  progress.finish();
}

// Atoms as points: a point is occupied when an atom's centre lies in its voxel, the cube of one
// spacing centred on it ([p - h/2, p + h/2) along each axis).
void occupancy_points(const Atoms& atoms, const RowRange& rows) {
  const Lattice& lattice = *rows.lattice;
  const std::int64_t nz = lattice.dims[2];
  std::fill(rows.out, rows.out + (rows.row_end - rows.row_begin) * nz, 0.0);
  for (std::size_t a = 0; a < atoms.size(); ++a) {
    const double f[3] = {(atoms.x[a] - lattice.origin.x) / lattice.spacing + 0.5,
                         (atoms.y[a] - lattice.origin.y) / lattice.spacing + 0.5,
                         (atoms.z[a] - lattice.origin.z) / lattice.spacing + 0.5};
    std::int64_t index[3];
    bool inside = true;
    for (int k = 0; k < 3; ++k) {
      const double v = std::floor(f[k]);
      inside = inside && v >= 0 && v < static_cast<double>(lattice.dims[k]);
      index[k] = inside ? static_cast<std::int64_t>(v) : 0;
    }
    if (!inside) continue;
    const std::int64_t row = index[0] * lattice.dims[1] + index[1];
    if (row >= rows.row_begin && row < rows.row_end) rows.out[(row - rows.row_begin) * nz + index[2]] = 1.0;
  }
  if (rows.progress && *rows.progress) (*rows.progress)(1.0);
}

}  // namespace

MethodRun run_density(const Atoms& atoms, const MapOptions& options, Backend backend, int threads, const RowRange& rows) {
  MethodRun run;
  const bool occupancy = options.method == MapMethod::occupancy;
  if (occupancy && options.occupancy_points) {
    occupancy_points(atoms, rows);
    run.detail = "atoms as points, host";
    return run;
  }
  const BinnedAtoms binned = bin_atoms(atoms, *rows.lattice, options);
  const auto start = std::chrono::steady_clock::now();
  if (backend == Backend::cuda) {
    CudaRunInfo info;
    density::density_cuda(binned, occupancy, rows, options.gpus, &info);
    run.kernel_seconds = info.kernel_seconds;
    run.detail = fmt::format("{}{}, float64", info.device_names.empty() ? "GPU" : info.device_names.front(),
                             info.devices.size() > 1 ? fmt::format(" x{}", info.devices.size()) : "");
  } else {
    const int used = backend == Backend::reference ? 1 : threads;
    density_cpu(binned, occupancy, rows, used);
    run.kernel_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    run.detail = fmt::format("cells, float64, {} thread{}", used, used == 1 ? "" : "s");
  }
  return run;
}

}  // namespace nbkit::maps
