// The fast CPU path against the float64 reference: random atoms at awkward lattice sizes,
// real proteins, thread-count independence, and 64-bit lattice indices.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "nbkit/io/pqr.hpp"
#include "nbkit/maps.hpp"
#include "maps/map_test_support.hpp"
#include "test_support.hpp"

namespace nbkit {

namespace {

using test::kDoubleTolerance;
using test::kSingleTolerance;
using test::run;
using test::run_rows;
using test::with;

class FastPath : public ::testing::TestWithParam<MapMethod> {};

}  // namespace

TEST_P(FastPath, RandomAtomsAtAwkwardSizes) {
  const std::vector<std::array<std::int64_t, 3>> shapes = {{1, 1, 1},  {7, 11, 13}, {3, 1, 37},
                                                           {17, 5, 1}, {2, 3, 67},  {1, 1, 129}};
  const std::vector<std::size_t> atom_counts = {1, 2, 31, 257, 1000};
  unsigned seed = 1;
  for (const auto& dims : shapes)
    for (const std::size_t n : atom_counts) {
      Lattice lattice;
      lattice.origin = {-4.1, -3.3, -5.7};
      lattice.spacing = 0.37;
      lattice.dims = dims;
      // Atoms inside the lattice and well outside it.
      const Atoms atoms = test::random_atoms(n, {-9, -8, -10}, {9, 8, 20}, seed++);
      const auto reference = run(atoms, lattice, with(GetParam(), Backend::reference));
      const auto magnitude = run(test::with_absolute_charges(atoms), lattice, with(GetParam(), Backend::reference));
      const auto single = run(atoms, lattice, with(GetParam(), Backend::cpu, Precision::single));
      const auto dbl = run(atoms, lattice, with(GetParam(), Backend::cpu, Precision::double_));
      EXPECT_LT(test::error_relative_to(single, reference, magnitude), test::kSingleConditionedTolerance)
          << dims[0] << "x" << dims[1] << "x" << dims[2] << ", " << n << " atoms";
      EXPECT_LT(test::error_relative_to(dbl, reference, magnitude), test::kDoubleConditionedTolerance)
          << dims[0] << "x" << dims[1] << "x" << dims[2] << ", " << n << " atoms";
    }
}

TEST_P(FastPath, RealProteins) {
  std::vector<std::string> files = {test::data_file("1a63.pqr"), test::data_file("hca.pqr")};
  for (const char* extra : {"misc/mache.pqr", "actin-dimer/mol1.pqr"})
    if (const std::string path = test::apbs_example(extra); !path.empty()) files.push_back(path);
  for (const auto& file : files) {
    const Atoms atoms = io::read_pqr(file);
    // 1.7 A spacing gives lattices far from multiples of the SIMD width (e.g. 31x34x29).
    const Lattice lattice = lattice_around(atoms, 1.7, 6.0);
    const auto reference = run(atoms, lattice, with(GetParam(), Backend::reference));
    const auto single = run(atoms, lattice, with(GetParam(), Backend::cpu, Precision::single));
    const auto dbl = run(atoms, lattice, with(GetParam(), Backend::cpu, Precision::double_));
    const double single_error = test::relative_rms(single, reference);
    const double double_error = test::relative_rms(dbl, reference);
    EXPECT_LT(single_error, kSingleTolerance) << file;
    EXPECT_LT(double_error, kDoubleTolerance) << file;
    std::printf("[ accuracy ] %s %s: %zu atoms, %lldx%lldx%lld, relative RMS float32 %.2e, float64 %.2e\n",
                to_string(GetParam()).c_str(), file.c_str(), atoms.size(), static_cast<long long>(lattice.dims[0]),
                static_cast<long long>(lattice.dims[1]), static_cast<long long>(lattice.dims[2]), single_error,
                double_error);
  }
}

TEST_P(FastPath, SameBitsForOneAndTwoThreads) {
  const Atoms atoms = io::read_pqr(test::data_file("1a63.pqr"));
  const Lattice lattice = lattice_around(atoms, 1.3, 3.0);
  for (Precision precision : {Precision::single, Precision::double_}) {
    const auto one = run(atoms, lattice, with(GetParam(), Backend::cpu, precision, 1));
    const auto two = run(atoms, lattice, with(GetParam(), Backend::cpu, precision, 2));
    const auto three = run(atoms, lattice, with(GetParam(), Backend::cpu, precision, 3));
    EXPECT_EQ(one, two);
    EXPECT_EQ(one, three);
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
  const auto reference = run_rows(atoms, lattice, with(GetParam(), Backend::reference), begin, end);
  const auto single = run_rows(atoms, lattice, with(GetParam(), Backend::cpu), begin, end);
  EXPECT_LT(test::relative_rms(single, reference), kSingleTolerance);
  // Check one value independently: the last point of the lattice.
  double expected = 0;
  const Vec3 last = lattice.point(65536, 32767, 1);
  const MapOptions options = with(GetParam(), Backend::reference);
  const double kappa = screening_kappa(options);
  for (std::size_t n = 0; n < atoms.size(); ++n) {
    const double d = norm(last - atoms.position(n));
    expected += atoms.charge[n] * std::exp(-kappa * (d - (kappa > 0 ? atoms.radius[n] : 0))) /
                ((1 + kappa * (kappa > 0 ? atoms.radius[n] : 0)) * d);
  }
  expected *= units::potential_prefactor(options.unit, options.dielectric, options.temperature);
  EXPECT_NEAR(reference.back(), expected, 1e-12 * std::fabs(expected));
}

INSTANTIATE_TEST_SUITE_P(Methods, FastPath, ::testing::Values(MapMethod::direct, MapMethod::mdh),
                         [](const auto& info) { return to_string(info.param); });

}  // namespace nbkit
