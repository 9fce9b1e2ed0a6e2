// The exact sums behind a trajectory's avg and stdev (src/maps/exact_moments.hpp,
// frame_moments.hpp): the same bits for any division and order of the frames, accuracy against
// sums done by hand in exact arithmetic, the range they hold and what they refuse.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

#include "maps/exact_moments.hpp"
#include "maps/frame_moments.hpp"
#include "nbkit/core/error.hpp"

namespace nbkit::maps {

namespace {

// Values from 1e-9 to 1e6 in magnitude, both signs: what potential and density maps hold.
std::vector<double> spread_values(int count, unsigned seed) {
  std::mt19937_64 random(seed);
  std::uniform_real_distribution<double> exponent(-9, 6), unit(-1, 1);
  std::vector<double> values(static_cast<std::size_t>(count));
  for (double& v : values) v = unit(random) * std::pow(10.0, exponent(random));
  return values;
}

// (mean, stdev) of values summed into one accumulator in the given order.
std::pair<double, double> moments_in_order(const std::vector<double>& values) {
  ExactSum sum;
  ExactSquares squares;
  for (double v : values) EXPECT_TRUE(accumulate_exact(v, sum, &squares)) << v;
  const long long n = static_cast<long long>(values.size());
  return {exact_mean(sum, n), exact_stdev(sum, squares, n)};
}

// X^2 by schoolbook multiplication on 32-bit pieces: an independent check of the 64-bit one.
std::array<std::uint64_t, 4> square_by_pieces(std::uint64_t high, std::uint64_t low) {
  const std::uint32_t x[4] = {static_cast<std::uint32_t>(low), static_cast<std::uint32_t>(low >> 32),
                              static_cast<std::uint32_t>(high), static_cast<std::uint32_t>(high >> 32)};
  std::uint64_t product[8] = {};
  for (int i = 0; i < 4; ++i) {
    std::uint64_t carry = 0;
    for (int j = 0; j < 4; ++j) {
      const std::uint64_t t = static_cast<std::uint64_t>(x[i]) * x[j] + product[i + j] + carry;
      product[i + j] = t & 0xffffffffu;
      carry = t >> 32;
    }
    product[i + 4] += carry;
  }
  std::array<std::uint64_t, 4> words{};
  for (int w = 0; w < 4; ++w) words[static_cast<std::size_t>(w)] = product[2 * w] | (product[2 * w + 1] << 32);
  return words;
}

}  // namespace

// Every word of X^2 and its carries, against the schoolbook product: random magnitudes up to
// 2^104 and the ones whose middle words overflow (high^2's low word near 2^64).
TEST(ExactMoments, SquaresMatchSchoolbookMultiplication) {
  std::mt19937_64 random(5);
  std::vector<std::pair<std::uint64_t, std::uint64_t>> cases;
  for (int i = 0; i < 20000; ++i) cases.emplace_back(random() >> 24, random());
  for (std::uint64_t high : {0xffffffffffULL, 0xfffffffffeULL, 0x100000000ULL, 0xffffffffULL, 1ULL, 0ULL})
    for (std::uint64_t low : {~0ULL, 0ULL, 1ULL << 63, (1ULL << 63) - 1}) cases.emplace_back(high, low);
  // The carry out of the third word needs high^2 just below a multiple j 2^64 (within 2 high):
  // high = floor(sqrt(j 2^64)), with the low word all ones so that the doubled cross product
  // fills the gap.
  int third_word_carries = 0;
  for (unsigned j = 2; j < 65536; ++j) {
    const unsigned __int128 target = static_cast<unsigned __int128>(j) << 64;
    auto high = static_cast<std::uint64_t>(std::sqrt(static_cast<long double>(j)) * 4294967296.0L);
    while (static_cast<unsigned __int128>(high + 1) * (high + 1) <= target) ++high;
    while (static_cast<unsigned __int128>(high) * high > target) --high;
    std::uint64_t c1, c0, b1, b0;
    multiply_words(high, high, c1, c0);
    multiply_words(high, ~0ULL, b1, b0);
    const std::uint64_t d1 = (b1 << 1) | (b0 >> 63);
    third_word_carries += d1 + c0 < d1;
    cases.emplace_back(high, ~0ULL);
  }
  EXPECT_GT(third_word_carries, 1000);
  int checked = 0;
  for (const auto& [high, low] : cases) {
    ExactSquares square;
    add_exact_square(square, high, low);
    const auto expected = square_by_pieces(high, low);
    for (int w = 0; w < 4; ++w)
      ASSERT_EQ(square.word[w], expected[static_cast<std::size_t>(w)]) << std::hex << high << " " << low << " word " << w;
    ++checked;
  }
  EXPECT_GT(checked, 30000);
}

// The property the ranks rely on: shuffled, and split into parts summed apart then merged, the
// frames give the same bits (a running mean would differ in the last places).
TEST(ExactMoments, AnyOrderAndAnySplitGiveTheSameBits) {
  std::vector<double> values = spread_values(1000, 7);
  const auto reference = moments_in_order(values);
  std::mt19937_64 random(11);
  for (int trial = 0; trial < 5; ++trial) {
    std::shuffle(values.begin(), values.end(), random);
    const auto shuffled = moments_in_order(values);
    EXPECT_EQ(shuffled.first, reference.first);
    EXPECT_EQ(shuffled.second, reference.second);
    for (int parts : {2, 3, 7}) {
      ExactSum total;
      ExactSquares total_squares;
      for (int part = parts - 1; part >= 0; --part) {  // merged in reverse, as MPI may
        ExactSum sum;
        ExactSquares squares;
        for (std::size_t i = static_cast<std::size_t>(part); i < values.size(); i += static_cast<std::size_t>(parts))
          accumulate_exact(values[i], sum, &squares);
        add_exact(total, sum);
        add_exact(total_squares, squares);
      }
      EXPECT_EQ(exact_mean(total, 1000), reference.first) << parts << " parts";
      EXPECT_EQ(exact_stdev(total, total_squares, 1000), reference.second) << parts << " parts";
    }
  }
}

// Against exact arithmetic done here: values c + d_i with d_i multiples of 2^-30 (exact in
// double), so the true mean and variance are known to the last bit: mean = c + mean(d),
// variance = var(d). A mean 1e4 with a spread of 1e-7 is where n sum x^2 - (sum x)^2 in
// doubles loses every digit; the integers keep them.
TEST(ExactMoments, MeanAndSpreadAgainstExactArithmetic) {
  for (const double c : {0.0, -3.5, 1.0e4, -1.0e6}) {
    std::mt19937_64 random(3);
    std::uniform_int_distribution<long long> step(-1000, 1000);
    std::vector<double> values;
    long long total_steps = 0;
    for (int i = 0; i < 257; ++i) {
      const long long k = step(random);
      total_steps += k;
      values.push_back(c + std::ldexp(static_cast<double>(k), -30));
    }
    const double n = static_cast<double>(values.size());
    // The true moments in long double from the integer steps (exact to far past double's bits).
    long double mean_steps = static_cast<long double>(total_steps) / n, m2 = 0;
    for (double v : values) {
      const long double d = std::ldexp(static_cast<long double>(v - c), 30) - mean_steps;
      m2 += d * d;
    }
    const double true_mean = static_cast<double>(c + std::ldexp(mean_steps, -30));
    const double true_stdev = static_cast<double>(std::ldexp(std::sqrt(m2 / n), -30));
    const auto [mean, stdev] = moments_in_order(values);
    // One rounding of the quotient and one of its remainder part: within an ulp of the mean.
    EXPECT_NEAR(mean, true_mean, 2 * std::numeric_limits<double>::epsilon() * std::max(1.0, std::fabs(c))) << c;
    // The difference is exact in integers; its conversion, the root and two divisions round: a
    // few parts in 1e16.
    EXPECT_NEAR(stdev, true_stdev, 1e-15 * true_stdev) << c;
  }
}

// Identical frames: the value back bit for bit (|x| >= 2^-28: every bit of x is kept) and a
// zero spread, up to the largest value held; below 2^-28 within 2^-81.
TEST(ExactMoments, IdenticalFramesGiveTheValueAndZeroSpread) {
  for (const double x : {0.0, 1.0, -1.0, 0.1, -123.456789, std::ldexp(1.0, -28), -std::ldexp(1.0, -28) * 3,
                         std::nextafter(kExactLimit, 0.0), -std::nextafter(kExactLimit, 0.0), 5.5e5}) {
    std::vector<double> values(1000, x);
    const auto [mean, stdev] = moments_in_order(values);
    EXPECT_EQ(mean, x) << x;
    EXPECT_EQ(stdev, 0.0) << x;
  }
  const double tiny = 1.234e-12;
  const auto [mean, stdev] = moments_in_order(std::vector<double>(10, tiny));
  EXPECT_NEAR(mean, tiny, std::ldexp(1.0, -81));
  EXPECT_EQ(stdev, 0.0);
}

// The carries between words: values at the limit of both signs, many times, summed to the
// exact total and spread of two points.
TEST(ExactMoments, LargeValuesCarryAcrossWords) {
  const double big = std::nextafter(kExactLimit, 0.0);
  std::vector<double> values;
  for (int i = 0; i < 4096; ++i) values.push_back(i % 2 ? big : -big);
  const auto [mean, stdev] = moments_in_order(values);
  EXPECT_EQ(mean, 0.0);
  EXPECT_EQ(stdev, big);  // half at +big, half at -big: the spread is big exactly
  values.assign(4096, big);
  values.push_back(-big);
  const auto m = moments_in_order(values);
  EXPECT_NEAR(m.first, big * 4095.0 / 4097.0, 1e-9);
}

// What cannot be summed exactly is refused, never wrapped: not finite, or beyond 2^24.
TEST(ExactMoments, RefusesValuesOutsideTheRange) {
  ExactSum sum;
  ExactSquares squares;
  for (const double x : {kExactLimit, -kExactLimit, 1e30, std::numeric_limits<double>::infinity(),
                         std::numeric_limits<double>::quiet_NaN()})
    EXPECT_FALSE(accumulate_exact(x, sum, &squares)) << x;
  EXPECT_EQ(sum.low, 0u);
  EXPECT_EQ(sum.high, 0u);

  Lattice lattice;
  lattice.dims = {2, 3, 4};
  lattice.spacing = 1.0;
  FrameMoments moments(Combine::stdev, lattice, 0, 24);
  std::vector<double> frame(24, 1.0);
  moments.add(frame.data());
  frame[13] = 3e7;  // point (1, 0, 1)
  try {
    moments.add(frame.data());
    FAIL() << "a value beyond 2^24 was summed";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("lattice point (1, 0, 1)"), std::string::npos) << e.what();
  }
  FrameMoments extremes(Combine::max, lattice, 0, 24);
  frame[13] = std::numeric_limits<double>::quiet_NaN();
  EXPECT_THROW(extremes.add(frame.data()), Error);
}

// FrameMoments on a lattice: min and max exact, avg and stdev from the sums; no frames is an error.
TEST(ExactMoments, FrameMomentsFinishEachCombination) {
  Lattice lattice;
  lattice.dims = {1, 1, 3};
  lattice.spacing = 1.0;
  const std::vector<std::vector<double>> frames = {{1, -2, 0.5}, {3, -4, 0.5}, {2, -6, 0.5}};
  const std::vector<std::pair<Combine, std::vector<double>>> expected = {
      {Combine::min, {1, -6, 0.5}},
      {Combine::max, {3, -2, 0.5}},
      {Combine::avg, {2, -4, 0.5}},
      {Combine::stdev, {std::sqrt(2.0 / 3.0), std::sqrt(8.0 / 3.0), 0}}};
  for (const auto& [combine, want] : expected) {
    FrameMoments moments(combine, lattice, 0, 3);
    std::vector<double> out(3);
    EXPECT_THROW(moments.finish(0, 3, out.data()), Error);
    for (const auto& f : frames) moments.add(f.data());
    moments.finish(0, 3, out.data());
    for (int p = 0; p < 3; ++p) EXPECT_NEAR(out[static_cast<std::size_t>(p)], want[static_cast<std::size_t>(p)], 1e-15) << to_string(combine);
  }
}

}  // namespace nbkit::maps
