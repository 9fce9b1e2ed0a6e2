// The Barnes-Hut tree walk on the CPU: OpenMP over groups (up to 128 bodies), SIMD over each
// group's interaction lists through Google Highway with run-time dispatch.
//
// Each group walks the tree once for all its bodies (Barnes 1990's vectorised walk, as Bonsai
// and GADGET do): a cell that passes the opening criterion for the group's bounding box goes on
// the cell list, a leaf that does not goes on the body list. The lists are then summed for each
// body of the group with the all-pairs loop's arithmetic (pair_sums-inl.hpp: float32 pairs,
// float64 sums of chunks; float64 throughout for double precision) and the cells' monopole and
// quadrupole terms (tree_terms-inl.hpp). Positions enter the lists relative to the group's
// centre, so float32 differences stay small whatever the system's extent. The group's own
// bodies lead its body list, so a body's pair with itself is masked by index, as in all pairs.
// Every sum has a fixed order: the same bits on any thread count.
#ifndef NBKIT_NBODY_TREE_CPU_ONCE
#define NBKIT_NBODY_TREE_CPU_ONCE
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <limits>
#include <vector>

#include "nbkit/core/progress.hpp"
#include "nbody/forces.hpp"
#include "nbody/gravity.hpp"
#include "nbody/tree.hpp"

namespace nbkit::nbody {
struct CpuTreeJob {
  const Octree* tree;
  double softening, theta;
  bool quadrupole, double_precision;
  int threads;
  Accelerations* out;
  const std::function<void(double)>* progress;
};
}  // namespace nbkit::nbody
#endif

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/nbody/tree_cpu.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/aligned_allocator.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace nbkit::nbody::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#include "nbody/gravity_terms-inl.hpp"
#include "nbody/pair_sums-inl.hpp"
#include "nbody/tree_terms-inl.hpp"

// A growable aligned array of one thread's list (Highway loads need vector alignment).
template <class T>
class ListArray {
 public:
  void resize(std::size_t n) {
    if (n > capacity_) {
      capacity_ = std::max(n, 2 * capacity_);
      data_ = hwy::AllocateAligned<T>(capacity_);
    }
  }
  T* get() { return data_.get(); }
  const T* get() const { return data_.get(); }
  T& operator[](std::size_t i) { return data_[i]; }

 private:
  hwy::AlignedFreeUniquePtr<T[]> data_;
  std::size_t capacity_ = 0;
};

// One thread's interaction lists in structure-of-arrays form.
template <class Real>
struct Lists {
  ListArray<Real> px, py, pz, pm;                                 // bodies
  ListArray<Real> cx, cy, cz, cm, sxx, sxy, sxz, syy, syz, szz, st;  // cells (3 S, 3/2 tr S)
  std::vector<std::int32_t> stack, cells;
  std::vector<std::pair<std::int64_t, std::int64_t>> ranges;
};

// Sums cells [first, last) of the lists for the kI bodies xi.. (kQuadrupole: with the
// quadrupole terms).
template <bool kQuadrupole, class D, class V, class Real>
HWY_INLINE void sum_cells(D d, const Lists<Real>& l, std::size_t first, std::size_t last, const V* xi, const V* yi,
                          const V* zi, V eps2, const QuadrupoleConstants<V>& k, V* ax, V* ay, V* az, V* phi) {
  for (std::size_t j = first; j < last; j += hn::Lanes(d)) {
    const V cx = hn::Load(d, l.cx.get() + j), cy = hn::Load(d, l.cy.get() + j), cz = hn::Load(d, l.cz.get() + j);
    const V cm = hn::Load(d, l.cm.get() + j);
    V sxx, sxy, sxz, syy, syz, szz, st;
    if constexpr (kQuadrupole) {
      sxx = hn::Load(d, l.sxx.get() + j), sxy = hn::Load(d, l.sxy.get() + j), sxz = hn::Load(d, l.sxz.get() + j);
      syy = hn::Load(d, l.syy.get() + j), syz = hn::Load(d, l.syz.get() + j), szz = hn::Load(d, l.szz.get() + j);
      st = hn::Load(d, l.st.get() + j);
    }
    for (std::size_t t = 0; t < kI; ++t) {
      const V dx = hn::Sub(cx, xi[t]), dy = hn::Sub(cy, yi[t]), dz = hn::Sub(cz, zi[t]);
      if constexpr (kQuadrupole) {
        const V u = inverse_sqrt(d, hn::MulAdd(dx, dx, hn::MulAdd(dy, dy, hn::MulAdd(dz, dz, eps2))));
        HWY_NAMESPACE::gravity_cell_terms(dx, dy, dz, u, cm, sxx, sxy, sxz, syy, syz, szz, st, k, ax[t], ay[t], az[t],
                                          phi[t]);
      } else {
        add_pull(d, cm, dx, dy, dz, eps2, ax[t], ay[t], az[t], phi[t]);  // the monopole alone
      }
    }
  }
}

template <class Real>
void walk(const CpuTreeJob& job) {
  const Octree& t = *job.tree;
  Accelerations& out = *job.out;
  const hn::ScalableTag<Real> d;
  using V = hn::Vec<decltype(d)>;
  const std::size_t lanes = hn::Lanes(d);
  const double inverse_theta = job.theta > 0 ? 1 / job.theta : std::numeric_limits<double>::infinity();
  const V eps2 = hn::Set(d, static_cast<Real>(job.softening * job.softening));
  const QuadrupoleConstants<V> k{hn::Set(d, Real(2.5)), hn::Set(d, Real(0.5)), hn::Set(d, Real(1) / Real(3))};
  const auto groups = static_cast<std::int64_t>(t.groups.size());
  ParallelProgress progress(groups >= 4096 ? job.progress : nullptr, groups);
  const int team = static_cast<int>(std::min<std::int64_t>(job.threads, groups));
#pragma omp parallel num_threads(team)
  {
    Lists<Real> l;
#pragma omp for schedule(dynamic, 4)
    for (std::int64_t g = 0; g < groups; ++g) {
      if (progress.cancelled()) continue;  // a progress callback asked to stop
      const Octree::Group& own = t.groups[static_cast<std::size_t>(g)];
      const std::int64_t b0 = own.begin, count = own.end - own.begin;
      double lo[3] = {t.x[b0], t.y[b0], t.z[b0]}, hi[3] = {t.x[b0], t.y[b0], t.z[b0]};
      for (std::int64_t i = b0 + 1; i < own.end; ++i) {
        const auto s = static_cast<std::size_t>(i);
        lo[0] = std::min(lo[0], t.x[s]), hi[0] = std::max(hi[0], t.x[s]);
        lo[1] = std::min(lo[1], t.y[s]), hi[1] = std::max(hi[1], t.y[s]);
        lo[2] = std::min(lo[2], t.z[s]), hi[2] = std::max(hi[2], t.z[s]);
      }
      const double origin[3] = {(lo[0] + hi[0]) / 2, (lo[1] + hi[1]) / 2, (lo[2] + hi[2]) / 2};
      // The walk: cells in the order of a depth-first traversal in Morton order.
      l.cells.clear(), l.ranges.clear(), l.stack.assign(1, 0);
      while (!l.stack.empty()) {
        const std::int32_t c = l.stack.back();
        l.stack.pop_back();
        const TreeCell& cell = t.cells[static_cast<std::size_t>(c)];
        if (inside_group(cell, own)) continue;  // the group's own bodies lead the body list
        // A cell of one or two bodies costs more as a quadrupole than pair by pair, and is exact that way.
        if (cell.end - cell.begin > 2 && accept_cell(cell, lo, hi, inverse_theta)) {
          l.cells.push_back(c);
        } else if (cell.leaf()) {
          l.ranges.emplace_back(cell.begin, cell.end);
        } else {
          for (std::int32_t child = cell.children; child-- > 0;) l.stack.push_back(cell.first_child + child);
        }
      }
      // The body list: own bodies first, then the opened leaves; padded with massless bodies at
      // the group's centre (r^2 >= eps^2 > 0 there).
      std::size_t bodies = static_cast<std::size_t>(count);
      for (const auto& [from, to] : l.ranges) bodies += static_cast<std::size_t>(to - from);
      const std::size_t padded_bodies = (bodies + lanes - 1) / lanes * lanes;
      for (auto* a : {&l.px, &l.py, &l.pz, &l.pm}) a->resize(padded_bodies);
      std::size_t at = 0;
      const auto append = [&](std::int64_t from, std::int64_t to) {
        for (std::int64_t j = from; j < to; ++j, ++at) {
          const auto s = static_cast<std::size_t>(j);
          l.px[at] = static_cast<Real>(t.x[s] - origin[0]), l.py[at] = static_cast<Real>(t.y[s] - origin[1]);
          l.pz[at] = static_cast<Real>(t.z[s] - origin[2]), l.pm[at] = static_cast<Real>(t.mass[s]);
        }
      };
      append(b0, own.end);
      for (const auto& [from, to] : l.ranges) append(from, to);
      for (; at < padded_bodies; ++at) l.px[at] = l.py[at] = l.pz[at] = l.pm[at] = Real(0);
      const std::size_t padded_cells = (l.cells.size() + lanes - 1) / lanes * lanes;
      for (auto* a : {&l.cx, &l.cy, &l.cz, &l.cm, &l.sxx, &l.sxy, &l.sxz, &l.syy, &l.syz, &l.szz, &l.st})
        a->resize(std::max<std::size_t>(padded_cells, 1));
      for (std::size_t j = 0; j < padded_cells; ++j) {
        const bool real = j < l.cells.size();
        const TreeCell* cell = real ? &t.cells[static_cast<std::size_t>(l.cells[j])] : nullptr;
        l.cx[j] = real ? static_cast<Real>(cell->com[0] - origin[0]) : Real(0);
        l.cy[j] = real ? static_cast<Real>(cell->com[1] - origin[1]) : Real(0);
        l.cz[j] = real ? static_cast<Real>(cell->com[2] - origin[2]) : Real(0);
        l.cm[j] = real ? static_cast<Real>(cell->mass) : Real(0);
        double w[6] = {0, 0, 0, 0, 0, 0}, trace = 0;
        if (real) quadrupole_weights(cell->moment, w, trace);
        ListArray<Real>* weights[6] = {&l.sxx, &l.sxy, &l.sxz, &l.syy, &l.syz, &l.szz};
        for (int a = 0; a < 6; ++a) (*weights[a])[j] = static_cast<Real>(w[a]);
        l.st[j] = static_cast<Real>(trace);
      }
      for (std::int64_t i0 = 0; i0 < count; i0 += static_cast<std::int64_t>(kI)) {
        V xi[kI], yi[kI], zi[kI];
        for (std::size_t s = 0; s < kI; ++s) {
          // A short last pass repeats a body, not stored.
          const auto i = static_cast<std::size_t>(std::min<std::int64_t>(i0 + static_cast<std::int64_t>(s), count - 1));
          xi[s] = hn::Set(d, l.px[i]), yi[s] = hn::Set(d, l.py[i]), zi[s] = hn::Set(d, l.pz[i]);
        }
        double sum[4][kI] = {};
        const auto fold = [&](V* ax, V* ay, V* az, V* phi) {
          for (std::size_t s = 0; s < kI; ++s) {
            sum[0][s] += static_cast<double>(hn::GetLane(hn::SumOfLanes(d, ax[s])));
            sum[1][s] += static_cast<double>(hn::GetLane(hn::SumOfLanes(d, ay[s])));
            sum[2][s] += static_cast<double>(hn::GetLane(hn::SumOfLanes(d, az[s])));
            sum[3][s] += static_cast<double>(hn::GetLane(hn::SumOfLanes(d, phi[s])));
          }
        };
        const auto self = static_cast<std::size_t>(i0);
        for (std::size_t first = 0; first < padded_bodies; first += kChunk) {
          const std::size_t last = std::min(padded_bodies, first + kChunk);
          V ax[kI], ay[kI], az[kI], phi[kI];
          for (std::size_t s = 0; s < kI; ++s) ax[s] = ay[s] = az[s] = phi[s] = hn::Zero(d);
          if (self < last && self + kI > first)
            sum_chunk<true>(d, l.px.get(), l.py.get(), l.pz.get(), l.pm.get(), first, last, self, xi, yi, zi, eps2, ax,
                            ay, az, phi);
          else
            sum_chunk<false>(d, l.px.get(), l.py.get(), l.pz.get(), l.pm.get(), first, last, self, xi, yi, zi, eps2,
                             ax, ay, az, phi);
          fold(ax, ay, az, phi);
        }
        for (std::size_t first = 0; first < padded_cells; first += kChunk) {
          const std::size_t last = std::min(padded_cells, first + kChunk);
          V ax[kI], ay[kI], az[kI], phi[kI];
          for (std::size_t s = 0; s < kI; ++s) ax[s] = ay[s] = az[s] = phi[s] = hn::Zero(d);
          if (job.quadrupole)
            sum_cells<true>(d, l, first, last, xi, yi, zi, eps2, k, ax, ay, az, phi);
          else
            sum_cells<false>(d, l, first, last, xi, yi, zi, eps2, k, ax, ay, az, phi);
          fold(ax, ay, az, phi);
        }
        for (std::size_t s = 0; s < kI && i0 + static_cast<std::int64_t>(s) < count; ++s) {
          const std::uint32_t body = t.order[static_cast<std::size_t>(b0 + i0) + s];
          out.ax[body] = sum[0][s], out.ay[body] = sum[1][s], out.az[body] = sum[2][s];
          out.potential[body] = -sum[3][s];
        }
      }
      progress.done_one();
    }
  }
  progress.finish();
}

void WalkTree(const CpuTreeJob& job) {
  if (job.double_precision) walk<double>(job);
  else walk<float>(job);
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace nbkit::nbody::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace nbkit::nbody {

HWY_EXPORT(WalkTree);

TreeTimings tree_accelerations_cpu(const Bodies& bodies, double softening, const TreeOptions& options,
                                   bool double_precision, int threads, Octree& tree, Accelerations& out,
                                   const std::function<void(double)>& progress) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  const int leaf_size = options.leaf_size > 0 ? options.leaf_size : kTreeLeafSize;
  build_octree(bodies, leaf_size, std::max(leaf_size, kTreeGroupSize), threads, tree);
  const auto built = Clock::now();
  out.resize(bodies.size());
  const CpuTreeJob job{&tree,  softening, options.theta, options.quadrupole, double_precision, std::max(threads, 1),
                       &out, &progress};
  HWY_DYNAMIC_DISPATCH(WalkTree)(job);
  return {std::chrono::duration<double>(built - start).count(),
          std::chrono::duration<double>(Clock::now() - built).count()};
}

}  // namespace nbkit::nbody
#endif
