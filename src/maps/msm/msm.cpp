// The long-range grids of the multilevel summation method (msm.hpp says what each stage
// computes and where it comes from).
#include "maps/msm/msm.hpp"

#include <fmt/format.h>
#include <omp.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <vector>

#include "core/clock.hpp"
#include "maps/msm/basis.hpp"
#include "maps/laws.hpp"
#include "nbkit/core/error.hpp"
#include "nbkit/core/memory.hpp"

namespace nbkit::maps::msm {

double basis(MsmInterpolation interpolation, double t) {
  return basis_value(interpolation == MsmInterpolation::quintic, t);
}

double basis_derivative(MsmInterpolation interpolation, double t) {
  const double x = std::fabs(t), sign = t < 0 ? -1.0 : 1.0;
  if (interpolation == MsmInterpolation::cubic) {
    if (x <= 1) return sign * x * (-5 + 4.5 * x);             // (1 - 2.5 x^2 + 1.5 x^3)'
    if (x <= 2) return sign * -0.5 * (2 - x) * (4 - 3 * x);  // (-0.5 (x - 1) (2 - x)^2)'
    return 0;
  }
  const double x2 = x * x;
  if (x <= 1) {
    const double p = 6 + 3 * x - 5 * x2;
    return sign * (-2 * x * (2 - x) * p - (1 - x2) * p + (1 - x2) * (2 - x) * (3 - 10 * x)) / 12;
  }
  if (x <= 2) {
    const double p = 4 + 9 * x - 5 * x2;
    return sign * -((2 - x) * (3 - x) * p - (x - 1) * (3 - x) * p - (x - 1) * (2 - x) * p +
                    (x - 1) * (2 - x) * (3 - x) * (9 - 10 * x)) /
           24;
  }
  if (x <= 3)
    return sign * ((x - 2) * (3 - x) * (3 - x) * (4 - x) + (x - 1) * (3 - x) * (3 - x) * (4 - x) -
                   2 * (x - 1) * (x - 2) * (3 - x) * (4 - x) - (x - 1) * (x - 2) * (3 - x) * (3 - x)) /
           24;
  return 0;
}

int basis_support(MsmInterpolation interpolation) { return interpolation == MsmInterpolation::cubic ? 2 : 3; }

double smoothed_kernel(Smoothing splitting, double cutoff, double distance) {
  if (distance >= cutoff) return 1 / distance;
  const double s = (distance / cutoff) * (distance / cutoff);
  const ScalarMath<double> math;
  switch (splitting) {
    case Smoothing::taylor1: return taylor_gamma<Smoothing::taylor1>(math, s) / cutoff;
    case Smoothing::taylor2: return taylor_gamma<Smoothing::taylor2>(math, s) / cutoff;
    case Smoothing::taylor3: return taylor_gamma<Smoothing::taylor3>(math, s) / cutoff;
    default: throw Error("the multilevel splitting must be taylor1, taylor2 or taylor3");
  }
}

// The coarse basis function written in fine ones.
std::vector<double> transfer_weights(MsmInterpolation interpolation, int& half_width) {
  half_width = 2 * basis_support(interpolation) - 1;
  std::vector<double> w(static_cast<std::size_t>(2 * half_width + 1));
  for (int k = -half_width; k <= half_width; ++k) w[static_cast<std::size_t>(k + half_width)] = basis(interpolation, 0.5 * k);
  return w;
}

namespace {

using Index3 = std::array<std::int64_t, 3>;
using Clock = std::chrono::steady_clock;

std::int64_t floor_half(std::int64_t a) { return a >= 0 ? a / 2 : -((1 - a) / 2); }
std::int64_t ceil_half(std::int64_t a) { return -floor_half(-a); }

// Values on grid points lo .. lo + n - 1 (grid indices; point m sits at m h from the
// lattice origin), x slowest.
struct Grid {
  Index3 lo{0, 0, 0}, n{1, 1, 1};
  std::vector<double> v;
  Grid() = default;
  Grid(Index3 lower, Index3 count) : lo(lower), n(count), v(static_cast<std::size_t>(size()), 0.0) {}
  std::int64_t size() const { return n[0] * n[1] * n[2]; }
  std::int64_t hi(int axis) const { return lo[axis] + n[axis] - 1; }
  std::size_t offset(std::int64_t i, std::int64_t j, std::int64_t k) const {
    return static_cast<std::size_t>(((i - lo[0]) * n[1] + (j - lo[1])) * n[2] + (k - lo[2]));
  }
  std::size_t offset(const Index3& p) const { return offset(p[0], p[1], p[2]); }
};


// One axis of restriction: out[M] = sum_k w[k] in[2M + k] along `axis`.
Grid restrict_axis(const Grid& in, int axis, const std::vector<double>& w, int half) {
  Index3 lo = in.lo, n = in.n;
  lo[axis] = ceil_half(in.lo[axis] - half);
  n[axis] = floor_half(in.hi(axis) + half) - lo[axis] + 1;
  Grid out(lo, n);
#pragma omp parallel for schedule(static)
  for (std::int64_t i = out.lo[0]; i <= out.hi(0); ++i)
    for (std::int64_t j = out.lo[1]; j <= out.hi(1); ++j)
      for (std::int64_t k = out.lo[2]; k <= out.hi(2); ++k) {
        Index3 p{i, j, k};
        const std::int64_t coarse = p[axis];
        double sum = 0;
        for (int t = -half; t <= half; ++t) {
          p[axis] = 2 * coarse + t;
          if (p[axis] < in.lo[axis] || p[axis] > in.hi(axis)) continue;
          sum += w[static_cast<std::size_t>(t + half)] * in.v[in.offset(p)];
        }
        out.v[out.offset(i, j, k)] = sum;
      }
  return out;
}

// One axis of prolongation (the transpose): out[m] = sum_M w[m - 2M] in[M] along `axis`,
// for fine indices fine_lo .. fine_lo + fine_n - 1.
Grid prolong_axis(const Grid& in, int axis, std::int64_t fine_lo, std::int64_t fine_n, const std::vector<double>& w,
                  int half) {
  Index3 lo = in.lo, n = in.n;
  lo[axis] = fine_lo;
  n[axis] = fine_n;
  Grid out(lo, n);
#pragma omp parallel for schedule(static)
  for (std::int64_t i = out.lo[0]; i <= out.hi(0); ++i)
    for (std::int64_t j = out.lo[1]; j <= out.hi(1); ++j)
      for (std::int64_t k = out.lo[2]; k <= out.hi(2); ++k) {
        Index3 p{i, j, k};
        const std::int64_t fine = p[axis];
        double sum = 0;
        for (std::int64_t coarse = std::max(ceil_half(fine - half), in.lo[axis]);
             coarse <= std::min(floor_half(fine + half), in.hi(axis)); ++coarse) {
          p[axis] = coarse;
          sum += w[static_cast<std::size_t>(fine - 2 * coarse + half)] * in.v[in.offset(p)];
        }
        out.v[out.offset(i, j, k)] = sum;
      }
  return out;
}

// A kernel on grid offsets d with |d_axis| <= radius[axis], x slowest; for each (dx, dy)
// the range of dz where it is not zero (empty rows skipped).
struct Stencil {
  Index3 radius{0, 0, 0};
  std::vector<double> w;
  struct Row {
    std::int64_t dx, dy, dz_first, dz_last;
  };
  std::vector<Row> rows;
  template <class F>
  Stencil(Index3 r, F&& kernel_of_offset) : radius(r) {
    const std::int64_t nx = 2 * r[0] + 1, ny = 2 * r[1] + 1, nz = 2 * r[2] + 1;
    w.assign(static_cast<std::size_t>(nx * ny * nz), 0.0);
    for (std::int64_t dx = -r[0]; dx <= r[0]; ++dx)
      for (std::int64_t dy = -r[1]; dy <= r[1]; ++dy) {
        std::int64_t first = r[2] + 1, last = -r[2] - 1;
        for (std::int64_t dz = -r[2]; dz <= r[2]; ++dz) {
          const double value = kernel_of_offset(dx, dy, dz);
          w[static_cast<std::size_t>(((dx + r[0]) * ny + (dy + r[1])) * nz + (dz + r[2]))] = value;
          if (value != 0) first = std::min(first, dz), last = std::max(last, dz);
        }
        if (first <= last) rows.push_back({dx, dy, first, last});
      }
  }
  const double* row(std::int64_t dx, std::int64_t dy) const {
    return &w[static_cast<std::size_t>(((dx + radius[0]) * (2 * radius[1] + 1) + (dy + radius[1])) * (2 * radius[2] + 1) +
                                       radius[2])];  // indexable by dz in [-radius, radius]
  }
};

// e[m] += scale sum_d stencil[d] q[m + d] over the points of q's grid (e has q's shape).
void convolve(const Grid& q, const Stencil& stencil, double scale, Grid& e) {
  const std::int64_t nz = q.n[2];
#pragma omp parallel
  {
    std::vector<double> acc(static_cast<std::size_t>(nz));
#pragma omp for collapse(2) schedule(dynamic, 4)
    for (std::int64_t i = q.lo[0]; i <= q.hi(0); ++i)
      for (std::int64_t j = q.lo[1]; j <= q.hi(1); ++j) {
        std::fill(acc.begin(), acc.end(), 0.0);
        for (const Stencil::Row& r : stencil.rows) {
          const std::int64_t si = i + r.dx, sj = j + r.dy;
          if (si < q.lo[0] || si > q.hi(0) || sj < q.lo[1] || sj > q.hi(1)) continue;
          const double* source = &q.v[q.offset(si, sj, q.lo[2])];
          const double* weights = stencil.row(r.dx, r.dy);
          for (std::int64_t dz = r.dz_first; dz <= r.dz_last; ++dz) {
            const double weight = weights[dz];
            const std::int64_t first = std::max<std::int64_t>(0, -dz), last = std::min(nz, nz - dz);
            for (std::int64_t k = first; k < last; ++k) acc[static_cast<std::size_t>(k)] += weight * source[k + dz];
          }
        }
        double* target = &e.v[e.offset(i, j, e.lo[2])];
        for (std::int64_t k = 0; k < nz; ++k) target[k] += scale * acc[static_cast<std::size_t>(k)];
      }
  }
}

// A stencil's rows of non-zero weights as the GPU's convolution takes them.
void device_rows(const Stencil& stencil, std::vector<StencilRow>& rows, std::vector<double>& weights) {
  for (const Stencil::Row& row : stencil.rows) {
    rows.push_back({static_cast<int>(row.dx), static_cast<int>(row.dy), static_cast<int>(row.dz_first),
                    static_cast<int>(row.dz_last), static_cast<int>(weights.size())});
    const double* w = stencil.row(row.dx, row.dy);
    for (std::int64_t dz = row.dz_first; dz <= row.dz_last; ++dz) weights.push_back(w[dz]);
  }
}

// Per lattice index along one axis: the first grid index of its basis stencil and the
// 2 support weights.
struct AxisWeights {
  std::vector<std::int64_t> first;
  std::vector<double> w;  // [index * width + t]
  int width = 0;
};

AxisWeights axis_weights(std::int64_t count, double lattice_spacing, double grid_spacing, MsmInterpolation ip) {
  AxisWeights a;
  const int support = basis_support(ip);
  a.width = 2 * support;
  a.first.resize(static_cast<std::size_t>(count));
  a.w.resize(static_cast<std::size_t>(count * a.width));
  for (std::int64_t i = 0; i < count; ++i) {
    const double u = static_cast<double>(i) * lattice_spacing / grid_spacing;
    const std::int64_t first = static_cast<std::int64_t>(std::floor(u)) - support + 1;
    a.first[static_cast<std::size_t>(i)] = first;
    for (int t = 0; t < a.width; ++t)
      a.w[static_cast<std::size_t>(i * a.width + t)] = basis(ip, u - static_cast<double>(first + t));
  }
  return a;
}

}  // namespace

void check_parameters(const Parameters& parameters) {
  const double h = parameters.grid_spacing, a = parameters.cutoff;
  if (!(h > 0) || !std::isfinite(h)) throw Error(fmt::format("MSM grid spacing must be positive, got {}", h));
  if (!(a > 0) || !std::isfinite(a)) throw Error(fmt::format("MSM cutoff must be positive, got {}", a));
  if (a < 2 * h)
    throw Error(fmt::format("MSM: the cutoff ({} A) must be at least twice the grid spacing ({} A): the grids "
                            "cannot represent a smoother splitting",
                            a, h));
}

ScopedThreadCount::ScopedThreadCount(int threads) : previous_(omp_get_max_threads()) {
  omp_set_num_threads(std::max(threads, 1));
}
ScopedThreadCount::~ScopedThreadCount() { omp_set_num_threads(previous_); }

namespace {

constexpr std::int64_t kTopPoints = 4096;  // top level: N^2 <= 1.7e7 pairs

// The finest grid: it covers every atom's and every lattice point's basis stencil.
GridBox finest_box(const PreparedAtoms& atoms, const Parameters& parameters, const Lattice& lattice) {
  const double h = parameters.grid_spacing;
  const int support = basis_support(parameters.interpolation);
  GridBox box;
  for (int ax = 0; ax < 3; ++ax) {
    const double last_point = static_cast<double>(lattice.dims[ax] - 1) * lattice.spacing;
    double lo = std::min(0.0, last_point), hi = std::max(0.0, last_point);
    const std::vector<double>& coordinate = ax == 0 ? atoms.x : (ax == 1 ? atoms.y : atoms.z);
    for (double c : coordinate) lo = std::min(lo, c), hi = std::max(hi, c);
    box.lo[ax] = static_cast<std::int64_t>(std::floor(lo / h)) - support + 1;
    box.n[ax] = static_cast<std::int64_t>(std::floor(hi / h)) + support - box.lo[ax] + 1;
  }
  return box;
}

// The level-0 lattice-cutoff stencil K(d) = g_a(|d| h) - g_2a(|d| h), zero from |d| h >= 2a on
// (scaled by 2^-l at level l).
Stencil lattice_cutoff_stencil(const Parameters& parameters) {
  const double h = parameters.grid_spacing, a = parameters.cutoff;
  const std::int64_t r = static_cast<std::int64_t>(std::floor(2 * a / h));
  return Stencil({r, r, r}, [&](std::int64_t dx, std::int64_t dy, std::int64_t dz) {
    const double distance = h * std::sqrt(static_cast<double>(dx * dx + dy * dy + dz * dz));
    if (distance >= 2 * a) return 0.0;
    return smoothed_kernel(parameters.splitting, a, distance) - smoothed_kernel(parameters.splitting, 2 * a, distance);
  });
}

// The top level's stencil: g_{2^L a} between all pairs of a grid of n points (scaled by 2^-L).
Stencil top_level_stencil(const Parameters& parameters, const Index3& n) {
  const double h = parameters.grid_spacing, a = parameters.cutoff;
  return Stencil({n[0] - 1, n[1] - 1, n[2] - 1}, [&](std::int64_t dx, std::int64_t dy, std::int64_t dz) {
    const double distance = h * std::sqrt(static_cast<double>(dx * dx + dy * dy + dz * dz));
    return smoothed_kernel(parameters.splitting, a, distance);
  });
}

// The grid restriction makes of `in` (restrict_axis's bounds on every axis).
GridBox restricted_box(const GridBox& in, int half) {
  GridBox out;
  for (int ax = 0; ax < 3; ++ax) {
    out.lo[ax] = ceil_half(in.lo[ax] - half);
    out.n[ax] = floor_half(in.lo[ax] + in.n[ax] - 1 + half) - out.lo[ax] + 1;
  }
  return out;
}

// Every stage but interpolation on parameters.gpu: the finest grid's potential.
Grid sum_long_range_grids_on_gpu(const PreparedAtoms& atoms, const Parameters& parameters, const Lattice& lattice,
                                 Stages& st) {
  DeviceGridsPlan plan;
  plan.gpu = parameters.gpu;
  plan.interpolation = parameters.interpolation;
  plan.spacing = parameters.grid_spacing;
  plan.levels.push_back(finest_box(atoms, parameters, lattice));
  plan.transfer = transfer_weights(parameters.interpolation, plan.transfer_half_width);
  while (plan.levels.back().size() > kTopPoints && plan.levels.size() < 40)
    plan.levels.push_back(restricted_box(plan.levels.back(), plan.transfer_half_width));
  if (plan.levels.size() > 1) device_rows(lattice_cutoff_stencil(parameters), plan.cutoff_rows, plan.cutoff_weights);
  device_rows(top_level_stencil(parameters, plan.levels.back().n), plan.top_rows, plan.top_weights);
  Grid e0;
  e0.lo = plan.levels[0].lo, e0.n = plan.levels[0].n;
  // The finest grid comes back to the host (for `kept` and the interpolation's uploads).
  check_memory(static_cast<std::uint64_t>(plan.levels[0].size()) * sizeof(double),
               fmt::format("the multilevel summation's finest grid ({}x{}x{} points at {} A)", e0.n[0], e0.n[1], e0.n[2],
                           parameters.grid_spacing));
  e0.v = finest_potential_cuda(atoms, plan, st);
  return e0;
}

// Every stage but interpolation: the finest grid's potential.
Grid sum_long_range_grids(const PreparedAtoms& atoms, const Parameters& parameters, const Lattice& lattice, Stages& st) {
  const double h = parameters.grid_spacing;
  const MsmInterpolation ip = parameters.interpolation;
  const int support = basis_support(ip);
  const GridBox finest = finest_box(atoms, parameters, lattice);
  const Index3 lower = finest.lo, count = finest.n;
  const double points = static_cast<double>(count[0]) * static_cast<double>(count[1]) * static_cast<double>(count[2]);
  // Every level together is at most 8/7 of the finest grid; charges, potentials and the
  // transfer temporaries need about 4 arrays of it.
  check_memory(static_cast<std::uint64_t>(points * 4.6 * sizeof(double)),
               fmt::format("the multilevel summation grids ({}x{}x{} points at {} A, covering the atoms and the "
                           "lattice; atoms far from the lattice make it large)",
                           count[0], count[1], count[2], h));

  // Anterpolation. Atoms are grouped by slabs of kSlab grid planes along x (input order
  // kept within a slab); an atom's stencil spans 2 support <= kSlab planes, so slabs of the
  // same parity never touch the same grid points: even slabs in parallel, then odd ones.
  // Each grid point then sums its atoms in an order fixed by the input alone, whatever the
  // thread count.
  auto start = Clock::now();
  std::vector<Grid> charge;
  charge.emplace_back(lower, count);
  {
    Grid& q0 = charge[0];
    const int width = 2 * support;
    constexpr std::int64_t kSlab = 8;
    static_assert(kSlab >= 6, "a slab must be as wide as the widest stencil (quintic: 6 planes)");
    const std::int64_t slabs = (count[0] + kSlab - 1) / kSlab;
    std::vector<std::int64_t> slab_start(static_cast<std::size_t>(slabs + 1), 0), order(static_cast<std::size_t>(atoms.size()));
    auto slab_of = [&](std::int64_t n) {
      const std::int64_t first = static_cast<std::int64_t>(std::floor(atoms.x[n] / h)) - support + 1;
      return (first - lower[0]) / kSlab;
    };
    for (std::int64_t n = 0; n < atoms.size(); ++n) ++slab_start[static_cast<std::size_t>(slab_of(n) + 1)];
    for (std::int64_t b = 0; b < slabs; ++b) slab_start[static_cast<std::size_t>(b + 1)] += slab_start[static_cast<std::size_t>(b)];
    {
      std::vector<std::int64_t> fill(slab_start.begin(), slab_start.end() - 1);
      for (std::int64_t n = 0; n < atoms.size(); ++n) order[static_cast<std::size_t>(fill[static_cast<std::size_t>(slab_of(n))]++)] = n;
    }
    for (int parity = 0; parity < 2; ++parity) {
#pragma omp parallel
      {
        std::vector<double> wx(width), wy(width), wz(width);
#pragma omp for schedule(dynamic, 1)
        for (std::int64_t b = parity; b < slabs; b += 2)
          for (std::int64_t o = slab_start[static_cast<std::size_t>(b)]; o < slab_start[static_cast<std::size_t>(b + 1)]; ++o) {
            const std::int64_t n = order[static_cast<std::size_t>(o)];
            const double u[3] = {atoms.x[n] / h, atoms.y[n] / h, atoms.z[n] / h};
            std::int64_t first[3];
            for (int ax = 0; ax < 3; ++ax) first[ax] = static_cast<std::int64_t>(std::floor(u[ax])) - support + 1;
            for (int t = 0; t < width; ++t) {
              wx[t] = basis(ip, u[0] - static_cast<double>(first[0] + t));
              wy[t] = basis(ip, u[1] - static_cast<double>(first[1] + t));
              wz[t] = atoms.coefficient[n] * basis(ip, u[2] - static_cast<double>(first[2] + t));
            }
            for (int tx = 0; tx < width; ++tx)
              for (int ty = 0; ty < width; ++ty) {
                const double wxy = wx[tx] * wy[ty];
                double* column = &q0.v[q0.offset(first[0] + tx, first[1] + ty, first[2])];
                for (int tz = 0; tz < width; ++tz) column[tz] += wxy * wz[tz];
              }
          }
      }
    }
  }
  st.anterpolation = seconds_since(start);

  // Restriction up the levels until the top grid is small enough for all pairs.
  start = Clock::now();
  int half = 0;
  const std::vector<double> transfer = transfer_weights(ip, half);
  while (charge.back().size() > kTopPoints && charge.size() < 40) {
    Grid g = restrict_axis(charge.back(), 0, transfer, half);
    g = restrict_axis(g, 1, transfer, half);
    charge.push_back(restrict_axis(g, 2, transfer, half));
  }
  const int levels = static_cast<int>(charge.size());
  st.restriction = seconds_since(start);

  // Lattice cutoff at every level but the top.
  start = Clock::now();
  std::vector<Grid> potential;
  for (const Grid& q : charge) potential.emplace_back(q.lo, q.n);
  if (levels > 1) {
    const Stencil stencil = lattice_cutoff_stencil(parameters);
    for (int l = 0; l + 1 < levels; ++l) convolve(charge[l], stencil, std::ldexp(1.0, -l), potential[l]);
  }
  st.lattice_cutoff = seconds_since(start);

  // Top level: g_{2^L a} between all pairs of its points.
  start = Clock::now();
  convolve(charge.back(), top_level_stencil(parameters, charge.back().n), std::ldexp(1.0, -(levels - 1)),
           potential.back());
  st.top_level = seconds_since(start);

  // Prolongation down the levels.
  start = Clock::now();
  for (int l = levels - 2; l >= 0; --l) {
    Grid& fine = potential[static_cast<std::size_t>(l)];
    Grid g = prolong_axis(potential[static_cast<std::size_t>(l + 1)], 2, fine.lo[2], fine.n[2], transfer, half);
    g = prolong_axis(g, 1, fine.lo[1], fine.n[1], transfer, half);
    g = prolong_axis(g, 0, fine.lo[0], fine.n[0], transfer, half);
    for (std::size_t p = 0; p < fine.v.size(); ++p) fine.v[p] += g.v[p];
  }
  st.prolongation = seconds_since(start);
  st.levels = levels;
  st.finest_points = charge[0].size();
  return std::move(potential[0]);
}

}  // namespace

void add_long_range(const PreparedAtoms& atoms, const Parameters& parameters, const RowRange& rows, int threads,
                    Stages* stages, LongRangeGrid* kept) {
  const Lattice& lattice = *rows.lattice;
  check_parameters(parameters);
  const double h = parameters.grid_spacing;
  const MsmInterpolation ip = parameters.interpolation;
  const int support = basis_support(ip);
  const ScopedThreadCount thread_count(threads);
  Stages local;
  Stages& st = stages ? *stages : local;
  Grid e0;
  if (kept && !kept->potential.empty()) {
    e0.lo = kept->lo, e0.n = kept->n, e0.v = std::move(kept->potential);
    st.levels = kept->levels, st.finest_points = kept->finest_points;
  } else {
    e0 = sum_long_range_grids(atoms, parameters, lattice, st);
  }

  // Interpolation onto the map's rows: per row, the grid columns collapsed in x and y
  // first, then each point's z stencil.
  const auto start = Clock::now();
  {
    const AxisWeights wx = axis_weights(lattice.dims[0], lattice.spacing, h, ip);
    const AxisWeights wy = axis_weights(lattice.dims[1], lattice.spacing, h, ip);
    const AxisWeights wz = axis_weights(lattice.dims[2], lattice.spacing, h, ip);
    const std::int64_t ny = lattice.dims[1], nz = lattice.dims[2], width = 2 * support;
#pragma omp parallel
    {
      std::vector<double> column(static_cast<std::size_t>(e0.n[2]));
#pragma omp for schedule(static)
      for (std::int64_t row = rows.row_begin; row < rows.row_end; ++row) {
        const std::int64_t i = row / ny, j = row % ny;
        std::fill(column.begin(), column.end(), 0.0);
        for (std::int64_t tx = 0; tx < width; ++tx)
          for (std::int64_t ty = 0; ty < width; ++ty) {
            const double w = wx.w[static_cast<std::size_t>(i * width + tx)] * wy.w[static_cast<std::size_t>(j * width + ty)];
            const double* source = &e0.v[e0.offset(wx.first[static_cast<std::size_t>(i)] + tx,
                                                   wy.first[static_cast<std::size_t>(j)] + ty, e0.lo[2])];
            for (std::int64_t k = 0; k < e0.n[2]; ++k) column[static_cast<std::size_t>(k)] += w * source[k];
          }
        double* out = rows.out + (row - rows.row_begin) * nz;
        for (std::int64_t k = 0; k < nz; ++k) {
          double v = 0;
          const std::int64_t first = wz.first[static_cast<std::size_t>(k)] - e0.lo[2];
          for (std::int64_t tz = 0; tz < width; ++tz)
            v += wz.w[static_cast<std::size_t>(k * width + tz)] * column[static_cast<std::size_t>(first + tz)];
          out[k] += rows.prefactor * v;
        }
      }
    }
  }
  remove_singular_long_range(atoms, parameters, rows);
  st.interpolation = seconds_since(start);
  if (kept) kept->lo = e0.lo, kept->n = e0.n, kept->potential = std::move(e0.v), kept->levels = st.levels,
            kept->finest_points = st.finest_points;
}

InterpolationPlan long_range_on_gpu(const PreparedAtoms& atoms, const Parameters& parameters, const RowRange& rows,
                                    Stages* stages, LongRangeGrid* kept) {
  const Lattice& lattice = *rows.lattice;
  check_parameters(parameters);
  if (parameters.gpu < 0) throw Error("internal: the GPU's MSM long range without a GPU");
  Stages local;
  Stages& st = stages ? *stages : local;
  Grid e0;
  if (kept && !kept->potential.empty()) {
    e0.lo = kept->lo, e0.n = kept->n, e0.v = kept->potential;
    st.levels = kept->levels, st.finest_points = kept->finest_points;
  } else {
    e0 = sum_long_range_grids_on_gpu(atoms, parameters, lattice, st);
    if (kept) kept->lo = e0.lo, kept->n = e0.n, kept->potential = e0.v, kept->levels = st.levels,
              kept->finest_points = st.finest_points;
  }
  InterpolationPlan plan;
  plan.grid.lo = e0.lo, plan.grid.n = e0.n;
  plan.potential = std::move(e0.v);
  plan.width = 2 * basis_support(parameters.interpolation);
  for (int ax = 0; ax < 3; ++ax) {
    AxisWeights a = axis_weights(lattice.dims[ax], lattice.spacing, parameters.grid_spacing, parameters.interpolation);
    plan.first[static_cast<std::size_t>(ax)] = std::move(a.first);
    plan.weights[static_cast<std::size_t>(ax)] = std::move(a.w);
  }
  plan.ny = lattice.dims[1], plan.nz = lattice.dims[2];
  plan.prefactor = rows.prefactor;
  return plan;
}

void remove_singular_long_range(const PreparedAtoms& atoms, const Parameters& parameters, const RowRange& rows) {
  const Lattice& lattice = *rows.lattice;
  const Smoothing split = parameters.splitting;
  const double a = parameters.cutoff;
  // A lattice point within singular distance of an atom leaves that atom out (as every
  // method does, nbkit::singular_distance): the short-range part did; take out its smooth
  // long-range part g_a(r) too.
  for (std::int64_t n = 0; n < atoms.size(); ++n) {
    const double p[3] = {atoms.x[n], atoms.y[n], atoms.z[n]};
    std::int64_t index[3];
    double r2 = 0;
    bool inside = true;
    for (int ax = 0; ax < 3; ++ax) {
      index[ax] = static_cast<std::int64_t>(std::llround(p[ax] / lattice.spacing));
      inside = inside && index[ax] >= 0 && index[ax] < lattice.dims[ax];
      const double d = p[ax] - static_cast<double>(index[ax]) * lattice.spacing;
      r2 += d * d;
    }
    if (!inside || r2 >= singular_distance * singular_distance) continue;
    const std::int64_t row = index[0] * lattice.dims[1] + index[1];
    if (row < rows.row_begin || row >= rows.row_end) continue;
    rows.out[(row - rows.row_begin) * lattice.dims[2] + index[2]] -=
        rows.prefactor * atoms.coefficient[n] * smoothed_kernel(split, a, std::sqrt(r2));
  }
}

}  // namespace nbkit::maps::msm
