// The long-range part of MSM in an orthorhombic periodic box (msm.hpp; Hardy's thesis, UIUC
// 2006, chapter on periodic boundaries; LAMMPS's msm for the same idea). Every grid is
// periodic: N_l points along each axis at level l, N_0 = c 2^R with spacing L / N_0 at most the
// requested h, halved R times up to a top grid of at least 4 points on the shortest axis.
// Anterpolation, restriction, prolongation and interpolation wrap their indices; the lattice
// cutoff wraps its stencil, which then sums every periodic image of K_l (stencils longer
// than the grid meet a point several times, once per image). The top level uses the periodic
// sum of g_A, A = 2^R a, between its points:
//     S_A(x) = psi(x) - sum_R f_A(|x + R|),  f_A(r) = 1/r - g_A(r), zero from r = A on,
// psi the periodic Coulomb potential with zero mean (Ewald's sum with tin-foil boundaries),
// f_A's image sum finite. So the whole map is Ewald's potential (tin-foil, the convention of
// PME codes) up to MSM's own interpolation error, for neutral systems (a net charge has no
// finite periodic potential; its constant part is Ewald's neutralizing background).
#include <fmt/format.h>
#include <omp.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>

#include "maps/msm/msm.hpp"
#include "core/clock.hpp"
#include "nbkit/core/error.hpp"

namespace nbkit::maps::msm {

namespace {

using Index3 = std::array<std::int64_t, 3>;
using Clock = std::chrono::steady_clock;

std::int64_t wrap_index(std::int64_t i, std::int64_t n) {
  i %= n;
  return i < 0 ? i + n : i;
}

// Values on a periodic grid of n[0] x n[1] x n[2] points, x slowest.
struct PeriodicGrid {
  Index3 n{1, 1, 1};
  std::vector<double> v;
  PeriodicGrid() = default;
  explicit PeriodicGrid(Index3 count) : n(count), v(static_cast<std::size_t>(count[0] * count[1] * count[2]), 0.0) {}
  std::int64_t size() const { return n[0] * n[1] * n[2]; }
  double& at(std::int64_t i, std::int64_t j, std::int64_t k) { return v[static_cast<std::size_t>((i * n[1] + j) * n[2] + k)]; }
  double at(std::int64_t i, std::int64_t j, std::int64_t k) const {
    return v[static_cast<std::size_t>((i * n[1] + j) * n[2] + k)];
  }
};

// One axis of a transfer: out[m] = sum_t weight(m, t) in[index(m, t) mod n_in] along `axis`,
// the other axes unchanged. Restriction: out has half the points, index 2M + k, weight
// w[k]; prolongation: out has twice the points, index M, weight w[m - 2M].
template <class Taps>
PeriodicGrid transfer_axis(const PeriodicGrid& in, int axis, std::int64_t out_count, Taps&& taps) {
  Index3 count = in.n;
  count[axis] = out_count;
  PeriodicGrid out(count);
#pragma omp parallel for collapse(2)
  for (std::int64_t i = 0; i < count[0]; ++i)
    for (std::int64_t j = 0; j < count[1]; ++j)
      for (std::int64_t k = 0; k < count[2]; ++k) {
        const Index3 m{i, j, k};
        double sum = 0;
        taps(m[axis], [&](std::int64_t source, double weight) {
          Index3 s = m;
          s[axis] = wrap_index(source, in.n[axis]);
          sum += weight * in.at(s[0], s[1], s[2]);
        });
        out.at(i, j, k) = sum;
      }
  return out;
}

PeriodicGrid restrict_periodic(const PeriodicGrid& in, const std::vector<double>& w, int half) {
  PeriodicGrid g = in;
  for (int axis = 0; axis < 3; ++axis)
    g = transfer_axis(g, axis, g.n[axis] / 2, [&](std::int64_t coarse, auto&& add) {
      for (int k = -half; k <= half; ++k) add(2 * coarse + k, w[static_cast<std::size_t>(k + half)]);
    });
  return g;
}

PeriodicGrid prolong_periodic(const PeriodicGrid& coarse, const std::vector<double>& w, int half) {
  PeriodicGrid g = coarse;
  for (int axis = 0; axis < 3; ++axis)
    g = transfer_axis(g, axis, 2 * g.n[axis], [&](std::int64_t fine, auto&& add) {
      // coarse points M with |fine - 2M| <= half
      const std::int64_t low = fine - half, first = low >= 0 ? (low + 1) / 2 : -((-low) / 2);  // ceil(low / 2)
      for (std::int64_t c = first; 2 * c <= fine + half; ++c) add(c, w[static_cast<std::size_t>(fine - 2 * c + half)]);
    });
  return g;
}

// e[m] += scale sum_d K[d] q[(m + d) mod n] over the stencil's rows of non-zero weights (the
// GPU's kernel does the same sums in the same order).
void convolve_periodic(const PeriodicGrid& q, const std::vector<StencilRow>& rows, const std::vector<double>& weights,
                       double scale, PeriodicGrid& e) {
#pragma omp parallel for collapse(2) schedule(dynamic, 2)
  for (std::int64_t i = 0; i < q.n[0]; ++i)
    for (std::int64_t j = 0; j < q.n[1]; ++j)
      for (std::int64_t k = 0; k < q.n[2]; ++k) {
        double sum = 0;
        for (const StencilRow& row : rows) {
          const std::int64_t si = wrap_index(i + row.dx, q.n[0]), sj = wrap_index(j + row.dy, q.n[1]);
          const double* w = weights.data() + row.weight_offset - row.dz_first;
          for (int dz = row.dz_first; dz <= row.dz_last; ++dz) sum += w[dz] * q.at(si, sj, wrap_index(k + dz, q.n[2]));
        }
        e.at(i, j, k) += scale * sum;
      }
}

// The periodic Coulomb potential with zero mean (Ewald, tin-foil boundaries) and the image
// sums of the top level: S_A(x) = psi(x) - sum_R f_A(|x + R|).
class TopLevelKernel {
 public:
  TopLevelKernel(Smoothing split, double smoothing_length, Vec3 box) : split_(split), length_(smoothing_length), box_(box) {
    const double shortest = std::min({box.x, box.y, box.z});
    volume_ = box.x * box.y * box.z;
    // beta: erfc(beta r) < 1e-17 for r beyond the nearest images' shell (real space: the 27
    // cells around), exp(-k^2 / 4 beta^2) < 1e-17 beyond k_max.
    beta_ = 6.2 / shortest;
    const double k_max = 2 * beta_ * 6.3;
    for (int a = 0; a < 3; ++a) harmonics_[a] = static_cast<int>(std::ceil(k_max * box[a] / (2 * M_PI)));
    for (int nx = -harmonics_[0]; nx <= harmonics_[0]; ++nx)
      for (int ny = -harmonics_[1]; ny <= harmonics_[1]; ++ny)
        for (int nz = 0; nz <= harmonics_[2]; ++nz) {  // k and -k together
          if (nz == 0 && (ny < 0 || (ny == 0 && nx <= 0))) continue;
          const Vec3 k{2 * M_PI * nx / box.x, 2 * M_PI * ny / box.y, 2 * M_PI * nz / box.z};
          const double k2 = k.x * k.x + k.y * k.y + k.z * k.z;
          const double coefficient = 2 * 4 * M_PI / volume_ * std::exp(-k2 / (4 * beta_ * beta_)) / k2;
          if (coefficient > 1e-20) waves_.push_back({k, coefficient});
        }
  }

  double operator()(Vec3 x) const {
    // psi: real-space images (the singular one combined with f_A's below), reciprocal space,
    // the neutralizing background's constant.
    double value = -M_PI / (beta_ * beta_ * volume_);
    for (const Wave& w : waves_) value += w.coefficient * std::cos(w.k.x * x.x + w.k.y * x.y + w.k.z * x.z);
    // Real space and f_A together over every image within max(A, the erfc range).
    const double reach = std::max(length_, 6.3 / beta_);
    int images[3];
    for (int a = 0; a < 3; ++a) images[a] = static_cast<int>(std::ceil(reach / box_[a])) + 1;
    for (int ix = -images[0]; ix <= images[0]; ++ix)
      for (int iy = -images[1]; iy <= images[1]; ++iy)
        for (int iz = -images[2]; iz <= images[2]; ++iz) {
          const double dx = x.x + ix * box_.x, dy = x.y + iy * box_.y, dz = x.z + iz * box_.z;
          const double r = std::sqrt(dx * dx + dy * dy + dz * dz);
          if (r < 1e-12) {  // erfc(beta r)/r - (1/r - g_A(r)) -> -2 beta / sqrt(pi) + g_A(0)
            value += -2 * beta_ / std::sqrt(M_PI) + smoothed_kernel(split_, length_, 0.0);
            continue;
          }
          if (r < 6.3 / beta_) value += std::erfc(beta_ * r) / r;
          if (r < length_) value -= 1 / r - smoothed_kernel(split_, length_, r);
        }
    return value;
  }

 private:
  struct Wave {
    Vec3 k;
    double coefficient;
  };
  Smoothing split_;
  double length_, volume_ = 0, beta_ = 0;
  Vec3 box_;
  int harmonics_[3] = {0, 0, 0};
  std::vector<Wave> waves_;
};

}  // namespace

PeriodicLevels periodic_levels(const Vec3& box, const Parameters& parameters) {
  check_parameters(parameters);
  // R halvings down to at least 4 points on the shortest axis; N_0 = c 2^R points per axis
  // with spacing L / N_0 <= h.
  const double shortest = std::min({box.x, box.y, box.z});
  PeriodicLevels levels;
  while (shortest / parameters.grid_spacing / std::ldexp(1.0, levels.halvings + 1) >= 4) ++levels.halvings;
  std::int64_t top[3];
  for (int ax = 0; ax < 3; ++ax) {
    top[ax] = static_cast<std::int64_t>(
        std::ceil(box[ax] / (parameters.grid_spacing * std::ldexp(1.0, levels.halvings)) - 1e-9));
    top[ax] = std::max<std::int64_t>(top[ax], 1);
    levels.finest[static_cast<std::size_t>(ax)] = top[ax] << levels.halvings;
  }
  if (top[0] * top[1] * top[2] > 32768)
    throw Error(fmt::format("periodic MSM: the box ({} x {} x {} A) is too elongated for the top grid ({} x {} x {} "
                            "points): use a coarser --msm-spacing or the cutoff method",
                            box.x, box.y, box.z, top[0], top[1], top[2]));
  return levels;
}

std::vector<double> periodic_grid_potential(std::vector<double> q0, const PeriodicLevels& levels, const Vec3& box,
                                            const Parameters& parameters, Stages& st, std::vector<double>* top_table) {
  const double a = parameters.cutoff;
  const MsmInterpolation ip = parameters.interpolation;
  const Smoothing split = parameters.splitting;
  const int halvings = levels.halvings;
  const Index3 finest{levels.finest[0], levels.finest[1], levels.finest[2]};
  Vec3 spacing;
  for (int ax = 0; ax < 3; ++ax) spacing[ax] = box[ax] / static_cast<double>(finest[static_cast<std::size_t>(ax)]);
  std::vector<PeriodicGrid> charge;
  charge.emplace_back(finest);
  if (q0.size() != charge[0].v.size()) throw Error("periodic MSM: a charge grid of another size");
  charge[0].v = std::move(q0);
  auto start = Clock::now();
  int half = 0;
  const std::vector<double> transfer = transfer_weights(ip, half);
  for (int l = 0; l < halvings; ++l) charge.push_back(restrict_periodic(charge.back(), transfer, half));
  st.restriction = seconds_since(start);

  // Lattice cutoff at levels 0 .. R-1: K_0(d) = g_a(|d h|) - g_2a(|d h|) (zero from 2a on),
  // 2^-l K_0 at level l.
  start = Clock::now();
  std::vector<PeriodicGrid> potential;
  for (const PeriodicGrid& q : charge) potential.emplace_back(q.n);
  if (halvings > 0) {
    // Rows along z of the offsets within 2a (contiguous in dz: the support is a ball).
    std::vector<StencilRow> rows;
    std::vector<double> weights;
    Index3 radius;
    for (int ax = 0; ax < 3; ++ax) radius[ax] = static_cast<std::int64_t>(std::floor(2 * a / spacing[ax]));
    for (std::int64_t dx = -radius[0]; dx <= radius[0]; ++dx)
      for (std::int64_t dy = -radius[1]; dy <= radius[1]; ++dy) {
        StencilRow row{static_cast<int>(dx), static_cast<int>(dy), 0, -1, static_cast<int>(weights.size())};
        for (std::int64_t dz = -radius[2]; dz <= radius[2]; ++dz) {
          const double x = dx * spacing[0], y = dy * spacing[1], z = dz * spacing[2];
          const double r = std::sqrt(x * x + y * y + z * z);
          if (r >= 2 * a) continue;
          if (row.dz_last < row.dz_first) row.dz_first = static_cast<int>(dz);
          row.dz_last = static_cast<int>(dz);
          weights.push_back(smoothed_kernel(split, a, r) - smoothed_kernel(split, 2 * a, r));
        }
        if (row.dz_last >= row.dz_first) rows.push_back(row);
      }
    if (parameters.gpu >= 0) {
      std::vector<LevelGrids> grids;
      for (int l = 0; l < halvings; ++l)
        grids.push_back({{charge[l].n[0], charge[l].n[1], charge[l].n[2]}, charge[l].v.data(), potential[l].v.data(),
                         std::ldexp(1.0, -l)});
      lattice_cutoff_cuda(parameters.gpu, rows, weights, grids, true);
    } else {
      for (int l = 0; l < halvings; ++l) convolve_periodic(charge[l], rows, weights, std::ldexp(1.0, -l), potential[l]);
    }
  }
  st.lattice_cutoff = seconds_since(start);

  // Top level: S_A between all pairs of its points, A = 2^R a, tabulated per periodic offset.
  start = Clock::now();
  {
    const PeriodicGrid& q = charge.back();
    PeriodicGrid& e = potential.back();
    PeriodicGrid table(q.n);
    if (top_table && top_table->size() == table.v.size()) {
      table.v = *top_table;  // the caller's, for this box
    } else {
      const TopLevelKernel kernel(split, std::ldexp(a, halvings), box);
      const double top_spacing[3] = {spacing[0] * std::ldexp(1.0, halvings), spacing[1] * std::ldexp(1.0, halvings),
                                     spacing[2] * std::ldexp(1.0, halvings)};
#pragma omp parallel for collapse(2)
      for (std::int64_t i = 0; i < q.n[0]; ++i)
        for (std::int64_t j = 0; j < q.n[1]; ++j)
          for (std::int64_t k = 0; k < q.n[2]; ++k)
            table.at(i, j, k) = kernel(Vec3{i * top_spacing[0], j * top_spacing[1], k * top_spacing[2]});
      if (top_table) *top_table = table.v;
    }
#pragma omp parallel for collapse(2)
    for (std::int64_t i = 0; i < q.n[0]; ++i)
      for (std::int64_t j = 0; j < q.n[1]; ++j)
        for (std::int64_t k = 0; k < q.n[2]; ++k) {
          double sum = 0;
          for (std::int64_t si = 0; si < q.n[0]; ++si)
            for (std::int64_t sj = 0; sj < q.n[1]; ++sj)
              for (std::int64_t sk = 0; sk < q.n[2]; ++sk)
                sum += q.at(si, sj, sk) *
                       table.at(wrap_index(i - si, q.n[0]), wrap_index(j - sj, q.n[1]), wrap_index(k - sk, q.n[2]));
          e.at(i, j, k) += sum;
        }
  }
  st.top_level = seconds_since(start);

  start = Clock::now();
  for (int l = halvings - 1; l >= 0; --l) {
    const PeriodicGrid fine = prolong_periodic(potential[l + 1], transfer, half);
    for (std::size_t p = 0; p < fine.v.size(); ++p) potential[l].v[p] += fine.v[p];
  }
  st.prolongation = seconds_since(start);

  st.levels = halvings + 1;
  st.finest_points = charge[0].size();
  return std::move(potential[0].v);
}

namespace {

// Anterpolation of the atoms themselves (any image of each: the grid indices wrap), then the
// grids' stages: the finest grid's potential.
PeriodicGrid periodic_long_range_grid(const PreparedAtoms& atoms, const PeriodicLevels& levels, const Vec3& box,
                                      const Parameters& parameters, const Vec3& origin, Stages& st) {
  const MsmInterpolation ip = parameters.interpolation;
  const int support = basis_support(ip);
  const Index3 finest{levels.finest[0], levels.finest[1], levels.finest[2]};
  Vec3 spacing;
  for (int ax = 0; ax < 3; ++ax) spacing[ax] = box[ax] / static_cast<double>(finest[static_cast<std::size_t>(ax)]);
  const auto start = Clock::now();
  PeriodicGrid q0(finest);
  {
    for (std::int64_t n = 0; n < atoms.size(); ++n) {
      const double p[3] = {atoms.x[n] + origin.x, atoms.y[n] + origin.y, atoms.z[n] + origin.z};
      std::int64_t base[3];
      double phi[3][6];
      for (int ax = 0; ax < 3; ++ax) {
        const double u = p[ax] / spacing[ax];
        base[ax] = static_cast<std::int64_t>(std::floor(u)) - support + 1;
        for (int t = 0; t < 2 * support; ++t) phi[ax][t] = basis(ip, u - static_cast<double>(base[ax] + t));
      }
      for (int tx = 0; tx < 2 * support; ++tx)
        for (int ty = 0; ty < 2 * support; ++ty) {
          const double wxy = atoms.coefficient[n] * phi[0][tx] * phi[1][ty];
          const std::int64_t i = wrap_index(base[0] + tx, finest[0]), j = wrap_index(base[1] + ty, finest[1]);
          for (int tz = 0; tz < 2 * support; ++tz) q0.at(i, j, wrap_index(base[2] + tz, finest[2])) += wxy * phi[2][tz];
        }
    }
  }
  st.anterpolation = seconds_since(start);
  PeriodicGrid e0(finest);
  e0.v = periodic_grid_potential(std::move(q0.v), levels, box, parameters, st);
  return e0;
}

}  // namespace

void add_long_range_periodic(const PreparedAtoms& atoms, const PreparedAtoms& images, const Vec3& box,
                             const Parameters& parameters, const RowRange& rows, int threads, Stages* stages,
                             LongRangeGrid* kept) {
  const Lattice& lattice = *rows.lattice;
  check_parameters(parameters);
  const MsmInterpolation ip = parameters.interpolation;
  const int support = basis_support(ip);
  const ScopedThreadCount thread_count(threads);
  Stages local;
  Stages& st = stages ? *stages : local;

  const PeriodicLevels levels = periodic_levels(box, parameters);
  const Index3 finest{levels.finest[0], levels.finest[1], levels.finest[2]};
  Vec3 spacing;
  for (int ax = 0; ax < 3; ++ax) spacing[ax] = box[ax] / static_cast<double>(finest[static_cast<std::size_t>(ax)]);

  PeriodicGrid e0;
  if (kept && !kept->potential.empty()) {
    e0.n = finest, e0.v = std::move(kept->potential);
    st.levels = kept->levels, st.finest_points = kept->finest_points;
  } else {
    e0 = periodic_long_range_grid(atoms, levels, box, parameters, lattice.origin, st);
  }

  // Interpolation onto the rows' points, wrapped into the box.
  const auto start = Clock::now();
  const std::int64_t nz = lattice.dims[2];
#pragma omp parallel for schedule(dynamic, 1)
  for (std::int64_t row = rows.row_begin; row < rows.row_end; ++row) {
    const std::int64_t i = row / lattice.dims[1], j = row % lattice.dims[1];
    const double px = lattice.origin.x + i * lattice.spacing, py = lattice.origin.y + j * lattice.spacing;
    for (std::int64_t k = 0; k < nz; ++k) {
      const double p[3] = {px, py, lattice.origin.z + k * lattice.spacing};
      std::int64_t base[3];
      double phi[3][6];
      for (int ax = 0; ax < 3; ++ax) {
        const double u = (p[ax] - box[ax] * std::floor(p[ax] / box[ax])) / spacing[ax];
        base[ax] = static_cast<std::int64_t>(std::floor(u)) - support + 1;
        for (int t = 0; t < 2 * support; ++t) phi[ax][t] = basis(ip, u - static_cast<double>(base[ax] + t));
      }
      double v = 0;
      for (int tx = 0; tx < 2 * support; ++tx)
        for (int ty = 0; ty < 2 * support; ++ty) {
          const double wxy = phi[0][tx] * phi[1][ty];
          const std::int64_t gi = wrap_index(base[0] + tx, finest[0]), gj = wrap_index(base[1] + ty, finest[1]);
          for (int tz = 0; tz < 2 * support; ++tz) v += wxy * phi[2][tz] * e0.at(gi, gj, wrap_index(base[2] + tz, finest[2]));
        }
      rows.out[(row - rows.row_begin) * nz + k] += rows.prefactor * v;
    }
  }
  remove_singular_long_range(images, parameters, rows);
  st.interpolation = seconds_since(start);
  if (kept) kept->lo = {0, 0, 0}, kept->n = finest, kept->potential = std::move(e0.v), kept->levels = st.levels,
            kept->finest_points = st.finest_points;
}

}  // namespace nbkit::maps::msm
