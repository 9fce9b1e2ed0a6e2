// The Verlet neighbour list: atoms binned into cells at least cutoff + skin wide (Allen &
// Tildesley's link cells; NAMD's patches, seed 001), each atom's neighbours found in the
// 27 surrounding cells, or more where an axis holds fewer than three cells (small boxes:
// then an atom can meet its own periodic images and several images of another atom).
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "md/exclusions.hpp"
#include "md/neighbor_scan_simd.hpp"
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
  if (field.reach() > cutoff_) throw Error("neighbour list: built for a cutoff shorter than the force field's");
  const std::int64_t n = static_cast<std::int64_t>(s.size());
  if (n > std::numeric_limits<std::int32_t>::max()) throw Error("neighbour list: at most 2^31 - 1 atoms");
  const double reach = cutoff_ + skin_, reach2 = reach * reach;
  double length[3];
  std::int64_t cells[3], span[3];
  for (int a = 0; a < 3; ++a) {
    length[a] = s.box.length(a);
    if (!(length[a] > 0)) throw Error("the box must have a positive length along every axis");
    // Cells half the reach wide (LAMMPS's default binsize): 5 x 5 x 5 cells around an atom
    // hold ~15.6 reach^3 of volume to search, against 27 reach^3 with cells a reach wide.
    cells[a] = std::max<std::int64_t>(1, static_cast<std::int64_t>(std::floor(2 * length[a] / reach)));
    cells[a] = std::min<std::int64_t>(cells[a], 1024);  // enough cells; keeps the count bounded
    span[a] = static_cast<std::int64_t>(std::ceil(reach / (length[a] / static_cast<double>(cells[a]))));
  }
  // Per axis, the cell and image of every cell coordinate a stencil can reach, looked up
  // instead of divided (three integer divisions per cell visit cost more than the visit).
  std::vector<std::int64_t> axis_cell[3], axis_wrap[3];
  for (int a = 0; a < 3; ++a)
    for (std::int64_t raw = -span[a]; raw < cells[a] + span[a]; ++raw) {
      const std::int64_t w = floor_div(raw, cells[a]);
      axis_wrap[a].push_back(w);
      axis_cell[a].push_back(raw - w * cells[a]);
    }
  // The half stencil: cell offsets lexicographically after (0, 0, 0), whose nearest points
  // can lie within the reach; with the atom's own cell (partners of higher index only),
  // every pair of images is met exactly once. An offset and its opposite reach the same
  // pairs from the two ends, and in small boxes different offsets can name the same cell
  // with different images, each met once.
  std::vector<std::array<std::int64_t, 3>> stencil;
  for (std::int64_t oz = -span[2]; oz <= span[2]; ++oz)
    for (std::int64_t oy = -span[1]; oy <= span[1]; ++oy)
      for (std::int64_t ox = -span[0]; ox <= span[0]; ++ox) {
        if (!(oz > 0 || (oz == 0 && (oy > 0 || (oy == 0 && ox > 0))))) continue;
        const std::int64_t o[3] = {ox, oy, oz};
        double nearest2 = 0;
        for (int a = 0; a < 3; ++a) {
          const double gap = static_cast<double>(std::max<std::int64_t>(0, std::abs(o[a]) - 1)) * length[a] /
                             static_cast<double>(cells[a]);
          nearest2 += gap * gap;
        }
        if (nearest2 < reach2) stencil.push_back({ox, oy, oz});
      }
  // Each atom's image (box lengths from the primary box), wrapped position and cell.
  std::vector<std::array<std::int64_t, 3>> image(n);
  std::vector<double> wrapped(3 * static_cast<std::size_t>(n));
  std::vector<std::int64_t> cell_of(n);
  const std::vector<double>* coordinate[3] = {&s.x, &s.y, &s.z};
  std::int64_t not_a_number = n;  // the first atom with a coordinate that is not a number
#pragma omp parallel for reduction(min : not_a_number) if (n > 16384)
  for (std::int64_t i = 0; i < n; ++i) {
    std::int64_t c[3] = {0, 0, 0};
    for (int a = 0; a < 3; ++a) {
      double u = ((*coordinate[a])[i] - s.box.lo[a]) / length[a];
      if (!std::isfinite(u)) not_a_number = std::min(not_a_number, i), u = 0;
      const double whole = std::floor(u);
      image[i][a] = static_cast<std::int64_t>(whole);
      wrapped[3 * i + a] = (*coordinate[a])[i] - whole * length[a];
      c[a] = std::min<std::int64_t>(cells[a] - 1, static_cast<std::int64_t>((u - whole) * static_cast<double>(cells[a])));
    }
    cell_of[i] = (c[2] * cells[1] + c[1]) * cells[0] + c[0];
  }
  if (not_a_number < n)
    throw Error("atom " + std::to_string(not_a_number + 1) + " has a coordinate that is not a number");
  // Atoms of each cell in index order (counting sort), with their wrapped positions stored
  // contiguously in that order, so the candidate loop reads memory in sequence.
  const std::int64_t cell_count = cells[0] * cells[1] * cells[2];
  std::vector<std::int64_t> cell_first(cell_count + 1, 0), members(n);
  for (std::int64_t i = 0; i < n; ++i) ++cell_first[cell_of[i] + 1];
  for (std::int64_t c = 0; c < cell_count; ++c) cell_first[c + 1] += cell_first[c];
  std::vector<std::int64_t> fill(cell_first.begin(), cell_first.end() - 1);
  for (std::int64_t i = 0; i < n; ++i) members[fill[cell_of[i]]++] = i;
  // One array an axis (the SIMD candidate test loads each a vector at a time).
  std::vector<double> binned(3 * static_cast<std::size_t>(n));
  double* const binned_axis[3] = {binned.data(), binned.data() + n, binned.data() + 2 * n};
  std::vector<std::array<std::int64_t, 3>> binned_image(n);
#pragma omp parallel for if (n > 16384)
  for (std::int64_t m = 0; m < n; ++m) {
    for (int a = 0; a < 3; ++a) binned_axis[a][m] = wrapped[3 * members[m] + a];
    binned_image[m] = image[members[m]];
  }

  const ExclusionTable excluded = exclusion_table(n, field);
  // In boxes long enough for the minimum image the force loops take it themselves; the image
  // shifts are stored only for shorter boxes.
  const bool store_shifts = !minimum_image(s.box);
  // Rows in parallel, in cell order (sorted position p = the atom's place in `members`), so
  // consecutive rows scan the same cells and the force loop reads neighbours close in memory
  // (LAMMPS sorts its atoms by bin for the same reason). Each thread takes a contiguous
  // range of rows into its own buffers, joined in thread order: the same list for any
  // thread count. Neighbours are stored as sorted positions too.
  const int team = std::max(1, std::min<int>(hardware_threads(), static_cast<int>(n / 1024) + 1));
  // Each thread's part in buffers kept from build to build (fresh ones cost 3x the build
  // itself in a run, where other allocations come between builds: measured).
  std::vector<std::vector<std::int32_t>>& thread_neighbors = thread_neighbors_;
  std::vector<std::vector<std::array<std::int8_t, 3>>>& thread_shifts = thread_shifts_;
  thread_neighbors.resize(team), thread_shifts.resize(team);
  std::vector<std::int64_t> row_size(n, 0);
  std::vector<std::string> thread_error(team);
  std::vector<std::size_t> thread_start, thread_count(team, 0);
#pragma omp parallel num_threads(team)
  {
    const int me = omp_get_thread_num();
    const std::int64_t begin = n * me / team, end = n * (me + 1) / team;
    std::vector<std::int32_t>& neighbors = thread_neighbors[me];
    std::vector<std::array<std::int8_t, 3>>& shifts = thread_shifts[me];
    std::size_t count = 0;  // entries written; the buffers keep headroom beyond it
    bool far_apart = false;
    // Room for the rows at this density (a reach sphere, halved), grown if need be.
    const double per_row = 0.5 * static_cast<double>(n) / (length[0] * length[1] * length[2]) * 4.18879 * reach * reach2;
    const std::size_t room = static_cast<std::size_t>(1.2 * per_row * static_cast<double>(end - begin)) + 4096;
    if (neighbors.size() < room) neighbors.resize(room);
    if (store_shifts && shifts.size() < neighbors.size()) shifts.resize(neighbors.size());
    // The cells a row's atom scans, with their images: the same for every atom of a cell, so
    // worked out once per cell (rows come in cell order).
    struct Target {
      std::int64_t cell;
      std::int64_t wrap[3];
      double offset[3];  // wrap * box length
    };
    std::vector<Target> targets;
    std::vector<CandidateRange> ranges;
    std::int64_t targets_cell = -1;
    for (std::int64_t row = begin; row < end; ++row) {
      const std::int64_t i = members[row];
      const std::size_t row_start = count;
      if (cell_of[i] != targets_cell) {
        targets_cell = cell_of[i];
        const std::int64_t ci[3] = {targets_cell % cells[0], targets_cell / cells[0] % cells[1],
                                    targets_cell / cells[0] / cells[1]};
        targets.clear();
        auto add = [&](std::int64_t ox, std::int64_t oy, std::int64_t oz) {
          const std::int64_t o[3] = {ox, oy, oz};
          Target t{};
          std::int64_t cell[3];
          for (int a = 0; a < 3; ++a) {
            const std::size_t k = static_cast<std::size_t>(ci[a] + o[a] + span[a]);
            t.wrap[a] = axis_wrap[a][k], cell[a] = axis_cell[a][k];
            t.offset[a] = static_cast<double>(t.wrap[a]) * length[a];
          }
          t.cell = (cell[2] * cells[1] + cell[1]) * cells[0] + cell[0];
          targets.push_back(t);
        };
        add(0, 0, 0);  // the own cell first
        for (const auto& o : stencil) add(o[0], o[1], o[2]);
      }
      const double xi = wrapped[3 * i], yi = wrapped[3 * i + 1], zi = wrapped[3 * i + 2];
      if (!store_shifts) {
        // The row's candidate ranges tested in SIMD (neighbor_scan_simd.cpp: the loop below's
        // arithmetic and order), then the excluded partners among the hits taken out.
        ranges.clear();
        std::size_t candidates = 0;
        for (std::size_t t = 0; t < targets.size(); ++t) {
          const Target& target = targets[t];
          const std::int64_t m = t == 0 ? row + 1 : cell_first[target.cell], m_end = cell_first[target.cell + 1];
          if (m >= m_end) continue;
          ranges.push_back({m, m_end, {target.offset[0] - xi, target.offset[1] - yi, target.offset[2] - zi}});
          candidates += static_cast<std::size_t>(m_end - m);
        }
        if (count + candidates > neighbors.size()) neighbors.resize(std::max(count + candidates, 2 * neighbors.size()));
        std::int32_t* out = neighbors.data() + count;
        std::size_t hits = candidates_within(binned_axis, ranges.data(), ranges.size(), reach2, out);
        if (!excluded.empty() && excluded.first[i] < excluded.first[i + 1]) {
          // Partners are sorted: a hit outside [lowest, highest] needs no search (most hits are
          // other molecules' atoms).
          const std::int64_t lowest = excluded.partner[excluded.first[i]];
          const std::int64_t highest = excluded.partner[excluded.first[i + 1] - 1];
          std::size_t kept = 0;
          for (std::size_t k = 0; k < hits; ++k) {
            const std::int64_t j = members[out[k]];
            if (j < lowest || j > highest || j == i || !excluded.excludes(i, j)) out[kept++] = out[k];
          }
          hits = kept;
        }
        count += hits;
        row_size[row] = static_cast<std::int64_t>(count - row_start);
        continue;
      }
      for (std::size_t t = 0; t < targets.size(); ++t) {
        const Target& target = targets[t];
        const double ox_shift = target.offset[0] - xi, oy_shift = target.offset[1] - yi, oz_shift = target.offset[2] - zi;
        // The own cell: each pair from the row that comes first.
        std::int64_t m = t == 0 ? row + 1 : cell_first[target.cell];
        const std::int64_t m_end = cell_first[target.cell + 1];
        if (m >= m_end) continue;
        // Every candidate is written and the count advances only for those within reach: no
        // branch on the distance (it goes either way at random in a liquid).
        const std::size_t need = count + static_cast<std::size_t>(m_end - m);
        if (need > neighbors.size()) {
          neighbors.resize(std::max(need, 2 * neighbors.size()));
          if (store_shifts) shifts.resize(neighbors.size());
        }
        std::int32_t* out = neighbors.data();
        std::array<std::int8_t, 3>* out_shift = shifts.data();
        // Displacement from the stored (unwrapped) positions: x_j + shift L - x_i, with
        // shift = target wrap - image of j + image of i.
        const std::int64_t base[3] = {target.wrap[0] + image[i][0], target.wrap[1] + image[i][1],
                                      target.wrap[2] + image[i][2]};
        auto candidates = [&](auto with_shifts) {
          for (; m < m_end; ++m) {
            const double dx = binned_axis[0][m] + ox_shift, dy = binned_axis[1][m] + oy_shift,
                         dz = binned_axis[2][m] + oz_shift;
            bool within = dx * dx + dy * dy + dz * dz < reach2;
            if (!excluded.empty() && within) {
              const std::int64_t j = members[m];
              within = j == i || !excluded.excludes(i, j);
            }
            if constexpr (decltype(with_shifts)::value) {
              std::array<std::int8_t, 3> shift;
              for (int a = 0; a < 3; ++a) {
                const std::int64_t k = base[a] - binned_image[m][a];
                far_apart |= within & (k < -127 || k > 127);
                shift[a] = static_cast<std::int8_t>(k);
              }
              out_shift[count] = shift;
            }
            out[count] = static_cast<std::int32_t>(m);
            count += within;
          }
        };
        if (store_shifts) candidates(std::true_type{});
        else candidates(std::false_type{});
      }
      row_size[row] = static_cast<std::int64_t>(count - row_start);
    }
    if (far_apart) thread_error[me] = "neighbour list: atoms more than 127 box lengths apart";
    thread_count[me] = count;
    // The threads' parts joined in thread order, each thread copying its own part.
#pragma omp barrier
#pragma omp single
    {
      thread_start.assign(team + 1, 0);
      for (int t = 0; t < team; ++t) thread_start[t + 1] = thread_start[t] + thread_count[t];
      neighbors_.resize(thread_start[team]);
      shifts_.resize(store_shifts ? thread_start[team] : 0);
    }
    if (count > 0) {
      std::memcpy(neighbors_.data() + thread_start[me], neighbors.data(), count * sizeof(neighbors[0]));
      if (store_shifts) std::memcpy(shifts_.data() + thread_start[me], shifts.data(), count * sizeof(shifts[0]));
    }
  }
  for (const std::string& error : thread_error)
    if (!error.empty()) throw Error(error + " (wrap them into the box)");
  first_.assign(n + 1, 0);
  for (std::int64_t row = 0; row < n; ++row) first_[row + 1] = first_[row] + row_size[row];
  order_.assign(members.begin(), members.end());
  built_x_ = s.x, built_y_ = s.y, built_z_ = s.z;
  built_box_ = s.box;
  ++builds_;
}

bool NeighborList::minimum_image(const Box& box) const {
  for (int a = 0; a < 3; ++a)
    if (!(box.length(a) > 2 * (cutoff_ + 2 * skin_))) return false;
  return true;
}

bool NeighborList::needs_rebuild(const System& s) const {
  if (builds_ == 0 || built_x_.size() != s.size() || built_box_.lo != s.box.lo || built_box_.hi != s.box.hi) return true;
  const double limit2 = 0.25 * skin_ * skin_;  // half the skin, squared
  const std::int64_t n = static_cast<std::int64_t>(s.size());
  bool moved = false;
#pragma omp parallel for reduction(|| : moved) if (n > 65536)
  for (std::int64_t i = 0; i < n; ++i) {
    const double dx = s.x[i] - built_x_[i], dy = s.y[i] - built_y_[i], dz = s.z[i] - built_z_[i];
    moved = moved || dx * dx + dy * dy + dz * dz > limit2;
  }
  return moved;
}

}  // namespace nbkit::md
