#include "nbkit/core/lattice.hpp"

#include <gtest/gtest.h>

#include "nbkit/core/atoms.hpp"
#include "nbkit/core/error.hpp"

namespace nbkit {

TEST(Lattice, VertexCentredIndexingXSlowestZFastest) {
  Lattice lattice;
  lattice.origin = {1, 2, 3};
  lattice.spacing = 0.5;
  lattice.dims = {4, 5, 6};
  EXPECT_EQ(lattice.size(), 120);
  EXPECT_EQ(lattice.index(0, 0, 1), 1);
  EXPECT_EQ(lattice.index(0, 1, 0), 6);
  EXPECT_EQ(lattice.index(1, 0, 0), 30);
  EXPECT_EQ(lattice.point(2, 3, 4), (Vec3{2.0, 3.5, 5.0}));
  EXPECT_EQ(lattice.extent(), (Vec3{1.5, 2.0, 2.5}));
}

TEST(Lattice, IndicesPast2To31) {
  Lattice lattice;
  lattice.dims = {65537, 32768, 2};  // 2^32 + 65536 points
  EXPECT_EQ(lattice.size(), std::int64_t{65537} * 32768 * 2);
  EXPECT_GT(lattice.index(65536, 32767, 1), std::int64_t{1} << 32);
  EXPECT_EQ(lattice.index(65536, 32767, 1), lattice.size() - 1);
  EXPECT_NO_THROW(validate(lattice));
}

TEST(Lattice, AroundAtomsCoversBoxPlusPadding) {
  Atoms atoms;
  atoms.push_back({0, 0, 0}, 1, 1);
  atoms.push_back({10, 4, 1}, -1, 1);
  const Lattice lattice = lattice_around(atoms, 0.5, 5.0);
  for (int a = 0; a < 3; ++a) {
    const double lower = a == 0 ? 0 : 0, upper = a == 0 ? 10 : (a == 1 ? 4 : 1);
    EXPECT_LE(lattice.origin[a], lower - 5.0 + 1e-9);
    EXPECT_GE(lattice.origin[a] + lattice.extent()[a], upper + 5.0 - 1e-9);
    EXPECT_LT(lattice.extent()[a], upper - lower + 10.0 + 0.5 + 1e-9);  // no more than one extra step
  }
  EXPECT_EQ(lattice.dims[0], 41);  // 20 A / 0.5 + 1
  EXPECT_NEAR(lattice.center().x, 5.0, 1e-12);
}

TEST(Lattice, CenteredWithLength) {
  const Lattice lattice = lattice_centered({1, 1, 1}, {10, 3, 0}, 1.0);
  EXPECT_EQ(lattice.dims, (std::array<std::int64_t, 3>{11, 4, 1}));
  EXPECT_NEAR(lattice.center().x, 1.0, 1e-12);
  EXPECT_NEAR(lattice.center().y, 1.0, 1e-12);
  EXPECT_NEAR(lattice.origin.z, 1.0, 1e-12);
}

TEST(Lattice, BadRequestsAreRejected) {
  Atoms atoms;
  atoms.push_back({0, 0, 0}, 1, 1);
  EXPECT_THROW(lattice_around(atoms, 0.0, 5.0), Error);
  EXPECT_THROW(lattice_around(atoms, -1.0, 5.0), Error);
  EXPECT_THROW(lattice_around(atoms, 0.5, -1.0), Error);
  EXPECT_THROW(lattice_around(Atoms{}, 0.5, 1.0), Error);
  EXPECT_THROW(lattice_centered({0, 0, 0}, {1e9, 1, 1}, 1e-3), Error);
  Lattice lattice;
  lattice.dims = {0, 1, 1};
  EXPECT_THROW(validate(lattice), Error);
}

}  // namespace nbkit
