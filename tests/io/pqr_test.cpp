#include "nbkit/io/pqr.hpp"

#include <gtest/gtest.h>

#include <cmath>

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

}  // namespace nbkit::io
