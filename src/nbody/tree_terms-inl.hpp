// A tree cell's pull, its monopole and the quadrupole term of the softened potential's Taylor
// expansion about the cell's centre of mass, generic over the arithmetic type V (double,
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
// (a = -grad phi; Hernquist 1987, ApJS 64:715, eq. 2-3 without softening), added to the
// monopole's gravity_acceleration_factor(M, u) d and -gravity_potential_term(M, u).

// The walks hand each cell over as w = 3 S (xx, xy, xz, yy, yz, zz) and t = 3/2 tr S, scaled
// once when the cell is listed, and take the monopole and the quadrupole together, with one
// radial factor for both, so that a cell's whole pull past its separation and u costs 25
// operations (the monopole's 6 and the quadrupole's 23 apart; the GPU walk, issue-bound while
// it sums, spends two thirds of its arithmetic on cells):
//     a   += (M u^3 + (5/2 (d.w.d) u^2 - t) u^5) d - u^5 (w d)
//     phi += M u + (1/2 (d.w.d) u^2 - 1/3 t) u^3
template <class V>
struct QuadrupoleConstants {
  V five_halves, half, third;
};

// The scaled moments of a cell: w = 3 S and t = 3/2 tr S from S (xx, xy, xz, yy, yz, zz).
NBKIT_HOST_DEVICE void quadrupole_weights(const double* s, double w[6], double& t) {
  for (int a = 0; a < 6; ++a) w[a] = 3 * s[a];
  t = 1.5 * (s[0] + s[3] + s[5]);
}

// Adds a cell's acceleration (monopole of mass M and quadrupole) to (ax, ay, az) and its
// potential term, positive as gravity_potential_term's (the body's potential is minus the sum),
// to phi.
template <class V>
NBKIT_HOST_DEVICE void gravity_cell_terms(V dx, V dy, V dz, V u, V mass, V wxx, V wxy, V wxz, V wyy, V wyz, V wzz,
                                          V t, const QuadrupoleConstants<V>& k, V& ax, V& ay, V& az, V& phi) {
  const V u2 = u * u, u3 = u2 * u, u5 = u3 * u2;
  const V wdx = wxx * dx + wxy * dy + wxz * dz;
  const V wdy = wxy * dx + wyy * dy + wyz * dz;
  const V wdz = wxz * dx + wyz * dy + wzz * dz;
  const V q3 = dx * wdx + dy * wdy + dz * wdz;  // 3 d.S.d
  const V radial = mass * u3 + (k.five_halves * q3 * u2 - t) * u5;
  ax = ax + radial * dx - u5 * wdx;
  ay = ay + radial * dy - u5 * wdy;
  az = az + radial * dz - u5 * wdz;
  phi = phi + mass * u + (k.half * q3 * u2 - k.third * t) * u3;
}
