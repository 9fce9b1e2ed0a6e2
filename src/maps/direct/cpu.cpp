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
#include <bit>
#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "maps/kernels.hpp"
#include "nbkit/core/error.hpp"
#include "nbkit/core/memory.hpp"
#include "nbkit/core/progress.hpp"
#include "nbkit/maps.hpp"

namespace nbkit::maps {
// Atoms hashed into cubic bins (cutoff summation): atom indices sorted by bin, x fastest.
struct AtomBins {
  Vec3 lower;                  // corner of bin (0,0,0), Angstrom from the lattice origin
  double size = 0;             // bin edge, Angstrom
  std::int64_t dims[3] = {1, 1, 1};
  std::vector<std::int64_t> start;  // bin b holds atoms[start[b] .. start[b+1])
  std::vector<std::int64_t> atoms;
  double cutoff = 0;           // Angstrom
};

struct CpuJob {
  const PreparedAtoms* atoms;
  const MapLaw* law;              // direct summation, or
  const CutoffMapLaw* cutoff_law; // cutoff summation over `bins`
  const AtomBins* bins;
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

// exp(k v) for k v <= 0, the laws' only use of it (Debye-Hueckel's exp(-kappa r)). float32:
// 2^t with t = (k log2 e) v split into n = round(t) and f = t - n in [-1/2, 1/2]; 2^f from a
// degree-5 minimax polynomial for relative error over that interval (Remez: 7.5e-8 in exact
// arithmetic; evaluated by float32 FMAs 2.1e-7 at most, 8e-8 RMS, against degree 6's 7.9e-8
// and 2.7e-8: the maps' float32 error against float64 stays 3.0e-7 to 3.8e-7 on random atoms,
// bench_map_cpu, and one FMA goes), 2^n added to its exponent bits. t is
// clamped at -125 so that the exponent stays normal: past exp(-86.6) (r > 700 A at 0.15 M)
// the factor is 2^-125 instead of smaller, 1e-38 of the atom's term. n comes from adding
// 1.5 * 2^23, which leaves round-to-nearest(t) in the low mantissa bits (|t| < 2^22): those
// bits shifted to the exponent's place are n << 23 (the constant's own bits shift out), and
// subtracting the constant again gives n as a float, exactly; one uop fewer than Round and
// ConvertTo (vrndscaleps is two). 10 operations against hn::Exp's ~27 and the multiply by k
// (its range checks and two-step scaling, which t <= 0 does not need): the Debye-Hueckel loop
// went from 9 to 12-13 times the scalar loop a core with the first version of this (Round,
// degree 6), and about 1.3 times faster again with these two changes (docs/performance.md).
// float64: hn::Exp.
template <class D>
HWY_INLINE hn::Vec<D> exp_scaled_nonpositive(D d, double k, hn::Vec<D> v) {
  if constexpr (!std::is_same_v<hn::TFromD<D>, float>) {
    return hn::Exp(d, hn::Mul(hn::Set(d, k), v));
  } else {
    const hn::RebindToSigned<D> di;
    const auto t = hn::Max(hn::Mul(v, hn::Set(d, static_cast<float>(k * 1.4426950408889634))), hn::Set(d, -125.0f));
    const auto shifter = hn::Set(d, 12582912.0f);  // 1.5 * 2^23
    const auto rounded = hn::Add(t, shifter);      // n in the low mantissa bits
    const auto f = hn::Sub(t, hn::Sub(rounded, shifter));
    auto p = hn::Set(d, 1.3276472e-3f);
    p = hn::MulAdd(p, f, hn::Set(d, 9.675541e-3f));
    p = hn::MulAdd(p, f, hn::Set(d, 5.550713e-2f));
    p = hn::MulAdd(p, f, hn::Set(d, 0.2402212f));
    p = hn::MulAdd(p, f, hn::Set(d, 0.69314694f));
    p = hn::MulAdd(p, f, hn::Set(d, 1.0000001f));
    return hn::BitCast(d, hn::Add(hn::BitCast(di, p), hn::ShiftLeft<23>(hn::BitCast(di, rounded))));
  }
}

template <class D>
struct SimdMath {
  D d;
  HWY_INLINE hn::Vec<D> set(double v) const { return hn::Set(d, static_cast<hn::TFromD<D>>(v)); }
  HWY_INLINE hn::Vec<D> exp_scaled(double k, hn::Vec<D> v) const { return exp_scaled_nonpositive(d, k, v); }
  HWY_INLINE hn::Vec<D> below(hn::Vec<D> r2, double limit, hn::Vec<D> value) const {
    return hn::IfThenElseZero(hn::Lt(r2, set(limit)), value);
  }
  HWY_INLINE hn::Vec<D> unit_ramp(hn::Vec<D> v) const { return hn::Max(v, hn::Zero(d)); }  // v <= 1
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
template <Smoothing S>
inline CutoffLaw<S> scaled_law(const CutoffLaw<S>& law, double length_unit) {
  return CutoffLaw<S>{law.cutoff / length_unit};
}

// Vectors of points per unroll-and-jam block: AVX-512 has 32 registers, others 16.
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL || HWY_TARGET == HWY_AVX3_ZEN4
constexpr int kMaxVectors = 8;
#else
constexpr int kMaxVectors = 4;
#endif
// Points per block in cutoff summation (see sum_rows): 16, as many vectors as that takes (one
// with AVX-512, two with AVX2). Measured on the 2-core AVX-512 machine with bench_map_cutoff:
// anchor input 0.79 s with 1, 0.81 s with 2, 0.85 s with 4 vectors of 16; a 79 A water box 0.81,
// 0.87, 0.99 s. With each block's atoms selected (select_block_atoms, session 27) 2 vectors were
// still slower: 0.63 -> 0.72 s and 0.60 -> 0.78 s. On a 2-core AMD EPYC with AVX2 (session 28,
// two interleaved runs each): blocks of 8 points 0.79-0.85 s on the anchor input, 16 points
// 0.66-0.84, 32 points 0.74-0.76; the 79 A box 0.83-0.89, 0.72-0.79, 0.84-0.86 s: a block's
// selection and its atoms' loads are paid once for 16 points.
constexpr std::int64_t kCutoffBlockPoints = 16;
template <class Real>
constexpr std::int64_t cutoff_vectors() {
  constexpr auto lanes = static_cast<std::int64_t>(hn::MaxLanes(hn::ScalableTag<Real>()));
  return std::clamp<std::int64_t>(kCutoffBlockPoints / lanes, 1, 4);
}
// Atoms per float32 partial sum before it is added to the float64 row sum.
constexpr std::int64_t kChunk = 512;
// Cutoff summation gathers atoms once for a bundle of this many consecutive rows along y (aligned
// to multiples of it, so that a row's atoms never depend on how the rows were split into slabs),
// each row then summing the atoms within the cutoff of any row of its bundle: the gather, a third
// of the time with one row a gather, is shared by four, for 4% more evaluations (the bundle's
// stadium of 1.5 spacings against a circle of the cutoff's radius, 12 A at 0.5 A spacing), all
// beyond the row's cutoff and so adding exact zeros. Measured on the 2-core AVX-512 machine
// (bench_map_cutoff --quick, fastest of four interleaved runs): Parboil's input 0.890 -> 0.656 s,
// water boxes of 50 and 79 A 0.206 -> 0.178 s and 0.908 -> 0.722 s; bundles of 8 were no faster.
constexpr std::int64_t kCutoffBundle = 4;

// Per-atom values that do not change along the lattice: z split into the nearest lattice
// index and a residual (lattice units), and the coefficient in law units. For cutoff sums the
// same columns again in the bins' order (`binned`), so that a row's gather reads them in
// sequence instead of through the bins' atom indices.
template <class Real>
struct AtomColumns {
  std::vector<Real> z_index, z_residual, coefficient;
  std::vector<double> x, y;  // lattice units, float64: each row's dx, dy start from these
};

// The atoms one lattice row sums over (all of them, or those of the bins within the cutoff
// of the row, grouped by z bin), with their row-dependent dx^2 + dy^2.
template <class Real>
struct RowScratch {
  std::vector<Real> z_index, z_residual, coefficient;  // gathered atoms, lattice units
  std::vector<Real> dxy2;  // each row of the bundle's dx^2 + dy^2 of the gathered atoms, row r from r * stride
  std::int64_t stride = 0;
  std::int64_t count = 0;
  std::vector<std::int64_t> z_bin_start;  // cutoff: gathered atoms of z bin b from z_bin_start[b]
  std::vector<std::int64_t> on_axis[kCutoffBundle];  // atoms within singular_distance of each row's axis
  std::vector<double> sum[kCutoffBundle];  // float64 sums along the row (cutoff sums: each row of the bundle's)
  // Cutoff sums: one block's atoms, those whose sphere reaches the block's points in some row
  // of the bundle (block_*; their dx^2 + dy^2 for each row), and where each kChunk of the
  // gathered atoms ends among them.
  std::vector<Real> block_z_index, block_z_residual, block_coefficient, block_dxy2[kCutoffBundle];
  std::vector<std::int64_t> block_chunk_end;
  HWY_ALIGN Real lanes[kMaxVectors * hn::MaxLanes(hn::ScalableTag<Real>())];
};

// The atoms a sum reads, each array from the same index.
template <class Real>
struct AtomSpan {
  const Real* dxy2;
  const Real* z_index;
  const Real* z_residual;
  const Real* coefficient;
};

// An on-axis atom's dxy2 in the SIMD pass: 1e30 lattice units^2 (1e15 spacings away) makes
// its term at most 1e-15 of a unit charge's at one spacing, far below float32 rounding; it
// is summed exactly, in float64, afterwards.
constexpr double kFarAway = 1e30;

// The laws that can take r^2 in lattice units, with the law rescaled once (`of`), so that the
// multiply taking r^2 to law units leaves the inner loop; kLawUnit is a power of two, so every
// product and comparison is the same to the bit:
// - the cutoff laws that read r^2 only against the cutoff (none, and cutcp's 1 - r^2/c^2), their
//   cutoff in lattice units (one of the loop's 13 vector operations a vector of points on AVX2);
// - Debye-Hueckel, whose distance r^2 (1/r) is then kLawUnit^2 times the law's and its kappa a
//   kLawUnit^2-th: the exponent's argument, kappa log2(e) r, is the same product of two
//   power-of-two multiples (one of ~25 operations a vector; maps byte-identical, checked with cmp
//   on hca's and 1a63's mdh maps at two spacings).
template <class Law>
struct ReadsLatticeR2 : std::false_type {};
template <Smoothing S>
  requires(S == Smoothing::none || S == Smoothing::cutcp)
struct ReadsLatticeR2<CutoffLaw<S>> : std::true_type {
  static CutoffLaw<S> of(const CutoffLaw<S>& law) { return CutoffLaw<S>{law.cutoff * kLawUnit}; }
};
template <>
struct ReadsLatticeR2<DebyeHuckelLaw> : std::true_type {
  static DebyeHuckelLaw of(const DebyeHuckelLaw& law) { return DebyeHuckelLaw{law.kappa / (kLawUnit * kLawUnit)}; }
};
static_assert(kLawUnit == 2.0, "ReadsLatticeR2's exactness needs a power of two");
static_assert(kCutoffBundle == 4, "select_block_atoms is instantiated for 1 to 4 rows");

// Adds the atoms [begin, end) to NV vectors of points starting at k0.
template <int NV, class Real, class Law>
HWY_INLINE void accumulate_block(const Law& law, RowScratch<Real>& s, std::vector<double>& sum,
                                 const AtomSpan<Real>& atoms, std::int64_t begin, std::int64_t end, std::int64_t k0) {
  const hn::ScalableTag<Real> d;
  const SimdMath<hn::ScalableTag<Real>> math{d};
  const std::int64_t lanes = static_cast<std::int64_t>(hn::Lanes(d));
  hn::Vec<decltype(d)> z[NV], acc[NV];
  for (int u = 0; u < NV; ++u) {
    z[u] = hn::Add(hn::Iota(d, 0), hn::Set(d, static_cast<Real>(k0 + u * lanes)));  // exact integers
    acc[u] = hn::Zero(d);
  }
  const Real* HWY_RESTRICT dxy2 = atoms.dxy2;
  const Real* HWY_RESTRICT z_index = atoms.z_index;
  const Real* HWY_RESTRICT z_residual = atoms.z_residual;
  const Real* HWY_RESTRICT coefficient = atoms.coefficient;
  for (std::int64_t n = begin; n < end; ++n) {
    const auto atom_dxy2 = hn::Set(d, dxy2[n]);
    const auto atom_z_index = hn::Set(d, z_index[n]);
    const auto atom_z_residual = hn::Set(d, z_residual[n]);
    const auto atom_coefficient = hn::Set(d, coefficient[n]);
    for (int u = 0; u < NV; ++u) {
      const auto dz = hn::Sub(hn::Sub(z[u], atom_z_index), atom_z_residual);  // first Sub exact
      const auto r2 = hn::MulAdd(dz, dz, atom_dxy2);  // lattice units
      const auto rinv = two_over_sqrt(d, r2);            // law units
      if constexpr (ReadsLatticeR2<Law>::value) {
        const Law lattice_law = ReadsLatticeR2<Law>::of(law);
        acc[u] = hn::Add(acc[u], HWY_NAMESPACE::law_term(lattice_law, math, atom_coefficient, r2, rinv));
      } else {
        const auto law_r2 = hn::Mul(r2, hn::Set(d, static_cast<Real>(1.0 / (kLawUnit * kLawUnit))));
        acc[u] = hn::Add(acc[u], HWY_NAMESPACE::law_term(law, math, atom_coefficient, law_r2, rinv));
      }
    }
  }
  for (int u = 0; u < NV; ++u) hn::Store(acc[u], d, s.lanes + u * lanes);
  const std::int64_t nz = static_cast<std::int64_t>(sum.size());
  const std::int64_t last = std::min<std::int64_t>(nz, k0 + NV * lanes);
  for (std::int64_t k = k0; k < last; ++k) sum[k] += static_cast<double>(s.lanes[k - k0]);
}

// Atoms per float32 partial sum (float64 needs no chunks: one pass over the atoms).
template <class Real>
std::int64_t chunk_of(std::int64_t atoms) {
  return std::is_same_v<Real, float> ? kChunk : std::max<std::int64_t>(atoms, 1);
}

// Adds the gathered atoms [first, last) to NV vectors of points starting at k0.
template <int NV, class Real, class Law>
HWY_INLINE void sum_block(const Law& law, RowScratch<Real>& s, const Real* dxy2, std::int64_t first, std::int64_t last,
                          std::int64_t k0) {
  const AtomSpan<Real> atoms{dxy2, s.z_index.data(), s.z_residual.data(), s.coefficient.data()};
  const std::int64_t chunk = chunk_of<Real>(last - first);
  for (std::int64_t begin = first; begin < last; begin += chunk)
    accumulate_block<NV>(law, s, s.sum[0], atoms, begin, std::min(last, begin + chunk), k0);
}

// Highway 1.0's CompressStore (Debian 12's libhwy 1.0.3) builds, on AVX2 and SSE4, its table of
// lane indices (1 KB for 8 floats) on the stack at every call: a constexpr array that is not
// static. On an AMD EPYC with AVX2 the copies (`rep movsq`) took 70% of a cutoff map's samples
// and made the maps 3.3 times slower than 685aaee's, before the selection. There the keep mask's
// bits pick a row of a static table instead, one permute a vector; AVX-512 (a compress
// instruction) and scalable vectors keep CompressStore.
#if HWY_HAVE_SCALABLE || HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL || HWY_TARGET == HWY_AVX3_ZEN4
constexpr bool kNativeCompress = true;
#else
constexpr bool kNativeCompress = false;
#endif

// For each mask of N lanes, the indices of its set lanes in order, then zeros.
template <class TI, std::size_t N>
struct CompressIndices {
  TI index[std::size_t{1} << N][N]{};
  constexpr CompressIndices() {
    for (std::size_t mask = 0; mask < (std::size_t{1} << N); ++mask)
      for (std::size_t lane = 0, kept = 0; lane < N; ++lane)
        if ((mask >> lane) & 1) index[mask][kept++] = static_cast<TI>(lane);
  }
};
template <class TI, std::size_t N>
inline constexpr CompressIndices<TI, N> kCompressIndices{};

// The lanes of `keep` moved to the front of each vector given to store(), in order.
template <class D>
class KeptLanes {
 public:
  KeptLanes(D d, hn::Mask<D> keep) : d_(d), keep_(keep) {
    if constexpr (kNativeCompress) {
      count_ = hn::CountTrue(d, keep);
    } else {
      static_assert(hn::MaxLanes(D()) <= 8, "a mask's bits index the table by one byte");
      std::uint8_t bits[8] = {};
      hn::StoreMaskBits(d, keep, bits);
      const hn::RebindToSigned<D> di;
      const auto& table = kCompressIndices<hn::TFromD<decltype(di)>, hn::MaxLanes(D())>;
      indices_ = hn::IndicesFromVec(d, hn::LoadU(di, table.index[bits[0]]));
      count_ = static_cast<std::size_t>(std::popcount(bits[0]));
    }
  }
  std::size_t count() const { return count_; }
  // Writes a whole vector at `out`: the arrays are padded by one.
  void store(hn::Vec<D> v, hn::TFromD<D>* HWY_RESTRICT out) const {
    if constexpr (kNativeCompress) hn::CompressStore(v, keep_, d_, out);
    else hn::StoreU(hn::TableLookupLanes(v, indices_), d_, out);
  }

 private:
  D d_;
  hn::Mask<D> keep_;
  decltype(hn::IndicesFromVec(D(), hn::Zero(hn::RebindToSigned<D>()))) indices_{};
  std::size_t count_ = 0;
};

// Cutoff sums: of the gathered atoms [first, last), keeps in s.block_* those within `reach2` of
// some point k0..k_last of one of the bundle's rows r_first..r_first + Rows - 1 (dx^2 + dy^2 of
// the row, dxy2 + r * stride, plus the squared distance along z to the block), in order, with
// each row's dx^2 + dy^2, and where each chunk of kChunk gathered atoms ends among them. A block's
// z bins hold every atom within the cutoff of its points, but most of them only for some of its
// rows' points: at 12 A and 16 points of 0.5 A, ~40% of a block's pairs lie beyond the cutoff
// for every one of its points (a cylinder of the cutoff's radius and the block's length grown by
// the cutoff and the bins, against the spheres). Those add exact zeros, so leaving them out
// changes no bit, the chunks being the same gathered atoms as before; so do the atoms a row sums
// because they reach another row's points (session 31: one selection for the bundle's rows
// instead of one a row, which took ~19% of a map's time on AVX2; the extra evaluations, each an
// exact zero, cost less: the 50 A water box 0.157 -> 0.135-0.147 s).
template <int Rows, class Real>
HWY_INLINE void select_block_atoms(RowScratch<Real>& s, const Real* dxy2, std::int64_t r_first, std::int64_t first,
                                   std::int64_t last, std::int64_t k0, std::int64_t k_last, double reach2) {
  const hn::ScalableTag<Real> d;
  const std::int64_t lanes = static_cast<std::int64_t>(hn::Lanes(d));
  const std::int64_t chunk = chunk_of<Real>(last - first);
  const auto low = hn::Set(d, static_cast<Real>(k0)), high = hn::Set(d, static_cast<Real>(k_last));
  const auto limit = hn::Set(d, static_cast<Real>(reach2));
  const Real* HWY_RESTRICT z_index = s.z_index.data();
  const Real* HWY_RESTRICT z_residual = s.z_residual.data();
  const Real* HWY_RESTRICT coefficient = s.coefficient.data();
  const Real* HWY_RESTRICT row_dxy2[Rows];
  Real* HWY_RESTRICT out_dxy2[Rows];
  for (int r = 0; r < Rows; ++r) {
    row_dxy2[r] = dxy2 + (r_first + r) * s.stride;
    out_dxy2[r] = s.block_dxy2[r].data();
  }
  Real* HWY_RESTRICT out_z_index = s.block_z_index.data();
  Real* HWY_RESTRICT out_z_residual = s.block_z_residual.data();
  Real* HWY_RESTRICT out_coefficient = s.block_coefficient.data();
  s.block_chunk_end.clear();
  std::int64_t kept = 0;
  // Chunk by chunk (their boundaries fall on whole vectors), so that the inner loop holds no
  // division and no push_back, whose possible reallocation kept the output pointers on the stack.
  for (std::int64_t chunk_first = first; chunk_first < last; chunk_first += chunk) {
    const std::int64_t chunk_last = std::min(last, chunk_first + chunk);
    for (std::int64_t i = chunk_first; i < chunk_last; i += lanes) {
      const auto zi = hn::LoadU(d, z_index + i), zr = hn::LoadU(d, z_residual + i);
      // Distances along z to the block's ends, exact to one rounding (integers first), as the sums'
      // dz; the arrays are padded by a vector, so the last load stays inside them.
      const auto below = hn::Sub(hn::Sub(low, zi), zr), above = hn::Add(hn::Sub(zi, high), zr);
      const auto gap = hn::Max(hn::Max(below, above), hn::Zero(d));
      hn::Vec<decltype(d)> row[Rows];
      row[0] = hn::LoadU(d, row_dxy2[0] + i);
      auto nearest = row[0];
      for (int r = 1; r < Rows; ++r) {
        row[r] = hn::LoadU(d, row_dxy2[r] + i);
        nearest = hn::Min(nearest, row[r]);
      }
      const auto keep = hn::And(hn::FirstN(d, static_cast<std::size_t>(std::min(lanes, chunk_last - i))),
                                hn::Lt(hn::MulAdd(gap, gap, nearest), limit));
      const KeptLanes<decltype(d)> kept_lanes(d, keep);
      kept_lanes.store(zi, out_z_index + kept);
      kept_lanes.store(zr, out_z_residual + kept);
      kept_lanes.store(hn::LoadU(d, coefficient + i), out_coefficient + kept);
      for (int r = 0; r < Rows; ++r) kept_lanes.store(row[r], out_dxy2[r] + kept);
      kept += static_cast<std::int64_t>(kept_lanes.count());
    }
    s.block_chunk_end.push_back(kept);
  }
  if (first >= last) s.block_chunk_end.push_back(kept);
}

// Adds the atoms select_block_atoms kept to NV vectors of points starting at k0 of the bundle's
// row r_first + r (its r-th selected row), chunk by chunk of the gathered atoms (empty chunks add
// nothing).
template <int NV, class Real, class Law>
HWY_INLINE void sum_selected_block(const Law& law, RowScratch<Real>& s, int r, std::vector<double>& sum,
                                   std::int64_t k0) {
  const AtomSpan<Real> atoms{s.block_dxy2[r].data(), s.block_z_index.data(), s.block_z_residual.data(),
                             s.block_coefficient.data()};
  std::int64_t begin = 0;
  for (const std::int64_t end : s.block_chunk_end) {
    if (end > begin) accumulate_block<NV>(law, s, sum, atoms, begin, end, k0);
    begin = end;
  }
}

// The cutoff laws are summed over binned atoms, the direct ones over every atom: each sum_rows
// instantiation compiles one of the two paths (the other, five Highway targets over, was half of
// this file's compile time for nothing).
template <class Law>
inline constexpr bool kBinnedLaw = false;
template <Smoothing S>
inline constexpr bool kBinnedLaw<CutoffLaw<S>> = true;

template <class Real, class Law>
void sum_rows(const CpuJob& job, const Law& law) {
  const PreparedAtoms& atoms = *job.atoms;
  const AtomBins* bins = job.bins;
  constexpr bool binned_law = kBinnedLaw<Law>;
  if (binned_law != (bins != nullptr)) throw Error("internal: a cutoff law without bins, or a direct law with them");
  const RowRange& rows = *job.rows;
  const Lattice& lattice = *rows.lattice;
  const std::int64_t ny = lattice.dims[1], nz = lattice.dims[2];
  const double h = lattice.spacing;
  const std::int64_t natoms = atoms.size();
  const double singular_r2 = singular_distance * singular_distance;
  const std::int64_t lanes = static_cast<std::int64_t>(hn::Lanes(hn::ScalableTag<Real>()));
  const std::int64_t total = rows.row_end - rows.row_begin;
  ParallelProgress progress(rows.progress, total);
  const Law scaled = scaled_law(law, kLawUnit * h);

  AtomColumns<Real> columns;
  columns.z_index.resize(natoms);
  columns.z_residual.resize(natoms);
  columns.coefficient.resize(natoms);
  columns.x.resize(natoms);
  columns.y.resize(natoms);
  const double inv_h = 1.0 / h;
  for (std::int64_t n = 0; n < natoms; ++n) {
    const double z = atoms.z[n] / h, z_index = std::nearbyint(z);
    columns.z_index[n] = static_cast<Real>(z_index);
    columns.z_residual[n] = static_cast<Real>(z - z_index);
    columns.coefficient[n] = static_cast<Real>(atoms.coefficient[n] / (kLawUnit * h));
    columns.x[n] = atoms.x[n] * inv_h;
    columns.y[n] = atoms.y[n] * inv_h;
  }
  const double singular_r2_lattice = singular_r2 / (h * h);
  AtomColumns<Real> binned;  // cutoff sums: the columns in the bins' order
  if constexpr (binned_law) {
    const std::size_t count = bins->atoms.size();
    for (auto* v : {&binned.z_index, &binned.z_residual, &binned.coefficient}) v->resize(count);
    binned.x.resize(count), binned.y.resize(count);
    for (std::size_t i = 0; i < count; ++i) {
      const auto n = static_cast<std::size_t>(bins->atoms[i]);
      binned.z_index[i] = columns.z_index[n], binned.z_residual[i] = columns.z_residual[n];
      binned.coefficient[i] = columns.coefficient[n], binned.x[i] = columns.x[n], binned.y[i] = columns.y[n];
    }
  }

  // The units of work: one row each for direct sums; for cutoff sums the rows of the range in
  // one bundle (kCutoffBundle consecutive rows along y, aligned in the x plane), which share a
  // gather made for the whole bundle, even where the range holds only some of its rows.
  const std::int64_t bundle = binned_law ? kCutoffBundle : 1;
  std::vector<std::int64_t> unit_start;
  for (std::int64_t row = rows.row_begin; row < rows.row_end;) {
    unit_start.push_back(row);
    const std::int64_t j = row % ny, bundle_end = row - j % bundle + bundle;
    row = std::min({rows.row_end, bundle_end, row - j + ny});
  }
  unit_start.push_back(rows.row_end);
  const auto units = static_cast<std::int64_t>(unit_start.size()) - 1;
  // Each thread's lists hold every atom (a row may gather all of them) with a dx^2 + dy^2 for
  // each row of its bundle, and for cutoff sums a block's selection of them (3 values and a
  // dx^2 + dy^2 for each row of the bundle): checked before the threads allocate them.
  const std::int64_t padding = static_cast<std::int64_t>(hn::MaxLanes(hn::ScalableTag<Real>()));  // whole-vector loads
  check_memory(static_cast<std::uint64_t>(job.threads) * static_cast<std::uint64_t>(natoms + 1 + padding) *
                   static_cast<std::uint64_t>(3 + bundle + (bins ? 3 + bundle : 0)) * sizeof(Real),
               "the CPU path's per-thread lists of atoms (" + std::to_string(job.threads) + " threads, " +
                   std::to_string(natoms) + " atoms)");

  // A block leaves out atoms beyond this of all its points (lattice units^2): the cutoff, a
  // little beyond so that float32 rounding never leaves out a term the law keeps (the sums'
  // r^2 and this test round differently; both err by ~1e-7 relative).
  const double block_reach2 = bins ? (bins->cutoff / h) * (bins->cutoff / h) * (1 + 1e-5) + 1e-4 : 0;
#pragma omp parallel num_threads(job.threads)
  {
    RowScratch<Real> s;
    // One slot more than the atoms: the cutoff gather writes every candidate at the next free
    // slot and moves on only if it is within the cutoff; and a vector more, since its SIMD part
    // writes whole vectors there.
    s.stride = natoms + 1 + padding;
    s.dxy2.resize(static_cast<std::size_t>(bundle * s.stride + padding));
    s.z_index.resize(natoms + 1 + padding);
    s.z_residual.resize(natoms + 1 + padding);
    s.coefficient.resize(natoms + 1 + padding);
    for (std::int64_t r = 0; r < bundle; ++r) s.sum[r].resize(nz);
    if (bins) {
      s.z_bin_start.resize(bins->dims[2] + 1);
      for (auto* v : {&s.block_z_index, &s.block_z_residual, &s.block_coefficient})
        v->resize(natoms + 1 + padding);  // CompressStore may write a whole vector
      for (std::int64_t r = 0; r < bundle; ++r) s.block_dxy2[r].resize(natoms + 1 + padding);
    }
#pragma omp for schedule(dynamic, 1)
    for (std::int64_t unit = 0; unit < units; ++unit) {
      if (progress.cancelled()) continue;  // a progress callback asked to stop
      const std::int64_t unit_first = unit_start[static_cast<std::size_t>(unit)],
                         unit_last = unit_start[static_cast<std::size_t>(unit + 1)];
      // The bundle's rows in lattice units: x, y of the points are integers; y from y0 to
      // y0 + rows_in_bundle - 1 (the whole aligned bundle, whichever of its rows are summed).
      const double x = static_cast<double>(unit_first / ny);
      const std::int64_t j0 = unit_first % ny - (unit_first % ny) % bundle;
      const std::int64_t rows_in_bundle = std::min(bundle, ny - j0);
      const double y0 = static_cast<double>(j0);
      s.count = 0;
      for (auto& list : s.on_axis) list.clear();
      if constexpr (!binned_law) {
        for (std::int64_t n = 0; n < natoms; ++n) {
          const double dx = x - columns.x[n], dy = y0 - columns.y[n];
          double dxy2 = dx * dx + dy * dy;
          if (dxy2 <= singular_r2_lattice) {  // may sit on a lattice point of this row
            s.on_axis[0].push_back(n);
            dxy2 = kFarAway;
          }
          s.dxy2[n] = static_cast<Real>(dxy2);
          s.z_index[n] = columns.z_index[n];
          s.z_residual[n] = columns.z_residual[n];
          s.coefficient[n] = columns.coefficient[n];
        }
        s.count = natoms;
      } else {
        // The bins whose x, y range comes within the cutoff of the bundle's axes, z bin by z
        // bin, keeping the atoms within the cutoff of any of the axes.
        const double cutoff = bins->cutoff, cutoff2_lattice = (cutoff * inv_h) * (cutoff * inv_h);
        auto bin_range = [&](double low, double high, int axis, std::int64_t& lo, std::int64_t& hi) {
          lo = std::max<std::int64_t>(0, static_cast<std::int64_t>(std::floor((low - cutoff - bins->lower[axis]) / bins->size)));
          hi = std::min<std::int64_t>(bins->dims[axis] - 1,
                                      static_cast<std::int64_t>(std::floor((high + cutoff - bins->lower[axis]) / bins->size)));
        };
        std::int64_t bx_lo, bx_hi, by_lo, by_hi;
        bin_range(x * h, x * h, 0, bx_lo, bx_hi);
        bin_range(y0 * h, (y0 + static_cast<double>(rows_in_bundle - 1)) * h, 1, by_lo, by_hi);
        // Without a branch on the cutoff test, which a row's candidates pass about half the
        // time (mispredicted, it took half the map's time): each candidate is written to the
        // next free slot, which it keeps only when within the cutoff. The order of the atoms
        // depends on the bundle alone.
        const double* HWY_RESTRICT bx_of = binned.x.data();
        const double* HWY_RESTRICT by_of = binned.y.data();
        // Every pointer and bound in locals: through the vectors and the captured references
        // the compiler reloaded eight of them per candidate (perf annotate: a third of the
        // gather's instructions), since the rare on-axis push_back may change memory.
        const Real* HWY_RESTRICT z_index_of = binned.z_index.data();
        const Real* HWY_RESTRICT z_residual_of = binned.z_residual.data();
        const Real* HWY_RESTRICT coefficient_of = binned.coefficient.data();
        Real* HWY_RESTRICT out_dxy2 = s.dxy2.data();
        Real* HWY_RESTRICT out_z_index = s.z_index.data();
        Real* HWY_RESTRICT out_z_residual = s.z_residual.data();
        Real* HWY_RESTRICT out_coefficient = s.coefficient.data();
        const std::int64_t stride = s.stride;
        const double on_axis_r2 = singular_r2_lattice;
        const hn::ScalableTag<double> dd;
        const hn::Rebind<Real, decltype(dd)> dr;  // as many lanes as dd
        const auto gather_lanes = static_cast<std::int64_t>(hn::Lanes(dd));
        const auto gather_x = hn::Set(dd, x), gather_y0 = hn::Set(dd, y0);
        const auto gather_on_axis = hn::Set(dd, on_axis_r2), gather_cutoff2 = hn::Set(dd, cutoff2_lattice);
        // `count` rows a candidate: a compile-time constant for whole bundles, so the loop over
        // them unrolls.
        auto walk_bins = [&](auto count) {
        for (std::int64_t bz = 0; bz < bins->dims[2]; ++bz) {
          s.z_bin_start[bz] = s.count;
          if (bx_lo > bx_hi) continue;  // the row's axis is beyond the bins (bx_lo may be past the last)
          for (std::int64_t by = by_lo; by <= by_hi; ++by) {
            // The bins bx_lo..bx_hi of one (by, bz) are contiguous in the bins' atom order.
            const std::int64_t b = (bz * bins->dims[1] + by) * bins->dims[0];
            const std::int64_t from = bins->start[b + bx_lo], to = bins->start[b + bx_hi + 1];
            std::int64_t m = s.count;
            auto gather_one = [&](std::int64_t i) {
              const double dx = x - bx_of[i], dx2 = dx * dx, dy0 = y0 - by_of[i];
              double nearest = HUGE_VAL;
              for (std::int64_t r = 0; r < static_cast<std::int64_t>(count); ++r) {
                const double dy = dy0 + static_cast<double>(r), dxy2 = dx2 + dy * dy;
                nearest = std::min(nearest, dxy2);
                if (dxy2 <= on_axis_r2) [[unlikely]] {  // may sit on a lattice point of row r
                  s.on_axis[r].push_back(bins->atoms[i]);
                  out_dxy2[r * stride + m] = static_cast<Real>(kFarAway);
                } else {
                  out_dxy2[r * stride + m] = static_cast<Real>(dxy2);
                }
              }
              out_z_index[m] = z_index_of[i];
              out_z_residual[m] = z_residual_of[i];
              out_coefficient[m] = coefficient_of[i];
              m += nearest < cutoff2_lattice ? 1 : 0;
            };
            // A vector of candidates at a time: the same float64 operations lane by lane as
            // gather_one's (its dx2 + dy * dy a multiply-add: this file is compiled with
            // -ffp-contract=fast), so the same values and the same order of the kept atoms; a
            // vector with an atom near a row's axis goes through gather_one instead.
            std::int64_t i = from;
            for (; i + gather_lanes <= to; i += gather_lanes) {
              const auto dx = hn::Sub(gather_x, hn::LoadU(dd, bx_of + i));
              const auto dy0 = hn::Sub(gather_y0, hn::LoadU(dd, by_of + i));
              const auto dx2 = hn::Mul(dx, dx);
              hn::Vec<decltype(dd)> row[kCutoffBundle];
              auto nearest = hn::Set(dd, HUGE_VAL);
              for (std::int64_t r = 0; r < static_cast<std::int64_t>(count); ++r) {
                const auto dy = hn::Add(dy0, hn::Set(dd, static_cast<double>(r)));
                row[r] = hn::MulAdd(dy, dy, dx2);  // as -ffp-contract=fast fuses gather_one's
                nearest = hn::Min(nearest, row[r]);
              }
              if (!hn::AllFalse(dd, hn::Le(nearest, gather_on_axis))) [[unlikely]] {
                for (std::int64_t j = i; j < i + gather_lanes; ++j) gather_one(j);
                continue;
              }
              std::uint8_t bits[8] = {};
              hn::StoreMaskBits(dd, hn::Lt(nearest, gather_cutoff2), bits);
              const KeptLanes<decltype(dr)> kept(dr, hn::LoadMaskBits(dr, bits));
              for (std::int64_t r = 0; r < static_cast<std::int64_t>(count); ++r) {
                if constexpr (std::is_same_v<Real, double>) kept.store(row[r], out_dxy2 + r * stride + m);
                else kept.store(hn::DemoteTo(dr, row[r]), out_dxy2 + r * stride + m);
              }
              kept.store(hn::LoadU(dr, z_index_of + i), out_z_index + m);
              kept.store(hn::LoadU(dr, z_residual_of + i), out_z_residual + m);
              kept.store(hn::LoadU(dr, coefficient_of + i), out_coefficient + m);
              m += static_cast<std::int64_t>(kept.count());
            }
            for (; i < to; ++i) gather_one(i);
            s.count = m;
          }
        }
        };
        if (rows_in_bundle == kCutoffBundle) walk_bins(std::integral_constant<std::int64_t, kCutoffBundle>{});
        else walk_bins(rows_in_bundle);
        s.z_bin_start[bins->dims[2]] = s.count;
      }
      // Atoms on a row's axis, in float64, leaving out the one lattice point (if any) within
      // singular_distance (see nbkit::singular_distance); then the row's potentials out.
      auto finish_row = [&](std::int64_t row, std::vector<double>& sum) {
        const std::int64_t r = row % ny - j0;
        const double y = y0 + static_cast<double>(r);
        const ScalarMath<double> scalar_math;
        for (const std::int64_t n : s.on_axis[r]) {
          const double dx = x * h - atoms.x[n], dy = y * h - atoms.y[n];
          for (std::int64_t k = 0; k < nz; ++k) {
            const double dz = static_cast<double>(k) * h - atoms.z[n];
            const double r2 = dx * dx + dy * dy + dz * dz;
            if (r2 <= singular_r2) continue;
            sum[k] += maps::law_term(law, scalar_math, atoms.coefficient[n], r2, 1.0 / std::sqrt(r2));
          }
        }
        double* out = rows.out + (row - rows.row_begin) * nz;
        for (std::int64_t k = 0; k < nz; ++k) out[k] = rows.prefactor * sum[k];
        progress.done_one();
      };
      if constexpr (!binned_law) {
        const Real* dxy2 = s.dxy2.data();
        std::vector<double>& sum = s.sum[0];
        std::fill(sum.begin(), sum.end(), 0.0);
        for (std::int64_t k0 = 0; k0 < nz; k0 += kMaxVectors * lanes) {
          const std::int64_t vectors = std::min<std::int64_t>(kMaxVectors, (nz - k0 + lanes - 1) / lanes);
          switch (vectors) {
            case 1: sum_block<1>(scaled, s, dxy2, 0, s.count, k0); break;
            case 2: sum_block<2>(scaled, s, dxy2, 0, s.count, k0); break;
            case 3: sum_block<3>(scaled, s, dxy2, 0, s.count, k0); break;
            case 4: sum_block<4>(scaled, s, dxy2, 0, s.count, k0); break;
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL || HWY_TARGET == HWY_AVX3_ZEN4
            case 5: sum_block<5>(scaled, s, dxy2, 0, s.count, k0); break;
            case 6: sum_block<6>(scaled, s, dxy2, 0, s.count, k0); break;
            case 7: sum_block<7>(scaled, s, dxy2, 0, s.count, k0); break;
            case 8: sum_block<8>(scaled, s, dxy2, 0, s.count, k0); break;
#endif
            default: break;
          }
        }
        finish_row(unit_first, sum);
      } else {
        // Cutoff sums: the unit's rows (r_first.. of the bundle) block by block, each block's z bins
        // within the cutoff of its points and, of their atoms, those that reach one of the rows,
        // selected once for all of them. A shorter block than the direct sums' wastes fewer
        // evaluations beyond the cutoff.
        const std::int64_t r_first = unit_first % ny - j0, unit_rows = unit_last - unit_first;
        for (std::int64_t r = 0; r < unit_rows; ++r) std::fill(s.sum[r].begin(), s.sum[r].end(), 0.0);
        const std::int64_t block_vectors = cutoff_vectors<Real>();
        for (std::int64_t k0 = 0; k0 < nz; k0 += block_vectors * lanes) {
          const std::int64_t vectors = std::min<std::int64_t>(block_vectors, (nz - k0 + lanes - 1) / lanes);
          const std::int64_t k_last = std::min(nz - 1, k0 + vectors * lanes - 1);
          const double z_first = static_cast<double>(k0) * h, z_last = static_cast<double>(k_last) * h;
          const std::int64_t bz_lo = std::max<std::int64_t>(
              0, static_cast<std::int64_t>(std::floor((z_first - bins->cutoff - bins->lower.z) / bins->size)));
          const std::int64_t bz_hi = std::min<std::int64_t>(
              bins->dims[2] - 1,
              static_cast<std::int64_t>(std::floor((z_last + bins->cutoff - bins->lower.z) / bins->size)));
          if (bz_lo > bz_hi) continue;
          const std::int64_t first = s.z_bin_start[bz_lo], last = s.z_bin_start[bz_hi + 1];
          switch (unit_rows) {
            case 1: select_block_atoms<1>(s, s.dxy2.data(), r_first, first, last, k0, k_last, block_reach2); break;
            case 2: select_block_atoms<2>(s, s.dxy2.data(), r_first, first, last, k0, k_last, block_reach2); break;
            case 3: select_block_atoms<3>(s, s.dxy2.data(), r_first, first, last, k0, k_last, block_reach2); break;
            default: select_block_atoms<4>(s, s.dxy2.data(), r_first, first, last, k0, k_last, block_reach2); break;
          }
          for (int r = 0; r < static_cast<int>(unit_rows); ++r) {
            switch (vectors) {
              case 1: sum_selected_block<1>(scaled, s, r, s.sum[r], k0); break;
              case 2: sum_selected_block<2>(scaled, s, r, s.sum[r], k0); break;
              case 3: sum_selected_block<3>(scaled, s, r, s.sum[r], k0); break;
              case 4: sum_selected_block<4>(scaled, s, r, s.sum[r], k0); break;
              default: break;
            }
          }
        }
        for (std::int64_t r = 0; r < unit_rows; ++r) finish_row(unit_first + r, s.sum[r]);
      }
    }
  }
  progress.finish();
}

void SumRows(const CpuJob& job) {
  auto run = [&](const auto& law) {
    job.double_precision ? sum_rows<double>(job, law) : sum_rows<float>(job, law);
  };
  if (job.law) {
    if (const auto* coulomb = std::get_if<CoulombLaw>(job.law)) run(*coulomb);
    else run(std::get<DebyeHuckelLaw>(*job.law));
    return;
  }
  const CutoffMapLaw& law = *job.cutoff_law;
  if (const auto* l0 = std::get_if<CutoffLaw<Smoothing::none>>(&law)) run(*l0);
  else if (const auto* l1 = std::get_if<CutoffLaw<Smoothing::cutcp>>(&law)) run(*l1);
  else if (const auto* l2 = std::get_if<CutoffLaw<Smoothing::taylor1>>(&law)) run(*l2);
  else if (const auto* l3 = std::get_if<CutoffLaw<Smoothing::taylor2>>(&law)) run(*l3);
  else run(std::get<CutoffLaw<Smoothing::taylor3>>(law));
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
  const CpuJob job{&atoms, &law, nullptr, nullptr, &rows, double_precision, std::max(threads, 1)};
  HWY_DYNAMIC_DISPATCH(SumRows)(job);
}

namespace {

// The atoms binned, kept between the slabs of a streamed map (RowRange::keep): the bins depend on
// the atoms, the cutoff and the bin size, never on the rows.
struct KeptAtomBins : KeptWork {
  double requested_size = 0;
  AtomBins bins;
};

void bin_atoms(const PreparedAtoms& atoms, double cutoff, double bin_size, AtomBins& bins) {
  bins.cutoff = cutoff;
  // Bins of a third of the cutoff by default: a row then gathers atoms from a square of
  // 7 x 7 bin columns around it, little more than the cylinder of the cutoff.
  bins.size = bin_size > 0 ? bin_size : bins.cutoff / 3;
  Vec3 upper{-1e300, -1e300, -1e300};
  bins.lower = {1e300, 1e300, 1e300};
  for (std::int64_t n = 0; n < atoms.size(); ++n) {
    const Vec3 p{atoms.x[n], atoms.y[n], atoms.z[n]};
    for (int a = 0; a < 3; ++a) bins.lower[a] = std::min(bins.lower[a], p[a]), upper[a] = std::max(upper[a], p[a]);
  }
  if (bin_size <= 0) {
    // Atoms spread far apart (one atom 1000 A away, say) would ask for very many empty
    // bins: at most 2^22 (32 MiB of bin offsets), larger bins beyond that.
    const double volume = (upper.x - bins.lower.x + bins.size) * (upper.y - bins.lower.y + bins.size) *
                          (upper.z - bins.lower.z + bins.size);
    bins.size = std::max(bins.size, std::cbrt(volume / static_cast<double>(std::int64_t{1} << 22)));
  }
  std::int64_t count = 1;
  for (int a = 0; a < 3; ++a) {
    bins.dims[a] = static_cast<std::int64_t>((upper[a] - bins.lower[a]) / bins.size) + 1;
    count *= bins.dims[a];
  }
  if (count > (std::int64_t{1} << 28))
    throw Error("cutoff summation: " + std::to_string(count) + " bins of " + std::to_string(bins.size) +
                " A are too many; pass a larger bin size");
  auto bin_of = [&](std::int64_t n) {
    const double p[3] = {atoms.x[n], atoms.y[n], atoms.z[n]};
    std::int64_t b[3];
    for (int a = 0; a < 3; ++a)
      b[a] = std::min(bins.dims[a] - 1, static_cast<std::int64_t>((p[a] - bins.lower[a]) / bins.size));
    return (b[2] * bins.dims[1] + b[1]) * bins.dims[0] + b[0];
  };
  bins.start.assign(count + 1, 0);
  for (std::int64_t n = 0; n < atoms.size(); ++n) ++bins.start[bin_of(n) + 1];
  for (std::int64_t b = 0; b < count; ++b) bins.start[b + 1] += bins.start[b];
  bins.atoms.resize(atoms.size());
  std::vector<std::int64_t> fill(bins.start.begin(), bins.start.end() - 1);
  for (std::int64_t n = 0; n < atoms.size(); ++n) bins.atoms[fill[bin_of(n)]++] = n;  // atom order kept per bin
}

}  // namespace

void cutoff_cpu(const PreparedAtoms& atoms, const CutoffMapLaw& law, const RowRange& rows, bool double_precision,
                int threads, double bin_size) {
  const double cutoff = std::visit([](const auto& l) { return l.cutoff; }, law);
  AtomBins local;
  const AtomBins* bins = &local;
  std::unique_ptr<KeptWork>* kept = rows.keep ? &rows.keep->cutoff_bins : nullptr;
  const auto* found = kept && *kept ? dynamic_cast<const KeptAtomBins*>(kept->get()) : nullptr;
  if (found && found->bins.cutoff == cutoff && found->requested_size == bin_size) {
    bins = &found->bins;
  } else if (kept) {
    auto made = std::make_unique<KeptAtomBins>();
    made->requested_size = bin_size;
    bin_atoms(atoms, cutoff, bin_size, made->bins);
    bins = &made->bins;
    *kept = std::move(made);
  } else {
    bin_atoms(atoms, cutoff, bin_size, local);
  }
  const CpuJob job{&atoms, nullptr, &law, bins, &rows, double_precision, std::max(threads, 1)};
  HWY_DYNAMIC_DISPATCH(SumRows)(job);
}

const char* direct_cpu_target() { return HWY_DYNAMIC_DISPATCH(TargetName)(); }
}  // namespace nbkit::maps
#endif
