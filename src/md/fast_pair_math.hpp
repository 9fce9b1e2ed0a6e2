#pragma once
// A float32 math policy for the GPU's mixed-precision pair sums under PME, fewer instructions a
// pair than ScalarPairMath<float>'s correctly rounded ones (the default there; NBKIT_PAIR_FAST_LAW=0
// turns it off, cuda/molecular_pair_list.cu: the pairs 0.146 against 0.180 ms a step at 30,677
// atoms on an H200, 0.125 with the list's cell offsets too; session 34). The pair kernel
// issues ~200 instructions an entry (session 33's reading of its PTX) and the library's erfcf,
// expf, two IEEE divisions and an IEEE square root are about half of them. Here:
//   - erfc(x) = exp(-x^2) R(x), the exponential shared with the force's Gaussian term and
//     R(x) = exp(x^2) erfc(x) a polynomial of degree 16 in t = x / 2 - 1 on [0, 4] by Horner's
//     rule (scripts/erfc-chebyshev --float made it: R within 1.6e-7 of itself in float32;
//     CUDA's erfcf promises 4 ulp, ~5e-7). The callers keep x = alpha r <= 4, tolerances down to
//     ~1e-7 (alpha rc = sqrt(-ln(2 tol)): 2.6 at OpenMM's default 5e-4);
//   - square roots as v * rsqrt(v), divisions as a * rcp(b) (CUDA's rsqrtf and __fdividef, 2 ulp
//     each), as OpenMM's CUDA platform builds its kernels with fast math.
// The exponential stays expf (1 ulp with its own range reduction): its argument reaches -16.
// On the host (tests/md/fast_pair_math_test.cpp) the same polynomial, with 1 / sqrt and plain
// division standing in for the GPU's approximations.
#include <cmath>

#include "md/pair_law.hpp"

namespace nbkit::md {

// R(x) = exp(x^2) erfc(x) for 0 <= x <= 4, float32 (Horner with fused multiply-adds, the same
// rounding on host and GPU).
NBKIT_HOST_DEVICE float scaled_erfc_float(float x) {
  // scripts/erfc-chebyshev --float: powers of t, lowest first.
  constexpr float kScaledErfcPowers[] = {
      0.255395681f,    -0.213592887f,   0.167210996f,    -0.123686627f,    0.0870525166f, -0.0585921407f,
      0.0379083902f,   -0.0237819813f,  0.0143262809f,   -0.00792033784f,  0.00454535382f, -0.00338194612f,
      0.00176286593f,  1.25025717e-05f, 3.37945021e-05f, -0.000556849933f, 0.000263852475f,
  };
  constexpr int n = static_cast<int>(sizeof(kScaledErfcPowers) / sizeof(float));
  const float t = x * 0.5f - 1.0f;  // x * 0.5 is exact: one rounding, as the script's
  float acc = kScaledErfcPowers[n - 1];
  for (int k = n - 2; k >= 0; --k) {
#ifdef __CUDA_ARCH__
    acc = fmaf(acc, t, kScaledErfcPowers[k]);
#else
    acc = std::fma(acc, t, kScaledErfcPowers[k]);
#endif
  }
  return acc;
}

// The largest x = alpha r that scaled_erfc_float serves.
constexpr float kScaledErfcFloatTop = 4.0f;

struct FastFloatPairMath : ScalarPairMath<float> {
  NBKIT_HOST_DEVICE float sqrt(float v) const {  // v > 0: a pair's r2
#ifdef __CUDA_ARCH__
    return v * rsqrtf(v);
#else
    return v * (1.0f / std::sqrt(v));
#endif
  }
  NBKIT_HOST_DEVICE float divide(float a, float b) const {
#ifdef __CUDA_ARCH__
    return __fdividef(a, b);
#else
    return a / b;
#endif
  }
  NBKIT_HOST_DEVICE void erfc_and_gaussian(float x, float minus_x2, float& erfc_x, float& gaussian) const {
    gaussian = exp(minus_x2);
    erfc_x = gaussian * scaled_erfc_float(x);
  }
};

}  // namespace nbkit::md
