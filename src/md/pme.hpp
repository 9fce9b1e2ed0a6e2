#pragma once
// Smooth particle-mesh Ewald's reciprocal sum on the CPU (Essmann et al., J. Chem. Phys. 103,
// 8577 (1995)), float64: charges spread on a K1 x K2 x K3 mesh with cardinal B-splines of order
// 4 to 6, a real-to-complex 3-D FFT (FFTW, planned once with FFTW_ESTIMATE so that every run
// takes the same arithmetic), the convolution with the Ewald kernel times the B-spline moduli
// (eq. 4.7-4.8), the inverse FFT, and forces gathered with the splines' derivatives; the energy
// is E = (k / 2 pi V) sum_{m != 0} exp(-pi^2 m^2 / alpha^2) / m^2 B(m) |F(Q)(m)|^2 and the virial
// (sum r . F) sum_m E_m (1 - 2 pi^2 m^2 / alpha^2). It replaces md/ewald.hpp's reciprocal sum
// (O(N K)) at O(N + K log K); the real-space, self, excluded and background terms are the same.
// Internal to the library.
#include <array>
#include <memory>
#include <vector>

#include "nbkit/core/box.hpp"
#include "nbkit/core/vec3.hpp"

namespace nbkit::md {

struct PmeReciprocal {
  double energy = 0, virial = 0;
  std::vector<Vec3> force;
};

class PmeCpu {
 public:
  // A mesh of `grid` points (each at least the order), splines of `order` (4..6), Ewald's alpha
  // (1/A), FFTs on `threads` threads. Throws nbkit::Error for anything out of range.
  PmeCpu(std::array<int, 3> grid, int order, double alpha, int threads);
  ~PmeCpu();
  PmeCpu(const PmeCpu&) = delete;
  PmeCpu& operator=(const PmeCpu&) = delete;

  // The reciprocal energy, virial and forces of charges q (e) at x (A, any image) in an
  // orthorhombic `box`, Coulomb's constant k.
  PmeReciprocal evaluate(const std::vector<Vec3>& x, const std::vector<double>& q, const PeriodicBox& box,
                         double coulomb_k);

 private:
  struct Plans;
  std::array<int, 3> grid_;
  int order_;
  double alpha_;
  int threads_ = 1;      // spreading's and gathering's (atoms of 4,096 and more)
  int fft_threads_ = 1;  // FFTW's: 1 for small meshes
  std::array<std::vector<double>, 3> moduli_;  // |b_a(m)|^2 per mesh index
  std::unique_ptr<Plans> plans_;
  // G(m) times the moduli, and the virial's factor 1 - 2 pi^2 m^2 / alpha^2, for each element of
  // the half spectrum: they depend on the box's edges and Coulomb's constant (in tabulated_for_)
  // alone, so they are made again only when those change (NPT's moves), not at each evaluation.
  std::vector<double> kernel_, virial_factor_;
  // Each atom's mesh indices, splines and their derivatives along each axis (3 n order each).
  std::vector<int> index_;
  std::vector<double> theta_, dtheta_;
  std::array<double, 4> tabulated_for_{-1, -1, -1, -1};
};

// 1 / |b(m)|^2 of Essmann et al. eq. 4.4 for m = 0..size-1 (the B-spline moduli that the
// convolution divides by), shared with the GPU's mesh (cuda/pme.cu).
std::vector<double> bspline_moduli(int size, int order);

// PME's terms that need no mesh: the self energy -k alpha / sqrt(pi) sum q^2 and a net charge's
// neutralising background -k pi Q^2 / (2 V alpha^2) (Essmann et al. eq. 2.5), with its virial
// (the background goes as 1/V: -dE/dlambda = 3 E).
struct PmeConstantTerms {
  double energy = 0, virial = 0;
};
PmeConstantTerms pme_constant_terms(const std::vector<double>& q, double coulomb_k, double alpha, double volume);

}  // namespace nbkit::md
