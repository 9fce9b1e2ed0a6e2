// The octree of the CPU tree code: Morton keys, a sort, a breadth-first split of the sorted
// bodies by key digits, groups, multipoles from the leaves up (tree.hpp says the layout); and
// the GPU tree's host side (staging the bodies, unstaging the results) on all cores.
#include <fmt/format.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "nbkit/core/error.hpp"
#include "nbody/tree.hpp"

namespace nbkit::nbody {

namespace {

// The cell's mass, centre of mass and second moments from its own bodies (a leaf), two passes
// so that the moments are taken about the centre of mass itself.
void leaf_multipoles(const Octree& t, TreeCell& c) {
  double m = 0, sx = 0, sy = 0, sz = 0;
  for (std::int64_t k = c.begin; k < c.end; ++k) {
    m += t.mass[k];
    sx += t.mass[k] * t.x[k], sy += t.mass[k] * t.y[k], sz += t.mass[k] * t.z[k];
  }
  c.mass = m;
  c.com[0] = sx / m, c.com[1] = sy / m, c.com[2] = sz / m;
  std::fill(std::begin(c.moment), std::end(c.moment), 0.0);
  for (std::int64_t k = c.begin; k < c.end; ++k) {
    const double dx = t.x[k] - c.com[0], dy = t.y[k] - c.com[1], dz = t.z[k] - c.com[2], w = t.mass[k];
    c.moment[0] += w * dx * dx, c.moment[1] += w * dx * dy, c.moment[2] += w * dx * dz;
    c.moment[3] += w * dy * dy, c.moment[4] += w * dy * dz, c.moment[5] += w * dz * dz;
  }
}

// A parent's from its children's: masses add, centres of mass average, moments move to the
// parent's centre of mass by the parallel-axis theorem (S + M d d^T).
void parent_multipoles(std::vector<TreeCell>& cells, TreeCell& c) {
  double m = 0, sx = 0, sy = 0, sz = 0;
  for (std::int32_t k = 0; k < c.children; ++k) {
    const TreeCell& child = cells[static_cast<std::size_t>(c.first_child + k)];
    m += child.mass;
    sx += child.mass * child.com[0], sy += child.mass * child.com[1], sz += child.mass * child.com[2];
  }
  c.mass = m;
  c.com[0] = sx / m, c.com[1] = sy / m, c.com[2] = sz / m;
  std::fill(std::begin(c.moment), std::end(c.moment), 0.0);
  for (std::int32_t k = 0; k < c.children; ++k) {
    const TreeCell& child = cells[static_cast<std::size_t>(c.first_child + k)];
    const double dx = child.com[0] - c.com[0], dy = child.com[1] - c.com[1], dz = child.com[2] - c.com[2];
    const double w = child.mass;
    c.moment[0] += child.moment[0] + w * dx * dx, c.moment[1] += child.moment[1] + w * dx * dy;
    c.moment[2] += child.moment[2] + w * dx * dz, c.moment[3] += child.moment[3] + w * dy * dy;
    c.moment[4] += child.moment[4] + w * dy * dz, c.moment[5] += child.moment[5] + w * dz * dz;
  }
}

}  // namespace

void stage_tree_bodies(const Bodies& b, double* staged, double lo[3], double hi[3], int threads) {
  const auto n = static_cast<std::int64_t>(b.size());
  const int team = static_cast<int>(std::min<std::int64_t>(std::max(threads, 1), n / 65536 + 1));
  double l[3] = {b.x[0], b.y[0], b.z[0]}, h[3] = {b.x[0], b.y[0], b.z[0]};
#pragma omp parallel for num_threads(team) schedule(static) reduction(min : l[:3]) reduction(max : h[:3])
  for (std::int64_t i = 0; i < n; ++i) {
    const auto k = static_cast<std::size_t>(i), m = static_cast<std::size_t>(n);
    staged[k] = b.x[k], staged[m + k] = b.y[k], staged[2 * m + k] = b.z[k], staged[3 * m + k] = b.mass[k];
    l[0] = std::min(l[0], b.x[k]), h[0] = std::max(h[0], b.x[k]);
    l[1] = std::min(l[1], b.y[k]), h[1] = std::max(h[1], b.y[k]);
    l[2] = std::min(l[2], b.z[k]), h[2] = std::max(h[2], b.z[k]);
  }
  for (int a = 0; a < 3; ++a) lo[a] = l[a], hi[a] = h[a];
}

void unstage_tree_results(const double* results, std::size_t n, bool with_potential, Accelerations& out, int threads) {
  const int team = static_cast<int>(std::min<std::size_t>(static_cast<std::size_t>(std::max(threads, 1)), n / 65536 + 1));
#pragma omp parallel for num_threads(team) schedule(static)
  for (std::int64_t i = 0; i < static_cast<std::int64_t>(n); ++i) {
    const auto k = static_cast<std::size_t>(i);
    out.ax[k] = results[k], out.ay[k] = results[n + k], out.az[k] = results[2 * n + k];
    if (with_potential) out.potential[k] = results[3 * n + k];
  }
}

void build_octree(const Bodies& b, int leaf_size, int group_size, int threads, Octree& t) {
  const std::size_t n = b.size();
  if (n > std::numeric_limits<std::uint32_t>::max())
    throw Error(fmt::format("the tree holds at most {} bodies, got {}", std::numeric_limits<std::uint32_t>::max(), n));
  if (leaf_size < 1) throw Error(fmt::format("the tree's leaf size must be at least 1, got {}", leaf_size));
  group_size = std::max(group_size, leaf_size);
  t.order.resize(n), t.x.resize(n), t.y.resize(n), t.z.resize(n), t.mass.resize(n);
  t.cells.clear(), t.groups.clear();
  if (n == 0) return;
  // The root: the bounding cube of the bodies.
  double lo[3] = {b.x[0], b.y[0], b.z[0]}, hi[3] = {b.x[0], b.y[0], b.z[0]};
  for (std::size_t i = 1; i < n; ++i) {
    lo[0] = std::min(lo[0], b.x[i]), hi[0] = std::max(hi[0], b.x[i]);
    lo[1] = std::min(lo[1], b.y[i]), hi[1] = std::max(hi[1], b.y[i]);
    lo[2] = std::min(lo[2], b.z[i]), hi[2] = std::max(hi[2], b.z[i]);
  }
  const double extent = std::max({hi[0] - lo[0], hi[1] - lo[1], hi[2] - lo[2]});
  const double side = extent > 0 ? extent : 1.0;  // all bodies at one point: any cube holds them
  const double scale = static_cast<double>(1 << kTreeLevels) / side;
  const int team = static_cast<int>(std::min<std::size_t>(static_cast<std::size_t>(std::max(threads, 1)), n / 4096 + 1));
  // Keys with the body's index in the low bits' place of a pair: a total order, so the sort
  // (and everything after it) is the same whatever the thread count.
  std::vector<std::pair<std::uint64_t, std::uint32_t>> keyed(n);
  const auto cap = static_cast<double>((1 << kTreeLevels) - 1);
#pragma omp parallel for num_threads(team) schedule(static)
  for (std::int64_t i = 0; i < static_cast<std::int64_t>(n); ++i) {
    const auto k = static_cast<std::size_t>(i);
    const auto q = [&](double v, double from) {
      return static_cast<std::uint64_t>(std::clamp(std::floor((v - from) * scale), 0.0, cap));
    };
    keyed[k] = {morton_spread(q(b.x[k], lo[0])) << 2 | morton_spread(q(b.y[k], lo[1])) << 1 | morton_spread(q(b.z[k], lo[2])),
                static_cast<std::uint32_t>(k)};
  }
  std::sort(keyed.begin(), keyed.end());
  std::vector<std::uint64_t> keys(n);
#pragma omp parallel for num_threads(team) schedule(static)
  for (std::int64_t i = 0; i < static_cast<std::int64_t>(n); ++i) {
    const auto k = static_cast<std::size_t>(i);
    const std::uint32_t from = keyed[k].second;
    keys[k] = keyed[k].first, t.order[k] = from;
    t.x[k] = b.x[from], t.y[k] = b.y[from], t.z[k] = b.z[from], t.mass[k] = b.mass[from];
  }
  // Breadth-first: a cell's children are appended together, so they are contiguous and come
  // after their parent (the multipole pass runs backwards).
  std::vector<std::uint8_t> level;
  TreeCell root;
  for (int a = 0; a < 3; ++a) root.centre[a] = lo[a] + side / 2;
  root.side = side, root.begin = 0, root.end = static_cast<std::int64_t>(n);
  t.cells.push_back(root), level.push_back(0);
  for (std::size_t c = 0; c < t.cells.size(); ++c) {
    const std::int64_t begin = t.cells[c].begin, end = t.cells[c].end;
    if (end - begin <= leaf_size || level[c] == kTreeLevels) continue;
    const int shift = 3 * (kTreeLevels - 1 - level[c]);
    const auto digit = [shift](std::uint64_t key) { return static_cast<int>((key >> shift) & 7); };
    const auto first_child = static_cast<std::int32_t>(t.cells.size());
    std::int32_t children = 0;
    const double child_side = t.cells[c].side / 2;
    for (std::int64_t from = begin; from < end;) {
      const int d = digit(keys[static_cast<std::size_t>(from)]);
      const auto to = std::partition_point(keys.begin() + from, keys.begin() + end,
                                           [&](std::uint64_t key) { return digit(key) <= d; }) -
                      keys.begin();
      TreeCell child;
      child.side = child_side, child.begin = from, child.end = to;
      const int bits[3] = {(d >> 2) & 1, (d >> 1) & 1, d & 1};  // x, y, z as spread_bits interleaves them
      for (int a = 0; a < 3; ++a) child.centre[a] = t.cells[c].centre[a] + (bits[a] ? 0.5 : -0.5) * child_side;
      t.cells.push_back(child), level.push_back(static_cast<std::uint8_t>(level[c] + 1));
      ++children;
      from = to;
    }
    if (t.cells.size() > static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max()))
      throw Error("the tree has more than 2^31 cells");
    t.cells[c].first_child = first_child, t.cells[c].children = children;
  }
  // Groups: a cell of at most group_size bodies whose parent has more (or the root), and a
  // leaf beyond group_size (bodies at one point); consecutive such children of one parent
  // merged while the run holds at most group_size. Found depth first in Morton order.
  std::vector<std::int32_t> leaves;
  const auto small = [&](const TreeCell& cell) { return cell.end - cell.begin <= group_size || cell.leaf(); };
  if (small(t.cells[0])) t.groups.push_back({t.cells[0].begin, t.cells[0].end});
  std::vector<std::int32_t> stack;
  if (!small(t.cells[0])) stack.push_back(0);
  while (!stack.empty()) {
    const TreeCell& parent = t.cells[static_cast<std::size_t>(stack.back())];
    stack.pop_back();
    Octree::Group run{0, 0};
    const auto flush = [&] {
      if (run.end > run.begin) t.groups.push_back(run);
      run = {0, 0};
    };
    std::vector<std::int32_t> larger;  // children to descend into, in Morton order
    for (std::int32_t k = 0; k < parent.children; ++k) {
      const std::int32_t c = parent.first_child + k;
      const TreeCell& child = t.cells[static_cast<std::size_t>(c)];
      const std::int64_t count = child.end - child.begin;
      if (!small(child)) {
        flush();
        larger.push_back(c);
        continue;
      }
      if (run.end > run.begin && (run.end - run.begin) + count > group_size) flush();
      if (run.end == run.begin) run.begin = child.begin;
      run.end = child.end;
      if (count > group_size) flush();  // bodies at one point: alone
    }
    flush();
    for (auto k = larger.rbegin(); k != larger.rend(); ++k) stack.push_back(*k);
  }
  std::sort(t.groups.begin(), t.groups.end(), [](const Octree::Group& a, const Octree::Group& b2) { return a.begin < b2.begin; });
  for (std::size_t c = 0; c < t.cells.size(); ++c)
    if (t.cells[c].leaf()) leaves.push_back(static_cast<std::int32_t>(c));
  const auto leaf_count = static_cast<std::int64_t>(leaves.size());
#pragma omp parallel for num_threads(team) schedule(dynamic, 64)
  for (std::int64_t k = 0; k < leaf_count; ++k)
    leaf_multipoles(t, t.cells[static_cast<std::size_t>(leaves[static_cast<std::size_t>(k)])]);
  for (std::size_t c = t.cells.size(); c-- > 0;) {
    TreeCell& cell = t.cells[c];
    if (!cell.leaf()) parent_multipoles(t.cells, cell);
    const double ox = cell.com[0] - cell.centre[0], oy = cell.com[1] - cell.centre[1], oz = cell.com[2] - cell.centre[2];
    cell.offset = std::sqrt(ox * ox + oy * oy + oz * oz);
  }
}

}  // namespace nbkit::nbody
