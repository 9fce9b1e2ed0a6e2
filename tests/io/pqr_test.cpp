#include "nbkit/io/pqr.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "nbkit/core/error.hpp"
#include "test_support.hpp"

namespace nbkit::io {

TEST(Pqr, RecordsWithAndWithoutChainIdAndHetatm) {
  const Atoms atoms = parse_pqr(
      "REMARK   1 PQR file\n"
      "ATOM      1  N   HIS     1      10.610  -0.430   7.576 -0.300 1.800\n"
      "ATOM      2  CA  HIS A   1       1.0     2.0     3.0    0.5   1.5\n"
      "HETATM    3  O   HOH W 100      -1.25e1  +2  3.5e-1  -0.834 1.7682\r\n"
      "TER\nEND\n",
      "inline");
  ASSERT_EQ(atoms.size(), 3u);
  EXPECT_EQ(atoms.position(0), (Vec3{10.610, -0.430, 7.576}));
  EXPECT_DOUBLE_EQ(atoms.charge[0], -0.3);
  EXPECT_DOUBLE_EQ(atoms.radius[1], 1.5);
  EXPECT_EQ(atoms.position(2), (Vec3{-12.5, 2, 0.35}));
  EXPECT_DOUBLE_EQ(atoms.charge[2], -0.834);
  EXPECT_DOUBLE_EQ(atoms.radius[2], 1.7682);
}

TEST(Pqr, RealProteinsLoadWithTheirNetCharge) {
  const Atoms a = read_pqr(test::data_file("1a63.pqr"));
  EXPECT_EQ(a.size(), 2065u);
  EXPECT_NEAR(a.net_charge(), -1.0, 1e-6);
  const Atoms h = read_pqr(test::data_file("hca.pqr"));
  EXPECT_EQ(h.size(), 2482u);
  EXPECT_NEAR(h.net_charge(), 1.0, 1e-6);
}

// Each malformed input must give one message naming source, line and field.
struct BadPqr {
  const char* text;
  const char* expected_message;
};

class PqrErrors : public ::testing::TestWithParam<BadPqr> {};

TEST_P(PqrErrors, NameFileLineAndField) {
  try {
    parse_pqr(GetParam().text, "bad.pqr");
    FAIL() << "no error for: " << GetParam().text;
  } catch (const InputError& error) {
    EXPECT_EQ(std::string(error.what()), GetParam().expected_message);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Malformed, PqrErrors,
    ::testing::Values(
        BadPqr{"ATOM 1 N HIS 1 1.0 2.0 3.0 0.5\n",
               "bad.pqr:1: record: expected at least 10 whitespace-separated fields (ATOM serial name resName "
               "[chainID] resSeq x y z charge radius), found 9"},
        BadPqr{"REMARK\nATOM 1 N HIS 1 1.0 2.0 abc 0.5 1.0\n", "bad.pqr:2: z: expected a number, got 'abc'"},
        BadPqr{"ATOM 1 N HIS 1 1.0 2.0 3.0 0.5x 1.0\n", "bad.pqr:1: charge: expected a number, got '0.5x'"},
        BadPqr{"ATOM 1 N HIS 1 nan 2.0 3.0 0.5 1.0\n", "bad.pqr:1: x: expected a finite number, got 'nan'"},
        BadPqr{"ATOM 1 N HIS 1 1 inf 3.0 0.5 1.0\n", "bad.pqr:1: y: expected a finite number, got 'inf'"},
        BadPqr{"ATOM 1 N HIS 1 1 2 3.0 0.5 -1.0\n", "bad.pqr:1: radius: expected zero or a positive radius, got '-1.0'"},
        BadPqr{"REMARK only\nEND\n", "bad.pqr: no ATOM or HETATM records: expected a PQR file with atoms"},
        BadPqr{"", "bad.pqr: no ATOM or HETATM records: expected a PQR file with atoms"}));

TEST(Pqr, ModelsAreFramesAndTheFirstModelIsTheStructure) {
  const std::string text =
      "MODEL 1\nATOM 1 N HIS 1 1.0 2.0 3.0 0.5 1.0\nATOM 2 C HIS 1 2.0 2.0 3.0 -0.25 1.0\nENDMDL\n"
      "MODEL 2\nATOM 1 N HIS 1 1.5 2.0 3.0 0.5 1.0\nATOM 2 C HIS 1 2.5 2.0 3.0 -0.25 1.0\nENDMDL\n";
  EXPECT_EQ(parse_pqr(text, "m.pqr").size(), 2u);  // not 4: the first model only
  const auto models = parse_pqr_models(text, "m.pqr");
  ASSERT_EQ(models.size(), 2u);
  EXPECT_EQ(models[1].x[0], 1.5);
  EXPECT_THROW(parse_pqr_models("ATOM 1 N HIS 1 1 2 3 0.5 1\nENDMDL\nATOM 1 N HIS 1 1 2 3 0.5 1\n"
                                "ATOM 2 N HIS 1 1 2 3 0.5 1\nENDMDL\n", "bad.pqr"),
               InputError);
}

TEST(Pqr, MissingFileIsAnError) {
  EXPECT_THROW(read_pqr("/nonexistent/file.pqr"), Error);
}

// PDB-column writers (pdb2pqr among them) fuse fields once numbers fill their columns; each
// such record is read, never skipped.
TEST(Pqr, FusedFieldsOfColumnWritersAreRead) {
  const Atoms atoms = parse_pqr(
      // pdb2pqr: the record name against a five-digit serial
      "HETATM 9999  H2  HOH W 998      13.000  11.000  12.000  0.4170 0.0000\n"
      "HETATM10000  O   HOH W 999      14.000  11.000  12.000 -0.8340 1.7700\n"
      // a hybrid-36 serial, and a six-digit serial after ATOM's padding
      "HETATMA0000  H1  HOH W 999      15.000  11.000  12.000  0.4170 0.0000\n"
      "ATOM  100000  CA  GLY A   1      1.000   2.000   3.000  0.1000 1.9000\n"
      // chain ID against a four-digit residue number
      "ATOM  12345  O   HOH W1000      -1.500  -2.500  -3.500 -0.8340 1.7700\n"
      // y against x, z against y: eight-character coordinates
      "ATOM  12346  O   HOH W1001     -12.345-100.123-200.456 -0.8340 1.7700\n"
      // positive coordinates that fill their columns: pdb2pqr's columns
      "ATOM  12347  O   HOH W1002      12.3451000.0002000.500 -0.8340 1.7700\n",
      "fused.pqr");
  ASSERT_EQ(atoms.size(), 7u);
  EXPECT_EQ(atoms.position(1), (Vec3{14, 11, 12}));
  EXPECT_DOUBLE_EQ(atoms.charge[1], -0.834);
  EXPECT_EQ(atoms.position(2), (Vec3{15, 11, 12}));
  EXPECT_EQ(atoms.position(3), (Vec3{1, 2, 3}));
  EXPECT_EQ(atoms.position(4), (Vec3{-1.5, -2.5, -3.5}));
  EXPECT_EQ(atoms.position(5), (Vec3{-12.345, -100.123, -200.456}));
  EXPECT_DOUBLE_EQ(atoms.radius[5], 1.77);
  EXPECT_EQ(atoms.position(6), (Vec3{12.345, 1000.0, 2000.5}));
  EXPECT_DOUBLE_EQ(atoms.charge[6], -0.834);
}

INSTANTIATE_TEST_SUITE_P(
    NeverSkipped, PqrErrors,
    ::testing::Values(
        // A PDB file named .pqr: occupancy and B-factor where charge and radius belong.
        BadPqr{"ATOM      1  N   MET A   1      -6.406   5.469  -3.259  1.00  0.00           N\n",
               "bad.pqr:1: record: a PDB-format ATOM record (occupancy and B-factor in columns 55-66), not a PQR "
               "record with charge and radius: make a PQR with 'pdb2pqr --ff=AMBER IN.pdb OUT.pqr', or name the file "
               ".pdb and pass --charges amber (or another pdb2pqr force field)"},
        BadPqr{"REMARK\nHETATM   25  O   HOH A 101      10.000  10.000  10.000  1.00 20.00\n",
               "bad.pqr:2: record: a PDB-format HETATM record (occupancy and B-factor in columns 55-66), not a PQR "
               "record with charge and radius: make a PQR with 'pdb2pqr --ff=AMBER IN.pdb OUT.pqr', or name the file "
               ".pdb and pass --charges amber (or another pdb2pqr force field)"},
        BadPqr{"ATOM 1 N HIS 1 1.0 2.0 3.0 0.5 1.0\nATOMIC 2 C HIS 1 1.0 2.0 3.0 0.5 1.0\n",
               "bad.pqr:2: record: starts with ATOM but is no ATOM record ('ATOMIC'): a PQR file holds ATOM and "
               "HETATM records"},
        BadPqr{"HETATM10000 O HOH 1 1.0 2.0 3.0 0.5\n",
               "bad.pqr:1: record: expected at least 10 whitespace-separated fields (ATOM serial name resName "
               "[chainID] resSeq x y z charge radius), found 9"},
        BadPqr{"ATOM      1  N   MET A   1      -6.406   5.469  -3.259  0.1592\n",
               "bad.pqr:1: record: x, y, z in columns 31-54 are -6.406 5.469 -3.259, but the fields read as x, y, z "
               "are 1 -6.406 5.469: a field is missing (a PQR record ends with x y z charge radius)"},
        BadPqr{"ATOM 1 N HIS 1 1.0 2.0 3.0 0.5 N\n",
               "bad.pqr:1: radius: expected a number, got 'N' (an element symbol: a PDB file? a PQR record ends "
               "with charge and radius; make one with pdb2pqr)"}));

// What pdb2pqr writes for a protein with its waters: 10,315 atoms, serials past 9,999 fused
// with HETATM, residue numbers past 999 with the chain ID (scripts/make-large-pqr); gzipped.
TEST(Pqr, LargeRealPdb2pqrOutputLosesNoRecord) {
  const std::string path = test::data_file("1a63-waters.pqr.gz");
  const Atoms atoms = read_pqr(path);
  EXPECT_EQ(atoms.size(), 10315u);
  // 1a63's net charge (-1 with pdb2pqr's AMBER charges and protonation) and neutral waters.
  EXPECT_NEAR(atoms.net_charge(), std::round(atoms.net_charge()), 1e-3);
  // The last record: "HETATM10315  H2  HOH W2749 ..."
  EXPECT_GT(atoms.position(10314).x, -100);
  EXPECT_DOUBLE_EQ(atoms.charge[10314], 0.417);
  std::size_t waters = 0;
  for (std::size_t i = 0; i < atoms.size(); ++i) waters += atoms.charge[i] == -0.834;
  EXPECT_EQ(waters, 2750u);
}

TEST(Pqr, FilesThatAreNoPqrTextSayWhatTheyAre) {
  test::ScratchDir dir;
  auto message = [](const std::string& path) {
    try {
      read_pqr(path);
    } catch (const Error& error) {
      return std::string(error.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message(dir.path().string()),
            dir.path().string() + ": is a directory, not a PQR file (ATOM/HETATM records with charges and radii)");
  EXPECT_EQ(message(test::data_file("1a63-wobble.dcd")),
            test::data_file("1a63-wobble.dcd") +
                ": is a DCD trajectory, not a PQR file (ATOM/HETATM records with charges and radii)");
  {
    std::ofstream xtc(dir.file("t.xtc"), std::ios::binary);
    const unsigned char header[] = {0, 0, 7, 0xcb, 0, 0, 0, 3, 0, 0, 0, 0};
    xtc.write(reinterpret_cast<const char*>(header), sizeof header);
  }
  EXPECT_EQ(message(dir.file("t.xtc")),
            dir.file("t.xtc") + ": is a GROMACS XTC trajectory, not a PQR file (ATOM/HETATM records with charges and radii)");
}

}  // namespace nbkit::io
