// The distance-dependent term of each law in laws.hpp, generic over the arithmetic type V
// (float, double, a SIMD vector) and a math policy M (set: broadcast a constant, exp_scaled(k, v): exp(k v) <= 1,
// below: keep a value where r2 < limit, else 0, unit_ramp: max(v, 0) for v <= 1, which a GPU
// computes as a clamp to [0, 1] folded into the multiply-add that makes v).
// No include guard, on purpose: laws.hpp includes it into nbkit::maps for scalar and CUDA
// code, and each Highway target includes it into its own namespace (Highway's per-target
// compilation needs the SIMD instantiations compiled inside the target's region).

template <class M, class V>
NBKIT_HOST_DEVICE V law_term(const CoulombLaw&, const M&, V coefficient, V /*r2*/, V rinv) {
  return coefficient * rinv;
}

template <class M, class V>
NBKIT_HOST_DEVICE V law_term(const DebyeHuckelLaw& law, const M& math, V coefficient, V r2,
                             V rinv) {
  const V distance = r2 * rinv;
  return coefficient * math.exp_scaled(-law.kappa, distance) * rinv;
}

// gamma_N of CutoffLaw as a polynomial in s = rho^2, Horner's form.
template <Smoothing S, class M, class V>
NBKIT_HOST_DEVICE V taylor_gamma(const M& math, V s) {
  if constexpr (S == Smoothing::taylor1) {
    return math.set(1.5) - math.set(0.5) * s;
  } else if constexpr (S == Smoothing::taylor2) {
    return math.set(15.0 / 8) + s * (math.set(-5.0 / 4) + s * math.set(3.0 / 8));
  } else {
    return math.set(35.0 / 16) + s * (math.set(-35.0 / 16) + s * (math.set(21.0 / 16) + s * math.set(-5.0 / 16)));
  }
}

// The truncated laws select the distance's factor (0 beyond the cutoff, whatever r2 is there:
// lists may be padded with infinite distances) and multiply the coefficient last, so that the
// sum takes the term in one multiply-add.
template <class M, class V, Smoothing S>
NBKIT_HOST_DEVICE V law_term(const CutoffLaw<S>& law, const M& math, V coefficient, V r2, V rinv) {
  const double cutoff2 = law.cutoff * law.cutoff;
  if constexpr (S == Smoothing::none) {
    return coefficient * math.below(r2, cutoff2, rinv);
  } else if constexpr (S == Smoothing::cutcp) {
    // 1 - r^2/c^2 clamped at zero is zero at and beyond the cutoff: no test needed, one
    // operation fewer in the inner loop of every backend (none on the GPU: FFMA.SAT).
    const V t = math.unit_ramp(math.set(1.0) - r2 * math.set(1.0 / cutoff2));
    return coefficient * rinv * (t * t);
  } else {
    // gamma in s = r^2/c^2, whose coefficients are literal constants and every value O(1):
    // folding 1/c^2 and 1/c into them (a polynomial in r^2 with coefficients gamma_i/c^(2i+1))
    // saves a multiply but takes c^-7 to float32's underflow at large cutoffs.
    const V s = r2 * math.set(1.0 / cutoff2);
    return coefficient * math.below(r2, cutoff2, rinv - taylor_gamma<S>(math, s) * math.set(1.0 / law.cutoff));
  }
}
