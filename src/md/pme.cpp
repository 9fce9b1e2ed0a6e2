// Smooth particle-mesh Ewald's reciprocal sum on the CPU (md/pme.hpp).
#include "md/pme.hpp"

#include <fftw3.h>
#include <fmt/format.h>
#include <omp.h>

#include <cmath>
#include <complex>
#include <mutex>
#include <numbers>

#include "md/bspline.hpp"
#include "nbkit/core/error.hpp"

namespace nbkit::md {

namespace {

// FFTW's planner is not thread-safe: plans are made and destroyed under one lock.
std::mutex& fftw_planner() {
  static std::mutex m;
  return m;
}

}  // namespace

// |b(m)|^2 = 1 / |sum_{k=0}^{n-2} M_n(k + 1) exp(2 pi i m k / K)|^2 (Essmann et al. eq. 4.4),
// with the usual fix where the sum vanishes (odd orders at m = K/2): the neighbours' average.
std::vector<double> bspline_moduli(int size, int order) {
  double value[8], derivative[8];
  bspline_weights(order, 0.0, value, derivative);  // value[j] = M_n(j)
  std::vector<double> moduli(static_cast<std::size_t>(size));
  for (int m = 0; m < size; ++m) {
    std::complex<double> sum{0, 0};
    for (int k = 0; k <= order - 2; ++k) {
      const double angle = 2 * std::numbers::pi * m * k / size;
      sum += value[k + 1] * std::complex<double>(std::cos(angle), std::sin(angle));
    }
    moduli[static_cast<std::size_t>(m)] = std::norm(sum);
  }
  for (int m = 0; m < size; ++m)
    if (moduli[static_cast<std::size_t>(m)] < 1e-7)
      moduli[static_cast<std::size_t>(m)] =
          0.5 * (moduli[static_cast<std::size_t>((m - 1 + size) % size)] + moduli[static_cast<std::size_t>((m + 1) % size)]);
  for (double& b : moduli) b = 1 / b;
  return moduli;
}

struct PmeCpu::Plans {
  double* mesh = nullptr;            // K1 K2 K3 reals (the charges, then the potential)
  fftw_complex* spectrum = nullptr;  // K1 K2 (K3/2 + 1)
  fftw_plan forward = nullptr, backward = nullptr;
  ~Plans() {
    std::lock_guard<std::mutex> lock(fftw_planner());
    if (forward) fftw_destroy_plan(forward);
    if (backward) fftw_destroy_plan(backward);
    fftw_free(mesh);
    fftw_free(spectrum);
  }
};

PmeCpu::PmeCpu(std::array<int, 3> grid, int order, double alpha, int threads)
    : grid_(grid), order_(order), alpha_(alpha), threads_(std::max(1, threads)), plans_(std::make_unique<Plans>()) {
  if (order < 4 || order > 6) throw Error(fmt::format("PME: B-spline order {} (expected 4, 5 or 6)", order));
  if (!(alpha > 0) || !std::isfinite(alpha)) throw Error("PME: alpha must be positive");
  for (int a = 0; a < 3; ++a)
    if (grid[a] < order || grid[a] > 4096)
      throw Error(fmt::format("PME: a mesh of {} points along an edge (expected {}..4096)", grid[a], order));
  for (int a = 0; a < 3; ++a) moduli_[a] = bspline_moduli(grid[a], order);
  const std::size_t reals = static_cast<std::size_t>(grid[0]) * grid[1] * grid[2];
  const std::size_t complexes = static_cast<std::size_t>(grid[0]) * grid[1] * (grid[2] / 2 + 1);
  std::lock_guard<std::mutex> lock(fftw_planner());
  static const bool threads_ready = fftw_init_threads() != 0;
  if (!threads_ready) throw Error("PME: FFTW's threads could not start");
  // Threads only where the transform is large enough to pay for them: below ~2^18 points an
  // FFT takes tens of microseconds, less than waking a team (and under load, with other
  // processes on the cores, a team's barriers cost a scheduler's time slice each: measured on
  // the GPU machine, a 27^3 mesh on 16 threads ran 100 times slower beside 15 other tests).
  const double points = static_cast<double>(grid[0]) * grid[1] * grid[2];
  fft_threads_ = points >= 262144 ? std::max(1, threads) : 1;
  fftw_plan_with_nthreads(fft_threads_);
  plans_->mesh = fftw_alloc_real(reals);
  plans_->spectrum = fftw_alloc_complex(complexes);
  if (!plans_->mesh || !plans_->spectrum) throw Error("PME: out of memory for the mesh");
  plans_->forward = fftw_plan_dft_r2c_3d(grid[0], grid[1], grid[2], plans_->mesh, plans_->spectrum, FFTW_ESTIMATE);
  plans_->backward = fftw_plan_dft_c2r_3d(grid[0], grid[1], grid[2], plans_->spectrum, plans_->mesh, FFTW_ESTIMATE);
  if (!plans_->forward || !plans_->backward) throw Error("PME: FFTW made no plan for this mesh");
}

PmeCpu::~PmeCpu() = default;

PmeConstantTerms pme_constant_terms(const std::vector<double>& q, double coulomb_k, double alpha, double volume) {
  double q_sum = 0, q2_sum = 0;
  for (double c : q) q_sum += c, q2_sum += c * c;
  const double pi = std::numbers::pi;
  const double background = -coulomb_k * pi * q_sum * q_sum / (2 * volume * alpha * alpha);
  return {-coulomb_k * alpha / std::sqrt(pi) * q2_sum + background, 3 * background};
}

PmeReciprocal PmeCpu::evaluate(const std::vector<Vec3>& x, const std::vector<double>& q, const PeriodicBox& box,
                               double coulomb_k) {
  const std::size_t n = x.size();
  if (q.size() != n) throw Error(fmt::format("PME: {} charges for {} positions", q.size(), n));
  const int order = order_;
  const int k1 = grid_[0], k2 = grid_[1], k3 = grid_[2];
  double length[3], scale[3];
  for (int a = 0; a < 3; ++a) {
    length[a] = box.length(a);
    if (!(length[a] > 0) || !std::isfinite(length[a])) throw Error("PME: the box edges must be positive lengths");
    scale[a] = grid_[a] / length[a];
  }
  // Each atom's mesh points along each axis (floor(u) - j, wrapped, j = 0..order-1) and its
  // splines and derivatives there.
  const int threads = threads_;
  // Kept between evaluations: every element is written below, so a step need not allocate and
  // zero their 20 bytes an atom and mesh point (9 MB at 30,671 atoms of order 5; its share of a
  // step was not measured apart from the neighbour list's buffers, session 36).
  const std::size_t points = 3 * n * static_cast<std::size_t>(order);
  if (index_.size() != points) index_.resize(points), theta_.resize(points), dtheta_.resize(points);
  int* index = index_.data();
  double* theta = theta_.data();
  double* dtheta = dtheta_.data();
#pragma omp parallel for num_threads(threads) schedule(static) if (n >= 4096)
  for (std::int64_t ii = 0; ii < static_cast<std::int64_t>(n); ++ii) {
    const std::size_t i = static_cast<std::size_t>(ii);
    for (int a = 0; a < 3; ++a) {
      double u = (x[i][a] - box.lo[a]) * scale[a];
      u -= grid_[a] * std::floor(u / grid_[a]);
      const double cell = std::floor(u);
      double value[8], derivative[8];
      bspline_weights(order, u - cell, value, derivative);
      for (int j = 0; j < order; ++j) {  // mesh point floor(u) - j holds M(w + j)
        const std::size_t at = (3 * i + a) * order + j;
        theta[at] = value[j], dtheta[at] = derivative[j];
        int k = static_cast<int>(cell) - j;
        while (k < 0) k += grid_[a];
        while (k >= grid_[a]) k -= grid_[a];
        index[at] = k;
      }
    }
  }
  // Spread: each thread owns a range of the mesh's x planes and adds, atom by atom in index
  // order, the contributions that fall on its planes. Every mesh point gets its terms in atom
  // order whatever the thread count: the same bits on 1 thread or 64.
  double* mesh = plans_->mesh;
  const std::size_t plane = static_cast<std::size_t>(k2) * k3;
#pragma omp parallel num_threads(threads) if (n >= 4096)
  {
    const int team = omp_get_num_threads(), me = omp_get_thread_num();
    const int first = static_cast<int>(static_cast<std::int64_t>(k1) * me / team);
    const int last = static_cast<int>(static_cast<std::int64_t>(k1) * (me + 1) / team);
    std::fill(mesh + first * plane, mesh + last * plane, 0.0);
    for (std::size_t i = 0; i < n; ++i)
      for (int j0 = 0; j0 < order; ++j0) {
        const int a = index[(3 * i) * order + j0];
        if (a < first || a >= last) continue;
        const double w0 = q[i] * theta[(3 * i) * order + j0];
        for (int j1 = 0; j1 < order; ++j1) {
          const double w1 = w0 * theta[(3 * i + 1) * order + j1];
          double* row = mesh + a * plane + static_cast<std::size_t>(index[(3 * i + 1) * order + j1]) * k3;
          for (int j2 = 0; j2 < order; ++j2)
            row[index[(3 * i + 2) * order + j2]] += w1 * theta[(3 * i + 2) * order + j2];
        }
      }
  }
  fftw_execute(plans_->forward);
  // The kernel G(m) = (k / pi V) exp(-pi^2 m^2 / alpha^2) / m^2 B(m), m = (m1/L1, m2/L2, m3/L3)
  // with signed indices; E = 1/2 sum over the full spectrum of G |F|^2, the half spectrum's
  // interior planes (0 < m3 < K3/2) standing for two.
  const double pi = std::numbers::pi, volume = box.volume();
  const double prefactor = coulomb_k / (pi * volume), exponent = pi * pi / (alpha_ * alpha_);
  const int half = k3 / 2 + 1;
  const std::array<double, 4> tabulated{length[0], length[1], length[2], coulomb_k};
  if (tabulated != tabulated_for_) {
    // An exp and a division an element (127,008 of them on a 63^3 mesh) made once a box instead
    // of every step (perf: evaluate's share of a 2-thread run ~10.6% -> ~9.9%); the same values,
    // so the same sums.
    kernel_.assign(static_cast<std::size_t>(k1) * k2 * half, 0.0);
    virial_factor_.assign(kernel_.size(), 0.0);
    for (int a = 0; a < k1; ++a) {
      const double ma = (a <= k1 / 2 ? a : a - k1) / length[0];
      for (int b = 0; b < k2; ++b) {
        const double mb = (b <= k2 / 2 ? b : b - k2) / length[1];
        for (int c = 0; c < half; ++c) {
          if (a == 0 && b == 0 && c == 0) continue;
          const std::size_t e = (static_cast<std::size_t>(a) * k2 + b) * half + c;
          const double mc = c / length[2];
          const double m2 = ma * ma + mb * mb + mc * mc;
          kernel_[e] = prefactor * std::exp(-exponent * m2) / m2 * moduli_[0][a] * moduli_[1][b] * moduli_[2][c];
          virial_factor_[e] = 1 - 2 * exponent * m2;
        }
      }
    }
    tabulated_for_ = tabulated;
  }
  PmeReciprocal out;
  auto* spectrum = reinterpret_cast<std::complex<double>*>(plans_->spectrum);
  for (int a = 0; a < k1; ++a)
    for (int b = 0; b < k2; ++b)
      for (int c = 0; c < half; ++c) {
        const std::size_t e = (static_cast<std::size_t>(a) * k2 + b) * half + c;
        std::complex<double>& f = spectrum[e];
        if (e == 0) {
          f = 0;
          continue;
        }
        const double g = kernel_[e];
        const double copies = (c == 0 || (k3 % 2 == 0 && c == k3 / 2)) ? 1.0 : 2.0;
        const double energy = 0.5 * copies * g * std::norm(f);
        out.energy += energy;
        out.virial += energy * virial_factor_[e];
        f *= g;
      }
  fftw_execute(plans_->backward);  // mesh = the potential, phi(k) = sum_m G F e^{+2 pi i m k / K}
  // F_i = -q_i sum_k phi(k) grad theta: the B-spline derivative along each axis times K_a / L_a
  // (u grows with x; the weight M(u - k) has d/du = M'(w + j)).
  out.force.assign(n, Vec3{0, 0, 0});
#pragma omp parallel for num_threads(threads) schedule(static) if (n >= 4096)
  for (std::int64_t ii = 0; ii < static_cast<std::int64_t>(n); ++ii) {
    const std::size_t i = static_cast<std::size_t>(ii);
    double gx = 0, gy = 0, gz = 0;
    for (int j0 = 0; j0 < order; ++j0) {
      const std::size_t at0 = (3 * i) * order + j0;
      const double t0 = theta[at0], d0 = dtheta[at0];
      for (int j1 = 0; j1 < order; ++j1) {
        const std::size_t at1 = (3 * i + 1) * order + j1;
        const double t1 = theta[at1], d1 = dtheta[at1];
        const double* row = mesh + index[at0] * plane + static_cast<std::size_t>(index[at1]) * k3;
        for (int j2 = 0; j2 < order; ++j2) {
          const std::size_t at2 = (3 * i + 2) * order + j2;
          const double phi = row[index[at2]];
          const double t2 = theta[at2], d2 = dtheta[at2];
          gx += phi * d0 * t1 * t2, gy += phi * t0 * d1 * t2, gz += phi * t0 * t1 * d2;
        }
      }
    }
    out.force[i] = Vec3{-q[i] * gx * scale[0], -q[i] * gy * scale[1], -q[i] * gz * scale[2]};
  }
  return out;
}

}  // namespace nbkit::md
