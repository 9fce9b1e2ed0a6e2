// pair_law.hpp's math policy on Highway vectors, for the MD SIMD loops (forces_simd.cpp,
// molecular_simd.cpp). No include guard, on purpose (as pair_terms-inl.hpp): each file includes
// it inside every Highway target's namespace, where `hn` names that target's ops.

template <class D>
struct SimdPairMath {
  D d;
  HWY_INLINE hn::Vec<D> set(double v) const { return hn::Set(d, v); }
  HWY_INLINE hn::Vec<D> below(hn::Vec<D> r2, hn::Vec<D> limit, hn::Vec<D> value) const {
    return hn::IfThenElseZero(hn::Lt(r2, limit), value);
  }
  HWY_INLINE hn::Vec<D> sqrt(hn::Vec<D> v) const { return hn::Sqrt(v); }
  HWY_INLINE hn::Vec<D> round(hn::Vec<D> v) const { return hn::Round(v); }  // half to even
  // Ewald's real-space Coulomb (PME) in every lane at once: erfc(x) = exp(-x^2) R(x), with
  // R(x) = exp(x^2) erfc(x) (entire, smooth, slowly varying) by its Chebyshev series of degree
  // 30 on [0, 6] (scripts/erfc-chebyshev made the coefficients) summed by Clenshaw's recurrence,
  // and exp by Highway's Exp (1 ulp). Largest relative error 6.4e-14 for x <= 6, which covers
  // every pair within the cutoff at any tolerance down to 1e-16 (x = alpha r <= sqrt(-ln(2 tol)));
  // beyond 6 erfc is below 2e-17 and comes out as exp(-x^2) R(6). The scalar loops (the
  // reference) and the GPU keep the libraries' erfc; the CPU's answers agree with them to
  // ~1e-13 of the Coulomb energy, far inside the tests' 1e-10. The C library's erfc and exp lane
  // by lane cost 36% of a PME evaluation here (perf, session 9).
  HWY_INLINE hn::Vec<D> erfc(hn::Vec<D> x) const {
    const hn::Vec<D> in[1] = {x};
    hn::Vec<D> out[1];
    erfc_side_by_side(in, out);
    return out[0];
  }
  // erfc of K vectors with their recurrences side by side, step by step: K independent chains
  // of 30 multiply-adds, where one alone leaves the units waiting on its latency (molecular_simd.cpp
  // takes two vectors of a row at a time; session 35). Each vector's operations are the same,
  // in the same order, whatever K.
  template <int K>
  HWY_INLINE void erfc_side_by_side(const hn::Vec<D> (&x)[K], hn::Vec<D> (&out)[K]) const {
    hn::Vec<D> t[K], two_t[K], b1[K], b2[K];
    for (int v = 0; v < K; ++v) {
      t[v] = hn::Sub(hn::Mul(hn::Min(x[v], set(6.0)), set(1.0 / 3.0)), set(1.0));
      two_t[v] = hn::Add(t[v], t[v]);
      b1[v] = hn::Zero(d), b2[v] = hn::Zero(d);
    }
    constexpr int n = static_cast<int>(sizeof(kScaledErfcChebyshev) / sizeof(double));
    for (int k = n - 1; k >= 1; --k)
      for (int v = 0; v < K; ++v) {
        const hn::Vec<D> b0 = hn::MulAdd(two_t[v], b1[v], hn::Sub(set(kScaledErfcChebyshev[k]), b2[v]));
        b2[v] = b1[v], b1[v] = b0;
      }
    for (int v = 0; v < K; ++v) {
      const hn::Vec<D> scaled = hn::MulAdd(t[v], b1[v], hn::Sub(set(kScaledErfcChebyshev[0]), b2[v]));
      out[v] = hn::Mul(hn::Exp(d, hn::Neg(hn::Mul(x[v], x[v]))), scaled);
    }
  }
  HWY_INLINE hn::Vec<D> exp(hn::Vec<D> v) const { return hn::Exp(d, v); }
  HWY_INLINE hn::Vec<D> divide(hn::Vec<D> a, hn::Vec<D> b) const { return hn::Div(a, b); }
  HWY_INLINE void erfc_and_gaussian(hn::Vec<D> x, hn::Vec<D> minus_x2, hn::Vec<D>& erfc_x,
                                    hn::Vec<D>& gaussian) const {
    erfc_x = erfc(x), gaussian = exp(minus_x2);
  }
  static constexpr double kScaledErfcChebyshev[] = {
      0.32303826096379001, -0.34898204197743088, 0.17643420424764694,
      -0.084398619797365876, 0.03849447567960694, -0.016836838309773672,
      0.0070933295572567006, -0.0028887294306948197, 0.0011404851784410266,
      -0.00043757043772883888, 0.00016348236520885752, -5.9582928774002829e-05,
      2.1216015625165565e-05, -7.3905793381908114e-06, 2.5216246725707912e-06,
      -8.4358433828870112e-07, 2.7697108965021955e-07, -8.9324378738635383e-08,
      2.8318656551897373e-08, -8.8318186384289147e-09, 2.7113430103237728e-09,
      -8.1985128542702832e-10, 2.4431074681229329e-10, -7.1784635583441974e-11,
      2.0808111953915073e-11, -5.9536202133155911e-12, 1.6837199197596424e-12,
      -4.7149716926463452e-13, 1.3264132176128751e-13, -3.81211639316302e-14,
      1.2708975896758728e-14,
  };
};
