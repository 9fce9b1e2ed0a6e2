// Every fast path (the CPU's and, where a GPU is usable, CUDA's) against the float64
// reference, with one test body per property run for each backend (OpenMM's shared test
// habit): random atoms at awkward lattice sizes, real proteins, 64-bit lattice indices.
// CUDA-only properties (several GPUs, slabs, a million atoms) are in cuda_test.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <tuple>

#include "maps/map_test_support.hpp"
#include "nbkit/io/pqr.hpp"
#include "nbkit/maps.hpp"
#include "test_support.hpp"

namespace nbkit {

namespace {

using test::kDoubleTolerance;
using test::kSingleTolerance;
using test::run;
using test::run_rows;
using test::with;

class FastPath : public ::testing::TestWithParam<std::tuple<MapMethod, Backend>> {
 protected:
  void SetUp() override {
    std::string why;
    if (backend() == Backend::cuda && list_gpus(&why).empty()) GTEST_SKIP() << "no GPU: " << why;
  }
  MapMethod method() const { return std::get<0>(GetParam()); }
  Backend backend() const { return std::get<1>(GetParam()); }
};

}  // namespace

TEST_P(FastPath, RandomAtomsAtAwkwardSizes) {
  // Shapes far from SIMD widths and from the GPU's 8 points a thread and 128 threads a
  // block: single points, rows and planes, primes.
  const std::vector<std::array<std::int64_t, 3>> shapes = {{1, 1, 1},  {7, 11, 13}, {3, 1, 37},  {17, 5, 1},
                                                           {2, 3, 67}, {1, 1, 129}, {31, 29, 9}, {1, 50, 1}};
  const std::vector<std::size_t> atom_counts = {1, 2, 31, 127, 129, 257, 1000};
  unsigned seed = 1;
  for (const auto& dims : shapes)
    for (const std::size_t n : atom_counts) {
      Lattice lattice;
      lattice.origin = {-4.1, -3.3, -5.7};
      lattice.spacing = 0.37;
      lattice.dims = dims;
      // Atoms inside the lattice and well outside it.
      const Atoms atoms = test::random_atoms(n, {-9, -8, -10}, {9, 8, 20}, seed++);
      const auto reference = run(atoms, lattice, with(method(), Backend::reference));
      const auto magnitude = run(test::with_absolute_charges(atoms), lattice, with(method(), Backend::reference));
      const auto single = run(atoms, lattice, with(method(), backend(), Precision::single));
      const auto dbl = run(atoms, lattice, with(method(), backend(), Precision::double_));
      EXPECT_LT(test::error_relative_to(single, reference, magnitude), test::kSingleConditionedTolerance)
          << dims[0] << "x" << dims[1] << "x" << dims[2] << ", " << n << " atoms";
      EXPECT_LT(test::error_relative_to(dbl, reference, magnitude), test::kDoubleConditionedTolerance)
          << dims[0] << "x" << dims[1] << "x" << dims[2] << ", " << n << " atoms";
    }
}

TEST_P(FastPath, RealProteins) {
  std::vector<std::string> files = {test::data_file("1a63.pqr")};
  if (!test::kSanitized) files.push_back(test::data_file("hca.pqr"));
  // APBS's larger proteins in the release run: the float64 reference's mdh sums over them took
  // 250-300 s of the sanitizer build's 300 s limit (one thread, exp per pair).
  const std::size_t bundled = files.size();
  for (const char* extra : {"misc/mache.pqr", "actin-dimer/mol1.pqr"})
    if (const std::string path = test::apbs_example(extra); !path.empty() && !test::kSanitized) files.push_back(path);
  for (std::size_t f = 0; f < files.size(); ++f) {
    const std::string& file = files[f];
    const Atoms atoms = io::read_pqr(file);
    // 1.7 A spacing gives lattices far from multiples of the SIMD width (e.g. 31x34x29).
    const Lattice lattice = lattice_around(atoms, 1.7, 6.0);
    // APBS's proteins (5,900 and 8,300 atoms): the middle quarter of the rows, a band through the
    // protein's core and its surface, where the whole lattice's reference took 20 of the release
    // run's CI seconds for mdh alone (one thread, an exp a pair).
    const std::int64_t rows = lattice.rows();
    const std::int64_t begin = f < bundled ? 0 : rows * 3 / 8, end = f < bundled ? rows : rows * 5 / 8;
    const auto reference = run_rows(atoms, lattice, with(method(), Backend::reference), begin, end);
    const auto single = run_rows(atoms, lattice, with(method(), backend(), Precision::single), begin, end);
    const auto dbl = run_rows(atoms, lattice, with(method(), backend(), Precision::double_), begin, end);
    const double single_error = test::relative_rms(single, reference);
    const double double_error = test::relative_rms(dbl, reference);
    EXPECT_LT(single_error, kSingleTolerance) << file;
    EXPECT_LT(double_error, kDoubleTolerance) << file;
    if (backend() == Backend::cuda) {  // the two fast paths agree within their accuracy
      const auto cpu = run_rows(atoms, lattice, with(method(), Backend::cpu, Precision::single), begin, end);
      EXPECT_LT(test::relative_rms(single, cpu), 2 * kSingleTolerance) << file;
    }
    std::printf("[ accuracy ] %s %s %s: %zu atoms, %lldx%lldx%lld (rows %lld-%lld), relative RMS float32 %.2e, "
                "float64 %.2e\n",
                to_string(backend()).c_str(), to_string(method()).c_str(), file.c_str(), atoms.size(),
                static_cast<long long>(lattice.dims[0]), static_cast<long long>(lattice.dims[1]),
                static_cast<long long>(lattice.dims[2]), static_cast<long long>(begin), static_cast<long long>(end),
                single_error, double_error);
  }
}

TEST_P(FastPath, RowsPastTwoTo32PointsUseSixtyFourBitIndices) {
  // A 65537 x 32768 x 2 lattice has 2^32 + 65536 points; compute only its last rows, whose
  // indices and coordinates overflow 32-bit arithmetic.
  Lattice lattice;
  lattice.origin = {-20000, -10000, 0};
  lattice.spacing = 0.6;
  lattice.dims = {65537, 32768, 2};
  Atoms atoms = test::random_atoms(20, {19300, 9600, -5}, {19330, 9700, 5}, 99);
  const std::int64_t end = lattice.rows(), begin = end - 3;
  ASSERT_GT(begin * lattice.dims[2], std::int64_t{1} << 32);
  const auto reference = run_rows(atoms, lattice, with(method(), Backend::reference), begin, end);
  const auto fast = run_rows(atoms, lattice, with(method(), backend()), begin, end);
  EXPECT_LT(test::relative_rms(fast, reference), kSingleTolerance);
  // Check one value independently: the last point of the lattice.
  double expected = 0;
  const Vec3 last = lattice.point(65536, 32767, 1);
  const MapOptions options = with(method(), Backend::reference);
  const double kappa = screening_kappa(options);
  for (std::size_t n = 0; n < atoms.size(); ++n) {
    const double d = norm(last - atoms.position(n));
    const double a = kappa > 0 ? atoms.radius[n] : 0;
    expected += atoms.charge[n] * std::exp(-kappa * (d - a)) / ((1 + kappa * a) * d);
  }
  expected *= units::potential_prefactor(options.unit, options.dielectric, options.temperature);
  EXPECT_NEAR(reference.back(), expected, 1e-12 * std::fabs(expected));
}

// The CPU path's own property: the thread count never changes the bits.
TEST(CpuPath, SameBitsForOneTwoAndThreeThreads) {
  const Atoms atoms = io::read_pqr(test::data_file("1a63.pqr"));
  // 2 A: hundreds of rows for three threads to split (1.3 A took 28 s of CI's sanitized run).
  const Lattice lattice = lattice_around(atoms, 2.0, 3.0);
  for (MapMethod method : {MapMethod::direct, MapMethod::mdh})
    for (Precision precision : {Precision::single, Precision::double_}) {
      const auto one = run(atoms, lattice, with(method, Backend::cpu, precision, 1));
      EXPECT_EQ(run(atoms, lattice, with(method, Backend::cpu, precision, 2)), one);
      EXPECT_EQ(run(atoms, lattice, with(method, Backend::cpu, precision, 3)), one);
    }
}

// Test names end in _cpu or _Cuda (scripts/gpu-check runs '*Cuda*' under compute-sanitizer).
INSTANTIATE_TEST_SUITE_P(Backends, FastPath,
                         ::testing::Combine(::testing::Values(MapMethod::direct, MapMethod::mdh),
                                            ::testing::Values(Backend::cpu, Backend::cuda)),
                         [](const auto& info) {
                           const Backend backend = std::get<1>(info.param);
                           return to_string(std::get<0>(info.param)) + "_" +
                                  (backend == Backend::cuda ? std::string("Cuda") : to_string(backend));
                         });

}  // namespace nbkit
