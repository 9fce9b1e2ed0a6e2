#pragma once
// The nonbonded law's constants of md::NonbondedSettings (pair_law.hpp's MolecularPairConstants)
// and which switch applies: set up once here for the host loops (molecular_forces.cpp) and the
// GPU (cuda/molecular_forces.cu). Internal; plain C++.
#include <cmath>

#include "md/pair_law.hpp"
#include "nbkit/md/molecular_forces.hpp"

namespace nbkit::md {

// OpenMM's alpha for PME: sqrt(-ln(2 tolerance)) / cutoff (md/ewald.hpp's ewald_parameters).
inline double ewald_alpha(const NonbondedSettings& s) {
  return std::sqrt(-std::log(2 * s.ewald_tolerance)) / s.cutoff;
}

inline MolecularPairConstants<double> molecular_pair_constants(const NonbondedSettings& s, PairSwitch& switched) {
  MolecularPairConstants<double> k{0, 0, 0, 0, 0, 0, 0, 0, 0};
  switched = PairSwitch::none;
  if (s.method == NonbondedSettings::Method::no_cutoff) return k;
  const double rc = s.cutoff;
  if (s.method == NonbondedSettings::Method::pme) {
    k.ewald_alpha = ewald_alpha(s);
    k.ewald_gauss = 2 * k.ewald_alpha / std::sqrt(3.14159265358979323846);
  } else if (s.style == NonbondedSettings::CutoffStyle::openmm) {
    const double eps = s.reaction_field_dielectric;
    k.k_rf = (eps - 1) / ((2 * eps + 1) * rc * rc * rc);
    k.c_rf = 1 / rc + k.k_rf * rc * rc;
  }
  if (s.switch_distance) {
    const double rs = *s.switch_distance;
    switched = s.style == NonbondedSettings::CutoffStyle::openmm ? PairSwitch::openmm : PairSwitch::charmm;
    k.switch_distance = rs, k.switch_distance2 = rs * rs;
    k.inverse_switch_width = 1 / (rc - rs);
    k.cutoff2 = rc * rc;
    const double width2 = rc * rc - rs * rs;
    k.charmm_inverse_denominator = 1 / (width2 * width2 * width2);
  }
  return k;
}

}  // namespace nbkit::md
