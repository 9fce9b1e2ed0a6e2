// One row of the half neighbour list, Lennard-Jones only, in SIMD (Google Highway, run-time
// dispatch: SSE4, AVX2, AVX-512): the row's neighbours taken a vector at a time, their
// positions gathered, pair_law.hpp's minimum image in registers (the caller uses this only
// where every box length exceeds twice the list's reach plus the skin, so the minimum image is
// the list's image), pair_law.hpp's nonbonded_pair on every lane with the pairs beyond the
// cutoff (the skin) zeroed by a mask instead of a branch, and Newton's third law by gather, add and
// scatter into the thread's force array (a row's neighbours are distinct atoms; the row's own
// atom pads the last vector, its lanes adding zero).
#ifndef NBKIT_MD_SIMD_ONCE
#define NBKIT_MD_SIMD_ONCE
#include <cmath>
#include <cstdint>

#include "md/forces_simd.hpp"
#endif

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/md/forces_simd.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "hwy/contrib/math/math-inl.h"

HWY_BEFORE_NAMESPACE();
namespace nbkit::md::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#include "md/pair_terms-inl.hpp"

#include "md/simd_pair_math-inl.hpp"

RowSums LennardJonesRow(const LennardJonesRows& job, std::int64_t row) {
  const hn::ScalableTag<double> d;
  const hn::RebindToSigned<decltype(d)> di;        // int64 lanes: gather indices
  const hn::Rebind<std::int32_t, decltype(d)> d32;  // the list's int32 entries
  using V = hn::Vec<decltype(d)>;
  const std::size_t lanes = hn::Lanes(d);
  const double* position = job.positions;
  const V xi = hn::Set(d, position[3 * row]), yi = hn::Set(d, position[3 * row + 1]), zi = hn::Set(d, position[3 * row + 2]);
  const V length[3] = {hn::Set(d, job.length[0]), hn::Set(d, job.length[1]), hn::Set(d, job.length[2])};
  const V inverse[3] = {hn::Set(d, 1 / job.length[0]), hn::Set(d, 1 / job.length[1]), hn::Set(d, 1 / job.length[2])};
  const SimdPairMath<decltype(d)> math{d};
  const PairCutoffs<V> cutoffs{hn::Set(d, job.cutoff2), hn::Zero(d), hn::Zero(d)};
  const int type_i = job.types[row];
  const LennardJonesCoefficients<double>& row_first = job.coefficients[type_i * job.type_count];
  LennardJonesCoefficients<V> lj{hn::Set(d, row_first.c12), hn::Set(d, row_first.c6), hn::Set(d, row_first.offset)};
  V fx = hn::Zero(d), fy = hn::Zero(d), fz = hn::Zero(d), energy = hn::Zero(d), virial = hn::Zero(d);
  double* force = job.force;
  const std::int64_t first = job.first[row], last = job.first[row + 1];
  HWY_ALIGN std::int32_t tail[HWY_MAX_BYTES / sizeof(double)];
  for (std::int64_t k = first; k < last; k += static_cast<std::int64_t>(lanes)) {
    const std::size_t valid = static_cast<std::size_t>(std::min<std::int64_t>(static_cast<std::int64_t>(lanes), last - k));
    const std::int32_t* entries = job.neighbors + k;
    if (valid < lanes) {
      for (std::size_t l = 0; l < lanes; ++l) tail[l] = l < valid ? entries[l] : static_cast<std::int32_t>(row);
      entries = tail;
    }
    const auto index = hn::PromoteTo(di, hn::LoadU(d32, entries));
    const auto index3 = hn::Add(hn::Add(index, index), index);
    const V dx = minimum_image(math, hn::Sub(hn::GatherIndex(d, position, index3), xi), length[0], inverse[0]);
    const V dy = minimum_image(math, hn::Sub(hn::GatherIndex(d, position + 1, index3), yi), length[1], inverse[1]);
    const V dz = minimum_image(math, hn::Sub(hn::GatherIndex(d, position + 2, index3), zi), length[2], inverse[2]);
    const V r2 = hn::MulAdd(dx, dx, hn::MulAdd(dy, dy, hn::Mul(dz, dz)));
    if (job.type_count > 1) {  // the type pairs' coefficients, lane by lane
      HWY_ALIGN double lane_c12[HWY_MAX_BYTES / sizeof(double)], lane_c6[HWY_MAX_BYTES / sizeof(double)],
          lane_offset[HWY_MAX_BYTES / sizeof(double)];
      for (std::size_t l = 0; l < lanes; ++l) {
        const LennardJonesCoefficients<double>& c = job.coefficients[type_i * job.type_count + job.types[entries[l]]];
        lane_c12[l] = c.c12, lane_c6[l] = c.c6, lane_offset[l] = c.offset;
      }
      lj = {hn::Load(d, lane_c12), hn::Load(d, lane_c6), hn::Load(d, lane_offset)};
    }
    // The padding lanes (the row's own atom, r2 = 0) are zeroed after the law.
    const auto real = hn::FirstN(d, valid);
    V pair_energy, force_over_r;
    // Qualified: argument-dependent lookup would also find the scalar instantiation in nbkit::md.
    HWY_NAMESPACE::nonbonded_pair<false, false>(math, hn::IfThenElse(real, r2, hn::Set(d, 1.0)), lj, hn::Zero(d), cutoffs,
                                                pair_energy, force_over_r);
    pair_energy = hn::IfThenElseZero(real, pair_energy);
    force_over_r = hn::IfThenElseZero(real, force_over_r);
    fx = hn::NegMulAdd(force_over_r, dx, fx);
    fy = hn::NegMulAdd(force_over_r, dy, fy);
    fz = hn::NegMulAdd(force_over_r, dz, fz);
    hn::ScatterIndex(hn::MulAdd(force_over_r, dx, hn::GatherIndex(d, force, index3)), d, force, index3);
    hn::ScatterIndex(hn::MulAdd(force_over_r, dy, hn::GatherIndex(d, force + 1, index3)), d, force + 1, index3);
    hn::ScatterIndex(hn::MulAdd(force_over_r, dz, hn::GatherIndex(d, force + 2, index3)), d, force + 2, index3);
    energy = hn::Add(energy, pair_energy);
    virial = hn::MulAdd(force_over_r, r2, virial);
  }
  RowSums sums;
  sums.fx = hn::GetLane(hn::SumOfLanes(d, fx));
  sums.fy = hn::GetLane(hn::SumOfLanes(d, fy));
  sums.fz = hn::GetLane(hn::SumOfLanes(d, fz));
  sums.energy = hn::GetLane(hn::SumOfLanes(d, energy));
  sums.virial = hn::GetLane(hn::SumOfLanes(d, virial));
  return sums;
}

}  // namespace nbkit::md::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace nbkit::md {

HWY_EXPORT(LennardJonesRow);

RowSums lennard_jones_row(const LennardJonesRows& job, std::int64_t row) {
  return HWY_DYNAMIC_DISPATCH(LennardJonesRow)(job, row);
}

}  // namespace nbkit::md
#endif
