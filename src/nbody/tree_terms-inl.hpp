// A tree cell's pull beyond its monopole: the quadrupole term of the softened potential's
// Taylor expansion about the cell's centre of mass, generic over the arithmetic type V (double,
// float, a Highway vector), written once for the CPU walk and the CUDA walk. No include guard,
// on purpose: each Highway target includes it into its own namespace (gravity_terms-inl.hpp's
// habit).
//
// With g(s) = (s^2 + eps^2)^(-1/2) and the cell's bodies at offsets b_k from its centre of mass
// (sum m_k b_k = 0), a body at r from the centre of mass feels
//     phi(r) = -sum m_k g(|r - b_k|) ~= -[M g(r) + 1/2 S_ab d_a d_b g(r)],   S_ab = sum m_k b_ka b_kb,
// since the dipole term vanishes. With R^2 = r^2 + eps^2: d_a d_b g = 3 r_a r_b R^-5 - delta_ab R^-3;
// the trace term stays because the softened g is not harmonic (it is exact Taylor, so the
// expansion converges to the softened all-pairs sum, not the Newtonian one). In the separation
// d = com - body (the all-pairs loop's r_j - r_i), q = d.S.d, T = tr S, u = 1/R:
//     phi_Q  = -(3/2 q u^5 - 1/2 T u^3)
//     a_Q    = -3 u^5 (S d) + (15/2 q u^7 - 3/2 T u^5) d
// (a = -grad phi; Hernquist 1987, ApJS 64:715, eq. 2-3 without softening). These are added to
// the monopole's gravity_acceleration_factor(M, u) d and -gravity_potential_term(M, u).

// The constants in V, built once by the caller (hn::Set for SIMD, plain numbers otherwise).
template <class V>
struct QuadrupoleConstants {
  V three, three_halves, half, fifteen_halves;
};

// Adds the quadrupole's acceleration to (ax, ay, az) and its potential term, positive as
// gravity_potential_term's (the body's potential is minus the sum), to phi. s: xx, xy, xz, yy, yz, zz.
template <class V>
NBKIT_HOST_DEVICE void gravity_quadrupole_terms(V dx, V dy, V dz, V u, V sxx, V sxy, V sxz, V syy, V syz, V szz,
                                                const QuadrupoleConstants<V>& k, V& ax, V& ay, V& az, V& phi) {
  const V u2 = u * u, u3 = u2 * u, u5 = u3 * u2, u7 = u5 * u2;
  const V sdx = sxx * dx + sxy * dy + sxz * dz;
  const V sdy = sxy * dx + syy * dy + syz * dz;
  const V sdz = sxz * dx + syz * dy + szz * dz;
  const V q = dx * sdx + dy * sdy + dz * sdz, trace = sxx + syy + szz;
  const V radial = k.fifteen_halves * q * u7 - k.three_halves * trace * u5;
  const V tangential = k.three * u5;
  ax = ax + radial * dx - tangential * sdx;
  ay = ay + radial * dy - tangential * sdy;
  az = az + radial * dz - tangential * sdz;
  phi = phi + k.three_halves * q * u5 - k.half * trace * u3;
}
