#pragma once
// Exact sums of a trajectory's frame maps, point by point: the avg and stdev of
// `--trajectory ... --combine` (trajectory.cpp on the host, trajectory_cuda.cu on the GPU, and the
// ranks' merge under mpirun). Internal to the library.
//
// Why exact: a running mean (Welford) adds frame after frame, and floating-point addition is not
// associative, so frames divided among GPUs or MPI ranks and merged (Chan, Golub and LeVeque's
// pairwise update) would differ from one process in the last bits. Integer sums are associative:
// any split of the frames, any merge order, any device gives the same bits (issue 22: R ranks
// give one process's map).
//
// Each value x becomes the integer X = round(x * 2^80), ties to even: exact for |x| >= 2^-28
// (every bit of x is kept), within 2^-81 ~ 4e-25 otherwise, far below any map's own rounding.
// |x| < 2^24 (1.7e7: a potential in kT/e at 1e-5 A from a unit charge) is required and
// checked, and at most 2^22 frames, so that the sum of X (128 bits) and of X^2 (256 bits) cannot
// overflow. The mean is then (sum X)/n and the variance (n sum X^2 - (sum X)^2) / n^2, both
// exact in integers before the one final rounding to double: no cancellation, at any mean.
#include <cmath>
#include <cstdint>

#include "core/host_device.hpp"

namespace nbkit::maps {

inline constexpr double kExactScale = 0x1p80;     // X = round(x * 2^80)
inline constexpr double kExactLimit = 0x1p24;     // |x| must stay below
inline constexpr long long kExactMaxFrames = 1LL << 22;

// The sum of X: a 128-bit two's-complement integer (high word signed as a bit pattern).
struct ExactSum {
  std::uint64_t low = 0, high = 0;
};
// The sum of X^2: an unsigned 256-bit integer, least significant word first.
struct ExactSquares {
  std::uint64_t word[4] = {0, 0, 0, 0};
};

// The full 128-bit product of two 64-bit words.
NBKIT_HOST_DEVICE void multiply_words(std::uint64_t a, std::uint64_t b, std::uint64_t& high, std::uint64_t& low) {
#if defined(__CUDA_ARCH__)
  low = a * b;
  high = __umul64hi(a, b);
#else
  const unsigned __int128 p = static_cast<unsigned __int128>(a) * b;
  low = static_cast<std::uint64_t>(p);
  high = static_cast<std::uint64_t>(p >> 64);
#endif
}

// |X| as two words and its sign; false when x is not finite or |x| >= 2^24. Integer operations
// on the double's bits (no libm call: rint and floor cost 20 ns a point on the host).
NBKIT_HOST_DEVICE bool to_exact(double x, std::uint64_t& magnitude_high, std::uint64_t& magnitude_low,
                                bool& negative) {
  if (!(fabs(x) < kExactLimit)) return false;
  negative = x < 0;
  double m = fabs(x) * kExactScale;  // exact: a power of two; below 2^104
  // Below 2^52 a double may have a fraction: adding and taking away 2^52 rounds it to an integer
  // in the FPU's mode, to nearest with ties to even, on host and device alike (IEEE 754; no
  // -ffast-math anywhere that would fold the two). From 2^52 up every double is an integer.
  if (m < 0x1p52) m = (m + 0x1p52) - 0x1p52;
  if (m < 0x1p64) {
    magnitude_high = 0;
    magnitude_low = static_cast<std::uint64_t>(m);  // exact: an integer below 2^64
    return true;
  }
  // m = mantissa * 2^shift with the 53-bit mantissa and 12 <= shift <= 51 (2^64 <= m < 2^104).
#if defined(__CUDA_ARCH__)
  const auto bits = static_cast<std::uint64_t>(__double_as_longlong(m));
#else
  std::uint64_t bits;
  __builtin_memcpy(&bits, &m, sizeof bits);
#endif
  const int shift = static_cast<int>((bits >> 52) & 0x7ff) - 1075;
  const std::uint64_t mantissa = (bits & ((std::uint64_t{1} << 52) - 1)) | (std::uint64_t{1} << 52);
  magnitude_high = mantissa >> (64 - shift);
  magnitude_low = mantissa << shift;
  return true;
}

NBKIT_HOST_DEVICE void add_exact(ExactSum& sum, std::uint64_t magnitude_high, std::uint64_t magnitude_low,
                                 bool negative) {
  // Two's complement of the 128-bit magnitude when negative, without a branch: with s all ones,
  // (v ^ s) - s = -v, the borrow out of the low word taken from the high one.
  const std::uint64_t s = std::uint64_t{0} - static_cast<std::uint64_t>(negative);
  const std::uint64_t low = (magnitude_low ^ s) - s;
  const std::uint64_t high = (magnitude_high ^ s) - s - (negative && magnitude_low != 0 ? 1 : 0);
  const std::uint64_t before = sum.low;
  sum.low += low;
  sum.high += high + (sum.low < before ? 1 : 0);
}

NBKIT_HOST_DEVICE void add_exact(ExactSum& sum, const ExactSum& other) {
  const std::uint64_t before = sum.low;
  sum.low += other.low;
  sum.high += other.high + (sum.low < before ? 1 : 0);
}

NBKIT_HOST_DEVICE void add_exact(ExactSquares& sum, const std::uint64_t (&term)[4]) {
  std::uint64_t carry = 0;
  for (int w = 0; w < 4; ++w) {
    const std::uint64_t a = sum.word[w];
    const std::uint64_t s = a + term[w];
    const std::uint64_t t = s + carry;
    carry = (s < a ? 1 : 0) + (t < s ? 1 : 0);
    sum.word[w] = t;
  }
}

NBKIT_HOST_DEVICE void add_exact(ExactSquares& sum, const ExactSquares& other) { add_exact(sum, other.word); }

// X^2 for |X| = magnitude_high * 2^64 + magnitude_low (magnitude_high < 2^40), added to `sum`.
NBKIT_HOST_DEVICE void add_exact_square(ExactSquares& sum, std::uint64_t magnitude_high, std::uint64_t magnitude_low) {
  std::uint64_t a1, a0, b1, b0, c1, c0;
  multiply_words(magnitude_low, magnitude_low, a1, a0);    // low^2
  multiply_words(magnitude_high, magnitude_low, b1, b0);   // high*low, doubled below (< 2^105)
  multiply_words(magnitude_high, magnitude_high, c1, c0);  // high^2 (< 2^80)
  const std::uint64_t d1 = (b1 << 1) | (b0 >> 63), d0 = b0 << 1;
  std::uint64_t term[4];
  term[0] = a0;
  term[1] = a1 + d0;
  std::uint64_t carry = term[1] < a1 ? 1 : 0;
  term[2] = d1 + c0;
  const std::uint64_t carry2 = term[2] < d1 ? 1 : 0;
  term[2] += carry;
  carry = carry2 + (term[2] < carry ? 1 : 0);
  term[3] = c1 + carry;
  add_exact(sum, term);
}

// Adds x to the sum (and its square to `squares` when given); false when x cannot be held.
NBKIT_HOST_DEVICE bool accumulate_exact(double x, ExactSum& sum, ExactSquares* squares) {
  std::uint64_t high, low;
  bool negative;
  if (!to_exact(x, high, low, negative)) return false;
  add_exact(sum, high, low, negative);
  if (squares) add_exact_square(*squares, high, low);
  return true;
}

// The mean of n values from their sum: (sum X)/n / 2^80, rounded once per part (deterministic).
inline double exact_mean(const ExactSum& sum, long long n) {
  const __int128 total = static_cast<__int128>((static_cast<unsigned __int128>(sum.high) << 64) | sum.low);
  const __int128 quotient = total / n, remainder = total % n;
  return (static_cast<double>(quotient) + static_cast<double>(remainder) / static_cast<double>(n)) / kExactScale;
}

// The population standard deviation of n values: sqrt(n sum X^2 - (sum X)^2) / n / 2^80, the
// difference taken exactly in 256-bit integers (it cannot be negative: Cauchy-Schwarz).
inline double exact_stdev(const ExactSum& sum, const ExactSquares& squares, long long n) {
  const __int128 total = static_cast<__int128>((static_cast<unsigned __int128>(sum.high) << 64) | sum.low);
  const unsigned __int128 magnitude = static_cast<unsigned __int128>(total < 0 ? -total : total);
  const std::uint64_t mh = static_cast<std::uint64_t>(magnitude >> 64), ml = static_cast<std::uint64_t>(magnitude);
  ExactSquares square_of_sum;  // (sum X)^2 < 2^252
  add_exact_square(square_of_sum, mh, ml);
  // n * sum X^2 (< 2^252), word by word with the carries.
  std::uint64_t scaled[4];
  std::uint64_t carry = 0;
  for (int w = 0; w < 4; ++w) {
    std::uint64_t high, low;
    multiply_words(squares.word[w], static_cast<std::uint64_t>(n), high, low);
    low += carry;
    carry = high + (low < carry ? 1 : 0);
    scaled[w] = low;
  }
  // scaled - square_of_sum
  double difference = 0;
  std::uint64_t borrow = 0;
  std::uint64_t word[4];
  for (int w = 0; w < 4; ++w) {
    const std::uint64_t a = scaled[w], b = square_of_sum.word[w];
    const std::uint64_t d = a - b - borrow;
    borrow = (a < b || (a == b && borrow)) ? 1 : 0;
    word[w] = d;
  }
  if (borrow) return 0;  // unreachable for exact sums; kept as a guard against a negative root
  for (int w = 3; w >= 0; --w) difference = difference * 0x1p64 + static_cast<double>(word[w]);
  return std::sqrt(difference) / static_cast<double>(n) / kExactScale;
}

}  // namespace nbkit::maps
