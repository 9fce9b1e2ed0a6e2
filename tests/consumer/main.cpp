// The potential of two opposite charges at a point on their axis, through an installed nbkit:
// V(1, 0, 0) = C (1/1 - 1/3) for +1 e at the origin and -1 e at (4, 0, 0).
#include <cmath>
#include <cstdio>

#include <nbkit/core/units.hpp>
#include <nbkit/maps.hpp>

int main() {
  nbkit::Atoms atoms;
  atoms.push_back({0, 0, 0}, 1.0, 0.0);
  atoms.push_back({4, 0, 0}, -1.0, 0.0);
  nbkit::Lattice lattice;
  lattice.origin = {1, 0, 0};
  lattice.dims = {1, 1, 1};
  nbkit::MapOptions options;
  options.backend = nbkit::Backend::cpu;
  options.precision = nbkit::Precision::double_;
  options.unit = nbkit::units::PotentialUnit::kcal_per_mol_per_e;
  const nbkit::Map map = nbkit::compute_map(atoms, lattice, options);
  const double expected = nbkit::units::coulomb_constant_kcal * (1.0 - 1.0 / 3.0);
  std::printf("V = %.12f kcal/mol/e (expected %.12f)\n", map.values.at(0), expected);
  return std::fabs(map.values.at(0) - expected) <= 1e-12 * expected ? 0 : 1;
}
