#include "nbkit/core/units.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "nbkit/core/error.hpp"

namespace nbkit::units {

TEST(Units, CoulombConstantMatchesCodata2018) {
  // e^2/(4 pi eps0 A) N_A / 4184 J = 332.0637 kcal/mol A/e^2 (CODATA 2018); the common
  // MD values bracket it (AMBER 332.0522, CHARMM 332.0716).
  EXPECT_NEAR(coulomb_constant_kcal, 332.0637, 1e-4);
  EXPECT_NEAR(coulomb_constant_volt, 14.399645, 1e-6);
}

TEST(Units, PrefactorsForEachUnit) {
  // kT at 298.15 K = 0.5924849 kcal/mol, so 1 e/A = 560.459 kT/e in vacuum.
  EXPECT_NEAR(potential_prefactor(PotentialUnit::kT_per_e, 1.0, 298.15), 560.4593, 1e-3);
  EXPECT_NEAR(potential_prefactor(PotentialUnit::kcal_per_mol_per_e, 2.0, 298.15), 332.0637 / 2, 1e-4);
  EXPECT_NEAR(potential_prefactor(PotentialUnit::volt, 78.54, 1.0), 14.399645 / 78.54, 1e-7);
  // kT/e scales as 1/T.
  EXPECT_NEAR(potential_prefactor(PotentialUnit::kT_per_e, 1.0, 2 * 298.15),
              0.5 * potential_prefactor(PotentialUnit::kT_per_e, 1.0, 298.15), 1e-9);
}

TEST(Units, DebyeLengthOfPhysiologicalSalt) {
  // Water at 25 C: Debye length 0.304 nm / sqrt(I/M); 0.15 M gives 7.85 A.
  const double kappa = debye_kappa(0.15, 78.54, 298.15);
  EXPECT_NEAR(1.0 / kappa, 3.04 / std::sqrt(0.15), 0.02);
  EXPECT_EQ(debye_kappa(0.0, 78.54, 298.15), 0.0);
  // kappa^2 is proportional to I.
  EXPECT_NEAR(debye_kappa(0.6, 78.54, 298.15), 2 * kappa, 1e-12);
}

TEST(Units, BadValuesAreRejected) {
  EXPECT_THROW(debye_kappa(-0.1, 78.54, 298.15), Error);
  EXPECT_THROW(debye_kappa(0.1, 0.0, 298.15), Error);
  EXPECT_THROW(potential_prefactor(PotentialUnit::kT_per_e, 1.0, -1.0), Error);
  EXPECT_THROW(potential_prefactor(PotentialUnit::kT_per_e, NAN, 300.0), Error);
  EXPECT_THROW(parse_potential_unit("kJ/mol"), Error);
  EXPECT_EQ(parse_potential_unit("V"), PotentialUnit::volt);
  EXPECT_EQ(to_string(parse_potential_unit("kcal/mol/e")), "kcal/mol/e");
}

}  // namespace nbkit::units
