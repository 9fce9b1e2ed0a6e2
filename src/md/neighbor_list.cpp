// The Verlet neighbour list: atoms binned into cells at least cutoff + skin wide (Allen &
// Tildesley's link cells; NAMD's patches, seed 001), each atom's neighbours found in the
// 27 surrounding cells, or more where an axis holds fewer than three cells (small boxes:
// then an atom can meet its own periodic images and several images of another atom).
#include <algorithm>
#include <cmath>
#include <limits>
#include <unordered_set>

#include "nbkit/core/error.hpp"
#include "nbkit/md.hpp"

namespace nbkit::md {

NeighborList::NeighborList(double cutoff, double skin) : cutoff_(cutoff), skin_(skin) {
  if (!(cutoff > 0) || !(skin >= 0) || !std::isfinite(cutoff + skin))
    throw Error("neighbour list: the cutoff must be positive and the skin not negative");
}

namespace {

std::int64_t floor_div(std::int64_t a, std::int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

}  // namespace

void NeighborList::build(const System& s, const ForceField& field) {
  if (field.cutoff > cutoff_) throw Error("neighbour list: built for a cutoff shorter than the force field's");
  const std::int64_t n = static_cast<std::int64_t>(s.size());
  if (n > std::numeric_limits<std::int32_t>::max()) throw Error("neighbour list: at most 2^31 - 1 atoms");
  const double reach = cutoff_ + skin_, reach2 = reach * reach;
  double length[3];
  std::int64_t cells[3], span[3];
  for (int a = 0; a < 3; ++a) {
    length[a] = s.box.length(a);
    if (!(length[a] > 0)) throw Error("the box must have a positive length along every axis");
    cells[a] = std::max<std::int64_t>(1, static_cast<std::int64_t>(std::floor(length[a] / reach)));
    cells[a] = std::min<std::int64_t>(cells[a], 1024);  // enough cells; keeps the count bounded
    span[a] = static_cast<std::int64_t>(std::ceil(reach / (length[a] / static_cast<double>(cells[a]))));
  }
  // Each atom's image (box lengths from the primary box) and cell.
  std::vector<std::array<std::int64_t, 3>> image(n);
  std::vector<std::int64_t> cell_of(n);
  const std::vector<double>* coordinate[3] = {&s.x, &s.y, &s.z};
  for (std::int64_t i = 0; i < n; ++i) {
    std::int64_t c[3];
    for (int a = 0; a < 3; ++a) {
      const double u = ((*coordinate[a])[i] - s.box.lo[a]) / length[a];
      if (!std::isfinite(u)) throw Error("atom " + std::to_string(i + 1) + " has a coordinate that is not a number");
      const double whole = std::floor(u);
      image[i][a] = static_cast<std::int64_t>(whole);
      c[a] = std::min<std::int64_t>(cells[a] - 1, static_cast<std::int64_t>((u - whole) * static_cast<double>(cells[a])));
    }
    cell_of[i] = (c[2] * cells[1] + c[1]) * cells[0] + c[0];
  }
  // Atoms of each cell in index order (counting sort).
  const std::int64_t cell_count = cells[0] * cells[1] * cells[2];
  std::vector<std::int64_t> cell_first(cell_count + 1, 0), members(n);
  for (std::int64_t i = 0; i < n; ++i) ++cell_first[cell_of[i] + 1];
  for (std::int64_t c = 0; c < cell_count; ++c) cell_first[c + 1] += cell_first[c];
  std::vector<std::int64_t> fill(cell_first.begin(), cell_first.end() - 1);
  for (std::int64_t i = 0; i < n; ++i) members[fill[cell_of[i]]++] = i;

  std::unordered_set<std::uint64_t> excluded;
  for (const auto& [a, b] : field.exclusions) {
    if (a < 0 || b < 0 || a >= n || b >= n || a == b) throw Error("exclusion: atom indices must be distinct and in range");
    excluded.insert(static_cast<std::uint64_t>(std::min(a, b)) << 32 | static_cast<std::uint64_t>(std::max(a, b)));
  }
  first_.assign(n + 1, 0);
  neighbors_.clear();
  shifts_.clear();
  for (std::int64_t i = 0; i < n; ++i) {
    const std::int64_t ci[3] = {cell_of[i] % cells[0], cell_of[i] / cells[0] % cells[1], cell_of[i] / cells[0] / cells[1]};
    const double wrapped_i[3] = {s.x[i] - image[i][0] * length[0], s.y[i] - image[i][1] * length[1],
                                 s.z[i] - image[i][2] * length[2]};
    for (std::int64_t oz = -span[2]; oz <= span[2]; ++oz)
      for (std::int64_t oy = -span[1]; oy <= span[1]; ++oy)
        for (std::int64_t ox = -span[0]; ox <= span[0]; ++ox) {
          const std::int64_t raw[3] = {ci[0] + ox, ci[1] + oy, ci[2] + oz};
          std::int64_t cell[3], wrap[3];
          for (int a = 0; a < 3; ++a) wrap[a] = floor_div(raw[a], cells[a]), cell[a] = raw[a] - wrap[a] * cells[a];
          const std::int64_t c = (cell[2] * cells[1] + cell[1]) * cells[0] + cell[0];
          for (std::int64_t m = cell_first[c]; m < cell_first[c + 1]; ++m) {
            const std::int64_t j = members[m];
            // A half list: each pair of images once, kept by the lower index (an atom and its
            // own image: the positive one of the two opposite shifts).
            if (j < i) continue;
            if (j == i && !(wrap[0] > 0 || (wrap[0] == 0 && (wrap[1] > 0 || (wrap[1] == 0 && wrap[2] > 0))))) continue;
            if (j != i && excluded.count(static_cast<std::uint64_t>(std::min(i, j)) << 32 |
                                         static_cast<std::uint64_t>(std::max(i, j))))
              continue;
            const double dx = s.x[j] - image[j][0] * length[0] + wrap[0] * length[0] - wrapped_i[0];
            const double dy = s.y[j] - image[j][1] * length[1] + wrap[1] * length[1] - wrapped_i[1];
            const double dz = s.z[j] - image[j][2] * length[2] + wrap[2] * length[2] - wrapped_i[2];
            if (dx * dx + dy * dy + dz * dz >= reach2) continue;
            std::array<std::int8_t, 3> shift{};
            for (int a = 0; a < 3; ++a) {
              // Displacement from the stored (unwrapped) positions: x_j + shift L - x_i.
              const std::int64_t k = wrap[a] - image[j][a] + image[i][a];
              if (k < -127 || k > 127)
                throw Error("neighbour list: atoms more than 127 box lengths apart (wrap them into the box)");
              shift[a] = static_cast<std::int8_t>(k);
            }
            neighbors_.push_back(static_cast<std::int32_t>(j));
            shifts_.push_back(shift);
          }
        }
    first_[i + 1] = static_cast<std::int64_t>(neighbors_.size());
  }
  built_x_ = s.x, built_y_ = s.y, built_z_ = s.z;
  built_box_ = s.box;
  ++builds_;
}

bool NeighborList::needs_rebuild(const System& s) const {
  if (builds_ == 0 || built_x_.size() != s.size() || built_box_.lo != s.box.lo || built_box_.hi != s.box.hi) return true;
  const double limit2 = 0.25 * skin_ * skin_;  // half the skin, squared
  for (std::size_t i = 0; i < s.size(); ++i) {
    const double dx = s.x[i] - built_x_[i], dy = s.y[i] - built_y_[i], dz = s.z[i] - built_z_[i];
    if (dx * dx + dy * dy + dz * dz > limit2) return true;
  }
  return false;
}

}  // namespace nbkit::md
