// The float32 fast math policy of the GPU's mixed-precision PME pairs (md/fast_pair_math.hpp),
// on the host: its erfc series against the C library's float64 erfc, and the whole PME pair
// (Lennard-Jones and real-space Coulomb) through it against float64, beside the same pair through
// the correctly rounded float32 policy (the GPU's with NBKIT_PAIR_FAST_LAW=0; the fast one is its
// default since session 34). The GPU's rsqrt and division add up to 2 ulp each there (CUDA's
// documented bounds), which the host's stand-ins do not show: the GPU test
// MolecularGpu.MixedPrecision* holds the kernel to float64 with the fast law on and off.
#include "md/fast_pair_math.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace nbkit::test {
namespace {

// R(x) = exp(x^2) erfc(x) in float32 against float64: the series' own error (1.6e-7 by the
// script that made it) and float32 rounding of x, with a margin: 3e-7.
TEST(FastPairMath, ScaledErfcSeriesWithinFloat32Rounding) {
  double worst = 0;
  for (int k = 0; k <= 40000; ++k) {
    const float x = static_cast<float>(k * 1e-4);  // [0, 4]
    const double exact = std::exp(static_cast<double>(x) * x) * std::erfc(static_cast<double>(x));
    worst = std::max(worst, std::abs(md::scaled_erfc_float(x) / exact - 1));
  }
  EXPECT_LT(worst, 3e-7);
  std::printf("  scaled erfc series: %.2e relative (worst on [0, 4])\n", worst);
}

// One PME pair (OpenMM's alpha for a 9 A cutoff at tolerances 5e-4 and 1e-6, a water oxygen's
// Lennard-Jones pair, unit charges) at separations from 0.9 to 9 A, float32 through each policy
// against float64 at the same float32 separation. Both float32 policies are bounded by their
// inputs: near the cutoff erfc(x) moves by 2 x^2 times a relative change of x, so float32's
// rounding of alpha r alone costs ~1.6e-6 of the Coulomb energy at x = 3.6 (tolerance 1e-6).
// Measured here: fast 7.2e-7 and 1.9e-6, correctly rounded 1.3e-6 and 2.2e-6 (worst over the
// energies and force / r, each against the size of its terms). Held: the fast policy within 1.25
// times the correctly rounded one's worst plus 3e-7 (the series' 1.6e-7 with room), and below
// 5e-6, half the 1e-5 the mixed kernels' tests allow a whole evaluation.
TEST(FastPairMath, PmePairWithinFloat32RoundingOfFloat64) {
  const md::ScalarPairMath<double> exact;
  const md::ScalarPairMath<float> rounded;
  const md::FastFloatPairMath fast;
  const double cutoff = 9, c12 = 581935.56, c6 = 594.825;  // TIP3P's oxygen pair, kcal/mol A^12, A^6
  for (const double tolerance : {5e-4, 1e-6}) {
    const double alpha = std::sqrt(-std::log(2 * tolerance)) / cutoff;
    ASSERT_LE(alpha * cutoff, md::kScaledErfcFloatTop);
    md::MolecularPairConstants<double> kd{};
    kd.ewald_alpha = alpha, kd.ewald_gauss = 2 * alpha / std::sqrt(3.14159265358979323846);
    md::MolecularPairConstants<float> kf{};
    kf.ewald_alpha = static_cast<float>(kd.ewald_alpha), kf.ewald_gauss = static_cast<float>(kd.ewald_gauss);
    double worst_fast = 0, worst_rounded = 0;
    for (int k = 0; k <= 8100; ++k) {
      const float r = static_cast<float>(0.9 + k * 1e-3);
      const float r2 = r * r;
      const double r2d = r2;  // the same separation in both: only the law's arithmetic differs
      double lj, lj_f, coulomb, coulomb_f;
      md::molecular_pair<md::PairSwitch::none, md::PairCoulomb::ewald>(exact, r2d, c12, c6, 332.0637, kd, lj, lj_f,
                                                                       coulomb, coulomb_f);
      // Each quantity against the size of its terms (force / r changes sign where Lennard-Jones
      // and Coulomb balance, so a plain relative error there would measure nothing useful).
      const double inverse_r6 = 1 / (r2d * r2d * r2d);
      const double lj_size = c12 * inverse_r6 * inverse_r6 + c6 * inverse_r6;
      const double force_size =
          12 * c12 * inverse_r6 * inverse_r6 / r2d + 6 * c6 * inverse_r6 / r2d + std::abs(coulomb_f);
      auto error = [&](const auto& math) {
        float lj_e, lj_ff, c_e, c_ff;
        md::molecular_pair<md::PairSwitch::none, md::PairCoulomb::ewald>(
            math, r2, static_cast<float>(c12), static_cast<float>(c6), 332.0637f, kf, lj_e, lj_ff, c_e, c_ff);
        return std::max({std::abs(c_e / coulomb - 1), std::abs(lj_e - lj) / lj_size,
                         std::abs((static_cast<double>(lj_ff) + c_ff) - (lj_f + coulomb_f)) / force_size});
      };
      worst_fast = std::max(worst_fast, error(fast));
      worst_rounded = std::max(worst_rounded, error(rounded));
    }
    std::printf("  PME pair, tolerance %.0e: fast %.2e, correctly rounded %.2e relative (worst)\n", tolerance,
                worst_fast, worst_rounded);
    EXPECT_LT(worst_fast, 5e-6) << tolerance;
    EXPECT_LT(worst_fast, 1.25 * worst_rounded + 3e-7) << tolerance;
  }
}

}  // namespace
}  // namespace nbkit::test
