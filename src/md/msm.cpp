// Multilevel summation's long-range part for MD (md/msm.hpp has the formulas).
#include "md/msm.hpp"

#include <cmath>

#include "maps/msm/msm.hpp"
#include "nbkit/core/error.hpp"

namespace nbkit::md {

namespace {

maps::msm::Parameters parameters_of(double cutoff, double spacing, bool quintic, int gpu = -1) {
  maps::msm::Parameters p;
  p.gpu = gpu;
  p.cutoff = cutoff, p.grid_spacing = spacing, p.splitting = Smoothing::taylor2;
  p.interpolation = quintic ? MsmInterpolation::quintic : MsmInterpolation::cubic;
  return p;
}

std::int64_t wrap(std::int64_t i, std::int64_t n) {
  i %= n;
  return i < 0 ? i + n : i;
}

}  // namespace

MsmCpu::MsmCpu(const PeriodicBox& box, double cutoff, double spacing, bool quintic, int threads, int gpu)
    : cutoff_(cutoff), spacing_(spacing), quintic_(quintic), threads_(std::max(1, threads)), gpu_(gpu) {
  const maps::msm::PeriodicLevels levels =
      maps::msm::periodic_levels(box.edges(), parameters_of(cutoff, spacing, quintic));
  finest_ = levels.finest, halvings_ = levels.halvings;
}

MsmLongRange MsmCpu::evaluate(const std::vector<Vec3>& x, const std::vector<double>& q, const PeriodicBox& box,
                              double coulomb_k) const {
  const std::size_t n = x.size();
  if (q.size() != n) throw Error("MSM: as many charges as positions, please");
  const maps::msm::Parameters p = parameters_of(cutoff_, spacing_, quintic_, gpu_);
  const maps::msm::ScopedThreadCount thread_count(threads_);
  const maps::msm::PeriodicLevels levels{finest_, halvings_};
  const int support = maps::msm::basis_support(p.interpolation), width = 2 * support;
  const std::int64_t n0 = finest_[0], n1 = finest_[1], n2 = finest_[2];
  double scale[3];
  for (int a = 0; a < 3; ++a) scale[a] = static_cast<double>(finest_[static_cast<std::size_t>(a)]) / box.length(a);
  // Each atom's grid points and basis values (and derivatives in grid units) along each axis.
  std::vector<std::int64_t> index(3 * n * width);
  std::vector<double> phi(3 * n * width), dphi(3 * n * width);
#pragma omp parallel for schedule(static) if (n >= 4096)
  for (std::int64_t ii = 0; ii < static_cast<std::int64_t>(n); ++ii) {
    const std::size_t i = static_cast<std::size_t>(ii);
    for (int a = 0; a < 3; ++a) {
      const double u = (x[i][a] - box.lo[a]) * scale[a];
      const std::int64_t base = static_cast<std::int64_t>(std::floor(u)) - support + 1;
      for (int t = 0; t < width; ++t) {
        const std::size_t at = (3 * i + a) * width + t;
        const double offset = u - static_cast<double>(base + t);
        phi[at] = maps::msm::basis(p.interpolation, offset);
        dphi[at] = maps::msm::basis_derivative(p.interpolation, offset);
        index[at] = wrap(base + t, finest_[static_cast<std::size_t>(a)]);
      }
    }
  }
  // Anterpolation, atom by atom in order (one thread: the same sums every run).
  std::vector<double> q0(static_cast<std::size_t>(n0 * n1 * n2), 0.0);
  for (std::size_t i = 0; i < n; ++i)
    for (int tx = 0; tx < width; ++tx) {
      const std::size_t ax = (3 * i) * width + tx;
      for (int ty = 0; ty < width; ++ty) {
        const std::size_t ay = (3 * i + 1) * width + ty;
        const double w = q[i] * phi[ax] * phi[ay];
        double* row = q0.data() + (index[ax] * n1 + index[ay]) * n2;
        for (int tz = 0; tz < width; ++tz) {
          const std::size_t az = (3 * i + 2) * width + tz;
          row[index[az]] += w * phi[az];
        }
      }
    }
  maps::msm::Stages stages;
  const Vec3 edges = box.edges();
  const std::vector<double> e0 = maps::msm::periodic_grid_potential(q0, levels, edges, p, stages, &top_[0]);
  // The virial: the grid sum with the spacing scaled by 1 +- eps (the charges' grid unchanged).
  const double eps = 1e-5;
  auto grid_sum = [&](const std::vector<double>& e) {
    double sum = 0;
    for (std::size_t m = 0; m < q0.size(); ++m) sum += q0[m] * e[m];
    return 0.5 * coulomb_k * sum;
  };
  const double up = grid_sum(maps::msm::periodic_grid_potential(q0, levels, (1 + eps) * edges, p, stages, &top_[1]));
  const double down = grid_sum(maps::msm::periodic_grid_potential(q0, levels, (1 - eps) * edges, p, stages, &top_[2]));
  MsmLongRange out;
  out.virial = -(up - down) / (2 * eps);
  out.force.assign(n, Vec3{0, 0, 0});
  std::vector<double> potential(n);
#pragma omp parallel for schedule(static) if (n >= 4096)
  for (std::int64_t ii = 0; ii < static_cast<std::int64_t>(n); ++ii) {
    const std::size_t i = static_cast<std::size_t>(ii);
    double v = 0, gx = 0, gy = 0, gz = 0;
    for (int tx = 0; tx < width; ++tx) {
      const std::size_t ax = (3 * i) * width + tx;
      for (int ty = 0; ty < width; ++ty) {
        const std::size_t ay = (3 * i + 1) * width + ty;
        const double* row = e0.data() + (index[ax] * n1 + index[ay]) * n2;
        for (int tz = 0; tz < width; ++tz) {
          const std::size_t az = (3 * i + 2) * width + tz;
          const double e = row[index[az]];
          v += e * phi[ax] * phi[ay] * phi[az];
          gx += e * dphi[ax] * phi[ay] * phi[az];
          gy += e * phi[ax] * dphi[ay] * phi[az];
          gz += e * phi[ax] * phi[ay] * dphi[az];
        }
      }
    }
    potential[i] = v;
    out.force[i] = Vec3{-coulomb_k * q[i] * gx * scale[0], -coulomb_k * q[i] * gy * scale[1],
                        -coulomb_k * q[i] * gz * scale[2]};
  }
  // L (summed in atom order) and the self term; g_a(0) = gamma(0) / a = 15 / (8 a).
  double energy = 0, q2 = 0;
  for (std::size_t i = 0; i < n; ++i) energy += q[i] * potential[i], q2 += q[i] * q[i];
  out.energy = 0.5 * coulomb_k * energy - 0.5 * coulomb_k * q2 * maps::msm::smoothed_kernel(p.splitting, cutoff_, 0.0);
  return out;
}

}  // namespace nbkit::md
