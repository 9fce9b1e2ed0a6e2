// Radial distribution functions (nbkit/analysis.hpp): per frame, group B's atoms sorted into a
// cell list (fractional cells of the periodic cell, or boxes over B's extent without one), then
// each group-A atom's neighbours in the 27 surrounding cells binned by distance
// (rdf_pairs-inl.hpp, shared with the GPUs' kernel in rdf_cuda.cu). Threads take A atoms and
// keep their own integer histograms, summed in thread order, so counts are exact and the same
// for any thread or GPU count (Levine, Stone and Kohlmeyer 2011 bin on the GPU the same way:
// integer histograms per block, merged at the end).
#include <fmt/format.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <numbers>

#include "analysis/rdf_gpus.hpp"
#include "analysis/rdf_pairs-inl.hpp"
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

// The cells of one frame: which cell a position is in, and the position wrapped into the cell.
struct CellList {
  bool periodic = false;
  std::array<int, 3> n{1, 1, 1};
  Cell cell;                       // periodic: the cell; its inverse maps to fractions
  std::array<Vec3, 3> inverse{};   // rows: fractional coordinate k = inverse[k] . x
  Vec3 lo;                         // non-periodic: the grid's lower corner and cell edges
  std::array<double, 3> width{};

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

RdfExclusion parse_rdf_exclusion(const std::string& s) {
  if (s == "none") return RdfExclusion::none;
  if (s == "residue") return RdfExclusion::residue;
  if (s == "molecule") return RdfExclusion::molecule;
  throw Error("exclude " + s + ": expected none, residue or molecule");
}

RdfNorm parse_rdf_norm(const std::string& s) {
  if (s == "rdf") return RdfNorm::rdf;
  if (s == "density") return RdfNorm::density;
  if (s == "none") return RdfNorm::none;
  if (s == "vmd") return RdfNorm::vmd;
  throw Error("norm " + s + ": expected rdf, density, none or vmd");
}

struct Rdf::Gpus {
  Gpus(const std::vector<int>& gpus, const std::vector<double>& edges) : engine(gpus, edges) {}
  detail::RdfGpus engine;
};

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
  if (options.exclude == RdfExclusion::residue) {
    if (table.residue.size() != atoms_) throw Error(table.source + " gives no residue for every atom");
    group_ = table.residue;
  }
  if (options.exclude == RdfExclusion::molecule) {
    if (table.molecule.empty())
      throw Error(table.source + " has no bonds, so no molecules: leave out pairs by residue, or give a psf or prmtop");
    if (table.molecule.size() != atoms_) throw Error(table.source + " gives no molecule for every atom");
    group_ = table.molecule;
  }
  for (std::int32_t g : group_)
    if (g < 0) throw Error(table.source + ": a residue or molecule number is negative");
  edges_ = linspace_edges(options.rmin, options.rmax, options.bins);
  counts_.assign(options.bins, 0);
  if (options.norm == RdfNorm::vmd) volume_weighted_.assign(options.bins, 0.0);
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
  backend_ = resolve_backend(options.backend, &notice_);
  if (backend_ == Backend::reference) backend_ = Backend::cpu;  // the CPU loop is float64 already
  if (backend_ == Backend::cuda) {
    gpus_ = std::make_unique<Gpus>(options.gpus, edges_);
    detail_ = gpus_->engine.detail();
  } else {
    detail_ = fmt::format("{} threads", resolve_threads(options.threads));
  }
}

Rdf::~Rdf() = default;
Rdf::Rdf(Rdf&&) noexcept = default;
Rdf& Rdf::operator=(Rdf&&) noexcept = default;

void Rdf::add_frame(const float* x, const float* y, const float* z, const std::optional<Cell>& cell) {
  const double rmax = options_.rmax, rmin = options_.rmin;
  const int bins = options_.bins;
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
    // VMD's rule for frames without a cell: "a particle volume of 30 A^3 (~ 1 water)" a group-A atom.
    if (options_.norm == RdfNorm::vmd && options_.volume <= 0) volume = 30.0 * static_cast<double>(a_.size());
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

  // Group B by cell (a counting sort), group A wrapped the same way, in plain arrays.
  detail::FrameArrays f;
  const int cells = list.cells();
  f.start.assign(cells + 1, 0);
  std::vector<int> cell_of_b(b_.size());
  std::vector<Vec3> wrapped(b_.size());
  for (std::size_t j = 0; j < b_.size(); ++j) {
    const std::int32_t i = b_[j];
    cell_of_b[j] = list.flat(list.cell_of({x[i], y[i], z[i]}, &wrapped[j]));
    ++f.start[cell_of_b[j] + 1];
  }
  for (int c = 0; c < cells; ++c) f.start[c + 1] += f.start[c];
  const std::size_t nb = b_.size(), na = a_.size();
  f.bx.resize(nb), f.by.resize(nb), f.bz.resize(nb), f.b_atom.resize(nb);
  if (!group_.empty()) f.b_group.resize(nb);
  {
    std::vector<std::int32_t> fill(f.start.begin(), f.start.end() - 1);
    for (std::size_t j = 0; j < nb; ++j) {
      const std::int32_t slot = fill[cell_of_b[j]]++;
      f.bx[slot] = wrapped[j].x, f.by[slot] = wrapped[j].y, f.bz[slot] = wrapped[j].z;
      f.b_atom[slot] = b_[j];
      if (!group_.empty()) f.b_group[slot] = group_[b_[j]];
    }
  }
  // A in cell order too: neighbouring queries (a GPU warp, a thread's run) read the same cells.
  std::vector<std::array<int, 3>> cell_of_a(na);
  std::vector<Vec3> wrapped_a(na);
  std::vector<std::int32_t> a_start(cells + 1, 0);
  for (std::size_t p = 0; p < na; ++p) {
    const std::int32_t i = a_[p];
    cell_of_a[p] = list.cell_of({x[i], y[i], z[i]}, &wrapped_a[p]);
    ++a_start[list.flat(cell_of_a[p]) + 1];
  }
  for (int c = 0; c < cells; ++c) a_start[c + 1] += a_start[c];
  f.ax.resize(na), f.ay.resize(na), f.az.resize(na), f.a_cell.resize(3 * na), f.a_atom.resize(na);
  f.a_group.assign(na, -1);
  for (std::size_t p = 0; p < na; ++p) {
    const std::int32_t slot = a_start[list.flat(cell_of_a[p])]++;
    const std::int32_t i = a_[p];
    f.ax[slot] = wrapped_a[p].x, f.ay[slot] = wrapped_a[p].y, f.az[slot] = wrapped_a[p].z;
    for (int k = 0; k < 3; ++k) f.a_cell[3 * slot + k] = cell_of_a[p][k];
    f.a_atom[slot] = i;
    if (!group_.empty()) f.a_group[slot] = group_[i];
  }
  detail::PairGrid& g = f.grid;
  g.periodic = list.periodic;
  for (int k = 0; k < 3; ++k) {
    g.n[k] = list.n[k];
    const Vec3 e = k == 0 ? list.cell.a : (k == 1 ? list.cell.b : list.cell.c);
    g.edge[k][0] = e.x, g.edge[k][1] = e.y, g.edge[k][2] = e.z;
  }
  const detail::BinRule rule{rmin, rmax, rmin * rmin, rmax * rmax, bins / (rmax - rmin), bins, edges_.data()};
  // VMD's norm weights this frame's counts by its volume: the counts before it, kept.
  const std::vector<std::uint64_t> before = volume_weighted_.empty() ? std::vector<std::uint64_t>{} : counts_;

  if (gpus_) {
    distances_ += gpus_->engine.count(f, rule, counts_.data());
  } else {
    g.start = f.start.data(), g.x = f.bx.data(), g.y = f.by.data(), g.z = f.bz.data(), g.atom = f.b_atom.data();
    g.group = group_.empty() ? nullptr : f.b_group.data();
    const int threads = resolve_threads(options_.threads);
    std::vector<std::vector<std::uint64_t>> partial(threads, std::vector<std::uint64_t>(bins, 0));
    std::vector<std::uint64_t> tested(threads, 0);
#pragma omp parallel num_threads(threads)
    {
      const int t = omp_get_thread_num();
      std::uint64_t* histogram = partial[t].data();
      std::uint64_t distances = 0;
#pragma omp for schedule(dynamic, 256)
      for (std::int64_t p = 0; p < static_cast<std::int64_t>(na); ++p) {
        const double xi[3] = {f.ax[p], f.ay[p], f.az[p]};
        distances += detail::count_neighbours(g, rule, xi, &f.a_cell[3 * p], f.a_atom[p], f.a_group[p],
                                              [histogram](int k) { ++histogram[k]; });
      }
      tested[t] = distances;
    }
    for (int t = 0; t < threads; ++t) {
      for (int k = 0; k < bins; ++k) counts_[k] += partial[t][k];
      distances_ += tested[t];
    }
  }
  for (std::size_t k = 0; k < volume_weighted_.size(); ++k)
    volume_weighted_[k] += volume * static_cast<double>(counts_[k] - before[k]);
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
  r.backend = backend_;
  r.detail = detail_;
  r.notice = notice_;
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
    // VMD: the mean over frames of V_f / pairs x counts_f / shell (rmax is at most half the
    // narrowest width here, so no shell reaches past the cell and VMD's corner corrections,
    // which apply beyond half a width, never do).
    if (options_.norm == RdfNorm::vmd) norm *= pairs_;
    r.g[k] = (options_.norm == RdfNorm::vmd ? volume_weighted_[k] : static_cast<double>(counts_[k])) / norm;
    running += counts_[k];
    r.coordination[k] = static_cast<double>(running) / (static_cast<double>(frames_) * static_cast<double>(a_.size()));
  }
  return r;
}

}  // namespace nbkit::analysis
