// The CUDA map path against the float64 reference and the CPU path; multi-GPU and slab
// splits against one GPU, bit for bit. Skips without a GPU.
#include <gtest/gtest.h>
#include <stdlib.h>

#include "maps/map_test_support.hpp"
#include "nbkit/core/error.hpp"
#include "nbkit/io/pqr.hpp"
#include "test_support.hpp"

namespace nbkit {

namespace {

using test::kDoubleTolerance;
using test::kSingleTolerance;
using test::run;
using test::run_rows;
using test::with;

class CudaMaps : public ::testing::TestWithParam<MapMethod> {
 protected:
  void SetUp() override {
    std::string why;
    gpus_ = list_gpus(&why);
    if (gpus_.empty()) GTEST_SKIP() << "no GPU: " << why;
  }
  std::vector<GpuInfo> gpus_;
};

// Sets an environment variable for one scope.
class ScopedEnvironment {
 public:
  ScopedEnvironment(const char* name, const char* value) : name_(name) { ::setenv(name, value, 1); }
  ~ScopedEnvironment() { ::unsetenv(name_); }

 private:
  const char* name_;
};

}  // namespace

TEST_P(CudaMaps, RandomAtomsAtAwkwardSizes) {
  // Shapes far from the kernel's 8 points a thread and 128 threads a block: single points,
  // single rows and planes, primes; atoms inside and well outside the lattice.
  const std::vector<std::array<std::int64_t, 3>> shapes = {{1, 1, 1},  {7, 11, 13}, {3, 1, 37},  {17, 5, 1},
                                                           {2, 3, 67}, {1, 1, 129}, {31, 29, 9}, {1, 50, 1}};
  const std::vector<std::size_t> atom_counts = {1, 2, 127, 129, 1000};
  unsigned seed = 11;
  for (const auto& dims : shapes)
    for (const std::size_t n : atom_counts) {
      Lattice lattice;
      lattice.origin = {-4.1, -3.3, -5.7};
      lattice.spacing = 0.37;
      lattice.dims = dims;
      const Atoms atoms = test::random_atoms(n, {-9, -8, -10}, {9, 8, 20}, seed++);
      const auto reference = run(atoms, lattice, with(GetParam(), Backend::reference));
      const auto magnitude = run(test::with_absolute_charges(atoms), lattice, with(GetParam(), Backend::reference));
      const auto single = run(atoms, lattice, with(GetParam(), Backend::cuda, Precision::single));
      const auto dbl = run(atoms, lattice, with(GetParam(), Backend::cuda, Precision::double_));
      EXPECT_LT(test::error_relative_to(single, reference, magnitude), test::kSingleConditionedTolerance)
          << dims[0] << "x" << dims[1] << "x" << dims[2] << ", " << n << " atoms";
      EXPECT_LT(test::error_relative_to(dbl, reference, magnitude), test::kDoubleConditionedTolerance)
          << dims[0] << "x" << dims[1] << "x" << dims[2] << ", " << n << " atoms";
    }
}

TEST_P(CudaMaps, RealProteinsAgreeWithReferenceAndCpu) {
  for (const char* name : {"1a63.pqr", "hca.pqr"}) {
    const Atoms atoms = io::read_pqr(test::data_file(name));
    const Lattice lattice = lattice_around(atoms, 1.7, 6.0);
    const auto reference = run(atoms, lattice, with(GetParam(), Backend::reference));
    const auto gpu = run(atoms, lattice, with(GetParam(), Backend::cuda));
    const auto cpu = run(atoms, lattice, with(GetParam(), Backend::cpu));
    const double error = test::relative_rms(gpu, reference);
    EXPECT_LT(error, kSingleTolerance) << name;
    EXPECT_LT(test::relative_rms(gpu, cpu), 2 * kSingleTolerance) << name;
    std::printf("[ accuracy ] cuda %s %s: relative RMS float32 %.2e\n", to_string(GetParam()).c_str(), name, error);
  }
}

TEST_P(CudaMaps, AMillionAtoms) {
  // 2^20 atoms in a 100 A box, a few lattice points: many shared-memory tiles, float64 sums
  // across them.
  const Atoms atoms = test::random_atoms(1 << 20, {-50, -50, -50}, {50, 50, 50}, 5);
  Lattice lattice;
  lattice.origin = {-3, -2, -1};
  lattice.spacing = 1.1;
  lattice.dims = {3, 2, 11};
  const auto reference = run(atoms, lattice, with(GetParam(), Backend::reference));
  const auto magnitude = run(test::with_absolute_charges(atoms), lattice, with(GetParam(), Backend::reference));
  const auto gpu = run(atoms, lattice, with(GetParam(), Backend::cuda));
  EXPECT_LT(test::error_relative_to(gpu, reference, magnitude), test::kSingleConditionedTolerance);
}

TEST_P(CudaMaps, SameBitsOnRepeatedRunsSlabSplitsAndDevices) {
  const Atoms atoms = io::read_pqr(test::data_file("1a63.pqr"));
  const Lattice lattice = lattice_around(atoms, 1.1, 4.0);
  const auto first = run(atoms, lattice, with(GetParam(), Backend::cuda));
  EXPECT_EQ(run(atoms, lattice, with(GetParam(), Backend::cuda)), first);
  {
    const ScopedEnvironment small_slabs("NBKIT_CUDA_SLAB_ROWS", "37");
    EXPECT_EQ(run(atoms, lattice, with(GetParam(), Backend::cuda)), first) << "37-row slabs";
  }
  MapOptions one_gpu = with(GetParam(), Backend::cuda);
  one_gpu.gpus = {0};
  EXPECT_EQ(run(atoms, lattice, one_gpu), first);
  if (gpus_.size() >= 2) {
    MapOptions two_gpus = with(GetParam(), Backend::cuda);
    two_gpus.gpus = {0, 1};
    EXPECT_EQ(run(atoms, lattice, two_gpus), first) << "two GPUs";
    const ScopedEnvironment small_slabs("NBKIT_CUDA_SLAB_ROWS", "5");
    EXPECT_EQ(run(atoms, lattice, two_gpus), first) << "two GPUs, 5-row slabs";
  }
}

TEST_P(CudaMaps, RowsPastTwoTo32Points) {
  Lattice lattice;
  lattice.origin = {-20000, -10000, 0};
  lattice.spacing = 0.6;
  lattice.dims = {65537, 32768, 2};
  const Atoms atoms = test::random_atoms(20, {19300, 9600, -5}, {19330, 9700, 5}, 99);
  const std::int64_t end = lattice.rows(), begin = end - 3;
  const auto reference = run_rows(atoms, lattice, with(GetParam(), Backend::reference), begin, end);
  const auto gpu = run_rows(atoms, lattice, with(GetParam(), Backend::cuda), begin, end);
  EXPECT_LT(test::relative_rms(gpu, reference), kSingleTolerance);
}

TEST_P(CudaMaps, PointsOnAtomsWithManyAtomsInSegments) {
  // 6000 atoms on a tiny lattice: the atoms are split into segments; three atoms sit
  // exactly on lattice points and take the checked pass.
  Atoms atoms = test::random_atoms(6000, {-6, -5, -4}, {6, 5, 4}, 21);
  atoms.push_back({0, 0, 0}, 1.0, 1.0);
  atoms.push_back({1, 0, 0}, -2.0, 1.0);
  atoms.push_back({-2, -1.5, -1}, 0.5, 1.2);  // the lattice origin
  Lattice lattice;
  lattice.origin = {-2, -1.5, -1};
  lattice.spacing = 0.5;
  lattice.dims = {9, 7, 5};
  const auto reference = run(atoms, lattice, with(GetParam(), Backend::reference));
  const auto gpu = run(atoms, lattice, with(GetParam(), Backend::cuda));
  const auto dbl = run(atoms, lattice, with(GetParam(), Backend::cuda, Precision::double_));
  EXPECT_LT(test::relative_rms(gpu, reference), kSingleTolerance);
  EXPECT_LT(test::relative_rms(dbl, reference), kDoubleTolerance);
  lattice.dims = {9, 7, 24};  // eight points a thread
  const auto reference8 = run(atoms, lattice, with(GetParam(), Backend::reference));
  EXPECT_LT(test::relative_rms(run(atoms, lattice, with(GetParam(), Backend::cuda)), reference8), kSingleTolerance);
}

TEST_P(CudaMaps, BadDeviceIsAClearError) {
  MapOptions options = with(GetParam(), Backend::cuda);
  options.gpus = {static_cast<int>(gpus_.size()) + 3};
  Atoms atoms;
  atoms.push_back({0, 0, 0}, 1, 1);
  Lattice lattice;
  try {
    run(atoms, lattice, options);
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("--gpus: there is no GPU"), std::string::npos) << error.what();
  }
}

INSTANTIATE_TEST_SUITE_P(Methods, CudaMaps, ::testing::Values(MapMethod::direct, MapMethod::mdh),
                         [](const auto& info) { return to_string(info.param); });

}  // namespace nbkit
