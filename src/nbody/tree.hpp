#pragma once
// The Barnes-Hut octree (Barnes & Hut, Nature 324:446, 1986) in the layout the walks read:
// bodies sorted by Morton key (Warren & Salmon 1993's hashed octree order), cells in breadth-
// first order with each cell's children contiguous, each cell a contiguous range of the sorted
// bodies, its mass, centre of mass and second moments about the centre of mass in float64.
// Internal to the library (tree_build.cpp builds it; tree_cpu.cpp walks it).
#include <cstdint>
#include <vector>

#include "core/host_device.hpp"
#include "nbkit/nbody.hpp"

namespace nbkit::nbody {

// 21 bits a dimension in a 63-bit key: cells down to 2^-21 of the root's side; bodies closer
// than that share a leaf, however many (their pairs are then summed directly).
constexpr int kTreeLevels = 21;

// The low 21 bits of v spread to every third bit (bit k to bit 3k): a Morton key is
// spread(x) << 2 | spread(y) << 1 | spread(z) (tree_build.cpp and tree_cuda.cu).
NBKIT_HOST_DEVICE std::uint64_t morton_spread(std::uint64_t v) {
  v &= 0x1fffff;
  v = (v | v << 32) & 0x1f00000000ffffULL;
  v = (v | v << 16) & 0x1f0000ff0000ffULL;
  v = (v | v << 8) & 0x100f00f00f00f00fULL;
  v = (v | v << 4) & 0x10c30c30c30c30c3ULL;
  v = (v | v << 2) & 0x1249249249249249ULL;
  return v;
}

struct TreeCell {
  double com[3] = {0, 0, 0};  // centre of mass
  double mass = 0;
  // Second moments about the centre of mass, sum m d_a d_b: xx, xy, xz, yy, yz, zz (not made
  // traceless: the softened kernel is not harmonic, so its trace term stays; tree_terms-inl.hpp).
  double moment[6] = {0, 0, 0, 0, 0, 0};
  double centre[3] = {0, 0, 0};  // the cube's geometric centre
  double side = 0;               // the cube's edge
  double offset = 0;             // |com - centre|: Barnes (1994)'s delta in the opening criterion
  std::int64_t begin = 0, end = 0;  // its bodies, [begin, end) of the sorted order
  std::int32_t first_child = -1;    // -1 for a leaf
  std::int32_t children = 0;
  bool leaf() const { return first_child < 0; }
};

struct Octree {
  std::vector<std::uint32_t> order;   // order[k]: the body at sorted place k
  std::vector<double> x, y, z, mass;  // the bodies in sorted order
  std::vector<TreeCell> cells;        // cells[0]: the root
  // The walk's groups, ranges of sorted bodies in Morton order, each walking the tree once for
  // all its bodies: the largest cells of at most group_size bodies (and leaves of coincident
  // bodies beyond it), with runs of such sibling cells merged while the run stays within
  // group_size (a parent's small children together: fuller groups, boxes within the parent).
  struct Group {
    std::int64_t begin, end;
  };
  std::vector<Group> groups;
};

// Whether cell c's bodies lie within the group (a cell's range is inside, around, or apart
// from a group's: cells nest, and a group is a run of sibling cells).
inline bool inside_group(const TreeCell& c, const Octree::Group& g) { return c.begin >= g.begin && c.end <= g.end; }

// Builds the tree of `bodies` with at most `leaf_size` bodies a leaf (more only where bodies
// are closer than the deepest level allows) and groups of at most `group_size` (>= leaf_size),
// multipoles included. Deterministic: the same bodies give the same tree on any thread count.
// Throws nbkit::Error beyond 2^32 - 1 bodies.
void build_octree(const Bodies& bodies, int leaf_size, int group_size, int threads, Octree& tree);

// The GPU tree's host side, on `threads` cores: the bodies into `staged` (x, y, z, mass: n
// each) with their bounding box; the results (component-major, n each: ax, ay, az and the
// potential when with_potential) into `out`.
void stage_tree_bodies(const Bodies& bodies, double* staged, double lo[3], double hi[3], int threads);
void unstage_tree_results(const double* results, std::size_t n, bool with_potential, Accelerations& out, int threads);

// Whether a cell acts on a group of bodies (inside the box [lo, hi]) as a whole: the distance
// from its centre of mass to the box beyond side / theta + offset. theta 0 never accepts.
inline bool accept_cell(const TreeCell& c, const double lo[3], const double hi[3], double inverse_theta) {
  double d2 = 0;
  for (int a = 0; a < 3; ++a) {
    const double gap = c.com[a] < lo[a] ? lo[a] - c.com[a] : (c.com[a] > hi[a] ? c.com[a] - hi[a] : 0.0);
    d2 += gap * gap;
  }
  const double reach = c.side * inverse_theta + c.offset;
  return d2 > reach * reach;
}

}  // namespace nbkit::nbody
