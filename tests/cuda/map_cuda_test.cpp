// What only the CUDA map path has: atom segments, atoms on lattice points in a checked
// pass, slabs, several GPUs (bit for bit against one), device errors. The properties every
// fast path shares are tested once for all backends in tests/maps/backends_test.cpp.
// Skips without a GPU.
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
