// Radial distribution functions (nbkit/analysis.hpp): per frame, group B's atoms sorted into a
// cell list (fractional cells of the periodic cell, or boxes over B's extent without one), then
// each group-A atom's neighbours in the 27 surrounding cells binned by distance
// (rdf_pairs-inl.hpp, shared with the GPUs' kernels in rdf_cuda.cu). On the CPU the host sorts
// and threads take A atoms, keeping their own integer histograms, summed in thread order; on the
// GPUs (rdf_cuda.cu) the GPUs sort too, the host only checks the frame and lays out the cells.
// Counts are exact and the same for any thread or GPU count (Levine, Stone and Kohlmeyer 2011
// bin on the GPU the same way: integer histograms per block, merged at the end).
#include <fmt/format.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <chrono>
#include <limits>
#include <numbers>

#include "analysis/rdf_gpus.hpp"
#include "analysis/rdf_pairs-inl.hpp"
#include "core/clock.hpp"
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

Vec3 cross(Vec3 u, Vec3 v) { return {u.y * v.z - u.z * v.y, u.z * v.x - u.x * v.z, u.x * v.y - u.y * v.x}; }

// At most about 2 atoms per cell and 2^21 cells: finer grids only add empty cells to visit.
int cells_along(double length, double rmax, double atoms_per_axis) {
  const double most = std::max(1.0, std::min(atoms_per_axis, 128.0));
  return static_cast<int>(std::clamp(std::floor(length / rmax), 1.0, most));
}

// A group's atoms of one frame sorted by cell, in the group's order within a cell (so the arrays
// do not depend on the thread count): wrapped positions (periodic), the flat cell of each, the
// atom's index and its residue or molecule (empty without exclusions).
struct SortedAtoms {
  std::vector<std::int32_t> start;  // cells + 1
  std::vector<double> x, y, z;
  std::vector<std::int32_t> cell, atom, group;
  std::size_t size() const { return x.size(); }
};

// What sorting a group needs, kept from frame to frame (no fresh pages each frame).
struct SortScratch {
  std::vector<std::int32_t> cell, fill;  // per atom of the group; per cell
  std::vector<double> wrapped;           // 3 per atom of the group
};

// Sorts a group's atoms into the grid's cells: each atom's cell and wrapped position on the
// threads, then a counting sort that keeps the group's order within a cell.
void sort_by_cell(const detail::PairGrid& grid, const float* x, const float* y, const float* z,
                  const std::vector<std::int32_t>& atoms, const std::vector<std::int32_t>& group_of, int threads,
                  SortScratch& scratch, SortedAtoms& out) {
  const std::int64_t n = static_cast<std::int64_t>(atoms.size());
  scratch.cell.resize(n), scratch.wrapped.resize(3 * n);
  std::int32_t* cell = scratch.cell.data();
  double* wrapped = scratch.wrapped.data();
  const std::int32_t* atom = atoms.data();
#pragma omp parallel for num_threads(threads) schedule(static)
  for (std::int64_t j = 0; j < n; ++j) {
    const std::int32_t i = atom[j];
    cell[j] = detail::place_in_cell(grid, x[i], y[i], z[i], wrapped + 3 * j);
  }
  const int cells = grid.n[0] * grid.n[1] * grid.n[2];
  out.start.assign(cells + 1, 0);
  for (std::int64_t j = 0; j < n; ++j) ++out.start[cell[j] + 1];
  for (int c = 0; c < cells; ++c) out.start[c + 1] += out.start[c];
  out.x.resize(n), out.y.resize(n), out.z.resize(n), out.cell.resize(n), out.atom.resize(n);
  out.group.resize(group_of.empty() ? 0 : n);
  scratch.fill.assign(out.start.begin(), out.start.end() - 1);
  for (std::int64_t j = 0; j < n; ++j) {
    const std::int32_t slot = scratch.fill[cell[j]]++;
    out.x[slot] = wrapped[3 * j], out.y[slot] = wrapped[3 * j + 1], out.z[slot] = wrapped[3 * j + 2];
    out.cell[slot] = cell[j];
    out.atom[slot] = atom[j];
    if (!group_of.empty()) out.group[slot] = group_of[atom[j]];
  }
}

// The CPU's count of one frame (B sorted into the grid's cells, A's queries in cell order too so
// that a thread's run reads the same cells): threads take A's atoms and keep their own integer
// histograms, summed in thread order.
std::vector<std::uint64_t> count_on_cpu(detail::PairGrid g, const SortedAtoms& b, const SortedAtoms& q,
                                        const detail::BinRule& rule, int threads, std::uint64_t* distances_total) {
  g.start = b.start.data(), g.x = b.x.data(), g.y = b.y.data(), g.z = b.z.data(), g.atom = b.atom.data();
  g.group = b.group.empty() ? nullptr : b.group.data();
  const int bins = rule.bins;
  std::vector<std::vector<std::uint64_t>> partial(threads, std::vector<std::uint64_t>(bins, 0));
  std::vector<std::uint64_t> tested(threads, 0);
  const std::int64_t na = static_cast<std::int64_t>(q.size());
#pragma omp parallel num_threads(threads)
  {
    const int t = omp_get_thread_num();
    std::uint64_t* histogram = partial[t].data();
    std::uint64_t distances = 0;
#pragma omp for schedule(dynamic, 256)
    for (std::int64_t p = 0; p < na; ++p) {
      const double xi[3] = {q.x[p], q.y[p], q.z[p]};
      int c[3];
      detail::cell_coordinates(g, q.cell[p], c);
      distances += detail::count_neighbours(g, rule, xi, c, q.atom[p], q.group.empty() ? -1 : q.group[p],
                                            [histogram](int k) { ++histogram[k]; });
    }
    tested[t] = distances;
  }
  std::vector<std::uint64_t> counts(bins, 0);
  for (int t = 0; t < threads; ++t) {
    for (int k = 0; k < bins; ++k) counts[k] += partial[t][k];
    *distances_total += tested[t];
  }
  return counts;
}

}  // namespace

// The CPU's sorted groups and the sorting's scratch, kept from frame to frame.
struct Rdf::Scratch {
  SortedAtoms b, a;  // a: empty when A is B (the same atoms: B's arrays serve)
  SortScratch sort;
};

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
  Gpus(const std::vector<int>& gpus, const std::vector<double>& edges, const std::vector<std::int32_t>& a,
       const std::vector<std::int32_t>& b, const std::vector<std::int32_t>& group)
      : engine(gpus, edges, a, b, group) {}
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
  a_is_b_ = a_ == b_;
  backend_ = resolve_backend(options.backend, &notice_);
  if (backend_ == Backend::reference) backend_ = Backend::cpu;  // the CPU loop is float64 already
  if (backend_ == Backend::cuda) {
    gpus_ = std::make_unique<Gpus>(options.gpus, edges_, a_, b_, group_);
    detail_ = gpus_->engine.detail();
  } else {
    detail_ = fmt::format("{} threads", resolve_threads(options.threads));
    scratch_ = std::make_unique<Scratch>();
  }
}

Rdf::~Rdf() = default;
Rdf::Rdf(Rdf&&) noexcept = default;
Rdf& Rdf::operator=(Rdf&&) noexcept = default;

void Rdf::add_frame(const float* x, const float* y, const float* z, const std::optional<Cell>& cell) {
  const auto started = std::chrono::steady_clock::now();
  const double rmax = options_.rmax, rmin = options_.rmin;
  const std::int64_t frame = frames_ + 1;
  const int threads = resolve_threads(options_.threads);
  // The first atom (by index) of either group with a coordinate that is not finite, if any.
  // And the largest coordinate's size, which bounds the positions the pair loop forms without a cell.
  std::int64_t bad = std::numeric_limits<std::int64_t>::max();
  float largest = 0;
  for (const auto* group : {&a_, &b_}) {
    const std::int64_t n = static_cast<std::int64_t>(group->size());
    const std::int32_t* atoms = group->data();
#pragma omp parallel for num_threads(threads) schedule(static) reduction(min : bad) reduction(max : largest)
    for (std::int64_t j = 0; j < n; ++j) {
      const std::int32_t i = atoms[j];
      if (!std::isfinite(x[i]) || !std::isfinite(y[i]) || !std::isfinite(z[i])) bad = std::min<std::int64_t>(bad, i);
      largest = std::max({largest, std::fabs(x[i]), std::fabs(y[i]), std::fabs(z[i])});
    }
    if (a_is_b_) break;
  }
  if (bad != std::numeric_limits<std::int64_t>::max())
    throw Error(fmt::format("g(r): atom {} of frame {} has a coordinate that is not finite", bad, frame));

  detail::PairGrid grid;  // the cells' layout (the arrays are set where the pairs are counted)
  const double per_axis = std::cbrt(static_cast<double>(b_.size()) / 2);
  double volume = options_.volume;
  if (cell) {
    const auto widths = cell->widths();
    const double narrowest = std::min({widths[0], widths[1], widths[2]});
    if (2 * rmax > narrowest * (1 + 1e-12))
      throw Error(fmt::format("g(r): --rmax {} A is over half the narrowest width of frame {}'s cell ({} A): "
                              "minimum images would not be unique; use rmax <= {} A",
                              rmax, frame, narrowest, narrowest / 2));
    grid.periodic = true;
    // The reciprocal vectors: the rows of the inverse of the matrix of columns a, b, c.
    const Vec3 bc = cross(cell->b, cell->c);
    const double det = cell->a.x * bc.x + cell->a.y * bc.y + cell->a.z * bc.z;
    const Vec3 inverse[3] = {(1 / det) * bc, (1 / det) * cross(cell->c, cell->a), (1 / det) * cross(cell->a, cell->b)};
    const Vec3 edges[3] = {cell->a, cell->b, cell->c};
    for (int k = 0; k < 3; ++k) {
      grid.n[k] = cells_along(widths[k], rmax, per_axis);
      for (int a = 0; a < 3; ++a) grid.inverse[k][a] = inverse[k][a], grid.edge[k][a] = edges[k][a];
    }
    volume = cell->volume();
    // Wrapped positions lie in the cell, within |a| + |b| + |c| of the origin; an origin shifted
    // by one image of each edge, within twice that.
    grid.reach = 2 * (norm(cell->a) + norm(cell->b) + norm(cell->c));
  } else {
    if (options_.norm == RdfNorm::rdf && options_.volume <= 0)
      throw Error(fmt::format("g(r): frame {} has no periodic cell, so no volume to normalise g(r) by: give the "
                              "volume, or normalise by density or not at all",
                              frame));
    // VMD's rule for frames without a cell: "a particle volume of 30 A^3 (~ 1 water)" a group-A atom.
    if (options_.norm == RdfNorm::vmd && options_.volume <= 0) volume = 30.0 * static_cast<double>(a_.size());
    double lo[3] = {1e300, 1e300, 1e300}, hi[3] = {-1e300, -1e300, -1e300};
    for (std::int32_t i : b_) {
      const double p[3] = {x[i], y[i], z[i]};
      for (int k = 0; k < 3; ++k) lo[k] = std::min(lo[k], p[k]), hi[k] = std::max(hi[k], p[k]);
    }
    for (int k = 0; k < 3; ++k) {
      grid.n[k] = cells_along(hi[k] - lo[k], rmax, per_axis);
      grid.lo[k] = lo[k];
      grid.width[k] = std::max((hi[k] - lo[k]) / grid.n[k], rmax);
    }
    grid.reach = largest;  // positions and origins are the frame's own coordinates
  }
  const detail::BinRule rule{rmin, rmax, rmin * rmin, rmax * rmax, options_.bins / (rmax - rmin), options_.bins,
                             edges_.data()};

  if (gpus_) {
    // The GPUs sort and count this frame while the caller reads the next.
    prepare_seconds_ += seconds_since(started);
    collect_in_flight();
    gpus_->engine.submit(x, y, z, grid, rule);
    in_flight_volume_ = volume;
  } else {
    Scratch& scratch = *scratch_;
    sort_by_cell(grid, x, y, z, b_, group_, threads, scratch.sort, scratch.b);
    if (!a_is_b_) sort_by_cell(grid, x, y, z, a_, group_, threads, scratch.sort, scratch.a);
    prepare_seconds_ += seconds_since(started);
    add_counts(count_on_cpu(grid, scratch.b, a_is_b_ ? scratch.b : scratch.a, rule, threads, &distances_), volume);
  }
  volume_sum_ += volume;
  ++frames_;
}

// One frame's counts into the totals; VMD's norm weights them by the frame's volume.
void Rdf::add_counts(const std::vector<std::uint64_t>& frame_counts, double volume) const {
  for (std::size_t k = 0; k < counts_.size(); ++k) counts_[k] += frame_counts[k];
  for (std::size_t k = 0; k < volume_weighted_.size(); ++k)
    volume_weighted_[k] += volume * static_cast<double>(frame_counts[k]);
}

// The frame the GPUs are counting, if any, into the totals.
void Rdf::collect_in_flight() const {
  if (!gpus_) return;
  const auto started = std::chrono::steady_clock::now();
  std::vector<std::uint64_t> frame_counts(counts_.size(), 0);
  std::uint64_t distances = 0;
  if (gpus_->engine.collect(frame_counts.data(), &distances)) {
    distances_ += distances;
    add_counts(frame_counts, in_flight_volume_);
  }
  wait_seconds_ += seconds_since(started);
}

RdfResult Rdf::result() const {
  collect_in_flight();
  RdfResult r;
  r.edges = edges_;
  r.counts = counts_;
  r.frames = frames_;
  r.distances = distances_;
  r.pairs = pairs_;
  r.backend = backend_;
  r.detail = detail_;
  r.notice = notice_;
  r.prepare_seconds = prepare_seconds_;
  r.wait_seconds = wait_seconds_;
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
