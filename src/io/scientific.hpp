#pragma once
// "%.7e" of a finite double, byte for byte as printf and std::to_chars(scientific, 7) write it,
// at about a tenth of their cost: OpenDX maps are hundreds of millions of such numbers, and
// formatting them, not the disk, bounded the writer (issue 21: 60 MB/s).
//
// The eight significant digits come from one correctly rounded product (or quotient) by an
// exact power of ten, scaled = |v| 10^(7-e) in [1e7, 1e8); its error is below 1e-8, so
// rounding it to an integer gives the exact decimal rounding unless the fraction lies within
// 1e-6 of one half. Those rare near-ties, exponents outside [-15, 22] (where 10^(7-e) is not an
// exact double) and zero go to std::to_chars.
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>

namespace nbkit::io {

inline char* format_scientific7_exact(char* out, double value) {
  return std::to_chars(out, out + 32, value, std::chars_format::scientific, 7).ptr;
}

inline char* format_scientific7(char* out, double value) {
  static constexpr double kPowers[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                                         1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
  const double a = std::fabs(value);
  if (!(a >= 1e-15 && a < 1e22)) return format_scientific7_exact(out, value);
  std::uint64_t bits;
  std::memcpy(&bits, &a, sizeof bits);
  const int exponent2 = static_cast<int>(bits >> 52) - 1023;  // a in [2^exponent2, 2^(exponent2+1))
  // floor(log10 a) or one less (log10(2) rounded down; a negative product truncated towards
  // zero is one too high at worst): corrected below.
  int e = (exponent2 * 1233) >> 12;
  double scaled = 0;
  for (int attempt = 0; attempt < 3; ++attempt) {
    if (e < -15 || e > 22) return format_scientific7_exact(out, value);
    scaled = e <= 7 ? a * kPowers[7 - e] : a / kPowers[e - 7];
    if (scaled >= 1e8) ++e;
    else if (scaled < 1e7) --e;
    else break;
  }
  if (!(scaled >= 1e7 && scaled < 1e8)) return format_scientific7_exact(out, value);
  const std::uint32_t whole = static_cast<std::uint32_t>(scaled);  // scaled > 0: truncation is floor
  const double fraction = scaled - static_cast<double>(whole);
  if (fraction > 0.5 - 1e-6 && fraction < 0.5 + 1e-6) return format_scientific7_exact(out, value);
  std::uint32_t digits = whole + (fraction > 0.5 ? 1u : 0u);
  if (digits == 100000000u) digits = 10000000u, ++e;
  static constexpr char kPairs[] =
      "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
      "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
      "8081828384858687888990919293949596979899";
  if (value < 0) *out++ = '-';
  // digits = d0 d1..d7: d0 '.', then three pairs and the last digit.
  const std::uint32_t head = digits / 10000000u, tail = digits % 10000000u;  // tail: 7 digits
  const std::uint32_t t_hi = tail / 1000u, t_lo = tail % 1000u;             // 4 and 3 digits
  *out++ = static_cast<char>('0' + head);
  *out++ = '.';
  std::memcpy(out, kPairs + 2 * (t_hi / 100u), 2);
  std::memcpy(out + 2, kPairs + 2 * (t_hi % 100u), 2);
  *(out + 4) = static_cast<char>('0' + t_lo / 100u);
  std::memcpy(out + 5, kPairs + 2 * (t_lo % 100u), 2);
  out += 7;
  *out++ = 'e';
  *out++ = e < 0 ? '-' : '+';
  std::memcpy(out, kPairs + 2 * (e < 0 ? -e : e), 2);
  return out + 2;
}

}  // namespace nbkit::io
