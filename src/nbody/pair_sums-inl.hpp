// The SIMD pair sums of softened gravity shared by the all-pairs loop (forces_cpu.cpp) and the
// tree walk's direct part (tree_cpu.cpp): included into each Highway target's namespace after
// gravity_terms-inl.hpp, with `hn` naming that target's namespace. No include guard, on purpose.
//
// 1/sqrt(r2): float32 from the approximate rsqrt and one Newton-Raphson step, float64 exact.
template <class D>
HWY_INLINE hn::Vec<D> inverse_sqrt(D d, hn::Vec<D> r2) {
  using T = hn::TFromD<D>;
  if constexpr (std::is_same_v<T, float>) {
    const auto y = hn::ApproximateReciprocalSqrt(r2);
    return hn::Mul(hn::Mul(y, hn::Set(d, 0.5f)), hn::NegMulAdd(r2, hn::Mul(y, y), hn::Set(d, 3.0f)));
  } else {
    return hn::Div(hn::Set(d, T(1)), hn::Sqrt(r2));
  }
}

constexpr std::size_t kChunk = 1024;  // bodies j per float32 partial sum
constexpr std::size_t kI = 4;         // bodies i per pass

// A mass at separation (dx, dy, dz) added to one body's sums (a body j, or a tree cell's
// monopole); returns the softened reciprocal distance for any further terms.
template <class D, class V>
HWY_INLINE V add_pull(D d, V mass, V dx, V dy, V dz, V eps2, V& ax, V& ay, V& az, V& phi) {
  const V r2 = hn::MulAdd(dx, dx, hn::MulAdd(dy, dy, hn::MulAdd(dz, dz, eps2)));
  const V inverse_distance = inverse_sqrt(d, r2);
  const V s = HWY_NAMESPACE::gravity_acceleration_factor(mass, inverse_distance);
  ax = hn::MulAdd(s, dx, ax);
  ay = hn::MulAdd(s, dy, ay);
  az = hn::MulAdd(s, dz, az);
  phi = hn::Add(phi, HWY_NAMESPACE::gravity_potential_term(mass, inverse_distance));
  return inverse_distance;
}

// Sums bodies j in [first, last) for the kI bodies i0.. into the accumulators; kSelf masks
// lane j == i (a chunk that holds one of the i).
template <bool kSelf, class D, class V>
HWY_INLINE void sum_chunk(D d, const hn::TFromD<D>* x, const hn::TFromD<D>* y,
                          const hn::TFromD<D>* z, const hn::TFromD<D>* m, std::size_t first, std::size_t last,
                          std::size_t i0, const V* xi, const V* yi, const V* zi, V eps2, V* ax, V* ay, V* az, V* phi) {
  const hn::RebindToSigned<D> di;
  using Index = hn::TFromD<decltype(di)>;
  for (std::size_t j = first; j < last; j += hn::Lanes(d)) {
    const V xj = hn::Load(d, x + j), yj = hn::Load(d, y + j), zj = hn::Load(d, z + j), mj = hn::Load(d, m + j);
    for (std::size_t t = 0; t < kI; ++t) {
      V mass = mj;
      if constexpr (kSelf) {
        const auto self = hn::Eq(hn::Iota(di, static_cast<Index>(j)), hn::Set(di, static_cast<Index>(i0 + t)));
        mass = hn::IfThenZeroElse(hn::RebindMask(d, self), mj);
      }
      add_pull(d, mass, hn::Sub(xj, xi[t]), hn::Sub(yj, yi[t]), hn::Sub(zj, zi[t]), eps2, ax[t], ay[t], az[t], phi[t]);
    }
  }
}

