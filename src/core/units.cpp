#include "nbkit/core/units.hpp"

#include <cmath>

#include "nbkit/core/error.hpp"

namespace nbkit::units {

PotentialUnit parse_potential_unit(const std::string& name) {
  if (name == "kT/e" || name == "kT") return PotentialUnit::kT_per_e;
  if (name == "kcal/mol/e" || name == "kcal/mol") return PotentialUnit::kcal_per_mol_per_e;
  if (name == "V" || name == "volt") return PotentialUnit::volt;
  throw Error("unknown unit '" + name + "': expected kT/e, kcal/mol/e or V");
}

std::string to_string(PotentialUnit unit) {
  switch (unit) {
    case PotentialUnit::kT_per_e: return "kT/e";
    case PotentialUnit::kcal_per_mol_per_e: return "kcal/mol/e";
    case PotentialUnit::volt: return "V";
    case PotentialUnit::number_density: return "1/A^3";
    case PotentialUnit::charge_density: return "e/A^3";
    case PotentialUnit::occupancy: return "fraction";
  }
  return "?";
}

double potential_prefactor(PotentialUnit unit, double dielectric, double temperature) {
  if (!(dielectric > 0) || !std::isfinite(dielectric))
    throw Error("dielectric constant must be a positive number");
  switch (unit) {
    case PotentialUnit::kcal_per_mol_per_e: return coulomb_constant_kcal / dielectric;
    case PotentialUnit::volt: return coulomb_constant_volt / dielectric;
    case PotentialUnit::kT_per_e: {
      if (!(temperature > 0) || !std::isfinite(temperature))
        throw Error("temperature must be a positive number of kelvin");
      // kT per mole in kcal/mol
      const double kT_kcal = boltzmann * temperature * avogadro / joule_per_kcal;
      return coulomb_constant_kcal / dielectric / kT_kcal;
    }
    case PotentialUnit::number_density:
    case PotentialUnit::charge_density:
    case PotentialUnit::occupancy: return 1.0;  // densities: no Coulomb constant
  }
  return 0;
}

double debye_kappa(double ionic_strength, double dielectric, double temperature) {
  if (!(ionic_strength >= 0) || !std::isfinite(ionic_strength))
    throw Error("ionic strength must be zero or a positive number of mol/L");
  if (!(dielectric > 0) || !std::isfinite(dielectric))
    throw Error("dielectric constant must be a positive number");
  if (!(temperature > 0) || !std::isfinite(temperature))
    throw Error("temperature must be a positive number of kelvin");
  const double ionic_strength_si = ionic_strength * 1000.0;  // mol/m^3
  const double kappa2 = 2.0 * avogadro * elementary_charge * elementary_charge * ionic_strength_si /
                        (vacuum_permittivity * dielectric * boltzmann * temperature);  // 1/m^2
  return std::sqrt(kappa2) * meter_per_angstrom;
}

}  // namespace nbkit::units
