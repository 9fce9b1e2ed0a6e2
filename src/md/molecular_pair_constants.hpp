#pragma once
// The nonbonded law's constants of md::NonbondedSettings (pair_law.hpp's MolecularPairConstants)
// and which switch applies: set up once here for the host loops (molecular_forces.cpp) and the
// GPU (cuda/molecular_forces.cu). Internal; plain C++.
#include <cmath>
#include <type_traits>

#include "md/pair_law.hpp"
#include "nbkit/md/molecular_forces.hpp"

namespace nbkit::md {

// PME's alpha: the one given, else OpenMM's sqrt(-ln(2 tolerance)) / cutoff (md/ewald.hpp's
// ewald_parameters).
inline double ewald_alpha(const NonbondedSettings& s) {
  return s.ewald_alpha ? *s.ewald_alpha : std::sqrt(-std::log(2 * s.ewald_tolerance)) / s.cutoff;
}

inline MolecularPairConstants<double> molecular_pair_constants(const NonbondedSettings& s, PairSwitch& switched,
                                                               PairCoulomb& coulomb) {
  MolecularPairConstants<double> k{0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  switched = PairSwitch::none, coulomb = PairCoulomb::reaction_field;
  if (s.method == NonbondedSettings::Method::no_cutoff) return k;  // plain Coulomb (k_rf = c_rf = 0)
  const double rc = s.cutoff;
  using Style = NonbondedSettings::CutoffStyle;
  if (s.method == NonbondedSettings::Method::pme) {
    coulomb = PairCoulomb::ewald;
    k.ewald_alpha = ewald_alpha(s);
    k.ewald_gauss = 2 * k.ewald_alpha / std::sqrt(3.14159265358979323846);
  } else if (s.method == NonbondedSettings::Method::msm) {
    coulomb = PairCoulomb::msm;
    k.inverse_cutoff = 1 / rc;
  } else if (s.style == Style::shifted_force) {
    coulomb = PairCoulomb::shifted_force;
    k.inverse_cutoff = 1 / rc;
  } else if (s.style == Style::openmm) {
    const double eps = s.reaction_field_dielectric;
    k.k_rf = (eps - 1) / ((2 * eps + 1) * rc * rc * rc);
    k.c_rf = 1 / rc + k.k_rf * rc * rc;
  }
  if (s.switch_distance) {
    const double rs = *s.switch_distance;
    switched = s.style == Style::openmm ? PairSwitch::openmm
               : s.style == Style::charmm ? PairSwitch::charmm
                                          : PairSwitch::charmm_lennard_jones;
    k.switch_distance = rs, k.switch_distance2 = rs * rs;
    k.inverse_switch_width = 1 / (rc - rs);
    k.cutoff2 = rc * rc;
    const double width2 = rc * rc - rs * rs;
    k.charmm_inverse_denominator = 1 / (width2 * width2 * width2);
  }
  return k;
}

// Calls body(S, C), std::integral_constants of the switch S and the Coulomb C that the settings
// give (molecular_pair_constants): one branch per evaluation, not per pair, over the pairs
// NonbondedSettings can ask for.
template <class Body>
void with_law(PairSwitch s, PairCoulomb c, Body&& body) {
  using None = std::integral_constant<PairSwitch, PairSwitch::none>;
  using OpenMM = std::integral_constant<PairSwitch, PairSwitch::openmm>;
  using Charmm = std::integral_constant<PairSwitch, PairSwitch::charmm>;
  using CharmmLj = std::integral_constant<PairSwitch, PairSwitch::charmm_lennard_jones>;
  using Rf = std::integral_constant<PairCoulomb, PairCoulomb::reaction_field>;
  using Ewald = std::integral_constant<PairCoulomb, PairCoulomb::ewald>;
  using Shifted = std::integral_constant<PairCoulomb, PairCoulomb::shifted_force>;
  using Msm = std::integral_constant<PairCoulomb, PairCoulomb::msm>;
  if (c == PairCoulomb::ewald) {
    if (s == PairSwitch::openmm) body(OpenMM{}, Ewald{});
    else body(None{}, Ewald{});
  } else if (c == PairCoulomb::msm) {
    if (s == PairSwitch::openmm) body(OpenMM{}, Msm{});
    else body(None{}, Msm{});
  } else if (c == PairCoulomb::shifted_force) {
    if (s == PairSwitch::charmm_lennard_jones) body(CharmmLj{}, Shifted{});
    else body(None{}, Shifted{});
  } else if (s == PairSwitch::openmm) {
    body(OpenMM{}, Rf{});
  } else if (s == PairSwitch::charmm) {
    body(Charmm{}, Rf{});
  } else {
    body(None{}, Rf{});
  }
}

}  // namespace nbkit::md
