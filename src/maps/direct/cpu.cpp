// Direct summation on the CPU: all cores (OpenMP over lattice rows) and SIMD over the
// points of a row, through Google Highway with run-time dispatch, so one binary uses
// AVX-512 where the CPU has it and SSE4 where it does not.
//
// The loop structure is the slides' CPU design (seed 000, "DCS Algorithm Design
// Observations"; Stone et al., J Comp Chem 28:2618, 2007): atoms made relative to the
// lattice origin; per lattice row, an array of (dx^2 + dy^2, z, coefficient) per atom
// computed once and reused along the row; unroll-and-jam over the row's points, so each
// atom, once loaded, serves NV vectors of points.
//
// Accuracy (float32):
// - Coordinates in units of the lattice spacing, so lattice points along a row sit at the
//   integers k (exact in float32), and each atom's z split into its nearest lattice index
//   and a residual: dz = (k - k_atom) - residual loses nothing to rounding, however far the
//   lattice is from the origin. (Rounding atom coordinates to float32 alone costs ~1e-5
//   relative RMS on a 60 A protein map: the points next to atoms dominate the norm.)
// - 1/r from the hardware's approximate reciprocal square root refined by one
//   Newton-Raphson step (relative error ~1e-7).
// - Terms summed in float32 over chunks of kChunk atoms and the chunk sums in float64, so
//   rounding error does not grow with the atom count (the slides' "double-precision
//   accumulation").
// The laws see r and 1/r in units of 2 lattice spacings (kLawUnit): the coefficient
// carries 1/(2 spacing) and kappa is scaled by 2 spacing (scaled_law); the result is the
// same.
// Determinism: every row is summed by one thread in a fixed order, so the bits do not
// depend on the thread count.
#ifndef NBKIT_DIRECT_CPU_ONCE
#define NBKIT_DIRECT_CPU_ONCE
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "maps/direct/direct.hpp"
#include "nbkit/maps.hpp"

namespace nbkit::maps {
struct CpuJob {
  const PreparedAtoms* atoms;
  const MapLaw* law;
  const RowRange* rows;
  bool double_precision;
  int threads;
};
}  // namespace nbkit::maps
#endif

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/maps/direct/cpu.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "hwy/contrib/math/math-inl.h"

HWY_BEFORE_NAMESPACE();
namespace nbkit::maps::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#include "maps/law_terms-inl.hpp"

template <class D>
struct SimdMath {
  D d;
  HWY_INLINE hn::Vec<D> set(double v) const { return hn::Set(d, static_cast<hn::TFromD<D>>(v)); }
  HWY_INLINE hn::Vec<D> exp(hn::Vec<D> v) const { return hn::Exp(d, v); }
};

// 2/sqrt(r2): the reciprocal distance in units of twice the lattice spacing (see
// kLawUnit). float32: approximate rsqrt y (12 to 14 bits) and one Newton-Raphson step,
// 1/sqrt(r2) = y (3 - r2 y^2) / 2, which squares the relative error (to ~1e-7); working in
// units of 2h drops the step's factor 1/2, one multiply fewer per evaluation.
// float64: exact.
template <class D>
HWY_INLINE hn::Vec<D> two_over_sqrt(D d, hn::Vec<D> r2) {
  using T = hn::TFromD<D>;
  if constexpr (std::is_same_v<T, float>) {
    const auto y = hn::ApproximateReciprocalSqrt(r2);
    return hn::Mul(y, hn::NegMulAdd(r2, hn::Mul(y, y), hn::Set(d, 3.0f)));
  } else {
    return hn::Div(hn::Set(d, T(2)), hn::Sqrt(r2));
  }
}

// The laws are evaluated with lengths in units of kLawUnit lattice spacings: r2 is
// computed in lattice units (exact integer z offsets) and handed to the law as r2/4,
// with 1/r from two_over_sqrt.
constexpr double kLawUnit = 2.0;

// The law with lengths measured in units of `length_unit` Angstrom.
inline CoulombLaw scaled_law(const CoulombLaw& law, double) { return law; }
inline DebyeHuckelLaw scaled_law(const DebyeHuckelLaw& law, double length_unit) {
  return DebyeHuckelLaw{law.kappa * length_unit};
}

// Vectors of points per unroll-and-jam block: AVX-512 has 32 registers, others 16.
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL || HWY_TARGET == HWY_AVX3_ZEN4
constexpr int kMaxVectors = 8;
#else
constexpr int kMaxVectors = 4;
#endif
// Atoms per float32 partial sum before it is added to the float64 row sum.
constexpr std::int64_t kChunk = 512;

// Per-atom values that do not change along the lattice: z split into the nearest lattice
// index and a residual (lattice units), and the coefficient in law units.
template <class Real>
struct AtomColumns {
  std::vector<Real> z_index, z_residual, coefficient;
};

template <class Real>
struct RowScratch {
  std::vector<Real> dxy2;              // (dx^2 + dy^2) of each atom from the row, lattice units
  std::vector<std::int64_t> on_axis;   // atoms within singular_distance of the row's axis
  std::vector<double> sum;             // float64 sums along the row
  HWY_ALIGN Real lanes[kMaxVectors * hn::MaxLanes(hn::ScalableTag<Real>())];
};

// An on-axis atom's dxy2 in the SIMD pass: 1e30 lattice units^2 (1e15 spacings away) makes
// its term at most 1e-15 of a unit charge's at one spacing, far below float32 rounding; it
// is summed exactly, in float64, afterwards.
constexpr double kFarAway = 1e30;

// Adds the atoms [begin, end) to NV vectors of points starting at k0.
template <int NV, class Real, class Law>
HWY_INLINE void accumulate_block(const Law& law, const AtomColumns<Real>& columns, RowScratch<Real>& s,
                                 std::int64_t begin, std::int64_t end, std::int64_t k0) {
  const hn::ScalableTag<Real> d;
  const SimdMath<hn::ScalableTag<Real>> math{d};
  const std::int64_t lanes = static_cast<std::int64_t>(hn::Lanes(d));
  hn::Vec<decltype(d)> z[NV], acc[NV];
  for (int u = 0; u < NV; ++u) {
    z[u] = hn::Add(hn::Iota(d, 0), hn::Set(d, static_cast<Real>(k0 + u * lanes)));  // exact integers
    acc[u] = hn::Zero(d);
  }
  const Real* HWY_RESTRICT dxy2 = s.dxy2.data();
  const Real* HWY_RESTRICT z_index = columns.z_index.data();
  const Real* HWY_RESTRICT z_residual = columns.z_residual.data();
  const Real* HWY_RESTRICT coefficient = columns.coefficient.data();
  for (std::int64_t n = begin; n < end; ++n) {
    const auto atom_dxy2 = hn::Set(d, dxy2[n]);
    const auto atom_z_index = hn::Set(d, z_index[n]);
    const auto atom_z_residual = hn::Set(d, z_residual[n]);
    const auto atom_coefficient = hn::Set(d, coefficient[n]);
    for (int u = 0; u < NV; ++u) {
      const auto dz = hn::Sub(hn::Sub(z[u], atom_z_index), atom_z_residual);  // first Sub exact
      const auto r2 = hn::MulAdd(dz, dz, atom_dxy2);  // lattice units
      const auto rinv = two_over_sqrt(d, r2);            // law units
      const auto law_r2 = hn::Mul(r2, hn::Set(d, static_cast<Real>(1.0 / (kLawUnit * kLawUnit))));
      acc[u] = hn::Add(acc[u], HWY_NAMESPACE::law_term(law, math, atom_coefficient, law_r2, rinv));
    }
  }
  for (int u = 0; u < NV; ++u) hn::Store(acc[u], d, s.lanes + u * lanes);
  const std::int64_t nz = static_cast<std::int64_t>(s.sum.size());
  const std::int64_t last = std::min<std::int64_t>(nz, k0 + NV * lanes);
  for (std::int64_t k = k0; k < last; ++k) s.sum[k] += static_cast<double>(s.lanes[k - k0]);
}

template <int NV, class Real, class Law>
HWY_INLINE void sum_block(const Law& law, const AtomColumns<Real>& columns, RowScratch<Real>& s,
                          std::int64_t k0) {
  const std::int64_t atoms = static_cast<std::int64_t>(s.dxy2.size());
  // float64 needs no chunks: one pass over all atoms.
  const std::int64_t chunk = std::is_same_v<Real, float> ? kChunk : std::max<std::int64_t>(atoms, 1);
  for (std::int64_t begin = 0; begin < atoms; begin += chunk)
    accumulate_block<NV>(law, columns, s, begin, std::min(atoms, begin + chunk), k0);
}

template <class Real, class Law>
void sum_rows(const CpuJob& job, const Law& law) {
  const PreparedAtoms& atoms = *job.atoms;
  const RowRange& rows = *job.rows;
  const Lattice& lattice = *rows.lattice;
  const std::int64_t ny = lattice.dims[1], nz = lattice.dims[2];
  const double h = lattice.spacing;
  const std::int64_t natoms = atoms.size();
  const double singular_r2 = singular_distance * singular_distance;
  const std::int64_t lanes = static_cast<std::int64_t>(hn::Lanes(hn::ScalableTag<Real>()));
  const std::int64_t total = rows.row_end - rows.row_begin;
  std::atomic<std::int64_t> done{0};
  const bool report = rows.progress && *rows.progress;
  const Law scaled = scaled_law(law, kLawUnit * h);

  AtomColumns<Real> columns;
  columns.z_index.resize(natoms);
  columns.z_residual.resize(natoms);
  columns.coefficient.resize(natoms);
  for (std::int64_t n = 0; n < natoms; ++n) {
    const double z = atoms.z[n] / h, z_index = std::nearbyint(z);
    columns.z_index[n] = static_cast<Real>(z_index);
    columns.z_residual[n] = static_cast<Real>(z - z_index);
    columns.coefficient[n] = static_cast<Real>(atoms.coefficient[n] / (kLawUnit * h));
  }
  const double singular_r2_lattice = singular_r2 / (h * h);

#pragma omp parallel num_threads(job.threads)
  {
    RowScratch<Real> s;
    s.dxy2.resize(natoms);
    s.sum.resize(nz);
#pragma omp for schedule(dynamic, 1)
    for (std::int64_t row = rows.row_begin; row < rows.row_end; ++row) {
      // Row setup in lattice units: x, y of the row's points are integers.
      const double x = static_cast<double>(row / ny), y = static_cast<double>(row % ny);
      const double inv_h = 1.0 / h;
      Real* HWY_RESTRICT dxy2 = s.dxy2.data();
      for (std::int64_t n = 0; n < natoms; ++n) {
        const double dx = x - atoms.x[n] * inv_h, dy = y - atoms.y[n] * inv_h;
        dxy2[n] = static_cast<Real>(dx * dx + dy * dy);
      }
      s.on_axis.clear();
      for (std::int64_t n = 0; n < natoms; ++n)
        if (dxy2[n] <= singular_r2_lattice) {  // may sit on a lattice point of this row
          s.on_axis.push_back(n);
          dxy2[n] = static_cast<Real>(kFarAway);
        }
      std::fill(s.sum.begin(), s.sum.end(), 0.0);
      for (std::int64_t k0 = 0; k0 < nz; k0 += kMaxVectors * lanes) {
        const std::int64_t vectors = std::min<std::int64_t>(kMaxVectors, (nz - k0 + lanes - 1) / lanes);
        switch (vectors) {
          case 1: sum_block<1>(scaled, columns, s, k0); break;
          case 2: sum_block<2>(scaled, columns, s, k0); break;
          case 3: sum_block<3>(scaled, columns, s, k0); break;
          case 4: sum_block<4>(scaled, columns, s, k0); break;
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL || HWY_TARGET == HWY_AVX3_ZEN4
          case 5: sum_block<5>(scaled, columns, s, k0); break;
          case 6: sum_block<6>(scaled, columns, s, k0); break;
          case 7: sum_block<7>(scaled, columns, s, k0); break;
          case 8: sum_block<8>(scaled, columns, s, k0); break;
#endif
          default: break;
        }
      }
      // Atoms on the row's axis, in float64, leaving out the one lattice point (if any)
      // within singular_distance: see nbkit::singular_distance.
      const ScalarMath<double> scalar_math;
      for (const std::int64_t n : s.on_axis) {
        const double dx = x * h - atoms.x[n], dy = y * h - atoms.y[n];
        for (std::int64_t k = 0; k < nz; ++k) {
          const double dz = static_cast<double>(k) * h - atoms.z[n];
          const double r2 = dx * dx + dy * dy + dz * dz;
          if (r2 <= singular_r2) continue;
          s.sum[k] += maps::law_term(law, scalar_math, atoms.coefficient[n], r2, 1.0 / std::sqrt(r2));
        }
      }
      double* out = rows.out + (row - rows.row_begin) * nz;
      for (std::int64_t k = 0; k < nz; ++k) out[k] = rows.prefactor * s.sum[k];
      const std::int64_t finished = done.fetch_add(1, std::memory_order_relaxed) + 1;
      if (report && omp_get_thread_num() == 0) (*rows.progress)(static_cast<double>(finished) / total);
    }
  }
}

void SumRows(const CpuJob& job) {
  const MapLaw& law = *job.law;
  if (const auto* coulomb = std::get_if<CoulombLaw>(&law)) {
    job.double_precision ? sum_rows<double>(job, *coulomb) : sum_rows<float>(job, *coulomb);
  } else {
    const auto& mdh = std::get<DebyeHuckelLaw>(law);
    job.double_precision ? sum_rows<double>(job, mdh) : sum_rows<float>(job, mdh);
  }
}

const char* TargetName() { return hwy::TargetName(HWY_TARGET); }

}  // namespace nbkit::maps::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace nbkit::maps {
HWY_EXPORT(SumRows);
HWY_EXPORT(TargetName);

void direct_cpu(const PreparedAtoms& atoms, const MapLaw& law, const RowRange& rows,
                bool double_precision, int threads) {
  const CpuJob job{&atoms, &law, &rows, double_precision, std::max(threads, 1)};
  HWY_DYNAMIC_DISPATCH(SumRows)(job);
}

const char* direct_cpu_target() { return HWY_DYNAMIC_DISPATCH(TargetName)(); }
}  // namespace nbkit::maps
#endif
