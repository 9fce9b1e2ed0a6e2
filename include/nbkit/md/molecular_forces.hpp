#pragma once
// The energy and forces of a biomolecular system (md::Topology) at one set of positions, term
// by term, as OpenMM's Reference platform and LAMMPS compute them: what `nbkit energy` prints
// and what the tests compare with those programs. Units: Angstrom, kcal/mol, e.
//
// Nonbonded methods (OpenMM's NonbondedForce names):
//   no_cutoff            every pair, plain Coulomb k q_i q_j / (eps r); no box.
//   cutoff_non_periodic  pairs within the cutoff, Coulomb with a reaction field (below); no box.
//   cutoff_periodic      the same between minimum images in the topology's (or the
//                        coordinates') orthorhombic box.
//   pme                  smooth particle-mesh Ewald (Essmann et al. 1995) in that box: pairs
//                        within the cutoff get k q_i q_j erfc(alpha r) / r, the mesh the rest
//                        (md/pme.hpp, md/ewald.hpp have the terms); alpha and the mesh from
//                        ewald_tolerance exactly as OpenMM derives them, B-splines of pme_order.
//                        Lennard-Jones as cutoff_periodic. Every backend (the GPU's: md/cuda/pme.cuh).
//   msm                  multilevel summation (Skeel et al. 2002; Hardy 2006) in that box: pairs
//                        within the cutoff a get k q_i q_j (1/r - g_a(r)), the maps' periodic
//                        grids (src/maps/msm) the smooth rest, interpolated with its gradient at
//                        the atoms (md/msm.hpp); Ewald's energy (tin-foil) to MSM's accuracy.
// The reaction field (Tironi et al., J. Chem. Phys. 102, 5451 (1995), as OpenMM): with eps_rf
// the solvent's dielectric and rc the cutoff, a pair within rc has
//   E = k q_i q_j (1/r + k_rf r^2 - c_rf),  k_rf = (eps_rf - 1) / ((2 eps_rf + 1) rc^3),
//   c_rf = 1/rc + k_rf rc^2
// (zero at rc). Lennard-Jones is cut at rc, not shifted; with a switch distance rs it is
// multiplied by OpenMM's S(x) = 1 - 10 x^3 + 15 x^4 - 6 x^5, x = (r - rs) / (rc - rs), between
// rs and rc. Excluded pairs get nothing; 1-4 pairs get plain Coulomb and their own
// Lennard-Jones whatever their distance (AMBER, CHARMM and OpenMM do the same); with PME their
// Coulomb and that of every excluded pair is also taken out of the mesh's sum (the erf part).
// The periodic methods add the long-range dispersion correction (dispersion_correction below).
#include <array>
#include <optional>
#include <string>
#include <vector>

#include "nbkit/core/backend.hpp"
#include "nbkit/core/units.hpp"
#include "nbkit/md/topology.hpp"

namespace nbkit::md {

struct NonbondedSettings {
  enum class Method { no_cutoff, cutoff_non_periodic, cutoff_periodic, pme, msm };
  // How pairs within a cutoff are summed: OpenMM's (Coulomb with a reaction field; Lennard-Jones
  // cut, or switched by OpenMM's polynomial from switch_distance), CHARMM's switch on both
  // Lennard-Jones and plain Coulomb from switch_distance (LAMMPS's lj/charmm/coul/charmm; the
  // header of pair_terms-inl.hpp's charmm_switch has the formula), or shifted-force Coulomb,
  // k q_i q_j (1/r - 1/rc + (r - rc)/rc^2) (energy and force zero at rc), with Lennard-Jones cut
  // or, from switch_distance, switched by CHARMM's switch (NAMD's switchdist).
  enum class CutoffStyle { openmm, charmm, shifted_force };
  Method method = Method::no_cutoff;
  CutoffStyle style = CutoffStyle::openmm;
  double cutoff = 10;                      // Angstrom (the cutoff methods)
  double reaction_field_dielectric = 78.3;  // OpenMM's default (water)
  std::optional<double> switch_distance;   // switching from here to the cutoff (required by charmm)
  double dielectric = 1;                    // the medium between all charges (AMBER's and OpenMM's 1)
  // k in E = k q_i q_j / r (kcal/mol A / e^2): CODATA 2018's by default (OpenMM's differs by
  // 3e-9); LAMMPS's rounded 332.06371 when comparing with LAMMPS (units::lammps_real::qqr2e).
  double coulomb_constant = units::coulomb_constant_kcal;
  // PME: the Ewald error tolerance (OpenMM's default) and the B-spline order (4..6; OpenMM's 5).
  double ewald_tolerance = 5e-4;
  int pme_order = 5;
  // PME's alpha (1/A) and mesh given outright instead of from the tolerance (as OpenMM's
  // setPMEParameters): to match another program's run, or to pick FFT-friendly mesh sizes.
  std::optional<double> ewald_alpha;
  std::optional<std::array<int, 3>> pme_mesh;
  // The mesh from the tolerance rounded up, edge by edge, to a product of 2, 3, 5 and 7, as
  // OpenMM's CUDA, OpenCL and CPU platforms round it for their FFTs (its Reference platform does
  // not, and neither does nbkit by default, so that `nbkit energy` matches it): a finer mesh,
  // never a coarser one, and FFTs without prime edges such as 61 or 191 (cuFFT's and FFTW's
  // slow paths). What OpenMM's published GPU benchmarks run with.
  bool pme_fft_sizes = false;
  // Multilevel summation (method msm): the finest grid's spacing h (A; at most cutoff / 2) and
  // its interpolation, cubic or quintic (the maps' MsmInterpolation, C1 both); the splitting is
  // the C2 Taylor one (pair_terms-inl.hpp's msm_short_coulomb) at the cutoff.
  double msm_spacing = 1.5;
  bool msm_quintic = false;
  // The long-range dispersion (Lennard-Jones tail) correction of the periodic methods: the
  // energy and pressure of the Lennard-Jones pairs beyond the cutoff (and the switch), as if the
  // atoms were spread evenly there (md/dispersion_correction.hpp). On by default as in OpenMM's
  // NonbondedForce and AMBER; the front ends turn it off for CHARMM and LAMMPS inputs, whose
  // programs leave it off unless asked (OpenMM's CharmmPsfFile, NAMD's LJcorrection, LAMMPS's
  // pair_modify tail).
  bool dispersion_correction = true;
  // Electrostatics at all: false leaves every Coulomb term out (`electrostatics = "none"`:
  // Lennard-Jones and the bonded terms alone).
  bool coulomb = true;
  // k / eps of a pair's k q_i q_j / (eps r), zero without electrostatics.
  double coulomb_k() const { return coulomb ? coulomb_constant / dielectric : 0.0; }
  bool periodic() const { return method == Method::cutoff_periodic || method == Method::pme || method == Method::msm; }
};
// PME's Ewald alpha (1/A) and mesh for these settings in `box`: as given (ewald_alpha, pme_mesh),
// else as OpenMM derives them from the tolerance and the cutoff (the mesh rounded up to FFT
// sizes with pme_fft_sizes).
struct PmeParameters {
  double alpha;
  std::array<int, 3> mesh;
};
PmeParameters pme_parameters(const NonbondedSettings& settings, const PeriodicBox& box);
// The smallest product of 2, 3, 5 and 7 at least `minimum` (OpenMM's findLegalDimension rule).
int fft_friendly_size(int minimum);
// Why a PME run is slower than it need be, or empty: the mesh from the tolerance (OpenMM's
// Reference rule, the default) has an edge with a prime factor above 7, for which cuFFT and FFTW
// take their slow paths, and pme_mesh_sizes = "fft" would round it up. Empty where the mesh is
// given outright or already rounded, or has no such edge. (On an H200 at 1,073,800 atoms, PME's
// 305 x 427 x 61 took 2.25 ms a step against 1.58 for the rounded 315 x 432 x 63; session 46.)
std::string pme_mesh_notice(const NonbondedSettings& settings, const PeriodicBox& box);
NonbondedSettings::CutoffStyle parse_cutoff_style(const std::string& name);  // "openmm", "charmm"
std::string to_string(NonbondedSettings::CutoffStyle style);
NonbondedSettings::Method parse_nonbonded_method(const std::string& name);  // "no-cutoff", "cutoff", "cutoff-periodic", "pme"
std::string to_string(NonbondedSettings::Method method);
// The front ends' one word for the electrostatics (`nbkit energy --electrostatics`, `[nonbonded]
// electrostatics`), onto the method and style of `s`: "pme"; "reaction-field" (cutoff-periodic
// with a box, else cutoff; the openmm style); "shifted-force" (the same methods, that style);
// "none" (no Coulomb at all; Lennard-Jones cut as cutoff-periodic or cutoff); "coulomb" (plain
// Coulomb between every pair, no cutoff, no box), "msm" (multilevel summation). Throws
// nbkit::Error for another word, or pme or msm without a box.
void set_electrostatics(const std::string& name, bool box, NonbondedSettings& s);
// The word for the settings (the reports): one of the above, or "charmm-switch" for the charmm style.
std::string electrostatics_name(const NonbondedSettings& s);

// Each force term's energy (kcal/mol).
struct EnergyTerms {
  double bond = 0, angle = 0, urey_bradley = 0, dihedral = 0, improper = 0, cmap = 0;
  double lennard_jones = 0, coulomb = 0, lennard_jones_14 = 0, coulomb_14 = 0;
  // PME's terms beyond the pairs: the mesh's sum, the self energy, the excluded pairs' erf part
  // and a net charge's neutralising background; MSM's: the grids' sum, the self energy and the
  // excluded pairs' g_a part (zero for the other methods).
  double coulomb_reciprocal = 0;
  // The long-range dispersion correction (NonbondedSettings::dispersion_correction).
  double dispersion_correction = 0;
  double total() const;
  // The terms in print order with their names ("bond", ..., "dispersion_correction"), without the total.
  std::array<std::pair<const char*, double>, 12> named() const;
  // The terms from their values in named()'s order (checkpoints).
  static EnergyTerms from_values(const std::array<double, 12>& values);
};

struct MolecularForces {
  std::vector<Vec3> force;  // kcal/mol/Angstrom, one per atom
  EnergyTerms energy;
  // sum over pairs of r_ij . f_ij and over bonded terms of x_a . F_a (their atoms' nearest
  // images): the virial of the pressure, kcal/mol.
  double virial = 0;
};

// A biomolecular system's force field: its topology (every term's parameters) and how its
// nonbonded pairs are summed. md::Simulation runs dynamics with it.
struct MolecularForceField {
  Topology topology;
  NonbondedSettings nonbonded;
};

// The md::System of a topology's atoms at `coordinates` (real units, each atom's own mass,
// the charges; velocities when the coordinates have them; the box of the coordinates, else the
// topology's, else the atoms' bounding box grown by 10 A, which only the periodic method uses).
struct System;
System molecular_system(const Topology& topology, const Coordinates& coordinates);
// Each molecule (atoms joined by bonds) made whole around its centre of mass, the centre in the
// box (as AMBER's iwrap and cpptraj's autoimage): what restart files and trajectories hold, so
// that OpenMM, VMD and AMBER's tools read unbroken molecules. The engines themselves wrap atoms
// one by one. `system` must be periodic and made from `topology`.
void whole_molecules(const Topology& topology, System& system);

// The energy and forces. `box`: the periodic box for cutoff_periodic (every edge at least twice
// the cutoff: one image per pair); ignored by the other methods. `backend`: reference (every
// pair, one thread, float64: the oracle), cpu (a cell list on `threads` threads, 0: all;
// float64) or cuda (one GPU, the first of `gpus`: a pair list for periodic systems, every pair
// tested otherwise; float64, or with `precision` single OpenMM's mixed precision, float32 pair
// arithmetic with float64 sums, periodic systems only: md/molecular_gpu.hpp); automatic means cpu. Throws nbkit::Error for positions of the wrong count or not finite, a
// box too small, a switch distance outside (0, cutoff), a result not finite.
MolecularForces molecular_forces(const Topology& topology, const std::vector<Vec3>& positions,
                                 const std::optional<PeriodicBox>& box, const NonbondedSettings& settings,
                                 Backend backend = Backend::cpu, int threads = 0, const std::vector<int>& gpus = {},
                                 Precision precision = Precision::double_);

}  // namespace nbkit::md
