// All-pairs gravity on the CPU: OpenMP over blocks of bodies i, SIMD over bodies j through
// Google Highway with run-time dispatch (one binary: SSE4, AVX2, AVX-512).
//
// The loop is the GPU Gems 3 tile turned sideways (Nyland, Harris, Prins, ch. 31; seed
// 002): each vector of bodies j, once loaded, serves kI bodies i (register blocking, the
// CPU's shared-memory tile); softening keeps every r^2 > 0, so the loop has no branch; 1/r
// comes from the approximate reciprocal square root and one Newton-Raphson step (float32,
// ~1e-7). Sums run in float32 over chunks of kChunk bodies and in float64 across chunks, so
// the error does not grow with N. A body's pair with itself is masked out in the one or two
// chunks that hold it (its mass set to zero there), not subtracted afterwards, which would
// cost accuracy for small softening.
#ifndef NBKIT_NBODY_CPU_ONCE
#define NBKIT_NBODY_CPU_ONCE
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <vector>

#include "nbkit/core/progress.hpp"
#include "nbody/forces.hpp"
#include "nbody/gravity.hpp"

namespace nbkit::nbody {
struct CpuForceJob {
  const Bodies* bodies;
  double softening;
  bool double_precision;
  int threads;
  Accelerations* out;
  const std::function<void(double)>* progress;
  std::size_t first, last;  // the bodies i summed for
};
}  // namespace nbkit::nbody
#endif

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/nbody/forces_cpu.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/aligned_allocator.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace nbkit::nbody::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#include "nbody/gravity_terms-inl.hpp"
#include "nbody/pair_sums-inl.hpp"

template <class Real>
void compute(const CpuForceJob& job) {
  const Bodies& b = *job.bodies;
  Accelerations& out = *job.out;
  const std::size_t n = b.size();
  const hn::ScalableTag<Real> d;
  using V = hn::Vec<decltype(d)>;
  const std::size_t lanes = hn::Lanes(d);
  // Padded to whole vectors with massless bodies at the origin (r^2 >= eps^2 > 0 there).
  const std::size_t padded = (n + lanes - 1) / lanes * lanes;
  auto x = hwy::AllocateAligned<Real>(padded), y = hwy::AllocateAligned<Real>(padded),
       z = hwy::AllocateAligned<Real>(padded), m = hwy::AllocateAligned<Real>(padded);
  for (std::size_t j = 0; j < padded; ++j) {
    const bool real = j < n;
    x[j] = real ? static_cast<Real>(b.x[j]) : Real(0);
    y[j] = real ? static_cast<Real>(b.y[j]) : Real(0);
    z[j] = real ? static_cast<Real>(b.z[j]) : Real(0);
    m[j] = real ? static_cast<Real>(b.mass[j]) : Real(0);
  }
  const V eps2 = hn::Set(d, static_cast<Real>(job.softening * job.softening));
  // Blocks of kI bodies i from job.first: each body's sums are its own (the lanes of a block
  // never mix), so where the blocks start changes no bit.
  const std::size_t first = job.first, last = job.last;
  const std::int64_t blocks = static_cast<std::int64_t>((last - first + kI - 1) / kI);
  // A million bodies take minutes on a few cores: the blocks done are reported.
  ParallelProgress progress(blocks >= 256 ? job.progress : nullptr, blocks);
#pragma omp parallel for schedule(dynamic, 4) num_threads(static_cast<int>(std::min<std::int64_t>(job.threads, blocks)))
  for (std::int64_t block = 0; block < blocks; ++block) {
    if (progress.cancelled()) continue;  // a progress callback asked to stop
    const std::size_t i0 = first + static_cast<std::size_t>(block) * kI;
    V xi[kI], yi[kI], zi[kI];
    for (std::size_t t = 0; t < kI; ++t) {
      const std::size_t i = std::min(i0 + t, last - 1);  // a short last block repeats a body, not stored
      xi[t] = hn::Set(d, x[i]), yi[t] = hn::Set(d, y[i]), zi[t] = hn::Set(d, z[i]);
    }
    double sum[4][kI] = {};
    for (std::size_t first = 0; first < padded; first += kChunk) {
      const std::size_t last = std::min(padded, first + kChunk);
      V ax[kI], ay[kI], az[kI], phi[kI];
      for (std::size_t t = 0; t < kI; ++t) ax[t] = ay[t] = az[t] = phi[t] = hn::Zero(d);
      if (i0 < last && i0 + kI > first)
        sum_chunk<true>(d, x.get(), y.get(), z.get(), m.get(), first, last, i0, xi, yi, zi, eps2, ax, ay, az, phi);
      else
        sum_chunk<false>(d, x.get(), y.get(), z.get(), m.get(), first, last, i0, xi, yi, zi, eps2, ax, ay, az, phi);
      for (std::size_t t = 0; t < kI; ++t) {
        sum[0][t] += static_cast<double>(hn::GetLane(hn::SumOfLanes(d, ax[t])));
        sum[1][t] += static_cast<double>(hn::GetLane(hn::SumOfLanes(d, ay[t])));
        sum[2][t] += static_cast<double>(hn::GetLane(hn::SumOfLanes(d, az[t])));
        sum[3][t] += static_cast<double>(hn::GetLane(hn::SumOfLanes(d, phi[t])));
      }
    }
    for (std::size_t t = 0; t < kI && i0 + t < last; ++t) {
      out.ax[i0 + t] = sum[0][t], out.ay[i0 + t] = sum[1][t], out.az[i0 + t] = sum[2][t];
      out.potential[i0 + t] = -sum[3][t];
    }
    progress.done_one();
  }
  progress.finish();
}

void ComputeForces(const CpuForceJob& job) {
  if (job.double_precision) compute<double>(job);
  else compute<float>(job);
}

const char* TargetName() { return hwy::TargetName(HWY_TARGET); }

}  // namespace nbkit::nbody::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace nbkit::nbody {
HWY_EXPORT(ComputeForces);
HWY_EXPORT(TargetName);

void accelerations_cpu(const Bodies& bodies, double softening, bool double_precision, int threads,
                       Accelerations& out, const std::function<void(double)>& progress, Targets targets) {
  out.resize(bodies.size());
  const std::size_t last = std::min(bodies.size(), targets.last);
  if (targets.first >= last) return;
  const CpuForceJob job{&bodies, softening, double_precision, std::max(threads, 1), &out, &progress, targets.first,
                        last};
  HWY_DYNAMIC_DISPATCH(ComputeForces)(job);
}

const char* nbody_cpu_target() { return HWY_DYNAMIC_DISPATCH(TargetName)(); }
}  // namespace nbkit::nbody
#endif
