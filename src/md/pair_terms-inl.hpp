// The functions of pair_law.hpp (its comment has the formulas), generic over the arithmetic
// type V and a math policy M. No include guard, on purpose (as maps/law_terms-inl.hpp):
// pair_law.hpp includes it into nbkit::md for scalar and CUDA code, and forces_simd.cpp into
// each Highway target's namespace (the SIMD instantiations must be compiled inside the
// target's region).

// The periodic image of a separation d nearest to zero, for a box edge `length`.
template <class M, class V>
NBKIT_HOST_DEVICE V minimum_image(const M& math, V d, V length, V inverse_length) {
  return d - length * math.round(d * inverse_length);
}

template <class M, class V>
NBKIT_HOST_DEVICE void lennard_jones(const M& math, V inverse_r2, V c12, V c6, V& energy, V& force_over_r) {
  const V inverse_r6 = inverse_r2 * inverse_r2 * inverse_r2;
  energy = inverse_r6 * (c12 * inverse_r6 - c6);
  force_over_r = inverse_r6 * (math.set(12.0) * c12 * inverse_r6 - math.set(6.0) * c6) * inverse_r2;
}

template <class M, class V>
NBKIT_HOST_DEVICE void shifted_force_coulomb(const M& math, V r2, V qq, V inverse_cutoff, V& energy, V& force_over_r) {
  const V inverse_r = math.set(1.0) / math.sqrt(r2);
  const V inverse_cutoff2 = inverse_cutoff * inverse_cutoff;
  energy = qq * (inverse_r - math.set(2.0) * inverse_cutoff + r2 * inverse_r * inverse_cutoff2);
  force_over_r = qq * inverse_r * (inverse_r * inverse_r - inverse_cutoff2);
}

// One pair (or a vector of pairs) at r2 within the caller's reach (r2 > 0): Lennard-Jones
// below its cutoff minus the shift, plus shifted-force Coulomb below its cutoff when
// `Coulomb`. `LennardJonesWithinReach`: the caller's reach is the Lennard-Jones cutoff (every
// pair it passes is inside), so the test is left out of the innermost loop of the GPU kernels.
template <bool Coulomb, bool LennardJonesWithinReach, class M, class V>
NBKIT_HOST_DEVICE void nonbonded_pair(const M& math, V r2, const LennardJonesCoefficients<V>& lj, V qq,
                                      const PairCutoffs<V>& cutoffs, V& energy, V& force_over_r) {
  lennard_jones(math, math.set(1.0) / r2, lj.c12, lj.c6, energy, force_over_r);
  energy = energy - lj.offset;
  if constexpr (!LennardJonesWithinReach) {
    energy = math.below(r2, cutoffs.lennard_jones2, energy);
    force_over_r = math.below(r2, cutoffs.lennard_jones2, force_over_r);
  }
  if constexpr (Coulomb) {
    V coulomb_energy, coulomb_force;
    shifted_force_coulomb(math, r2, qq, cutoffs.inverse_coulomb, coulomb_energy, coulomb_force);
    energy = energy + math.below(r2, cutoffs.coulomb2, coulomb_energy);
    force_over_r = force_over_r + math.below(r2, cutoffs.coulomb2, coulomb_force);
  }
}

// Coulomb with a reaction field (md/molecular_forces.hpp): qq (1/r + k_rf r^2 - c_rf), and
// force / r = qq (1/r^3 - 2 k_rf); k_rf = c_rf = 0 is plain Coulomb.
template <class M, class V>
NBKIT_HOST_DEVICE void reaction_field_coulomb(const M& math, V r2, V qq, V k_rf, V c_rf, V& energy, V& force_over_r) {
  const V inverse_r = math.set(1.0) / math.sqrt(r2);
  energy = qq * (inverse_r + k_rf * r2 - c_rf);
  force_over_r = qq * (inverse_r * inverse_r * inverse_r - math.set(2.0) * k_rf);
}

// Ewald's real-space Coulomb (PME): qq erfc(alpha r) / r, force / r = qq (erfc(alpha r) / r +
// 2 alpha / sqrt(pi) exp(-alpha^2 r^2)) / r^2; gauss = 2 alpha / sqrt(pi).
template <class M, class V>
NBKIT_HOST_DEVICE void ewald_real_coulomb(const M& math, V r2, V qq, V alpha, V gauss, V& energy, V& force_over_r) {
  const V r = math.sqrt(r2);
  V erfc_x, gaussian;
  math.erfc_and_gaussian(alpha * r, math.set(0.0) - alpha * alpha * r2, erfc_x, gaussian);
  const V screened = math.divide(erfc_x, r);
  energy = qq * screened;
  force_over_r = math.divide(qq * (screened + gauss * gaussian), r2);
}

// Multilevel summation's short-range Coulomb (Skeel, Tezcan and Hardy, J. Comput. Chem. 23, 673
// (2002); the maps' splitting, law_terms-inl.hpp): 1/r = (1/r - g_a(r)) + g_a(r), the smooth
// g_a(r) = gamma(r/a)/a below the cutoff a (C2 Taylor: gamma(rho) = 15/8 - 5/4 rho^2 + 3/8 rho^4,
// with gamma(1) = 1 and two derivatives matching 1/rho there) and 1/r beyond, summed on the
// grids; the pairs within a keep qq (1/r - g_a(r)), force / r = qq (1/r^3 + (gamma'(rho)/rho)/a^3),
// gamma'(rho)/rho = -5/2 + 3/2 rho^2: energy, force and its derivative zero at a.
template <class M, class V>
NBKIT_HOST_DEVICE void msm_short_coulomb(const M& math, V r2, V qq, V inverse_cutoff, V& energy, V& force_over_r) {
  const V inverse_r = math.set(1.0) / math.sqrt(r2);
  const V rho2 = r2 * inverse_cutoff * inverse_cutoff;
  const V gamma = math.set(15.0 / 8) + rho2 * (math.set(-5.0 / 4) + math.set(3.0 / 8) * rho2);
  const V slope = math.set(-5.0 / 2) + math.set(3.0 / 2) * rho2;  // gamma'(rho) / rho
  energy = qq * (inverse_r - gamma * inverse_cutoff);
  force_over_r = qq * (inverse_r * inverse_r * inverse_r + slope * inverse_cutoff * inverse_cutoff * inverse_cutoff);
}

// MSM's correction for an excluded pair (and a 1-4 pair, which the grids also hold): the grids
// sum g_a(r) between every two charges, so -qq g_a(r) is taken back out: below a,
// -qq gamma(rho)/a with force / r = qq (gamma'(rho)/rho) / a^3; from a on, -qq / r with
// force / r = -qq / r^3.
template <class M, class V>
NBKIT_HOST_DEVICE void msm_excluded_pair(const M& math, V r2, V qq, V inverse_cutoff, V& energy, V& force_over_r) {
  const V rho2 = r2 * inverse_cutoff * inverse_cutoff;
  if (rho2 < math.set(1.0)) {
    energy = -qq * (math.set(15.0 / 8) + rho2 * (math.set(-5.0 / 4) + math.set(3.0 / 8) * rho2)) * inverse_cutoff;
    force_over_r = qq * (math.set(-5.0 / 2) + math.set(3.0 / 2) * rho2) * inverse_cutoff * inverse_cutoff * inverse_cutoff;
  } else {
    const V inverse_r = math.set(1.0) / math.sqrt(r2);
    energy = -qq * inverse_r;
    force_over_r = -qq * inverse_r * inverse_r * inverse_r;
  }
}

// PME's correction for an excluded pair (1-2, 1-3, 1-4; Essmann et al. eq. 2.3): the mesh sums
// every pair, so the pair's k q_i q_j erf(alpha r) / r is taken back out at its nearest image:
// energy -qq erf(alpha r) / r, force / r = -qq (erf(alpha r) / r - gauss exp(-alpha^2 r^2)) / r^2
// (gauss = 2 alpha / sqrt(pi)). The CPU (molecular_forces.cpp) and the GPU's pair kernel call it.
template <class M, class V>
NBKIT_HOST_DEVICE void ewald_excluded_pair(const M& math, V r2, V qq, V alpha, V gauss, V& energy, V& force_over_r) {
  const V r = math.sqrt(r2);
  const V erf_r = math.erf(alpha * r) / r;
  energy = -qq * erf_r;
  force_over_r = -qq * (erf_r - gauss * math.exp(math.set(0.0) - alpha * alpha * r2)) / r2;
}

// OpenMM's switching of a pair energy E(r) between rs and the cutoff: E S(x), S = 1 - 10 x^3 +
// 15 x^4 - 6 x^5, x = (r - rs) / (rc - rs) (S, S' and S'' vanish at both ends), so the force /
// r becomes S F/r - E S'(r) / r. Below rs, x is 0 and nothing changes.
template <class M, class V>
NBKIT_HOST_DEVICE void switch_pair(const M& math, V r2, const MolecularPairConstants<V>& k, V& energy, V& force_over_r) {
  const V r = math.sqrt(r2);
  const V x = math.below(k.switch_distance2, r2, (r - k.switch_distance) * k.inverse_switch_width);
  const V x2 = x * x;
  const V s = math.set(1.0) + x2 * x * (math.set(-10.0) + x * (math.set(15.0) - math.set(6.0) * x));
  const V ds_dr = x2 * (math.set(-30.0) + x * (math.set(60.0) - math.set(30.0) * x)) * k.inverse_switch_width;
  force_over_r = s * force_over_r - energy * ds_dr / r;
  energy = s * energy;
}

// CHARMM's switch (Brooks et al., J. Comput. Chem. 4, 187 (1983); LAMMPS's lj/charmm/coul/charmm)
// between rs and rc, on r^2: S = (rc^2 - r^2)^2 (rc^2 + 2 r^2 - 3 rs^2) / (rc^2 - rs^2)^3, so
// E becomes E S and force / r becomes S F/r - 2 E dS/d(r^2) = S F/r + 12 E (rc^2 - r^2)
// (r^2 - rs^2) / (rc^2 - rs^2)^3. Below rs nothing changes.
template <class M, class V>
NBKIT_HOST_DEVICE void charmm_switch(const M& math, V r2, const MolecularPairConstants<V>& k, V& energy,
                                     V& force_over_r) {
  const V outside = k.cutoff2 - r2, inside = r2 - k.switch_distance2;
  const V s = outside * outside * (k.cutoff2 + math.set(2.0) * r2 - math.set(3.0) * k.switch_distance2) *
              k.charmm_inverse_denominator;
  const V ds = math.set(12.0) * outside * inside * k.charmm_inverse_denominator;
  const V switched_force = s * force_over_r + energy * ds;
  const V switched_energy = s * energy;
  force_over_r = force_over_r + math.below(k.switch_distance2, r2, switched_force - force_over_r);
  energy = energy + math.below(k.switch_distance2, r2, switched_energy - energy);
}

// One biomolecular pair within the cutoff (or any pair without one), Lennard-Jones (c12/r^12 -
// c6/r^6) and Coulomb (qq: k q_i q_j / eps) kept apart, as the energy report names them,
// switched as `Switch` says.
template <PairSwitch Switch, PairCoulomb Coulomb = PairCoulomb::reaction_field, class M, class V>
NBKIT_HOST_DEVICE void molecular_pair(const M& math, V r2, V c12, V c6, V qq, const MolecularPairConstants<V>& k,
                                      V& lj_energy, V& lj_force_over_r, V& coulomb_energy, V& coulomb_force_over_r) {
  lennard_jones(math, math.divide(math.set(1.0), r2), c12, c6, lj_energy, lj_force_over_r);
  if constexpr (Coulomb == PairCoulomb::ewald)
    (ewald_real_coulomb)(math, r2, qq, k.ewald_alpha, k.ewald_gauss, coulomb_energy, coulomb_force_over_r);
  else if constexpr (Coulomb == PairCoulomb::shifted_force)
    (shifted_force_coulomb)(math, r2, qq, k.inverse_cutoff, coulomb_energy, coulomb_force_over_r);
  else if constexpr (Coulomb == PairCoulomb::msm)
    (msm_short_coulomb)(math, r2, qq, k.inverse_cutoff, coulomb_energy, coulomb_force_over_r);
  else
    (reaction_field_coulomb)(math, r2, qq, k.k_rf, k.c_rf, coulomb_energy, coulomb_force_over_r);
  // (Parenthesised names: no argument-dependent lookup through MolecularPairConstants, whose
  // namespace holds the scalar copy of these functions when a SIMD file includes this one.)
  if constexpr (Switch == PairSwitch::openmm) (switch_pair)(math, r2, k, lj_energy, lj_force_over_r);
  if constexpr (Switch == PairSwitch::charmm || Switch == PairSwitch::charmm_lennard_jones)
    (charmm_switch)(math, r2, k, lj_energy, lj_force_over_r);
  if constexpr (Switch == PairSwitch::charmm) (charmm_switch)(math, r2, k, coulomb_energy, coulomb_force_over_r);
}
