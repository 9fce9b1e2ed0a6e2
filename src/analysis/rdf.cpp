// Radial distribution functions (nbkit/analysis.hpp): per frame, group B's atoms sorted into a
// cell list (fractional cells of the periodic cell, or boxes over B's extent without one), then
// each group-A atom's neighbours in the 27 surrounding cells binned by distance. Threads take
// A atoms and keep their own integer histograms, summed in thread order, so counts are exact
// and the same for any thread count (Levine, Stone and Kohlmeyer 2011 bin on the GPU the same
// way: integer histograms per block, merged at the end).
#include <fmt/format.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <numbers>

#include "nbkit/analysis.hpp"
#include "nbkit/core/error.hpp"
#include "nbkit/core/backend.hpp"

namespace nbkit::analysis {

namespace {

// The histogram's edges as numpy.linspace(rmin, rmax, bins + 1) makes them, so that binning
// agrees with numpy.histogram's to the last bit.
std::vector<double> linspace_edges(double lo, double hi, int bins) {
  std::vector<double> e(bins + 1);
  const double step = (hi - lo) / bins;
  for (int k = 0; k <= bins; ++k) e[k] = k * step + lo;
  e[bins] = hi;
  return e;
}

// numpy.histogram's rule for one value in [lo, hi]: the bin from the scaled value, moved by
// one where the edges disagree with the scaling's rounding; hi falls in the last bin.
int bin_of(double d, const std::vector<double>& edges, double lo, double scale, int bins) {
  int k = static_cast<int>((d - lo) * scale);
  if (k >= bins) k = bins - 1;
  if (d < edges[k]) --k;
  else if (k != bins - 1 && d >= edges[k + 1]) ++k;
  return k;
}

// Group B of one frame in cells: positions (wrapped into the cell when periodic) sorted by cell.
struct CellList {
  bool periodic = false;
  std::array<int, 3> n{1, 1, 1};
  Cell cell;                       // periodic: the cell; its inverse maps to fractions
  std::array<Vec3, 3> inverse{};   // rows: fractional coordinate k = inverse[k] . x
  Vec3 lo;                         // non-periodic: the grid's lower corner and cell edges
  std::array<double, 3> width{};
  std::vector<std::int32_t> start;  // per cell, into the sorted arrays (size cells + 1)
  std::vector<Vec3> position;
  std::vector<std::int32_t> atom;

  int cells() const { return n[0] * n[1] * n[2]; }
  std::array<int, 3> cell_of(Vec3 x, Vec3* wrapped) const {
    std::array<int, 3> c{};
    if (periodic) {
      double f[3];
      for (int k = 0; k < 3; ++k) {
        f[k] = inverse[k].x * x.x + inverse[k].y * x.y + inverse[k].z * x.z;
        f[k] -= std::floor(f[k]);
        if (f[k] >= 1) f[k] = 0;  // -1e-17 - floor(...) rounds to 1
        c[k] = std::min(n[k] - 1, static_cast<int>(f[k] * n[k]));
      }
      *wrapped = f[0] * cell.a + f[1] * cell.b + f[2] * cell.c;
    } else {
      for (int k = 0; k < 3; ++k) c[k] = std::clamp(static_cast<int>(std::floor((x[k] - lo[k]) / width[k])), 0, n[k] - 1);
      *wrapped = x;
    }
    return c;
  }
  int flat(const std::array<int, 3>& c) const { return (c[0] * n[1] + c[1]) * n[2] + c[2]; }
};

Vec3 cross(Vec3 u, Vec3 v) { return {u.y * v.z - u.z * v.y, u.z * v.x - u.x * v.z, u.x * v.y - u.y * v.x}; }

// At most about 2 atoms per cell and 2^21 cells: finer grids only add empty cells to visit.
int cells_along(double length, double rmax, double atoms_per_axis) {
  const double most = std::max(1.0, std::min(atoms_per_axis, 128.0));
  return static_cast<int>(std::clamp(std::floor(length / rmax), 1.0, most));
}

}  // namespace

Rdf::Rdf(const AtomTable& table, std::vector<std::int32_t> a, std::vector<std::int32_t> b, const RdfOptions& options)
    : a_(std::move(a)), b_(std::move(b)), options_(options), atoms_(table.size()) {
  if (a_.empty() || b_.empty()) throw Error(fmt::format("g(r): group {} selects no atoms", a_.empty() ? "A" : "B"));
  for (const auto* group : {&a_, &b_}) {
    for (std::size_t i = 0; i < group->size(); ++i) {
      const std::int32_t v = (*group)[i];
      if (v < 0 || static_cast<std::size_t>(v) >= atoms_)
        throw Error(fmt::format("g(r): atom index {} is outside the topology's {} atoms", v, atoms_));
      if (i > 0 && v <= (*group)[i - 1]) throw Error("g(r): a group's indices must increase (each atom once)");
    }
  }
  if (!(options.rmin >= 0) || !(options.rmax > options.rmin) || !std::isfinite(options.rmax))
    throw Error(fmt::format("g(r): the range {} to {} A is not one (need 0 <= rmin < rmax)", options.rmin, options.rmax));
  if (options.bins < 1 || options.bins > 100000000) throw Error(fmt::format("g(r): {} bins (need 1 or more)", options.bins));
  if (!(options.volume >= 0) || !std::isfinite(options.volume)) throw Error("g(r): the volume must be positive");
  if (options.exclude == RdfExclusion::residue) group_ = table.residue;
  if (options.exclude == RdfExclusion::molecule) {
    if (table.molecule.empty())
      throw Error(table.source + " has no bonds, so no molecules: leave out pairs by residue, or give a psf or prmtop");
    group_ = table.molecule;
  }
  edges_ = linspace_edges(options.rmin, options.rmax, options.bins);
  counts_.assign(options.bins, 0);
  // The pairs g(r) normalises by: nA nB, less each atom with itself and the excluded pairs.
  double excluded = 0;
  if (group_.empty()) {
    std::vector<std::int32_t> both;
    std::set_intersection(a_.begin(), a_.end(), b_.begin(), b_.end(), std::back_inserter(both));
    excluded = static_cast<double>(both.size());
  } else {
    std::vector<double> in_a(*std::max_element(group_.begin(), group_.end()) + 1, 0.0), in_b(in_a.size(), 0.0);
    for (std::int32_t i : a_) in_a[group_[i]] += 1;
    for (std::int32_t i : b_) in_b[group_[i]] += 1;
    for (std::size_t g = 0; g < in_a.size(); ++g) excluded += in_a[g] * in_b[g];
  }
  pairs_ = static_cast<double>(a_.size()) * static_cast<double>(b_.size()) - excluded;
}

void Rdf::add_frame(const float* x, const float* y, const float* z, const std::optional<Cell>& cell) {
  const double rmax = options_.rmax, rmin = options_.rmin;
  const double rmax2 = rmax * rmax, rmin2 = rmin * rmin;
  const int bins = options_.bins;
  const double scale = bins / (rmax - rmin);
  const std::int64_t frame = frames_ + 1;
  for (const auto* group : {&a_, &b_})
    for (std::int32_t i : *group)
      if (!std::isfinite(x[i]) || !std::isfinite(y[i]) || !std::isfinite(z[i]))
        throw Error(fmt::format("g(r): atom {} of frame {} has a coordinate that is not finite", i, frame));

  CellList list;
  const double per_axis = std::cbrt(static_cast<double>(b_.size()) / 2);
  double volume = options_.volume;
  if (cell) {
    const auto widths = cell->widths();
    const double narrowest = std::min({widths[0], widths[1], widths[2]});
    if (2 * rmax > narrowest * (1 + 1e-12))
      throw Error(fmt::format("g(r): --rmax {} A is over half the narrowest width of frame {}'s cell ({} A): "
                              "minimum images would not be unique; use rmax <= {} A",
                              rmax, frame, narrowest, narrowest / 2));
    list.periodic = true;
    list.cell = *cell;
    // The reciprocal vectors: the rows of the inverse of the matrix of columns a, b, c.
    const Vec3 bc = cross(cell->b, cell->c);
    const double det = cell->a.x * bc.x + cell->a.y * bc.y + cell->a.z * bc.z;
    list.inverse = {(1 / det) * bc, (1 / det) * cross(cell->c, cell->a), (1 / det) * cross(cell->a, cell->b)};
    for (int k = 0; k < 3; ++k) list.n[k] = cells_along(widths[k], rmax, per_axis);
    volume = cell->volume();
  } else {
    if (options_.norm == RdfNorm::rdf && options_.volume <= 0)
      throw Error(fmt::format("g(r): frame {} has no periodic cell, so no volume to normalise g(r) by: give the "
                              "volume, or normalise by density or not at all",
                              frame));
    Vec3 lo{1e300, 1e300, 1e300}, hi{-1e300, -1e300, -1e300};
    for (std::int32_t i : b_) {
      const Vec3 p{x[i], y[i], z[i]};
      for (int k = 0; k < 3; ++k) lo[k] = std::min(lo[k], p[k]), hi[k] = std::max(hi[k], p[k]);
    }
    list.lo = lo;
    for (int k = 0; k < 3; ++k) {
      list.n[k] = cells_along(hi[k] - lo[k], rmax, per_axis);
      list.width[k] = std::max((hi[k] - lo[k]) / list.n[k], rmax);
    }
  }

  // Counting sort of B by cell.
  const int cells = list.cells();
  list.start.assign(cells + 1, 0);
  std::vector<int> cell_of_b(b_.size());
  std::vector<Vec3> wrapped(b_.size());
  for (std::size_t j = 0; j < b_.size(); ++j) {
    const std::int32_t i = b_[j];
    cell_of_b[j] = list.flat(list.cell_of({x[i], y[i], z[i]}, &wrapped[j]));
    ++list.start[cell_of_b[j] + 1];
  }
  for (int c = 0; c < cells; ++c) list.start[c + 1] += list.start[c];
  list.position.resize(b_.size());
  list.atom.resize(b_.size());
  {
    std::vector<std::int32_t> fill(list.start.begin(), list.start.end() - 1);
    for (std::size_t j = 0; j < b_.size(); ++j) {
      const std::int32_t slot = fill[cell_of_b[j]]++;
      list.position[slot] = wrapped[j];
      list.atom[slot] = b_[j];
    }
  }

  const int threads = resolve_threads(options_.threads);
  std::vector<std::vector<std::uint64_t>> partial(threads, std::vector<std::uint64_t>(bins, 0));
  std::vector<std::uint64_t> tested(threads, 0);
  const bool exclude_groups = !group_.empty();
  const std::int64_t na = static_cast<std::int64_t>(a_.size());
#pragma omp parallel num_threads(threads)
  {
    const int t = omp_get_thread_num();
    std::uint64_t* histogram = partial[t].data();
    std::uint64_t distances = 0;
#pragma omp for schedule(dynamic, 256)
    for (std::int64_t p = 0; p < na; ++p) {
      const std::int32_t i = a_[p];
      Vec3 xi;
      const std::array<int, 3> ci = list.cell_of({x[i], y[i], z[i]}, &xi);
      const std::int32_t gi = exclude_groups ? group_[i] : -1;
      for (int ox = -1; ox <= 1; ++ox)
        for (int oy = -1; oy <= 1; ++oy)
          for (int oz = -1; oz <= 1; ++oz) {
            const int o[3] = {ox, oy, oz};
            std::array<int, 3> c{};
            Vec3 shift;
            bool inside = true;
            for (int k = 0; k < 3; ++k) {
              const int v = ci[k] + o[k];
              if (list.periodic) {
                // The neighbour cell's image: (cell, shift) pairs are distinct for every n >= 1,
                // so no image is visited twice even in a cell of one or two cells across.
                const int s = v < 0 ? -1 : (v >= list.n[k] ? 1 : 0);
                c[k] = v - s * list.n[k];
                if (s != 0) {
                  const Vec3 edge = k == 0 ? list.cell.a : (k == 1 ? list.cell.b : list.cell.c);
                  shift = shift + static_cast<double>(s) * edge;
                }
              } else {
                inside = inside && v >= 0 && v < list.n[k];
                c[k] = v;
              }
            }
            if (!inside) continue;
            const int f = list.flat(c);
            const Vec3 origin = xi - shift;  // B's image = position + shift; d = image - xi
            for (std::int32_t s = list.start[f]; s < list.start[f + 1]; ++s) {
              const std::int32_t j = list.atom[s];
              if (j == i || (exclude_groups && group_[j] == gi)) continue;
              ++distances;
              const Vec3 d = list.position[s] - origin;
              const double r2 = d.x * d.x + d.y * d.y + d.z * d.z;
              if (r2 > rmax2 || r2 < rmin2) continue;
              const double r = std::sqrt(r2);
              if (r > rmax || r < rmin) continue;
              ++histogram[bin_of(r, edges_, rmin, scale, bins)];
            }
          }
    }
    tested[t] = distances;
  }
  for (int t = 0; t < threads; ++t) {
    for (int k = 0; k < bins; ++k) counts_[k] += partial[t][k];
    distances_ += tested[t];
  }
  volume_sum_ += volume;
  ++frames_;
}

RdfResult Rdf::result() const {
  RdfResult r;
  r.edges = edges_;
  r.counts = counts_;
  r.frames = frames_;
  r.distances = distances_;
  r.pairs = pairs_;
  r.mean_volume = frames_ > 0 ? volume_sum_ / static_cast<double>(frames_) : 0;
  const int bins = options_.bins;
  r.g.assign(bins, 0);
  r.coordination.assign(bins, 0);
  if (frames_ == 0) return r;
  std::uint64_t running = 0;
  for (int k = 0; k < bins; ++k) {
    // InterRDF's _conclude: frames, times the shell's volume (rdf, density), times N / <V> (rdf).
    double norm = static_cast<double>(frames_);
    if (options_.norm != RdfNorm::none)
      norm *= 4.0 / 3.0 * std::numbers::pi * (std::pow(edges_[k + 1], 3) - std::pow(edges_[k], 3));
    if (options_.norm == RdfNorm::rdf) norm *= pairs_ / r.mean_volume;
    r.g[k] = static_cast<double>(counts_[k]) / norm;
    running += counts_[k];
    r.coordination[k] = static_cast<double>(running) / (static_cast<double>(frames_) * static_cast<double>(a_.size()));
  }
  return r;
}

}  // namespace nbkit::analysis
