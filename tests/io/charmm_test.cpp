// CHARMM's psf, parameter, stream and crd files (io/charmm.hpp): a small molecule written here
// in each format, read back term by term (exact types before wildcards, multi-term dihedrals,
// Urey-Bradley, CMAP, special 1-4 Lennard-Jones, NBFIX with and without its 1-4 columns), then
// every refusal names file, line and field. Real CHARMM36 files are compared with OpenMM's
// reading of them by tests/clients/check_energy_charmm.py.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <string>

#include "nbkit/core/error.hpp"
#include "nbkit/io/charmm.hpp"

namespace nbkit::test {
namespace {

constexpr double kDegree = std::numbers::pi / 180;

// Butane-like: C1(CT3)-C2(CT2)-C3(CT2)-C4(CT3), H5(HA3) on C1.
std::string psf(bool numbered = false) {
  const char* t[5] = {"CT3", "CT2", "CT2", "CT3", "HA3"};
  const char* n[5] = {"3", "2", "2", "3", "7"};
  std::string s = numbered ? "PSF CMAP\n\n" : "PSF EXT CMAP XPLOR\n\n";
  s += "       2 !NTITLE\n REMARKS a test molecule\n REMARKS second line\n\n       5 !NATOM\n";
  const double q[5] = {-0.27, -0.18, -0.18, -0.27, 0.9};
  for (int a = 0; a < 5; ++a)
    s += "       " + std::to_string(a + 1) + " MOL      1        BUT      C" + std::to_string(a + 1) + "       " +
         (numbered ? n[a] : t[a]) + "     " + std::to_string(q[a]) + "       12.0110           0\n";
  s += "\n       4 !NBOND: bonds\n       1       2       2       3       3       4       1       5\n";
  s += "\n       3 !NTHETA: angles\n       5       1       2       1       2       3\n       2       3       4\n";
  s += "\n       2 !NPHI: dihedrals\n       5       1       2       3       1       2       3       4\n";
  s += "\n       1 !NIMPHI: impropers\n       1       2       3       4\n";
  s += "\n       0 !NDON: donors\n\n\n       0 !NACC: acceptors\n\n\n       0 !NNB\n\n       0       0       0       0       0\n";
  s += "\n       1       0 !NGRP NST2\n       0       0       0\n";
  s += "\n       1 !NCRTERM: cross-terms\n       5       1       2       3       1       2       3       4\n";
  return s;
}

std::string parameters() {
  return R"(* test parameters
*
ATOMS
MASS     2 CT2   12.01100 ! numbered types for the standard psf
MASS     3 CT3   12.01100
MASS     7 HA3    1.00800

BONDS
CT3  CT2   222.500     1.5280 ! a comment
CT2  CT2   222.500     1.5300
HA3  CT3   322.000     1.1110

ANGLES
HA3  CT3  CT2    34.600    110.10   22.53   2.17900
CT3  CT2  CT2    58.350    113.60   11.16   2.56100

DIHEDRALS
X    CT2  CT2  X      0.1900  3     0.00 ! the wildcard: not for 1-2-3-4, which has its own
CT3  CT2  CT2  CT3    0.1500  1     0.00
CT3  CT2  CT2  CT3    0.1000  3   180.00
X    CT3  CT2  X      0.2000  3     0.00

IMPROPER
CT3  X    X    CT3    1.5000  0    10.0000

CMAP
HA3 CT3 CT2 CT2 CT3 CT2 CT2 CT3 4
! phi = -180
0.0 1.0 2.0 3.0
! phi = -90
4.0 5.0 6.0 7.0
8.0 9.0 10.0 11.0
12.0 13.0 14.0 15.0

NONBONDED nbxmod  5 atom cdiel fshift vatom vdistance vfswitch -
cutnb 14.0 ctofnb 12.0 ctonnb 10.0 eps 1.0 e14fac 0.5 wmin 1.5
CT3    0.0       -0.0780     2.0400   0.0 -0.01 1.9
CT2    0.0       -0.0560     2.0100   0.0 -0.01 1.9
HA3    0.0       -0.0240     1.3400

NBFIX
CT2  HA3  -0.05  3.0  -0.02  2.8

HBOND CUTHB 0.5

END
)";
}

md::Topology read(const std::string& psf_text, const std::string& prm_text) {
  return io::parse_charmm(psf_text, "t.psf", {{prm_text, "t.prm"}});
}

TEST(Charmm, ReadsEveryTermOfAPsfWithItsParameters) {
  const md::Topology t = read(psf(), parameters());
  ASSERT_EQ(t.size(), 5u);
  EXPECT_EQ(t.atom_name[4], "C5");
  EXPECT_DOUBLE_EQ(t.charge[4], 0.9);
  EXPECT_DOUBLE_EQ(t.mass[0], 12.011);
  ASSERT_EQ(t.bonds.size(), 4u);
  EXPECT_DOUBLE_EQ(t.bonds[3].k, 322.0);  // HA3-CT3 read as CT3-HA3
  EXPECT_DOUBLE_EQ(t.bonds[1].r0, 1.53);
  ASSERT_EQ(t.angles.size(), 3u);
  EXPECT_NEAR(t.angles[2].theta0, 113.6 * kDegree, 1e-15);  // CT2-CT2-CT3 read as CT3-CT2-CT2
  ASSERT_EQ(t.urey_bradley.size(), 3u);
  EXPECT_EQ(t.urey_bradley[0].i, 4);
  EXPECT_EQ(t.urey_bradley[0].j, 1);
  EXPECT_DOUBLE_EQ(t.urey_bradley[0].k, 22.53);
  EXPECT_DOUBLE_EQ(t.urey_bradley[2].r0, 2.561);
  // 5-1-2-3 (HA3 CT3 CT2 CT2) has no entry of its own: the wildcard X CT3 CT2 X; 1-2-3-4 has
  // two terms of its own, and the X CT2 CT2 X wildcard is not added to them.
  ASSERT_EQ(t.dihedrals.size(), 3u);
  EXPECT_DOUBLE_EQ(t.dihedrals[0].k_phi, 0.2);
  EXPECT_EQ(t.dihedrals[1].periodicity, 1);
  EXPECT_DOUBLE_EQ(t.dihedrals[2].k_phi, 0.1);
  EXPECT_NEAR(t.dihedrals[2].phase, std::numbers::pi, 1e-15);
  ASSERT_EQ(t.harmonic_impropers.size(), 1u);  // CT3 X X CT3
  EXPECT_DOUBLE_EQ(t.harmonic_impropers[0].k_psi, 1.5);
  EXPECT_NEAR(t.harmonic_impropers[0].psi0, 10 * kDegree, 1e-15);
  ASSERT_EQ(t.cmaps.size(), 1u);
  ASSERT_EQ(t.cmap_grids.size(), 1u);
  EXPECT_EQ(t.cmap_grids[0].size, 4);
  EXPECT_EQ(t.cmap_grids[0].energy[5], 5.0);
  EXPECT_EQ(t.cmaps[0].phi[0], 4);
  EXPECT_EQ(t.cmaps[0].psi[3], 3);
  // Lennard-Jones: eps = sqrt(eps_a eps_b), Rmin = Rmin/2_a + Rmin/2_b, c12 = eps Rmin^12,
  // c6 = 2 eps Rmin^6; NBFIX's own for CT2-HA3.
  ASSERT_EQ(t.lj_types, 3);  // CT3, CT2, HA3 in order of first use
  auto c12 = [&](int a, int b) { return t.c12[a * 3 + b]; };
  auto c6 = [&](int a, int b) { return t.c6[a * 3 + b]; };
  const double e = std::sqrt(0.078 * 0.056), r = 2.04 + 2.01;
  EXPECT_NEAR(c12(0, 1), e * std::pow(r, 12), 1e-12 * c12(0, 1));
  EXPECT_NEAR(c6(1, 0), 2 * e * std::pow(r, 6), 1e-12 * c6(1, 0));
  EXPECT_NEAR(c12(1, 2), 0.05 * std::pow(3.0, 12), 1e-12 * c12(1, 2));
  EXPECT_NEAR(c6(2, 1), 2 * 0.05 * std::pow(3.0, 6), 1e-12 * c6(2, 1));
  // 1-4 pairs from the bond graph: C1-C4 with the special columns, C3-H5 with NBFIX's 1-4 ones;
  // the Coulomb scaled by e14fac.
  ASSERT_EQ(t.pairs14.size(), 2u);
  EXPECT_EQ(t.pairs14[0].i, 0);
  EXPECT_EQ(t.pairs14[0].j, 3);
  EXPECT_NEAR(t.pairs14[0].c12, 0.01 * std::pow(3.8, 12), 1e-12 * t.pairs14[0].c12);
  EXPECT_DOUBLE_EQ(t.pairs14[0].coulomb_scale, 0.5);
  EXPECT_EQ(t.pairs14[1].i, 2);
  EXPECT_EQ(t.pairs14[1].j, 4);
  EXPECT_NEAR(t.pairs14[1].c6, 2 * 0.02 * std::pow(2.8, 6), 1e-12 * t.pairs14[1].c6);
  EXPECT_EQ(t.exclusions.size(), 9u);  // 4 bonds, 3 angles' ends, 2 1-4 pairs
  EXPECT_EQ(t.source, "CHARMM psf t.psf");
}

TEST(Charmm, StandardPsfTypesAreNamedByMassLines) {
  const md::Topology named = read(psf(false), parameters()), numbered = read(psf(true), parameters());
  EXPECT_EQ(numbered.c12, named.c12);
  EXPECT_EQ(numbered.dihedrals.size(), named.dihedrals.size());
  EXPECT_EQ(numbered.pairs14.size(), named.pairs14.size());
}

TEST(Charmm, StreamFilesGiveTheirParameterBlocksOnly) {
  // The parameters in two files: the second a stream file whose "read para" block replaces the
  // HA3 NBFIX and whose "read rtf" block's MASS line is read and its residues skipped.
  std::string base = parameters();
  base.replace(base.find("NBFIX\n"), std::string("NBFIX\nCT2  HA3  -0.05  3.0  -0.02  2.8\n").size(), "");
  const std::string stream = R"(* a stream file
*
read rtf card append
* topology
36 1
MASS  -1  HA3   1.008
RESI BUT 0.0
END

read para card flex append
* parameters
NBFIX
CT2  HA3  -0.07  3.1
END
RETURN
)";
  const md::Topology t = io::parse_charmm(psf(), "t.psf", {{base, "t.prm"}, {stream, "t.str"}});
  EXPECT_NEAR(t.c12[1 * 3 + 2], 0.07 * std::pow(3.1, 12), 1e-12 * t.c12[5]);
  EXPECT_NEAR(t.pairs14[1].c12, 0.07 * std::pow(3.1, 12), 1e-12 * t.pairs14[1].c12);  // no 1-4 columns: the same
}

std::string error_of(const std::string& psf_text, const std::string& prm_text) {
  try {
    read(psf_text, prm_text);
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

void expect_error(const std::string& psf_text, const std::string& prm_text, const std::string& expected) {
  const std::string message = error_of(psf_text, prm_text);
  EXPECT_NE(message.find(expected), std::string::npos) << message;
}

std::string replaced(std::string text, const std::string& what, const std::string& with) {
  const auto at = text.find(what);
  EXPECT_NE(at, std::string::npos) << what;
  return text.replace(at, what.size(), with);
}

TEST(Charmm, RefusesWithFileLineAndField) {
  const std::string p = psf(), prm = parameters();
  // A missing parameter: the psf line of the term and the types.
  expect_error(p, replaced(prm, "CT2  CT2   222.500     1.5300\n", ""),
               "t.psf:15: !NBOND entry 2: no parameters for types CT2-CT2 in t.prm");
  expect_error(p, replaced(prm, "X    CT3  CT2  X      0.2000  3     0.00\n", ""),
               "!NPHI entry 1: no parameters for types HA3-CT3-CT2-CT2 (nor X-CT3-CT2-X)");
  expect_error(p, replaced(prm, "CT3  X    X    CT3    1.5000  0    10.0000\n", ""), "!NIMPHI entry 1");
  expect_error(p, replaced(prm, "HA3    0.0       -0.0240     1.3400\n", ""), "type HA3 has no NONBONDED entry");
  expect_error(p, replaced(prm, "CMAP\nHA3", "CMAP\nHA2"), "!NCRTERM entry 1: no parameters");
  // Malformed parameter lines.
  expect_error(p, replaced(prm, "CT3  CT2   222.500", "CT3  CT2   222.5x0"), "t.prm:9: BONDS Kb: expected a number");
  expect_error(p, replaced(prm, "HA3  CT3  CT2    34.600    110.10   22.53   2.17900", "HA3  CT3  CT2    34.600    110.10   22.53"),
               "ANGLES: 6 fields, expected type type type Ktheta theta0 [Kub S0]");
  expect_error(p, replaced(prm, "0.1500  1     0.00", "0.1500  1.5   0.00"), "DIHEDRALS n: expected a whole number");
  expect_error(p, replaced(prm, "12.0 13.0 14.0 15.0\n", "12.0 13.0 14.0\n"), "t.prm:35: CMAP: the map ends after 15 of its 16 values");
  expect_error(p, replaced(prm, "nbxmod  5", "nbxmod  3"), "nbxmod 3: only 5");
  expect_error(p, "* title\nBONDS\nCT3 CT2 1 2\nXYZW 1 2\n", "t.prm:4: BONDS: 3 fields");
  // Malformed psf lines.
  expect_error(replaced(p, "       1       2       2       3       3       4       1       5",
                        "       1       2       2       9       3       4       1       5"),
               prm, "t.psf:15: !NBOND entry 2: atom 9 outside 1..5");
  expect_error(replaced(p, "0.900000", "0.9x"), prm, "t.psf:12: atom 5 charge: expected a number");
  expect_error(replaced(p, "       0 !NNB", "       1 !NNB"), prm, "!NNB: explicit nonbonded exclusions");
  expect_error(replaced(p, "PSF EXT CMAP XPLOR", "PSF EXT CMAP XPLOR DRUDE"), prm, "Drude");
  expect_error(replaced(p, "       4 !NBOND: bonds", "       4 NBOND: bonds"), prm, "expected a section header");
  expect_error(replaced(p, "       5 !NATOM", "       6 !NATOM"), prm, "atom 6: ");
  expect_error("REMARKS\n", prm, "t.psf:1: the first line must start with PSF");
}

TEST(CharmmCrd, ReadsStandardAndExtendedFiles) {
  const std::string standard = "* title\n*\n    2\n"
                               "    1    1 BUT  C1     1.00000  -2.50000   3.25000 MOL  1      0.00000\n"
                               "    2    1 BUT  C2    -1.00000   2.50000  -3.25000 MOL  1      0.00000\n";
  const md::Coordinates c = io::parse_charmm_crd(standard, "a.crd", 2);
  ASSERT_EQ(c.positions.size(), 2u);
  EXPECT_EQ(c.positions[0].y, -2.5);
  EXPECT_EQ(c.positions[1].z, -3.25);
  EXPECT_FALSE(c.box);
  const std::string extended = "* title\n*\n         1  EXT\n"
                               "         1         1  BUT       C1          1.0000000000       -2.5000000000        3.2500000000  MOL       1               0.0000000000\n";
  EXPECT_EQ(io::parse_charmm_crd(extended, "b.crd", 1).positions[0].x, 1.0);
  auto error = [](const std::string& text, std::size_t atoms) {
    try {
      io::parse_charmm_crd(text, "c.crd", atoms);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(error(standard, 3).find("c.crd:3: atom count: 2 atoms, the topology has 3"), std::string::npos);
  EXPECT_NE(error("* t\n  2\n 1 1 A B 1 2 x\n", 2).find("c.crd:3: atom 1 z: expected a number"), std::string::npos);
  EXPECT_NE(error("* t\n  2\n 1 1 A B 1 2 3\n", 2).find("the file ends after 1 of 2 atoms"), std::string::npos);
}

}  // namespace
}  // namespace nbkit::test
