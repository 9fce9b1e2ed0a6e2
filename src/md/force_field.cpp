// A force field's parameters (md.hpp's ForceField) and their checks: apart from the force
// loops, so that the readers (and their fuzzers) need none of the loops.
#include <cmath>
#include <string>

#include "md/force_field.hpp"
#include "nbkit/core/error.hpp"
#include "nbkit/md.hpp"

namespace nbkit::md {

int ForceField::types() const { return static_cast<int>(std::lround(std::sqrt(static_cast<double>(epsilon.size())))); }

void ForceField::set_pair(int a, int b, double eps, double sig) {
  const int n = types();
  if (a < 0 || b < 0 || a >= n || b >= n) throw Error("pair coefficients for a type that does not exist");
  epsilon[a * n + b] = epsilon[b * n + a] = eps;
  sigma[a * n + b] = sigma[b * n + a] = sig;
}

ForceField ForceField::mixed(const std::vector<double>& type_epsilon, const std::vector<double>& type_sigma,
                             double cutoff, bool arithmetic) {
  if (type_epsilon.size() != type_sigma.size() || type_epsilon.empty())
    throw Error("Lennard-Jones parameters: one epsilon and one sigma for every type");
  ForceField f;
  f.cutoff = cutoff;
  const std::size_t n = type_epsilon.size();
  f.epsilon.resize(n * n);
  f.sigma.resize(n * n);
  for (std::size_t a = 0; a < n; ++a)
    for (std::size_t b = 0; b < n; ++b) {
      f.epsilon[a * n + b] = std::sqrt(type_epsilon[a] * type_epsilon[b]);
      f.sigma[a * n + b] = arithmetic ? 0.5 * (type_sigma[a] + type_sigma[b]) : std::sqrt(type_sigma[a] * type_sigma[b]);
    }
  return f;
}

void check_force_field(const System& s, const ForceField& f) {
  if (!(f.cutoff > 0) || !std::isfinite(f.cutoff)) throw Error("the cutoff must be a positive length");
  if (!(f.coulomb_cutoff >= 0) || !std::isfinite(f.coulomb_cutoff))
    throw Error("the Coulomb cutoff must be zero (no Coulomb) or a positive length");
  if (!(f.dielectric > 0) || !std::isfinite(f.dielectric)) throw Error("the dielectric constant must be positive");
  if (f.types() < s.types() || static_cast<std::size_t>(f.types() * f.types()) != f.epsilon.size())
    throw Error("the force field has parameters for " + std::to_string(f.types()) + " atom types, the system has " +
                std::to_string(s.types()));
  for (int axis = 0; axis < 3; ++axis)
    if (!(s.box.length(axis) > 0)) throw Error("the box must have a positive length along every axis");
  if (!s.atom_mass.empty() && s.atom_mass.size() != s.size())
    throw Error("the per-atom masses must number the atoms");
}

}  // namespace nbkit::md
