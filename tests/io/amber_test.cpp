// AMBER prmtop and inpcrd (io/amber.hpp): a small prmtop written here field by field (a chain
// of four atoms of two Lennard-Jones types: three bonds, two angles, a dihedral with its 1-4
// pair, an improper), read back term by term; then every refusal names file, line and field.
// Real files from ParmEd are read (and compared with OpenMM) by tests/clients/check_energy_openmm.py.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "nbkit/core/error.hpp"
#include "nbkit/io/amber.hpp"

namespace nbkit::test {
namespace {

// Sections in file order, each with its format and fields (already formatted to width).
struct PrmtopText {
  std::vector<std::string> order;
  std::map<std::string, std::pair<std::string, std::vector<std::string>>> sections;

  void integers(const std::string& name, const std::vector<long long>& values) {
    std::vector<std::string> fields;
    for (long long v : values) fields.push_back(fmt::format("{:8d}", v));
    set(name, "10I8", fields);
  }
  void reals(const std::string& name, const std::vector<double>& values) {
    std::vector<std::string> fields;
    for (double v : values) fields.push_back(fmt::format("{:16.8E}", v));
    set(name, "5E16.8", fields);
  }
  void strings(const std::string& name, const std::vector<std::string>& values) {
    std::vector<std::string> fields;
    for (const std::string& v : values) fields.push_back(fmt::format("{:<4}", v));
    set(name, "20a4", fields);
  }
  void set(const std::string& name, const std::string& format, const std::vector<std::string>& fields) {
    if (!sections.count(name)) order.push_back(name);
    sections[name] = {format, fields};
  }
  std::string text() const {
    std::string out = "%VERSION  VERSION_STAMP = V0001.000  DATE = 11/23/26  12:00:00\n";
    for (const std::string& name : order) {
      const auto& [format, fields] = sections.at(name);
      const int per_line = std::stoi(format);
      out += "%FLAG " + name + "\n%FORMAT(" + format + ")\n";
      std::string line;
      for (std::size_t f = 0; f < fields.size(); ++f) {
        line += fields[f];
        if ((f + 1) % per_line == 0) out += line + "\n", line.clear();
      }
      if (!line.empty() || fields.empty()) out += line + "\n";
    }
    return out;
  }
};

// C1-C2-C3-H4: types 1 (carbons) and 2 (the hydrogen); charges in AMBER's units.
PrmtopText butane_like() {
  PrmtopText p;
  //              NATOM NTYPES NBONH MBONA NTHETH MTHETA NPHIH MPHIA NHPARM NPARM NNB NRES NBONA NTHETA NPHIA
  p.integers("POINTERS", {4, 2, 1, 2, 1, 1, 2, 0, 0, 0, 7, 1, 2, 1, 0,
                          // NUMBND NUMANG NPTRA NATYP NPHB IFPERT NBPER NGPER NDPER MBPER MGPER MDPER IFBOX NMXRS IFCAP NUMEXTRA
                          2, 1, 2, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 4, 0, 0});
  p.strings("ATOM_NAME", {"C1", "C2", "C3", "H4"});
  p.reals("CHARGE", {-0.1 * 18.2223, 0.05 * 18.2223, 0.2 * 18.2223, -0.15 * 18.2223});
  p.reals("MASS", {12.01, 12.01, 12.01, 1.008});
  p.integers("ATOM_TYPE_INDEX", {1, 1, 1, 2});
  p.integers("NUMBER_EXCLUDED_ATOMS", {3, 2, 1, 1});
  p.integers("NONBONDED_PARM_INDEX", {1, 2, 2, 3});
  p.strings("RESIDUE_LABEL", {"BUT"});
  p.integers("RESIDUE_POINTER", {1});
  p.reals("BOND_FORCE_CONSTANT", {310.0, 340.0});
  p.reals("BOND_EQUIL_VALUE", {1.526, 1.09});
  p.reals("ANGLE_FORCE_CONSTANT", {40.0});
  p.reals("ANGLE_EQUIL_VALUE", {1.91});
  p.reals("DIHEDRAL_FORCE_CONSTANT", {0.16, 1.1});
  p.reals("DIHEDRAL_PERIODICITY", {3.0, 2.0});
  p.reals("DIHEDRAL_PHASE", {0.0, 3.14159265});
  p.reals("SCEE_SCALE_FACTOR", {1.2, 0.0});
  p.reals("SCNB_SCALE_FACTOR", {2.0, 0.0});
  p.reals("LENNARD_JONES_ACOEF", {1043080.2, 32.2, 7.0});
  p.reals("LENNARD_JONES_BCOEF", {675.6, 3.1, 0.1});
  p.integers("BONDS_INC_HYDROGEN", {6, 9, 2});                    // C3-H4
  p.integers("BONDS_WITHOUT_HYDROGEN", {0, 3, 1, 3, 6, 1});       // C1-C2, C2-C3
  p.integers("ANGLES_INC_HYDROGEN", {3, 6, 9, 1});                // C2-C3-H4
  p.integers("ANGLES_WITHOUT_HYDROGEN", {0, 3, 6, 1});            // C1-C2-C3
  p.integers("DIHEDRALS_INC_HYDROGEN", {0, 3, 6, 9, 1,            // C1-C2-C3-H4 with its 1-4 pair
                                        0, 6, 3, -9, 2});         // an improper (l < 0): no 1-4
  p.integers("DIHEDRALS_WITHOUT_HYDROGEN", {});
  p.integers("EXCLUDED_ATOMS_LIST", {2, 3, 4, 3, 4, 4, 0});
  return p;
}

TEST(AmberPrmtop, ReadsEveryTermOfAHandWrittenFile) {
  const md::Topology t = io::parse_prmtop(butane_like().text(), "butane.prmtop");
  ASSERT_EQ(t.size(), 4u);
  EXPECT_EQ(t.atom_name[3], "H4");
  EXPECT_EQ(t.residue_name[2], "BUT");
  EXPECT_NEAR(t.charge[2], 0.2, 1e-12);
  EXPECT_EQ(t.lj_type[3], 1);
  EXPECT_EQ(t.lj_types, 2);
  EXPECT_EQ(t.c12[0 * 2 + 1], 32.2);
  EXPECT_EQ(t.c6[1 * 2 + 1], 0.1);
  ASSERT_EQ(t.bonds.size(), 3u);
  EXPECT_EQ(t.bonds[0].i, 2);
  EXPECT_EQ(t.bonds[0].j, 3);
  EXPECT_EQ(t.bonds[0].k, 340.0);
  ASSERT_EQ(t.angles.size(), 2u);
  EXPECT_EQ(t.angles[1].theta0, 1.91);
  ASSERT_EQ(t.dihedrals.size(), 1u);
  EXPECT_EQ(t.dihedrals[0].periodicity, 3);
  ASSERT_EQ(t.periodic_impropers.size(), 1u);
  EXPECT_EQ(t.periodic_impropers[0].l, 3);
  ASSERT_EQ(t.pairs14.size(), 1u);  // the improper makes none
  EXPECT_EQ(t.pairs14[0].i, 0);
  EXPECT_EQ(t.pairs14[0].j, 3);
  EXPECT_NEAR(t.pairs14[0].coulomb_scale, 1 / 1.2, 1e-15);
  EXPECT_NEAR(t.pairs14[0].c12, 32.2 / 2, 1e-12);
  EXPECT_EQ(t.exclusions.size(), 6u);
  EXPECT_FALSE(t.box);
}

TEST(AmberPrmtop, ReadsABoxAndOlderFilesWithoutScaleFactors) {
  PrmtopText p = butane_like();
  auto& pointers = p.sections["POINTERS"].second;
  pointers[27] = fmt::format("{:8d}", 1);  // IFBOX
  p.reals("BOX_DIMENSIONS", {90.0, 30.5, 31.0, 32.25});
  p.sections.erase("SCEE_SCALE_FACTOR"), p.sections.erase("SCNB_SCALE_FACTOR");
  std::erase(p.order, "SCEE_SCALE_FACTOR"), std::erase(p.order, "SCNB_SCALE_FACTOR");
  const md::Topology t = io::parse_prmtop(p.text(), "old.prmtop");
  ASSERT_TRUE(t.box);
  EXPECT_EQ(t.box->length(2), 32.25);
  EXPECT_NEAR(t.pairs14[0].coulomb_scale, 1 / 1.2, 1e-15);  // AMBER's defaults
  EXPECT_NEAR(t.pairs14[0].c6, 3.1 / 2, 1e-12);
}

// The message of the error parsing `text` throws.
std::string error_of(const std::string& text) {
  try {
    io::parse_prmtop(text, "bad.prmtop");
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

// ff19SB's CMAP sections: maps with their sides, terms of five atoms (phi i-j-k-l, psi j-k-l-m).
TEST(AmberPrmtop, ReadsCmapSections) {
  PrmtopText p = butane_like();
  p.integers("CMAP_COUNT", {1, 1});
  p.integers("CMAP_RESOLUTION", {4});
  std::vector<double> grid(16);
  for (int k = 0; k < 16; ++k) grid[k] = 0.25 * k;
  p.reals("CMAP_PARAMETER_01", grid);
  p.integers("CMAP_INDEX", {4, 3, 2, 1, 2, 1});
  const md::Topology t = io::parse_prmtop(p.text(), "cmap.prmtop");
  ASSERT_EQ(t.cmap_grids.size(), 1u);
  EXPECT_EQ(t.cmap_grids[0].size, 4);
  EXPECT_EQ(t.cmap_grids[0].energy, grid);
  ASSERT_EQ(t.cmaps.size(), 1u);
  EXPECT_EQ((std::vector<int>(t.cmaps[0].phi, t.cmaps[0].phi + 4)), (std::vector<int>{3, 2, 1, 0}));
  EXPECT_EQ((std::vector<int>(t.cmaps[0].psi, t.cmaps[0].psi + 4)), (std::vector<int>{2, 1, 0, 1}));
  EXPECT_EQ(t.cmaps[0].map, 0);
}

TEST(AmberPrmtop, RefusesWithFileLineAndField) {
  {  // a letter in an integer field: its line is the 7th of the file's BONDS_INC_HYDROGEN line
    PrmtopText p = butane_like();
    p.sections["BONDS_INC_HYDROGEN"].second[1] = "      9x";
    const std::string text = p.text();
    const auto at = text.find("      9x");
    const long line = 1 + std::count(text.begin(), text.begin() + static_cast<long>(at), '\n');
    EXPECT_EQ(error_of(text), fmt::format("bad.prmtop:{}: %FLAG BONDS_INC_HYDROGEN entry 2: expected an integer, got "
                                          "'      9x'",
                                          line));
  }
  auto refused = [](const std::function<void(PrmtopText&)>& change, const std::string& expected) {
    PrmtopText p = butane_like();
    change(p);
    const std::string message = error_of(p.text());
    EXPECT_NE(message.find(expected), std::string::npos) << message;
    EXPECT_EQ(message.rfind("bad.prmtop:", 0), 0u) << message;
  };
  refused([](PrmtopText& p) { p.sections["MASS"].second.pop_back(); }, "%FLAG MASS: 3 values, expected 4");
  refused([](PrmtopText& p) { p.sections["BONDS_WITHOUT_HYDROGEN"].second[1] = fmt::format("{:8d}", 4); },
          "BONDS_WITHOUT_HYDROGEN entry 2: atom pointer 4 is not 3 (i - 1)");
  refused([](PrmtopText& p) { p.sections["ANGLES_INC_HYDROGEN"].second[3] = fmt::format("{:8d}", 2); },
          "ANGLES_INC_HYDROGEN entry 4: parameter type 2 outside 1..1");
  refused([](PrmtopText& p) { p.sections["CHARGE"].second[0] = fmt::format("{:>16}", "nan"); },
          "CHARGE entry 1: expected a finite number");
  refused([](PrmtopText& p) { p.sections["POINTERS"].second[30] = fmt::format("{:8d}", 1); },
          "POINTERS entry 31: NUMEXTRA = 1: extra points");
  refused([](PrmtopText& p) { p.sections["POINTERS"].second[27] = fmt::format("{:8d}", 2); },
          "IFBOX = 2: truncated octahedra");
  auto with_cmap = [](PrmtopText& p) {
    p.integers("CMAP_COUNT", {1, 1});
    p.integers("CMAP_RESOLUTION", {4});
    p.reals("CMAP_PARAMETER_01", std::vector<double>(16, 0.5));
    p.integers("CMAP_INDEX", {1, 2, 3, 4, 1, 1});
  };
  refused([&](PrmtopText& p) { with_cmap(p), p.integers("CMAP_RESOLUTION", {3}); },
          "%FLAG CMAP_RESOLUTION entry 1: a side of 3");
  refused([&](PrmtopText& p) { with_cmap(p), p.integers("CMAP_INDEX", {1, 2, 3, 9, 1, 1}); },
          "%FLAG CMAP_INDEX entry 4: atom 9 outside 1..4");
  refused([&](PrmtopText& p) { with_cmap(p), p.integers("CMAP_INDEX", {1, 2, 3, 4, 1, 2}); },
          "%FLAG CMAP_INDEX entry 6: parameter type 2 outside 1..1");
  refused([&](PrmtopText& p) { with_cmap(p), p.reals("CMAP_PARAMETER_01", std::vector<double>(15, 0.5)); },
          "%FLAG CMAP_PARAMETER_01: 15 values, expected 16");
  refused([](PrmtopText& p) { p.integers("CHARMM_CMAP_COUNT", {1, 1}); }, "CHAMBER");
  refused([](PrmtopText& p) { p.sections.erase("LENNARD_JONES_ACOEF"), std::erase(p.order, "LENNARD_JONES_ACOEF"); },
          "%FLAG LENNARD_JONES_ACOEF: missing section");
  refused([](PrmtopText& p) { p.sections["NONBONDED_PARM_INDEX"].second[2] = fmt::format("{:8d}", 3); },
          "not symmetric");
  refused([](PrmtopText& p) { p.sections["EXCLUDED_ATOMS_LIST"].second[0] = fmt::format("{:8d}", 9); },
          "EXCLUDED_ATOMS_LIST entry 1: atom 9 for atom 1");
  refused([](PrmtopText& p) { p.sections["RESIDUE_POINTER"].second[0] = fmt::format("{:8d}", 2); },
          "RESIDUE_POINTER entry 1");
  refused([](PrmtopText& p) { p.set("CHARGE", "5E16.8x", p.sections["CHARGE"].second); }, "CHARGE");
  EXPECT_NE(error_of("just some text\n").find("bad.prmtop:1: expected %VERSION or %FLAG"), std::string::npos);
  EXPECT_NE(error_of("").find("not an AMBER prmtop"), std::string::npos);
}

TEST(AmberInpcrd, ReadsCoordinatesVelocitiesAndBox) {
  const std::string coordinates = "title\n    2\n"
                                  "   1.0000000   2.0000000   3.0000000  -4.5000000-115.2500000   6.0000000\n";
  md::Coordinates c = io::parse_inpcrd(coordinates, "a.inpcrd", 2);
  ASSERT_EQ(c.positions.size(), 2u);
  EXPECT_EQ(c.positions[1].y, -115.25);  // two fields touching, read by column
  EXPECT_TRUE(c.velocities.empty());
  EXPECT_FALSE(c.box);
  c = io::parse_inpcrd(coordinates + "   1.0000000   0.0000000   0.0000000   0.0000000   0.0000000   2.0000000\n"
                                     "  40.0000000  41.0000000  42.0000000  90.0000000  90.0000000  90.0000000\n",
                       "a.rst7", 2);
  ASSERT_EQ(c.velocities.size(), 2u);
  EXPECT_NEAR(c.velocities[0].x, 20.455e-3, 1e-15);  // AMBER's time unit, 1/20.455 ps, in fs
  ASSERT_TRUE(c.box);
  EXPECT_EQ(c.box->length(1), 41.0);
}

TEST(AmberInpcrd, RefusesWithFileLineAndField) {
  auto error = [](const std::string& text, std::size_t atoms) {
    try {
      io::parse_inpcrd(text, "x.inpcrd", atoms);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  const std::string two = "title\n    2\n   1.0000000   2.0000000   3.0000000   4.0000000   5.0000000   6.0000000\n";
  EXPECT_EQ(error(two, 3), "x.inpcrd:2: atom count: 2 atoms, the topology has 3");
  // A count beyond every integer type is named as written (the fuzzer's: a cast of it was undefined).
  EXPECT_EQ(error("title\n1e106\n", 3), "x.inpcrd:2: atom count: 1e106 atoms, the topology has 3");
  EXPECT_EQ(error("title\n    2\n   1.0000000   2.00x0000\n", 2),
            "x.inpcrd:3: field 2 (columns 13-24): expected a finite number in 12 columns, got '   2.00x0000'");
  EXPECT_NE(error("title\n    2\n   1.0000000\n", 2).find("1 numbers after the header"), std::string::npos);
  EXPECT_NE(error(two + "  40.0000000  41.0000000  42.0000000 109.4712190 109.4712190 109.4712190\n", 2)
                .find("x.inpcrd:4: box: angle 109.471219: only orthorhombic"),
            std::string::npos);
  EXPECT_NE(error("", 2).find("empty file"), std::string::npos);
}

}  // namespace
}  // namespace nbkit::test
