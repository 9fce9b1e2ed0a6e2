#include "nbkit/io/structure.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "nbkit/core/error.hpp"
#include "test_support.hpp"

namespace nbkit::io {

TEST(Structure, FormatFromExtension) {
  EXPECT_EQ(guess_structure_format("a.pqr"), StructureFormat::pqr);
  EXPECT_EQ(guess_structure_format("a.PDB"), StructureFormat::pdb);
  EXPECT_EQ(guess_structure_format("a.ent.gz"), StructureFormat::pdb);
  EXPECT_EQ(guess_structure_format("a.cif"), StructureFormat::mmcif);
}

TEST(Structure, PdbWithoutChargesSaysHowToGetThem) {
  try {
    read_atoms(test::test_data_file("tripeptide.pdb"));
    FAIL() << "a PDB file without --charges must be refused";
  } catch (const Error& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("tripeptide.pdb: a PDB file (24 atoms) carries no partial charges"), std::string::npos)
        << message;
    EXPECT_NE(message.find("pdb2pqr --ff=AMBER"), std::string::npos) << message;
    EXPECT_NE(message.find("--charges amber"), std::string::npos) << message;
  }
}

TEST(Structure, ChargesFromPdb2pqr) {
  if (find_pdb2pqr().empty()) GTEST_SKIP() << "pdb2pqr is not installed (apt-get install pdb2pqr)";
  const Atoms atoms = read_atoms(test::test_data_file("tripeptide.pdb"), ChargeOptions{"amber"});
  EXPECT_GT(atoms.size(), 24u);  // pdb2pqr adds the hydrogens
  double total_abs = 0;
  for (double q : atoms.charge) total_abs += std::fabs(q);
  EXPECT_GT(total_abs, 1.0);
  const double net = atoms.net_charge();
  EXPECT_NEAR(net, std::round(net), 1e-3);  // AMBER residues carry whole charges
  for (double r : atoms.radius) EXPECT_GE(r, 0.0);
}

TEST(Structure, BadForceFieldIsReported) {
  if (find_pdb2pqr().empty()) GTEST_SKIP() << "pdb2pqr is not installed (apt-get install pdb2pqr)";
  EXPECT_THROW(read_atoms(test::test_data_file("tripeptide.pdb"), ChargeOptions{"no-such-ff"}), Error);
}

TEST(Structure, ChargesOptionOnPqrIsRefused) {
  EXPECT_THROW(read_atoms(test::data_file("1a63.pqr"), ChargeOptions{"amber"}), Error);
}

}  // namespace nbkit::io
