// One row of the half neighbour list, Lennard-Jones only, in SIMD (Google Highway, run-time
// dispatch: SSE4, AVX2, AVX-512): the row's neighbours taken a vector at a time, their
// positions gathered, the minimum image taken in registers (the caller uses this only where
// every box length exceeds twice the list's reach plus the skin, so the minimum image is the
// list's image), the law of pair_law.hpp on every lane with the pairs beyond the cutoff (the
// skin) zeroed by a mask instead of a branch, and Newton's third law by gather, add and
// scatter into the thread's force array (a row's neighbours are distinct atoms; the row's own
// atom pads the last vector, its lanes adding zero).
#ifndef NBKIT_MD_SIMD_ONCE
#define NBKIT_MD_SIMD_ONCE
#include <cstdint>

#include "md/forces_simd.hpp"
#endif

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/md/forces_simd.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace nbkit::md::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

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
  const V cutoff2 = hn::Set(d, job.cutoff2), one = hn::Set(d, 1.0), twelve = hn::Set(d, 12.0), six = hn::Set(d, 6.0);
  const int type_i = job.types[row];
  V c12 = hn::Set(d, job.c12[type_i * job.type_count]), c6 = hn::Set(d, job.c6[type_i * job.type_count]);
  V offset = hn::Set(d, job.offset[type_i * job.type_count]);
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
    V dx = hn::Sub(hn::GatherIndex(d, position, index3), xi);
    V dy = hn::Sub(hn::GatherIndex(d, position + 1, index3), yi);
    V dz = hn::Sub(hn::GatherIndex(d, position + 2, index3), zi);
    dx = hn::NegMulAdd(length[0], hn::Round(hn::Mul(dx, inverse[0])), dx);
    dy = hn::NegMulAdd(length[1], hn::Round(hn::Mul(dy, inverse[1])), dy);
    dz = hn::NegMulAdd(length[2], hn::Round(hn::Mul(dz, inverse[2])), dz);
    const V r2 = hn::MulAdd(dx, dx, hn::MulAdd(dy, dy, hn::Mul(dz, dz)));
    if (job.type_count > 1) {  // the type pairs' coefficients, lane by lane
      HWY_ALIGN double lane_c12[HWY_MAX_BYTES / sizeof(double)], lane_c6[HWY_MAX_BYTES / sizeof(double)],
          lane_offset[HWY_MAX_BYTES / sizeof(double)];
      for (std::size_t l = 0; l < lanes; ++l) {
        const int pair = type_i * job.type_count + job.types[entries[l]];
        lane_c12[l] = job.c12[pair], lane_c6[l] = job.c6[pair], lane_offset[l] = job.offset[pair];
      }
      c12 = hn::Load(d, lane_c12), c6 = hn::Load(d, lane_c6), offset = hn::Load(d, lane_offset);
    }
    // pair_law.hpp's lennard_jones, lane by lane.
    const V inverse_r2 = hn::Div(one, r2);
    const V inverse_r6 = hn::Mul(hn::Mul(inverse_r2, inverse_r2), inverse_r2);
    const auto keep = hn::And(hn::Lt(r2, cutoff2), hn::FirstN(d, valid));
    const V pair_energy = hn::IfThenElseZero(keep, hn::Sub(hn::Mul(inverse_r6, hn::MulSub(c12, inverse_r6, c6)), offset));
    const V force_over_r = hn::IfThenElseZero(
        keep, hn::Mul(hn::Mul(inverse_r6, hn::MulSub(hn::Mul(twelve, c12), inverse_r6, hn::Mul(six, c6))), inverse_r2));
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
