#pragma once
// Physical constants and unit conversions, all in one place.
// Exact SI values and CODATA 2018 recommended values (Tiesinga et al., Rev. Mod. Phys. 93,
// 025010 (2021)); the thermochemical calorie (4.184 J). Lengths in Angstrom, charges in e.
#include <string>

namespace nbkit::units {

inline constexpr double elementary_charge = 1.602176634e-19;     // C, exact (SI 2019)
inline constexpr double avogadro = 6.02214076e23;                // 1/mol, exact
inline constexpr double boltzmann = 1.380649e-23;                // J/K, exact
inline constexpr double vacuum_permittivity = 8.8541878128e-12;  // F/m, CODATA 2018
inline constexpr double pi = 3.14159265358979323846;
inline constexpr double joule_per_kcal = 4184.0;                 // thermochemical calorie
inline constexpr double meter_per_angstrom = 1e-10;
// A density of 1 g/mol per cubic Angstrom in g/cm^3: 1 / (N_A x 1e-24 cm^3).
inline constexpr double gram_per_mole_per_cubic_angstrom = 1.0 / (avogadro * 1e-24);

// e^2 / (4 pi eps0 * 1 Angstrom), per mole, in kcal/mol: 332.0637... kcal/mol*A/e^2.
inline constexpr double coulomb_constant_kcal =
    elementary_charge * elementary_charge / (4 * pi * vacuum_permittivity * meter_per_angstrom) *
    avogadro / joule_per_kcal;
// e / (4 pi eps0 * 1 Angstrom) in volts: 14.3996... V*A/e.
inline constexpr double coulomb_constant_volt =
    elementary_charge / (4 * pi * vacuum_permittivity * meter_per_angstrom);

// LAMMPS's `real` unit system (src/update.cpp, Update::set_units), which nbkit md matches
// digit for digit against LAMMPS: its constants are rounded values fixed in LAMMPS's source,
// not CODATA's, and a run compared with LAMMPS must use the same ones. Their CODATA values
// differ in the 7th-9th digit (coulomb_constant_kcal above is 332.0637133 kcal/mol*A/e^2;
// LAMMPS's qqr2e 332.06371): the maps use CODATA's, MD uses LAMMPS's, and every comparison
// with the other program uses that program's constant.
namespace lammps_real {
inline constexpr double boltzmann = 0.0019872067;    // kcal/mol/K (LAMMPS's force->boltz)
inline constexpr double mvv2e = 48.88821291 * 48.88821291;  // g/mol (A/fs)^2 to kcal/mol
inline constexpr double ftm2v = 1.0 / 48.88821291 / 48.88821291;  // kcal/mol/A / (g/mol) to A/fs^2 (as LAMMPS writes it)
inline constexpr double nktv2p = 68568.415;        // kcal/mol/A^3 to atm
inline constexpr double qqr2e = 332.06371;         // e^2/A to kcal/mol (Coulomb's constant)
}  // namespace lammps_real

inline constexpr double default_temperature = 298.15;  // K, as APBS and VMD report kT/e

// Units a potential map is reported in.
// The unit of a map's values: the potentials (--units), and the densities of the density and
// occupancy methods (set by the method, not chosen).
enum class PotentialUnit { kT_per_e, kcal_per_mol_per_e, volt, number_density, charge_density, occupancy };

PotentialUnit parse_potential_unit(const std::string& name);  // "kT/e", "kcal/mol/e", "V"
std::string to_string(PotentialUnit unit);

// Factor that turns sum_i q_i/r_i (e/Angstrom) into the potential in `unit` in a medium of
// relative permittivity `dielectric` at `temperature` (K, used for kT/e only).
double potential_prefactor(PotentialUnit unit, double dielectric, double temperature);

// Debye-Hueckel screening constant kappa in 1/Angstrom for a 1:1 electrolyte of ionic
// strength `ionic_strength` (mol/L) in a medium of relative permittivity `dielectric`:
// kappa^2 = 2 N_A e^2 I / (eps0 eps_r k_B T)   (I in mol/m^3).  APBS, Vpbe: kappa.
double debye_kappa(double ionic_strength, double dielectric, double temperature);

}  // namespace nbkit::units
