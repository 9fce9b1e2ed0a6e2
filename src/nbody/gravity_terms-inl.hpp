// The distance-dependent terms of softened gravity (gravity.hpp), generic over the
// arithmetic type V (double, float, a SIMD vector). No include guard, on purpose: each
// Highway target includes it into its own namespace.

template <class V>
NBKIT_HOST_DEVICE V gravity_acceleration_factor(V mass, V inverse_distance) {
  return mass * (inverse_distance * inverse_distance * inverse_distance);
}

template <class V>
NBKIT_HOST_DEVICE V gravity_potential_term(V mass, V inverse_distance) {
  return mass * inverse_distance;
}
