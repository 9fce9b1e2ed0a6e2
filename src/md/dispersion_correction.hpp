#pragma once
// The long-range dispersion (Lennard-Jones tail) correction of a periodic system: the energy
// and virial of the Lennard-Jones pairs that the cutoff (and a switch) leave out, with the
// pair distribution taken as uniform beyond the switch distance (Allen and Tildesley, Computer
// Simulation of Liquids, sec. 2.8; Shirts et al., J. Phys. Chem. B 111, 13052 (2007)).
//
// With n_a atoms of Lennard-Jones type a (N in all), pairs of types a <= b weighted as OpenMM's
// NonbondedForce weighs them (n_a (n_a + 1) / 2 for a = b, n_a n_b otherwise; the weights sum to
// N (N + 1) / 2, and the per-pair average is multiplied by N^2 / 2):
//   E = (4 pi N / (N + 1)) / V  sum_ab w_ab  int_{rs}^inf r^2 (U_ab(r) - U_used_ab(r)) dr,
//   W = (4 pi N / (N + 1)) / V  sum_ab w_ab  int_{rs}^inf r^2 (r.F_ab(r) - r.F_used_ab(r)) dr,
// U_ab = c12/r^12 - c6/r^6, U_used the law nbkit sums (switched from rs, zero beyond rc; without
// a switch rs = rc). Beyond rc the integrals are analytic (c12/(9 rc^9) - c6/(3 rc^3) and
// 4 c12/(3 rc^9) - 2 c6/rc^3); between rs and rc they are taken by Gauss-Legendre quadrature of
// the same pair law the loops call (pair_terms-inl.hpp), so any switch is corrected for exactly.
// E is OpenMM's calcDispersionCorrection; W is the virial of the pairs left out (the pressure
// of the full Lennard-Jones potential, as LAMMPS's ptail and GROMACS's DispCorr=EnerPres),
// not -3V dE/dV, which would miss the cut potential's step at rc. Internal.
#include "nbkit/md/molecular_forces.hpp"

namespace nbkit::md {

struct DispersionCorrection {
  double energy_volume = 0;  // E V (kcal/mol A^3)
  double virial_volume = 0;  // W V (kcal/mol A^3)
  // The energy term and the virial in a box of this volume.
  double energy(double volume) const { return energy_volume / volume; }
  double virial(double volume) const { return virial_volume / volume; }
  // Into `out`'s dispersion_correction term and virial, in `box` (every evaluation: V changes
  // under a barostat).
  void add_to(MolecularForces& out, const PeriodicBox& box) const {
    out.energy.dispersion_correction += energy(box.volume());
    out.virial += virial(box.volume());
  }
};

// The correction for these settings (zero where they ask for none: dispersion_correction off,
// or a method without a periodic box).
DispersionCorrection dispersion_correction(const Topology& topology, const NonbondedSettings& settings);

}  // namespace nbkit::md
