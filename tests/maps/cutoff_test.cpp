// Cutoff summation (atoms in bins, linear time) against the float64 reference of the same
// truncated and smoothed sum (every atom at every point; the law is zero beyond the cutoff).
#include <gtest/gtest.h>
#include <hwy/targets.h>

#include <cmath>
#include <cstdlib>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "maps/laws.hpp"
#include "maps/map_test_support.hpp"
#include "nbkit/core/backend.hpp"
#include "nbkit/core/error.hpp"
#include "nbkit/io/pqr.hpp"
#include "nbkit/maps.hpp"
#include "test_support.hpp"

namespace nbkit {

namespace {

MapOptions cutoff_options(Smoothing smoothing, double cutoff, Backend backend,
                          Precision precision = Precision::single, double bin_size = 0, int threads = 0) {
  MapOptions o = test::with(MapMethod::cutoff, backend, precision, threads);
  o.smoothing = smoothing;
  o.cutoff = cutoff;
  o.bin_size = bin_size;
  return o;
}

// Every smoothing on the CPU and on the GPU (test names end in _cpu or _Cuda; scripts/gpu-check
// runs '*Cuda*' under compute-sanitizer).
class CutoffSum : public ::testing::TestWithParam<std::tuple<Smoothing, Backend>> {
 protected:
  void SetUp() override {
    std::string why;
    if (backend() == Backend::cuda && list_gpus(&why).empty()) GTEST_SKIP() << "no GPU: " << why;
  }
  static Smoothing smoothing() { return std::get<0>(GetParam()); }
  static Backend backend() { return std::get<1>(GetParam()); }
};

// Error bounds for cutoff sums, and why:
// - A smoothed term is small near the cutoff by cancellation (1 - r^2/c^2, or 1/r - gamma/c),
//   so float32 rounding of r^2 (~1e-7) is large relative to the term itself there, but stays
//   ~1e-7 of the unsmoothed q/r. The bound's scale is therefore sum_i |q_i|/r_i over the
//   atoms within the cutoff (plain truncation with |q|).
// - Plain truncation jumps by q/c at the cutoff: float32 and float64 can disagree about an
//   atom within ~1e-7 of the cutoff (seen: r = 11.9999996 A for c = 12 A). Points with an
//   atom within 1e-6 c of the cutoff are left out of the comparison for `none`.
std::vector<double> unsmoothed_magnitude(const Atoms& atoms, const Lattice& lattice, double cutoff) {
  return test::run(test::with_absolute_charges(atoms), lattice, cutoff_options(Smoothing::none, cutoff, Backend::reference));
}

std::vector<bool> truncation_boundary(const Atoms& atoms, const Lattice& lattice, double cutoff) {
  std::vector<bool> near(static_cast<std::size_t>(lattice.size()), false);
  for (std::int64_t i = 0; i < lattice.dims[0]; ++i)
    for (std::int64_t j = 0; j < lattice.dims[1]; ++j)
      for (std::int64_t k = 0; k < lattice.dims[2]; ++k)
        for (std::size_t n = 0; n < atoms.size(); ++n)
          if (std::fabs(norm(lattice.point(i, j, k) - atoms.position(n)) - cutoff) < 1e-6 * cutoff) {
            near[static_cast<std::size_t>(lattice.index(i, j, k))] = true;
            break;
          }
  return near;
}

// ||a - b|| / ||scale|| over the points not masked out
double masked_error(const std::vector<double>& a, const std::vector<double>& b, const std::vector<double>& scale,
                    const std::vector<bool>& masked) {
  double diff = 0, norm2 = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (masked[i]) continue;
    diff += (a[i] - b[i]) * (a[i] - b[i]);
    norm2 += scale[i] * scale[i];
  }
  return norm2 > 0 ? std::sqrt(diff / norm2) : std::sqrt(diff);
}

std::vector<bool> comparison_mask(Smoothing smoothing, const Atoms& atoms, const Lattice& lattice, double cutoff) {
  if (smoothing == Smoothing::none) return truncation_boundary(atoms, lattice, cutoff);
  return std::vector<bool>(static_cast<std::size_t>(lattice.size()), false);
}

}  // namespace

TEST(CutoffLaws, ZeroAtTheCutoffAndCoulombInside) {
  const double c = 10;
  EXPECT_DOUBLE_EQ(maps::CutoffLaw<Smoothing::none>{c}.potential(2.0, 1.0, 4.0), 0.5);
  EXPECT_EQ(maps::CutoffLaw<Smoothing::none>{c}.potential(2.0, 1.0, 10.0), 0.0);
  EXPECT_DOUBLE_EQ(maps::CutoffLaw<Smoothing::cutcp>{c}.potential(1.0, 1.0, 5.0), 0.2 * 0.75 * 0.75);
  // The multilevel splitting: gamma(1) = 1, so 1/r - gamma(r/c)/c -> 0 as r -> c, and its
  // first derivative too (C1 and smoother).
  for (double r : {c - 1e-6}) {
    EXPECT_NEAR(maps::CutoffLaw<Smoothing::taylor1>{c}.potential(1.0, 1.0, r), 0.0, 1e-9);
    EXPECT_NEAR(maps::CutoffLaw<Smoothing::taylor2>{c}.potential(1.0, 1.0, r), 0.0, 1e-9);
    EXPECT_NEAR(maps::CutoffLaw<Smoothing::taylor3>{c}.potential(1.0, 1.0, r), 0.0, 1e-9);
  }
  const auto slope = [&](auto law) {
    const double e = 1e-4;
    return (law.potential(1.0, 1.0, c - e) - law.potential(1.0, 1.0, c - 2 * e)) / e;
  };
  EXPECT_NEAR(slope(maps::CutoffLaw<Smoothing::taylor1>{c}), 0.0, 1e-5);
  EXPECT_NEAR(slope(maps::CutoffLaw<Smoothing::taylor3>{c}), 0.0, 1e-5);
  // Near the origin the splitting's short-range part is 1/r minus a constant: gamma(0)/c.
  EXPECT_NEAR(maps::CutoffLaw<Smoothing::taylor2>{c}.potential(1.0, 1.0, 0.01), 100 - 15.0 / 8 / c, 2e-7);
}

TEST_P(CutoffSum, RandomAtomsAtAwkwardSizesAndBinSizes) {
  const std::vector<std::array<std::int64_t, 3>> shapes = {{1, 1, 1}, {7, 11, 13}, {3, 1, 37}, {17, 5, 1}, {9, 8, 67}};
  unsigned seed = 300;
  for (const auto& dims : shapes)
    for (const double bin_size : {0.0, 1.3, 40.0})  // the GPU's bins are fixed: one bin size there
      for (const std::size_t n : {1, 31, 700}) {
        if (backend() == Backend::cuda && bin_size != 0.0) continue;
        Lattice lattice;
        lattice.origin = {-4.1, -3.3, -5.7};
        lattice.spacing = 0.37;
        lattice.dims = dims;
        Atoms atoms = test::random_atoms(n, {-12, -10, -14}, {12, 10, 30}, seed++);
        if (n == 31) atoms.push_back(lattice.point(dims[0] / 2, dims[1] / 2, dims[2] - 1), 0.7, 1.5);  // on a point
        const auto reference = test::run(atoms, lattice, cutoff_options(smoothing(), 6.5, Backend::reference));
        const auto magnitude = unsmoothed_magnitude(atoms, lattice, 6.5);
        const auto masked = comparison_mask(smoothing(), atoms, lattice, 6.5);
        const auto single = test::run(atoms, lattice, cutoff_options(smoothing(), 6.5, backend(), Precision::single, bin_size));
        const auto dbl = test::run(atoms, lattice, cutoff_options(smoothing(), 6.5, backend(), Precision::double_, bin_size));
        const std::string what = std::to_string(dims[0]) + "x" + std::to_string(dims[1]) + "x" + std::to_string(dims[2]) +
                                 ", " + std::to_string(n) + " atoms, bins " + std::to_string(bin_size);
        EXPECT_LT(masked_error(single, reference, magnitude, masked), test::kSingleConditionedTolerance) << what;
        EXPECT_LT(masked_error(dbl, reference, magnitude, masked), test::kDoubleConditionedTolerance) << what;
      }
}

TEST_P(CutoffSum, RealProteins) {
  for (const char* name : {"1a63.pqr", "hca.pqr"}) {
    const Atoms atoms = io::read_pqr(test::data_file(name));
    const Lattice lattice = lattice_around(atoms, 1.7, 6.0);
    const auto reference = test::run(atoms, lattice, cutoff_options(smoothing(), 12, Backend::reference));
    const auto fast = test::run(atoms, lattice, cutoff_options(smoothing(), 12, backend()));
    const double error = masked_error(fast, reference, reference, comparison_mask(smoothing(), atoms, lattice, 12));
    EXPECT_LT(error, test::kSingleTolerance) << name;
    std::printf("[ accuracy ] cutoff %s %s %s: relative RMS float32 %.2e\n", to_string(smoothing()).c_str(),
                to_string(backend()).c_str(), name, error);
  }
}

TEST_P(CutoffSum, DenseClusterAndFarAtoms) {
  // 20,000 atoms in a 4 A ball (200 times water's density: fixed-depth bins would overflow)
  // plus atoms 1000 A away from the lattice.
  Atoms atoms = test::random_atoms(20000, {-2, -2, -2}, {2, 2, 2}, 77);
  const Atoms far = test::random_atoms(50, {1000, 1000, 1000}, {1010, 1010, 1010}, 78);
  for (std::size_t n = 0; n < far.size(); ++n) atoms.push_back(far.position(n), far.charge[n], far.radius[n]);
  Lattice lattice;
  lattice.origin = {-6, -6, -6};
  lattice.spacing = 1.1;
  lattice.dims = {11, 11, 19};
  const auto reference = test::run(atoms, lattice, cutoff_options(smoothing(), 5, Backend::reference));
  const auto magnitude = unsmoothed_magnitude(atoms, lattice, 5);
  const auto fast = test::run(atoms, lattice, cutoff_options(smoothing(), 5, backend()));
  EXPECT_LT(masked_error(fast, reference, magnitude, comparison_mask(smoothing(), atoms, lattice, 5)),
            test::kSingleConditionedTolerance);
}

TEST_P(CutoffSum, SameBitsForThreadsSlabsAndDevices) {
  const Atoms atoms = io::read_pqr(test::data_file("hca.pqr"));
  const Lattice lattice = lattice_around(atoms, 1.3, 3.0);
  if (backend() == Backend::cpu) {
    const auto one = test::run(atoms, lattice, cutoff_options(smoothing(), 9, Backend::cpu, Precision::single, 0, 1));
    EXPECT_EQ(test::run(atoms, lattice, cutoff_options(smoothing(), 9, Backend::cpu, Precision::single, 0, 2)), one);
    return;
  }
  MapOptions options = cutoff_options(smoothing(), 9, Backend::cuda);
  options.gpus = {0};
  const auto first = test::run(atoms, lattice, options);
  EXPECT_EQ(test::run(atoms, lattice, options), first) << "repeated run";
  // Slabs of 13 rows: not whole layers of regions, so regions straddle slabs.
  setenv("NBKIT_CUDA_SLAB_ROWS", "13", 1);
  EXPECT_EQ(test::run(atoms, lattice, options), first) << "13-row slabs";
  // Rows [29, 1000) alone: a request that starts inside a region.
  const auto part = test::run_rows(atoms, lattice, options, 29, std::min<std::int64_t>(1000, lattice.rows()));
  EXPECT_TRUE(std::equal(part.begin(), part.end(), first.begin() + 29 * lattice.dims[2])) << "rows from 29";
  if (list_gpus().size() >= 2) {
    options.gpus = {0, 1};
    EXPECT_EQ(test::run(atoms, lattice, options), first) << "two GPUs, 13-row slabs";
    unsetenv("NBKIT_CUDA_SLAB_ROWS");
    EXPECT_EQ(test::run(atoms, lattice, options), first) << "two GPUs";
  }
  unsetenv("NBKIT_CUDA_SLAB_ROWS");
}

// The CPU gathers atoms once for a bundle of consecutive rows along y (direct/cpu.cpp,
// kCutoffBundle): a row's values never depend on which other rows of its bundle a request
// holds, and an atom on the axis of one row of a bundle (on one of its lattice points, or
// between them) is taken out of that row's SIMD sums alone and summed exactly for it.
TEST(CutoffSumCpu, BundledRowsGiveEachRowAlone) {
  Lattice lattice;
  lattice.spacing = 0.8;
  lattice.dims = {5, 11, 23};
  // Enough atoms that a row sums several float32 chunks (kChunk): an atom more or less in a
  // row's gathered list, even one adding zero, would move the chunks' bounds and the bits.
  Atoms atoms = test::random_atoms(4000, {-6, -6, -6}, {10, 14, 24}, 91);
  atoms.push_back(lattice.point(2, 1, 7), 0.7, 1.5);                      // on a lattice point of row (2, 1)
  atoms.push_back(lattice.point(2, 2, 3) + Vec3{0, 0, 0.4}, -0.5, 1.5);  // on row (2, 2)'s axis, between points
  atoms.push_back(lattice.point(3, 10, 11), 0.3, 1.5);                   // the plane's last, partial bundle
  for (const Precision precision : {Precision::single, Precision::double_}) {
    const MapOptions options = cutoff_options(Smoothing::cutcp, 7, Backend::cpu, precision, 0, 2);
    const auto whole = test::run(atoms, lattice, options);
    const std::int64_t ny = lattice.dims[1];
    for (const auto& [first, last] : std::vector<std::pair<std::int64_t, std::int64_t>>{
             {2 * ny + 1, 2 * ny + 2}, {2 * ny + 2, 2 * ny + 7}, {3 * ny + 9, 4 * ny + 1}, {29, 40}}) {
      const auto part = test::run_rows(atoms, lattice, options, first, last);
      EXPECT_TRUE(std::equal(part.begin(), part.end(), whole.begin() + first * lattice.dims[2]))
          << "rows [" << first << ", " << last << "), " << to_string(precision);
    }
    if (precision == Precision::double_) {
      const auto reference = test::run(atoms, lattice, cutoff_options(Smoothing::cutcp, 7, Backend::reference));
      EXPECT_LT(test::relative_rms(whole, reference), 1e-12);
    }
  }
}

// Each block of points along a row sums only the atoms that reach one of its points (cpu.cpp's
// select_block_atoms): atoms just inside the cutoff of a point, beyond the block's end along z or
// off to the side of the row, must stay. With no smoothing such an atom adds q/c (~47 kT/e here),
// so one left out shows against the float64 reference: atoms at 0.9999 of the cutoff from points
// at the ends of blocks of 8 and 16 and of the rows, in six directions.
TEST(CutoffSumCpu, BlocksKeepAtomsJustInsideTheCutoff) {
  Lattice lattice;
  lattice.spacing = 0.5;
  lattice.dims = {3, 3, 50};
  const double cutoff = 6.0, r = cutoff * (1 - 1e-4);
  Atoms atoms;
  for (const int k : {0, 7, 8, 15, 16, 31, 32, 47, 49})
    for (const Vec3 direction : {Vec3{0, 0, 1}, Vec3{0, 0, -1}, Vec3{1, 0, 0}, Vec3{0, -1, 0}, Vec3{0.6, 0, 0.8},
                                 Vec3{0, 0.6, -0.8}})
      atoms.push_back(lattice.point(1, 1, k) + r * direction, 0.5, 1.5);
  const auto reference = test::run(atoms, lattice, cutoff_options(Smoothing::none, cutoff, Backend::reference));
  for (const Precision precision : {Precision::single, Precision::double_}) {
    const auto cpu = test::run(atoms, lattice, cutoff_options(Smoothing::none, cutoff, Backend::cpu, precision, 0, 2));
    ASSERT_EQ(cpu.size(), reference.size());
    double worst = 0;
    for (std::size_t p = 0; p < cpu.size(); ++p) worst = std::max(worst, std::abs(cpu[p] - reference[p]));
    EXPECT_LT(worst, 0.01) << to_string(precision) << ": a term of ~47 kT/e left out or added";  // float32: ~1e-4
  }
}

// The CPU path differs by SIMD target (a block of 16 points is one vector with AVX-512, two with
// AVX2, four with SSE4; AVX-512 compresses a block's atoms with its instruction, the others through
// a table of lane indices): every target this build has and this CPU runs, against the float64
// reference, on atoms just inside the cutoff at the ends of blocks and rows (as above) and random
// atoms on a lattice whose rows end in partial blocks. Bounds as in the tests above.
TEST(CutoffSumCpu, EverySimdTargetMatchesTheReference) {
  Lattice edges;
  edges.spacing = 0.5;
  edges.dims = {3, 3, 50};
  const double cutoff = 6.0, r = cutoff * (1 - 1e-4);
  Atoms inside;
  for (const int k : {0, 3, 4, 7, 8, 15, 16, 31, 32, 47, 49})
    for (const Vec3 direction : {Vec3{0, 0, 1}, Vec3{0, 0, -1}, Vec3{1, 0, 0}, Vec3{0.6, 0, 0.8}, Vec3{0, 0.6, -0.8}})
      inside.push_back(edges.point(1, 1, k) + r * direction, 0.5, 1.5);
  const auto edges_reference = test::run(inside, edges, cutoff_options(Smoothing::none, cutoff, Backend::reference));
  Lattice lattice;
  lattice.origin = {-2.2, -1.9, -3.1};
  lattice.spacing = 0.61;
  lattice.dims = {9, 7, 53};
  const Atoms atoms = test::random_atoms(900, {-8, -8, -10}, {12, 10, 35}, 808);
  const auto reference = test::run(atoms, lattice, cutoff_options(Smoothing::cutcp, 7.5, Backend::reference));
  const auto magnitude = unsmoothed_magnitude(atoms, lattice, 7.5);
  const std::vector<bool> none_masked(reference.size(), false);
  const std::vector<std::int64_t> targets = hwy::SupportedAndGeneratedTargets();
  ASSERT_FALSE(targets.empty());
  for (const std::int64_t target : targets) {
    hwy::SetSupportedTargetsForTest(target);
    const std::string name = hwy::TargetName(target);
    EXPECT_EQ(simd_target(), name);
    for (const Precision precision : {Precision::single, Precision::double_}) {
      const auto near = test::run(inside, edges, cutoff_options(Smoothing::none, cutoff, Backend::cpu, precision, 0, 2));
      double worst = 0;
      for (std::size_t p = 0; p < near.size(); ++p) worst = std::max(worst, std::abs(near[p] - edges_reference[p]));
      EXPECT_LT(worst, 0.01) << name << ", " << to_string(precision) << ": a term of ~47 kT/e left out or added";
      const auto map = test::run(atoms, lattice, cutoff_options(Smoothing::cutcp, 7.5, Backend::cpu, precision, 0, 2));
      EXPECT_LT(masked_error(map, reference, magnitude, none_masked),
                precision == Precision::single ? test::kSingleConditionedTolerance : test::kDoubleConditionedTolerance)
          << name << ", " << to_string(precision);
    }
  }
  hwy::SetSupportedTargetsForTest(0);
}

// Each CPU thread holds lists of every atom with a dx^2 + dy^2 per row of its bundle: checked
// against the memory there is before the threads allocate them (a tiny lattice, so nothing else
// is large).
TEST(CutoffSumCpu, PerThreadListsAreCheckedAgainstMemory) {
  const Atoms atoms = test::random_atoms(50000, {0, 0, 0}, {40, 40, 40}, 5);
  Lattice lattice;
  lattice.dims = {2, 2, 2};
  setenv("NBKIT_MEMORY_LIMIT", "2000000", 1);  // 2 threads x ~50,000 atoms x 11 floats: 4.4 MB
  try {
    test::run(atoms, lattice, cutoff_options(Smoothing::cutcp, 10, Backend::cpu, Precision::single, 0, 2));
    ADD_FAILURE() << "a 2 MB limit let 4.4 MB of lists through";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("per-thread lists of atoms"), std::string::npos) << error.what();
  }
  unsetenv("NBKIT_MEMORY_LIMIT");
}

TEST_P(CutoffSum, DenseBoxWhereFixedDepthBinsOverflow) {
  // 0.2 atoms per A^3, twice water's density: Parboil's cutcp fails here ("exceeded space
  // for storing extra atoms"); bins of any depth lose nothing.
  const Atoms atoms = test::random_atoms(12000, {0, 0, 0}, {39, 39, 39}, 91);
  Lattice lattice;
  lattice.origin = {5.3, 6.1, 4.2};
  lattice.spacing = 0.5;
  lattice.dims = {13, 11, 29};
  const auto reference = test::run(atoms, lattice, cutoff_options(smoothing(), 8, Backend::reference));
  const auto magnitude = unsmoothed_magnitude(atoms, lattice, 8);
  const auto fast = test::run(atoms, lattice, cutoff_options(smoothing(), 8, backend()));
  EXPECT_LT(masked_error(fast, reference, magnitude, comparison_mask(smoothing(), atoms, lattice, 8)),
            test::kSingleConditionedTolerance);
}

INSTANTIATE_TEST_SUITE_P(Smoothings, CutoffSum,
                         ::testing::Combine(::testing::Values(Smoothing::none, Smoothing::cutcp, Smoothing::taylor1,
                                                              Smoothing::taylor2, Smoothing::taylor3),
                                            ::testing::Values(Backend::cpu, Backend::cuda)),
                         [](const auto& info) {
                           const Backend backend = std::get<1>(info.param);
                           return to_string(std::get<0>(info.param)) + "_" +
                                  (backend == Backend::cuda ? std::string("Cuda") : to_string(backend));
                         });

TEST(CutoffSumBeyondStructure, EqualsTheDirectSum) {
  // With plain truncation and a cutoff longer than any distance, the cutoff sum is the
  // Coulomb sum.
  const Atoms atoms = io::read_pqr(test::data_file("1a63.pqr"));
  const Lattice lattice = lattice_around(atoms, 2.3, 4.0);
  const auto direct = test::run(atoms, lattice, test::with(MapMethod::direct, Backend::cpu));
  const auto cutoff = test::run(atoms, lattice, cutoff_options(Smoothing::none, 500, Backend::cpu));
  EXPECT_LT(test::relative_rms(cutoff, direct), 2 * test::kSingleTolerance);
}

TEST(CutoffSumBeyondStructure, EqualsTheDirectSumCuda) {
  std::string why;
  if (list_gpus(&why).empty()) GTEST_SKIP() << "no GPU: " << why;
  const Atoms atoms = io::read_pqr(test::data_file("1a63.pqr"));
  const Lattice lattice = lattice_around(atoms, 2.3, 4.0);
  const auto direct = test::run(atoms, lattice, test::with(MapMethod::direct, Backend::cuda));
  const auto cutoff = test::run(atoms, lattice, cutoff_options(Smoothing::none, 200, Backend::cuda));
  EXPECT_LT(test::relative_rms(cutoff, direct), 2 * test::kSingleTolerance);
}

TEST(CutoffSumRequests, AtomsSpreadFarApartNeedNoBinSize) {
  // One atom 100,000 A away: automatic bins grow instead of asking for 10^14 of them.
  Atoms atoms = test::random_atoms(200, {-5, -5, -5}, {5, 5, 5}, 8);
  atoms.push_back({1e5, 1e5, 1e5}, 1.0, 1.0);
  Lattice lattice;
  lattice.origin = {-3, -3, -3};
  lattice.spacing = 0.7;
  lattice.dims = {9, 9, 17};
  const auto reference = test::run(atoms, lattice, cutoff_options(Smoothing::cutcp, 6, Backend::reference));
  const auto fast = test::run(atoms, lattice, cutoff_options(Smoothing::cutcp, 6, Backend::cpu));
  EXPECT_LT(test::error_relative_to(fast, reference, unsmoothed_magnitude(atoms, lattice, 6)),
            test::kSingleConditionedTolerance);
  // An explicit bin size that would need too many bins is refused with the reason.
  EXPECT_THROW(test::run(atoms, lattice, cutoff_options(Smoothing::cutcp, 6, Backend::cpu, Precision::single, 1.0)),
               Error);
}

TEST(CutoffSumRequests, BadValuesAreRefused) {
  Atoms atoms;
  atoms.push_back({0, 0, 0}, 1, 1);
  Lattice lattice;
  EXPECT_THROW(test::run(atoms, lattice, cutoff_options(Smoothing::cutcp, 0, Backend::cpu)), Error);
  EXPECT_THROW(test::run(atoms, lattice, cutoff_options(Smoothing::cutcp, 10, Backend::cpu, Precision::single, -1)), Error);
  EXPECT_THROW(parse_smoothing("gaussian"), Error);
  EXPECT_EQ(parse_smoothing("c2"), Smoothing::taylor2);
}

}  // namespace nbkit
