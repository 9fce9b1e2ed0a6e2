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
  // erfc and exp lane by lane through the C library (Ewald's real-space Coulomb: the float64
  // answer, not an approximation; PME's pairs pay for it).
  HWY_INLINE hn::Vec<D> erfc(hn::Vec<D> v) const { return lanewise(v, [](double x) { return std::erfc(x); }); }
  HWY_INLINE hn::Vec<D> exp(hn::Vec<D> v) const { return lanewise(v, [](double x) { return std::exp(x); }); }
  template <class F>
  HWY_INLINE hn::Vec<D> lanewise(hn::Vec<D> v, F f) const {
    HWY_ALIGN double lanes[HWY_MAX_BYTES / sizeof(double)];
    hn::Store(v, d, lanes);
    for (std::size_t l = 0; l < hn::Lanes(d); ++l) lanes[l] = f(lanes[l]);
    return hn::Load(d, lanes);
  }
};
