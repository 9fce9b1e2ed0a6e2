// The long-range dispersion correction (md/dispersion_correction.hpp has the formulas).
#include "md/dispersion_correction.hpp"

#include <array>
#include <numbers>
#include <vector>

#include "md/molecular_pair_constants.hpp"
#include "md/pair_law.hpp"

namespace nbkit::md {

namespace {

// The integrals of r^2 (U - U_used) and r^2 (r.F - r.F_used) over [rs, rc] of one pair type, by
// 5-point Gauss-Legendre on 64 panels: the integrand is a polynomial in r over r^10 with no
// kink inside, so the quadrature is exact to rounding.
template <PairSwitch Switch, PairCoulomb Coulomb>
std::array<double, 2> switched_gap(double c12, double c6, double rs, double rc, const MolecularPairConstants<double>& k) {
  static constexpr double node[5] = {-0.9061798459386640, -0.5384693101056831, 0.0, 0.5384693101056831,
                                     0.9061798459386640};
  static constexpr double weight[5] = {0.2369268850561891, 0.4786286704993665, 0.5688888888888889,
                                       0.4786286704993665, 0.2369268850561891};
  constexpr int panels = 64;
  const double h = (rc - rs) / panels;
  const ScalarPairMath<double> math;
  double energy = 0, virial = 0;
  for (int p = 0; p < panels; ++p)
    for (int g = 0; g < 5; ++g) {
      const double r = rs + h * (p + 0.5 + 0.5 * node[g]), r2 = r * r;
      double full, full_f, used, used_f, coulomb, coulomb_f;
      molecular_pair<PairSwitch::none, Coulomb>(math, r2, c12, c6, 0.0, k, full, full_f, coulomb, coulomb_f);
      molecular_pair<Switch, Coulomb>(math, r2, c12, c6, 0.0, k, used, used_f, coulomb, coulomb_f);
      energy += 0.5 * h * weight[g] * r2 * (full - used);
      virial += 0.5 * h * weight[g] * r2 * (full_f - used_f) * r2;
    }
  return {energy, virial};
}

}  // namespace

DispersionCorrection dispersion_correction(const Topology& t, const NonbondedSettings& s) {
  DispersionCorrection out;
  if (!s.dispersion_correction || !s.periodic() || t.size() == 0) return out;
  const int types = t.lj_types;
  std::vector<double> count(static_cast<std::size_t>(types), 0.0);
  for (auto type : t.lj_type) count[static_cast<std::size_t>(type)] += 1;
  PairSwitch switched;
  PairCoulomb coulomb;
  const MolecularPairConstants<double> k = molecular_pair_constants(s, switched, coulomb);
  const double rc = s.cutoff, rc3 = rc * rc * rc, rc9 = rc3 * rc3 * rc3;
  const double rs = s.switch_distance ? *s.switch_distance : rc;
  double energy = 0, virial = 0;
  for (int a = 0; a < types; ++a)
    for (int b = a; b < types; ++b) {
      const double na = count[static_cast<std::size_t>(a)], nb = count[static_cast<std::size_t>(b)];
      const double w = a == b ? na * (na + 1) / 2 : na * nb;
      if (w == 0) continue;
      const std::size_t pair = static_cast<std::size_t>(a) * types + b;
      const double c12 = t.c12[pair], c6 = t.c6[pair];
      double e = c12 / (9 * rc9) - c6 / (3 * rc3), v = 4 * c12 / (3 * rc9) - 2 * c6 / rc3;
      if (rs < rc)
        with_law(switched, coulomb, [&](auto sw, auto c) {
          const auto gap = switched_gap<decltype(sw)::value, decltype(c)::value>(c12, c6, rs, rc, k);
          e += gap[0], v += gap[1];
        });
      energy += w * e, virial += w * v;
    }
  const double n = static_cast<double>(t.size());
  const double factor = 4 * std::numbers::pi * n / (n + 1);
  out.energy_volume = factor * energy;
  out.virial_volume = factor * virial;
  return out;
}

}  // namespace nbkit::md
