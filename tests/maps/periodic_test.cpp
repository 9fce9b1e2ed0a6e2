// Periodic boxes (cutoff method): minimum-image sums against an explicit sum over the 27
// replicated cells, on every backend.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <string>

#include "maps/map_test_support.hpp"
#include "nbkit/core/error.hpp"
#include "nbkit/io/cell.hpp"
#include "nbkit/maps.hpp"
#include "test_support.hpp"

namespace nbkit {

namespace {

// The atoms wrapped into [0, box) and copied into the 3 x 3 x 3 cells around it: for
// points inside the cell and cutoff < box / 2, the cutoff sum over these without a box is
// the minimum-image sum, computed with no periodic code at all.
Atoms replicated_cells(const Atoms& atoms, Vec3 box) {
  Atoms out;
  for (std::size_t n = 0; n < atoms.size(); ++n) {
    Vec3 p = atoms.position(n);
    for (int a = 0; a < 3; ++a) p[a] -= box[a] * std::floor(p[a] / box[a]);
    for (int sx = -1; sx <= 1; ++sx)
      for (int sy = -1; sy <= 1; ++sy)
        for (int sz = -1; sz <= 1; ++sz)
          out.push_back({p.x + sx * box.x, p.y + sy * box.y, p.z + sz * box.z}, atoms.charge[n], atoms.radius[n]);
  }
  return out;
}

MapOptions periodic_options(Backend backend, Smoothing smoothing, std::optional<Vec3> box, double cutoff,
                            Precision precision = Precision::single) {
  MapOptions o = test::with(MapMethod::cutoff, backend, precision);
  o.smoothing = smoothing;
  o.cutoff = cutoff;
  if (box) o.periodic_box = PeriodicBox::from_edges(*box);
  return o;
}

class PeriodicCutoff : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    std::string why;
    if (GetParam() == Backend::cuda && list_gpus(&why).empty()) GTEST_SKIP() << "no GPU: " << why;
  }
};

}  // namespace

TEST_P(PeriodicCutoff, MatchesAnExplicitSumOverReplicatedCells) {
  const Vec3 box{17, 19, 23};
  // Atoms anywhere, also far outside the cell: they are wrapped.
  const Atoms atoms = test::random_atoms(300, {-20, -5, -30}, {40, 25, 50}, 4);
  const Lattice lattice = lattice_spanning_cell(box, 1.0);
  ASSERT_EQ(lattice.dims, (std::array<std::int64_t, 3>{17, 19, 23}));
  const Atoms images = replicated_cells(atoms, box);
  for (const Smoothing smoothing : {Smoothing::cutcp, Smoothing::taylor2}) {
    const double cutoff = 8.0;
    const auto expected = test::run(images, lattice, periodic_options(Backend::reference, smoothing, {}, cutoff));
    const auto magnitude =
        test::run(test::with_absolute_charges(images), lattice, periodic_options(Backend::reference, Smoothing::none, {}, cutoff));
    const auto single = test::run(atoms, lattice, periodic_options(GetParam(), smoothing, box, cutoff));
    const auto dbl = test::run(atoms, lattice, periodic_options(GetParam(), smoothing, box, cutoff, Precision::double_));
    const bool exact = GetParam() == Backend::reference;
    EXPECT_LT(test::error_relative_to(single, expected, magnitude),
              exact ? test::kDoubleConditionedTolerance : test::kSingleConditionedTolerance)
        << to_string(smoothing);
    EXPECT_LT(test::error_relative_to(dbl, expected, magnitude), test::kDoubleConditionedTolerance) << to_string(smoothing);
  }
}

TEST_P(PeriodicCutoff, AChargeAcrossAFaceIsSeen) {
  // One charge 0.5 A inside the x = 0 face; the point at x = 9 A of a 10 A box is 1.5 A
  // from its image (and 8.5 A from the charge itself, beyond the 4 A cutoff).
  Atoms atoms;
  atoms.push_back({0.5, 5, 5}, 1.0, 1.0);
  const Vec3 box{10, 10, 10};
  const Lattice lattice = lattice_spanning_cell(box, 1.0);
  const auto values = test::run(atoms, lattice, periodic_options(GetParam(), Smoothing::none, box, 4.0));
  const double prefactor = units::potential_prefactor(units::PotentialUnit::kT_per_e, 1.0, units::default_temperature);
  EXPECT_NEAR(values[static_cast<std::size_t>(lattice.index(9, 5, 5))], prefactor / 1.5, 1e-6 * prefactor);
  EXPECT_NEAR(values[static_cast<std::size_t>(lattice.index(1, 5, 5))], prefactor / 0.5, 1e-6 * prefactor);
  EXPECT_EQ(values[static_cast<std::size_t>(lattice.index(5, 5, 5))], 0.0);  // 4.5 A from both
}

INSTANTIATE_TEST_SUITE_P(Backends, PeriodicCutoff, ::testing::Values(Backend::reference, Backend::cpu, Backend::cuda),
                         [](const auto& info) {
                           return info.param == Backend::cuda ? std::string("Cuda") : to_string(info.param);
                         });

TEST(PeriodicRequests, BadBoxesAndMethodsAreRefused) {
  Atoms atoms;
  atoms.push_back({1, 1, 1}, 1, 1);
  const Lattice lattice = lattice_spanning_cell({10, 10, 10}, 1.0);
  EXPECT_THROW(test::run(atoms, lattice, periodic_options(Backend::cpu, Smoothing::cutcp, Vec3{10, 10, 10}, 5.0)), Error);
  EXPECT_THROW(test::run(atoms, lattice, periodic_options(Backend::cpu, Smoothing::cutcp, Vec3{10, -1, 10}, 3.0)), Error);
  MapOptions direct = test::with(MapMethod::direct, Backend::cpu);
  direct.periodic_box = PeriodicBox::from_edges({10, 10, 10});
  EXPECT_THROW(test::run(atoms, lattice, direct), Error);
  // The one box type carries a lower corner; the maps' cell is a CRYST1 record's, at the origin.
  MapOptions shifted = periodic_options(Backend::cpu, Smoothing::cutcp, Vec3{10, 10, 10}, 3.0);
  shifted.periodic_box->lo = {1, 0, 0};
  EXPECT_THROW(test::run(atoms, lattice, shifted), Error);
  // Edges that are not multiples of the spacing: the lattice still covers the cell.
  EXPECT_EQ(lattice_spanning_cell({10.2, 10, 9.99}, 0.5).dims, (std::array<std::int64_t, 3>{21, 20, 20}));
}

TEST(Cryst1, OrthorhombicBoxesOnly) {
  EXPECT_EQ(io::parse_cryst1("REMARK x\nCRYST1   61.200   62.300   63.400  90.00  90.00  90.00 P 1           1\n", "a.pqr"),
            PeriodicBox::from_edges({61.2, 62.3, 63.4}));
  EXPECT_FALSE(io::parse_cryst1("ATOM 1 N HIS 1 1.0 2.0 3.0 0.5 1.0\n", "b.pqr"));
  EXPECT_FALSE(io::parse_cryst1("CRYST1    1.000    1.000    1.000  90.00  90.00  90.00 P 1           1\n", "c.pdb"));
  try {
    io::parse_cryst1("REMARK\nCRYST1   61.2   62.3   63.4  90.00  90.00 120.00 P 6\n", "d.pqr");
    FAIL() << "a hexagonal cell was accepted";
  } catch (const InputError& error) {
    EXPECT_EQ(error.line(), 2);
    EXPECT_EQ(error.field(), "gamma");
  }
  EXPECT_THROW(io::parse_cryst1("CRYST1 61.2 x 63.4 90 90 90\n", "e.pqr"), InputError);
  EXPECT_THROW(io::parse_cryst1("CRYST1 61.2 62.3\n", "f.pqr"), InputError);
  // PDB files go through gemmi.
  test::ScratchDir dir;
  std::ofstream(dir.file("box.pdb")) << "CRYST1   30.000   31.000   32.000  90.00  90.00  90.00 P 1           1\n"
                                        "ATOM      1  O   HOH A   1       1.000   2.000   3.000  1.00  0.00           O\n"
                                        "END\n";
  EXPECT_EQ(io::read_periodic_box(dir.file("box.pdb")), PeriodicBox::from_edges({30, 31, 32}));
  EXPECT_FALSE(io::read_periodic_box(test::test_data_file("tripeptide.pdb")));
}

}  // namespace nbkit
