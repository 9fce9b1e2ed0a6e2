// One row of the biomolecular pair loop in SIMD (Google Highway, run-time dispatch: SSE4, AVX2,
// AVX-512), as forces_simd.cpp does for Lennard-Jones liquids: the row's neighbours a vector at
// a time (two with PME: TwinPairMath below), their positions, charges and types gathered, the minimum image in registers,
// pair_terms-inl.hpp's molecular_pair (the same law the reference and the GPU call) on every
// lane, the skin's pairs (beyond the cutoff) zeroed by a mask, and Newton's third law by
// gather, add and scatter into the thread's force array (a row's neighbours are distinct atoms;
// the row's own atom pads the last vector, its lanes zeroed).
#ifndef NBKIT_MD_MOLECULAR_SIMD_ONCE
#define NBKIT_MD_MOLECULAR_SIMD_ONCE
#include <cmath>
#include <cstdint>

#include "md/molecular_pair_constants.hpp"
#include "md/molecular_simd.hpp"
#endif

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/md/molecular_simd.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "hwy/contrib/math/math-inl.h"

HWY_BEFORE_NAMESPACE();
namespace nbkit::md::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#include "md/pair_terms-inl.hpp"

#include "md/simd_pair_math-inl.hpp"

// Two vectors of pairs through the law at once, for PME's rows: erfc's Clenshaw recurrence
// (SimdPairMath::erfc) is a chain of 30 dependent multiply-adds, where perf put a third of the
// row loop's samples (session 35); two independent chains side by side fill the multiply-add
// units' latency. Every operation is SimdPairMath's one-vector operation on each half, in the
// same order (this file is compiled without contraction of multiplies and adds, -std=c++20), so
// each lane gives the same bits as one vector at a time.
template <class D>
struct Twin {
  hn::Vec<D> a, b;
};
template <class D>
HWY_INLINE Twin<D> operator+(Twin<D> x, Twin<D> y) {
  return {hn::Add(x.a, y.a), hn::Add(x.b, y.b)};
}
template <class D>
HWY_INLINE Twin<D> operator-(Twin<D> x, Twin<D> y) {
  return {hn::Sub(x.a, y.a), hn::Sub(x.b, y.b)};
}
template <class D>
HWY_INLINE Twin<D> operator*(Twin<D> x, Twin<D> y) {
  return {hn::Mul(x.a, y.a), hn::Mul(x.b, y.b)};
}
template <class D>
HWY_INLINE Twin<D> operator/(Twin<D> x, Twin<D> y) {
  return {hn::Div(x.a, y.a), hn::Div(x.b, y.b)};
}
template <class D>
HWY_INLINE Twin<D> operator-(Twin<D> x) {
  return {hn::Neg(x.a), hn::Neg(x.b)};
}

template <class D>
struct TwinPairMath {
  using T = Twin<D>;
  SimdPairMath<D> one;
  HWY_INLINE T set(double v) const { return {one.set(v), one.set(v)}; }
  HWY_INLINE T below(T r2, T limit, T value) const {
    return {one.below(r2.a, limit.a, value.a), one.below(r2.b, limit.b, value.b)};
  }
  HWY_INLINE T sqrt(T v) const { return {one.sqrt(v.a), one.sqrt(v.b)}; }
  HWY_INLINE T round(T v) const { return {one.round(v.a), one.round(v.b)}; }
  HWY_INLINE T exp(T v) const { return {one.exp(v.a), one.exp(v.b)}; }
  HWY_INLINE T divide(T x, T y) const { return {one.divide(x.a, y.a), one.divide(x.b, y.b)}; }
  HWY_INLINE T erfc(T x) const {
    const hn::Vec<D> in[2] = {x.a, x.b};
    hn::Vec<D> out[2];
    one.erfc_side_by_side(in, out);
    return {out[0], out[1]};
  }
  HWY_INLINE void erfc_and_gaussian(T x, T minus_x2, T& erfc_x, T& gaussian) const {
    erfc_x = erfc(x), gaussian = exp(minus_x2);
  }
};

template <PairSwitch Switch, PairCoulomb Coulomb>
MolecularRowSums Row(const MolecularRows& job, std::int64_t row) {
  const hn::ScalableTag<double> d;
  const hn::RebindToSigned<decltype(d)> di;        // int64 lanes: gather indices
  const hn::Rebind<std::int32_t, decltype(d)> d32;  // the list's int32 entries
  using V = hn::Vec<decltype(d)>;
  const std::size_t lanes = hn::Lanes(d);
  const SimdPairMath<decltype(d)> math{d};
  const double* position = job.positions;
  const V xi = hn::Set(d, position[3 * row]), yi = hn::Set(d, position[3 * row + 1]), zi = hn::Set(d, position[3 * row + 2]);
  const V qi = hn::Set(d, job.charge[row]);
  const V length[3] = {hn::Set(d, job.length[0]), hn::Set(d, job.length[1]), hn::Set(d, job.length[2])};
  const V inverse[3] = {hn::Set(d, job.periodic ? 1 / job.length[0] : 0.0), hn::Set(d, job.periodic ? 1 / job.length[1] : 0.0),
                        hn::Set(d, job.periodic ? 1 / job.length[2] : 0.0)};
  const V cutoff2 = hn::Set(d, job.cutoff2);
  const MolecularPairConstants<double>& c = job.k;
  const MolecularPairConstants<V> k{hn::Set(d, c.k_rf),           hn::Set(d, c.c_rf),
                                    hn::Set(d, c.switch_distance), hn::Set(d, c.switch_distance2),
                                    hn::Set(d, c.inverse_switch_width), hn::Set(d, c.cutoff2),
                                    hn::Set(d, c.charmm_inverse_denominator), hn::Set(d, c.ewald_alpha),
                                    hn::Set(d, c.ewald_gauss),      hn::Set(d, c.inverse_cutoff)};
  const auto table_row = hn::Set(di, static_cast<std::int64_t>(job.types[row]) * job.type_count);
  V fx = hn::Zero(d), fy = hn::Zero(d), fz = hn::Zero(d), lj_sum = hn::Zero(d), coulomb_sum = hn::Zero(d),
    virial = hn::Zero(d);
  double* force = job.force;
  const std::int64_t first = job.first[row], last = job.first[row + 1];
  HWY_ALIGN std::int32_t tail[HWY_MAX_BYTES / sizeof(double)];
  // A vector of the row's neighbours from entry n: separations, the law's inputs, the lanes in use.
  struct Vector {
    V dx, dy, dz, r2, c12, c6, qq;
    hn::Mask<decltype(d)> use;
    hn::Vec<decltype(di)> index3;
  };
  auto load = [&](std::int64_t n) {
    const std::size_t valid = static_cast<std::size_t>(std::min<std::int64_t>(static_cast<std::int64_t>(lanes), last - n));
    const std::int32_t* entries = job.neighbors + n;
    if (valid < lanes) {
      for (std::size_t l = 0; l < lanes; ++l) tail[l] = l < valid ? entries[l] : static_cast<std::int32_t>(row);
      entries = tail;
    }
    const auto entries32 = hn::LoadU(d32, entries);
    const auto index = hn::PromoteTo(di, entries32);
    const auto index3 = hn::Add(hn::Add(index, index), index);
    V dx = hn::Sub(xi, hn::GatherIndex(d, position, index3));
    V dy = hn::Sub(yi, hn::GatherIndex(d, position + 1, index3));
    V dz = hn::Sub(zi, hn::GatherIndex(d, position + 2, index3));
    if (job.periodic) {
      dx = minimum_image(math, dx, length[0], inverse[0]);
      dy = minimum_image(math, dy, length[1], inverse[1]);
      dz = minimum_image(math, dz, length[2], inverse[2]);
    }
    const V r2 = hn::MulAdd(dx, dx, hn::MulAdd(dy, dy, hn::Mul(dz, dz)));
    const auto pair_index = hn::Add(table_row, hn::PromoteTo(di, hn::GatherIndex(d32, job.types, entries32)));
    // Within the cutoff and a real lane (the padding's r2 = 0 is made 1 before the law).
    return Vector{dx, dy, dz, r2, hn::GatherIndex(d, job.c12, pair_index), hn::GatherIndex(d, job.c6, pair_index),
                  hn::Mul(qi, hn::GatherIndex(d, job.charge, index)), hn::And(hn::FirstN(d, valid), hn::Lt(r2, cutoff2)),
                  index3};
  };
  auto law_r2 = [&](const Vector& v) { return hn::IfThenElse(v.use, v.r2, hn::Set(d, 1.0)); };
  // The law's results into the row's sums and the neighbours' forces.
  auto add = [&](const Vector& v, V lj, V lj_f, V coulomb, V coulomb_f) {
    const V force_over_r = hn::IfThenElseZero(v.use, hn::Add(lj_f, coulomb_f));
    lj_sum = hn::Add(lj_sum, hn::IfThenElseZero(v.use, lj));
    coulomb_sum = hn::Add(coulomb_sum, hn::IfThenElseZero(v.use, coulomb));
    virial = hn::MulAdd(force_over_r, v.r2, virial);
    // d = x_i - x_j: row i gets +f d, neighbour j gets -f d.
    fx = hn::MulAdd(force_over_r, v.dx, fx);
    fy = hn::MulAdd(force_over_r, v.dy, fy);
    fz = hn::MulAdd(force_over_r, v.dz, fz);
    hn::ScatterIndex(hn::NegMulAdd(force_over_r, v.dx, hn::GatherIndex(d, force, v.index3)), d, force, v.index3);
    hn::ScatterIndex(hn::NegMulAdd(force_over_r, v.dy, hn::GatherIndex(d, force + 1, v.index3)), d, force + 1, v.index3);
    hn::ScatterIndex(hn::NegMulAdd(force_over_r, v.dz, hn::GatherIndex(d, force + 2, v.index3)), d, force + 2, v.index3);
  };
  const std::int64_t step = static_cast<std::int64_t>(lanes);
  std::int64_t n = first;
  if constexpr (Coulomb == PairCoulomb::ewald) {
    // Two vectors at a time (TwinPairMath), added in the row's order: the same sums.
    using T = Twin<decltype(d)>;
    const TwinPairMath<decltype(d)> twin{math};
    auto both = [](V v) { return T{v, v}; };
    const MolecularPairConstants<T> k2{both(k.k_rf),           both(k.c_rf),
                                       both(k.switch_distance), both(k.switch_distance2),
                                       both(k.inverse_switch_width), both(k.cutoff2),
                                       both(k.charmm_inverse_denominator), both(k.ewald_alpha),
                                       both(k.ewald_gauss),      both(k.inverse_cutoff)};
    for (; n + step < last; n += 2 * step) {
      const Vector va = load(n), vb = load(n + step);
      T lj, lj_f, coulomb, coulomb_f;
      HWY_NAMESPACE::molecular_pair<Switch, Coulomb>(twin, T{law_r2(va), law_r2(vb)}, T{va.c12, vb.c12},
                                                     T{va.c6, vb.c6}, T{va.qq, vb.qq}, k2, lj, lj_f, coulomb,
                                                     coulomb_f);
      add(va, lj.a, lj_f.a, coulomb.a, coulomb_f.a);
      add(vb, lj.b, lj_f.b, coulomb.b, coulomb_f.b);
    }
  }
  for (; n < last; n += step) {
    const Vector v = load(n);
    V lj, lj_f, coulomb, coulomb_f;
    // Qualified: argument-dependent lookup would also find the scalar instantiation in nbkit::md.
    HWY_NAMESPACE::molecular_pair<Switch, Coulomb>(math, law_r2(v), v.c12, v.c6, v.qq, k, lj, lj_f, coulomb, coulomb_f);
    add(v, lj, lj_f, coulomb, coulomb_f);
  }
  MolecularRowSums sums;
  sums.fx = hn::GetLane(hn::SumOfLanes(d, fx));
  sums.fy = hn::GetLane(hn::SumOfLanes(d, fy));
  sums.fz = hn::GetLane(hn::SumOfLanes(d, fz));
  sums.lennard_jones = hn::GetLane(hn::SumOfLanes(d, lj_sum));
  sums.coulomb = hn::GetLane(hn::SumOfLanes(d, coulomb_sum));
  sums.virial = hn::GetLane(hn::SumOfLanes(d, virial));
  return sums;
}

MolecularRowSums MolecularRow(const MolecularRows& job, std::int64_t row) {
  MolecularRowSums sums{};
  with_law(job.switched, job.coulomb,
           [&](auto s, auto c) { sums = Row<decltype(s)::value, decltype(c)::value>(job, row); });
  return sums;
}

}  // namespace nbkit::md::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace nbkit::md {

HWY_EXPORT(MolecularRow);

MolecularRowSums molecular_row(const MolecularRows& job, std::int64_t row) {
  return HWY_DYNAMIC_DISPATCH(MolecularRow)(job, row);
}

}  // namespace nbkit::md
#endif
