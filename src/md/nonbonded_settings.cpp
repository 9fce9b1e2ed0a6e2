// The names of the nonbonded settings and the energy terms (nbkit/md/molecular_forces.hpp), apart
// from the force loops so that the input readers (and their fuzzers) link without the engines.
#include <string>

#include "nbkit/core/error.hpp"
#include "nbkit/md/molecular_forces.hpp"

namespace nbkit::md {

NonbondedSettings::Method parse_nonbonded_method(const std::string& name) {
  if (name == "no-cutoff") return NonbondedSettings::Method::no_cutoff;
  if (name == "cutoff") return NonbondedSettings::Method::cutoff_non_periodic;
  if (name == "cutoff-periodic") return NonbondedSettings::Method::cutoff_periodic;
  if (name == "pme") return NonbondedSettings::Method::pme;
  if (name == "msm") return NonbondedSettings::Method::msm;
  throw Error("unknown nonbonded method '" + name + "' (expected no-cutoff, cutoff, cutoff-periodic, pme or msm)");
}

NonbondedSettings::CutoffStyle parse_cutoff_style(const std::string& name) {
  if (name == "openmm") return NonbondedSettings::CutoffStyle::openmm;
  if (name == "charmm") return NonbondedSettings::CutoffStyle::charmm;
  if (name == "shifted-force") return NonbondedSettings::CutoffStyle::shifted_force;
  throw Error("unknown cutoff style '" + name + "' (expected openmm, charmm or shifted-force)");
}

std::string to_string(NonbondedSettings::CutoffStyle style) {
  switch (style) {
    case NonbondedSettings::CutoffStyle::openmm: return "openmm";
    case NonbondedSettings::CutoffStyle::charmm: return "charmm";
    case NonbondedSettings::CutoffStyle::shifted_force: return "shifted-force";
  }
  return "?";
}

std::string to_string(NonbondedSettings::Method method) {
  switch (method) {
    case NonbondedSettings::Method::no_cutoff: return "no-cutoff";
    case NonbondedSettings::Method::cutoff_non_periodic: return "cutoff";
    case NonbondedSettings::Method::cutoff_periodic: return "cutoff-periodic";
    case NonbondedSettings::Method::pme: return "pme";
    case NonbondedSettings::Method::msm: return "msm";
  }
  return "?";
}

void set_electrostatics(const std::string& name, bool box, NonbondedSettings& s) {
  using Method = NonbondedSettings::Method;
  using Style = NonbondedSettings::CutoffStyle;
  const Method cut = box ? Method::cutoff_periodic : Method::cutoff_non_periodic;
  if (name == "pme") {
    if (!box) throw Error("electrostatics pme needs a periodic box: neither the files nor the options give one");
    s.method = Method::pme, s.style = Style::openmm;
  } else if (name == "reaction-field") {
    s.method = cut, s.style = Style::openmm;
  } else if (name == "shifted-force") {
    s.method = cut, s.style = Style::shifted_force;
  } else if (name == "none") {
    s.method = cut, s.style = Style::openmm, s.coulomb = false;
  } else if (name == "coulomb") {
    s.method = Method::no_cutoff, s.style = Style::openmm;
  } else if (name == "msm") {
    if (!box) throw Error("electrostatics msm needs a periodic box: neither the files nor the options give one");
    s.method = Method::msm, s.style = Style::openmm;
  } else {
    throw Error("unknown electrostatics '" + name +
                "' (expected pme, msm, reaction-field, shifted-force, coulomb or none)");
  }
}

std::string electrostatics_name(const NonbondedSettings& s) {
  using Style = NonbondedSettings::CutoffStyle;
  if (!s.coulomb) return "none";
  if (s.method == NonbondedSettings::Method::no_cutoff) return "coulomb";
  if (s.method == NonbondedSettings::Method::pme) return "pme";
  if (s.method == NonbondedSettings::Method::msm) return "msm";
  return s.style == Style::openmm ? "reaction-field" : s.style == Style::charmm ? "charmm-switch" : "shifted-force";
}

double EnergyTerms::total() const {
  double sum = 0;
  for (const auto& [name, value] : named()) sum += value;
  return sum;
}

namespace {

// The terms in print order: the one list named() and from_values() read.
constexpr std::array<std::pair<const char*, double EnergyTerms::*>, 12> kTerms{{
    {"bond", &EnergyTerms::bond},
    {"angle", &EnergyTerms::angle},
    {"urey_bradley", &EnergyTerms::urey_bradley},
    {"dihedral", &EnergyTerms::dihedral},
    {"improper", &EnergyTerms::improper},
    {"cmap", &EnergyTerms::cmap},
    {"lennard_jones", &EnergyTerms::lennard_jones},
    {"coulomb", &EnergyTerms::coulomb},
    {"lennard_jones_14", &EnergyTerms::lennard_jones_14},
    {"coulomb_14", &EnergyTerms::coulomb_14},
    {"coulomb_reciprocal", &EnergyTerms::coulomb_reciprocal},
    {"dispersion_correction", &EnergyTerms::dispersion_correction},
}};

}  // namespace

std::array<std::pair<const char*, double>, 12> EnergyTerms::named() const {
  std::array<std::pair<const char*, double>, 12> out{};
  for (std::size_t k = 0; k < kTerms.size(); ++k) out[k] = {kTerms[k].first, this->*kTerms[k].second};
  return out;
}

EnergyTerms EnergyTerms::from_values(const std::array<double, 12>& values) {
  EnergyTerms e;
  for (std::size_t k = 0; k < kTerms.size(); ++k) e.*kTerms[k].second = values[k];
  return e;
}

}  // namespace nbkit::md
