// The distance-dependent term of each law in laws.hpp, generic over the arithmetic type V
// (float, double, a SIMD vector) and a math policy M (set: broadcast a constant, exp).
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
  return coefficient * math.exp(math.set(-law.kappa) * distance) * rinv;
}
