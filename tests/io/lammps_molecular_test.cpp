// LAMMPS data files with molecular topology (io/lammps_data.hpp): the full style's sections
// read into an md::Topology as LAMMPS's peptide styles define them, and the refusals. The
// comparison with LAMMPS itself on its peptide is tests/clients/check_energy_lammps.py.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <iterator>
#include <numbers>
#include <string>

#include "nbkit/core/error.hpp"
#include "nbkit/io/lammps_data.hpp"
#include "test_support.hpp"

namespace nbkit::test {
namespace {

// tests/data/chain.data: a chain C1-C2-C3-C4 and a lone atom 5 (molecule 2), two types, in the
// peptide's styles (lj/charmm Pair Coeffs, charmm angles and dihedrals, harmonic impropers).
std::string chain_text() {
  std::ifstream in(test_data_file("chain.data"));
  return std::string(std::istreambuf_iterator<char>(in), {});
}
const std::string kChain = chain_text();

md::Topology chain(const std::string& text) {
  return io::molecular_topology(io::parse_lammps_data(text, "chain.data", md::Units::real), "chain.data");
}

TEST(LammpsMolecular, ReadsTheFullStyleAndThePeptideStyles) {
  const md::Topology t = chain(kChain);
  ASSERT_EQ(t.size(), 5u);
  EXPECT_EQ(t.residue_number[4], 2);
  EXPECT_EQ(t.charge[3], -0.2);
  EXPECT_EQ(t.mass[4], 1.008);
  ASSERT_EQ(t.bonds.size(), 3u);
  EXPECT_EQ(t.bonds[2].i, 2);
  EXPECT_EQ(t.bonds[2].k, 300.0);
  ASSERT_EQ(t.angles.size(), 2u);
  EXPECT_NEAR(t.angles[0].theta0, 110.0 * std::numbers::pi / 180, 1e-15);
  ASSERT_EQ(t.urey_bradley.size(), 2u);  // charmm angles: K theta0 K_ub r_ub
  EXPECT_EQ(t.urey_bradley[1].i, 1);
  EXPECT_EQ(t.urey_bradley[1].j, 3);
  EXPECT_EQ(t.urey_bradley[1].r0, 2.5);
  ASSERT_EQ(t.dihedrals.size(), 1u);
  EXPECT_EQ(t.dihedrals[0].periodicity, 3);
  EXPECT_NEAR(t.dihedrals[0].phase, std::numbers::pi, 1e-15);
  // The 1-4 pair weighted by w = 0.5, from epsilon14 and sigma14 mixed arithmetically (type 1 with itself).
  ASSERT_EQ(t.pairs14.size(), 1u);
  EXPECT_EQ(t.pairs14[0].coulomb_scale, 0.5);
  EXPECT_NEAR(t.pairs14[0].c6, 0.5 * 4 * 0.05 * std::pow(3.2, 6), 1e-9);
  // Arithmetic mixing of sigma for lj/charmm: types 1 and 2 meet at (3.5 + 2.0) / 2.
  EXPECT_NEAR(t.c6[1], 4 * std::sqrt(0.1 * 0.02) * std::pow(2.75, 6), 1e-9);
  ASSERT_EQ(t.harmonic_impropers.size(), 1u);
  EXPECT_EQ(t.harmonic_impropers[0].i, 1);
  // Exclusions: 1-2, 1-3 and 1-4 along the bonds (special_bonds 0 0 0): 3 + 2 + 1.
  EXPECT_EQ(t.exclusions.size(), 6u);
  ASSERT_TRUE(t.box);
  EXPECT_EQ(t.box->length(2), 32.0);
}

std::string lammps_error_of(const std::string& text) {
  try {
    chain(text);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

std::string lammps_replaced(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return text.replace(at, from.size(), to);
}

// special_bonds: pairs 1 and 2 bonds apart come back scaled (the chain's 1-4 pair keeps its
// dihedral weight: LAMMPS refuses a 1-4 factor beside it); the keywords read as LAMMPS reads them.
TEST(LammpsMolecular, SpecialBondsScaleThePairsOneAndTwoBondsApart) {
  const auto data = io::parse_lammps_data(kChain, "chain.data", md::Units::real);
  const md::Topology plain = io::molecular_topology(data, "chain.data");
  const md::Topology scaled = io::molecular_topology(data, "chain.data", io::parse_special_bonds("lj 0.1 0.2 0 coul 0.3 0.4 0"));
  ASSERT_EQ(scaled.pairs14.size(), plain.pairs14.size() + 5);  // three 1-2 pairs, two 1-3 pairs
  EXPECT_EQ(scaled.exclusions, plain.exclusions);
  for (const md::Pair14& p : scaled.pairs14) {
    if (p.j - p.i == 3) continue;  // the dihedral's own 1-4 pair
    const double lj = p.j - p.i == 1 ? 0.1 : 0.2, coul = p.j - p.i == 1 ? 0.3 : 0.4;
    const std::size_t k = static_cast<std::size_t>(plain.lj_type[p.i]) * plain.lj_types + plain.lj_type[p.j];
    EXPECT_DOUBLE_EQ(p.coulomb_scale, coul);
    EXPECT_DOUBLE_EQ(p.c12, lj * plain.c12[k]);
    EXPECT_DOUBLE_EQ(p.c6, lj * plain.c6[k]);
  }
  const io::SpecialBonds amber = io::parse_special_bonds("amber");
  EXPECT_EQ(amber.lj[2], 0.5);
  EXPECT_DOUBLE_EQ(amber.coul[2], 5.0 / 6.0);
  EXPECT_EQ(io::parse_special_bonds("lj/coul 0 1 1").coul[1], 1.0);
  EXPECT_EQ(io::parse_special_bonds("charmm").lj[2], 0.0);
  EXPECT_THROW(io::parse_special_bonds("lj 0 0"), Error);
  EXPECT_THROW(io::parse_special_bonds("lj 0 0 2"), Error);
  EXPECT_THROW(io::parse_special_bonds("angle yes"), Error);
  // A 1-4 factor beside the dihedrals' 1-4 weights would count those pairs twice.
  EXPECT_THROW(io::molecular_topology(data, "chain.data", amber), Error);
}

TEST(LammpsMolecular, RefusesWithFileAndLine) {
  EXPECT_NE(lammps_error_of(lammps_replaced(kChain, "3 1 3 4\n", "3 1 3 9\n")).find("chain.data:56: Bonds: atom ID 9 is not in Atoms"),
            std::string::npos);
  EXPECT_NE(lammps_error_of(lammps_replaced(kChain, "2 1 2 3 4\n", "2 2 2 3 4\n")).find("chain.data:61: angle type 2 outside 1..1"),
            std::string::npos);
  EXPECT_NE(lammps_error_of(lammps_replaced(kChain, "1 1 2 1 3 4\n", "1 1 2 1 3\n")).find("Impropers: expected 'id type' and 4 atom IDs"),
            std::string::npos);
  EXPECT_NE(lammps_error_of(lammps_replaced(kChain, "1 0.2 3 180 0.5", "1 0.2 3 180")).find("Dihedral Coeffs: 3 coefficients per type"),
            std::string::npos);
  EXPECT_NE(lammps_error_of(lammps_replaced(kChain, "1 0.2 3 180 0.5", "1 0.2 3.5 180 0.5")).find("charmm expects"), std::string::npos);
  EXPECT_NE(lammps_error_of(lammps_replaced(kChain, "1 50.0 0.0", "1 50.0 35.0")).find("chi0 35"), std::string::npos);
  EXPECT_NE(lammps_error_of(lammps_replaced(kChain, "Angle Coeffs\n\n1 40.0 110.0 20.0 2.5\n\n", "")).find("no Angle Coeffs section"),
            std::string::npos);
  EXPECT_NE(lammps_error_of(lammps_replaced(kChain, "Bond Coeffs", "Bond Coeffs # morse")).find("Bond Coeffs # morse"), std::string::npos);
  EXPECT_NE(lammps_error_of(lammps_replaced(kChain, "1 1 1 2 3 4\n", "1 1 1 2 3 3\n")).find("appears twice in one term"),
            std::string::npos);
  // Bonds in a file whose atoms have no molecule column (atom style charge).
  EXPECT_NE(lammps_error_of(lammps_replaced(kChain, "Atoms\n", "Atoms # charge\n")).find("Atoms (charge): expected 6 or 9 columns"),
            std::string::npos);
}

}  // namespace
}  // namespace nbkit::test
