#pragma once
// Molecular dynamics, part 1: the nonbonded engine (Lennard-Jones within a cutoff, with
// per-type parameters and explicit exclusions) in an orthorhombic periodic box, the
// neighbour (Verlet) list with a skin, velocity-Verlet NVE, and the thermodynamic output a
// LAMMPS user checks (seed 001: NAMD's nonbonded forces; LAMMPS's in.lj benchmark).
//
// Units follow LAMMPS: `lj` (sigma, epsilon, mass of a type, k_B = 1; energies reported per
// atom) and `real` (Angstrom, kcal/mol, g/mol, fs, K; energies reported in total). Plain
// C++: the same header for CPU-only and CUDA builds.
#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "nbkit/core/backend.hpp"
#include "nbkit/core/box.hpp"

namespace nbkit::md {

enum class Units { lj, real };
Units parse_units(const std::string& name);  // "lj" | "real"
std::string to_string(Units units);

// LAMMPS's box (xlo xhi, ylo yhi, zlo zhi): nbkit's one periodic box type.
using Box = PeriodicBox;

// Atoms as structure of arrays. Types are 0-based here (LAMMPS's 1-based in files).
struct System {
  Units units = Units::lj;
  Box box;
  std::vector<double> x, y, z, vx, vy, vz, charge;
  std::vector<int> type;
  std::vector<std::int64_t> id;  // LAMMPS atom IDs, kept for the files
  std::vector<double> type_mass;  // mass of each type
  // Each atom's own mass (AMBER's and CHARMM's systems); empty: the type's (LAMMPS's).
  std::vector<double> atom_mass;
  bool has_charges = false;      // LAMMPS atom style `charge` rather than `atomic`
  std::size_t size() const { return x.size(); }
  double mass(std::size_t i) const { return atom_mass.empty() ? type_mass[type[i]] : atom_mass[i]; }
  int types() const { return static_cast<int>(type_mass.size()); }
  void resize(std::size_t n);
};

// An fcc lattice of cells x cells x cells unit cells (4 atoms each) at reduced number density
// `density` (LAMMPS `lattice fcc 0.8442`, `create_atoms`), one type of mass 1, at rest.
System fcc_lattice(double density, int cells_x, int cells_y, int cells_z);

// Host memory a CPU run of `system` holds (atoms, forces, the neighbour list at this density
// with its per-thread parts, the per-thread force arrays), for the check before a run.
struct ForceField;
std::uint64_t run_memory_bytes(const System& system, const ForceField& field, double skin, int threads);

// Maxwell-Boltzmann velocities at `temperature` (units' energy / k_B), centre-of-mass
// momentum removed and scaled to exactly that temperature (3N - 3 degrees of freedom, as
// LAMMPS's `velocity ... create` with its default `mom yes`). Deterministic for a seed.
void assign_velocities(System& system, double temperature, std::uint64_t seed);

// Per-type-pair Lennard-Jones parameters: E(r) = 4 eps ((sigma/r)^12 - (sigma/r)^6), r < cutoff
// (not shifted unless `shift`, as LAMMPS's lj/cut).
struct ForceField {
  double cutoff = 2.5;
  // Energies shifted so that each pair's is zero at the cutoff (LAMMPS's pair_modify shift
  // yes); forces unchanged. Without it the total energy jumps as pairs cross the cutoff.
  bool shift = false;
  // Shifted-force Coulomb between charged atoms within coulomb_cutoff (0: none), LAMMPS's
  // lj/cut/coul/dsf with alpha 0; the units' Coulomb constant over `dielectric`.
  double coulomb_cutoff = 0;
  double dielectric = 1;
  std::vector<double> epsilon, sigma;  // types x types, symmetric
  // Pairs of atom indices whose interaction is removed (e.g. bonded neighbours).
  std::vector<std::pair<std::int64_t, std::int64_t>> exclusions;
  int types() const;
  double reach() const { return coulomb_cutoff > cutoff ? coulomb_cutoff : cutoff; }  // the longer cutoff
  // Sets type pair (a, b) and (b, a).
  void set_pair(int a, int b, double eps, double sig);
  // Fills the unset pairs from the diagonal: geometric (LAMMPS's default: both means
  // geometric) or arithmetic (Lorentz-Berthelot) mixing.
  static ForceField mixed(const std::vector<double>& type_epsilon, const std::vector<double>& type_sigma,
                          double cutoff, bool arithmetic = false);
};

struct Forces {
  std::vector<double> fx, fy, fz;
  double potential = 0;  // total, in energy units
  double virial = 0;     // sum over pairs of r_ij . f_ij (for the pressure)
  void resize(std::size_t n);
};

// All pairs over every periodic image within the cutoff (boxes smaller than twice the cutoff
// too), float64: the oracle.
void forces_reference(const System& system, const ForceField& field, Forces& out);

// A Verlet list: each pair of atoms (or of an atom and a periodic image of another, or of
// itself in boxes shorter than the reach) within cutoff + skin, once, in the row of one of
// the two; found through cells half the reach wide and a half stencil of cells around each.
class NeighborList {
 public:
  NeighborList(double cutoff, double skin);
  void build(const System& system, const ForceField& field);
  // True when some atom moved more than half the skin since the last build (checked, not
  // assumed), or the box changed.
  bool needs_rebuild(const System& system) const;
  std::int64_t builds() const { return builds_; }
  // True when every box length exceeds twice (cutoff + 2 skin): atoms move at most half the
  // skin between builds, so a listed pair's image is the minimum image; the list then stores
  // no image shifts (shifts_ empty) and the force loops take the minimum image.
  bool minimum_image(const Box& box) const;
  std::size_t pairs() const { return neighbors_.size(); }
  double cutoff() const { return cutoff_; }
  double skin() const { return skin_; }

  // Rows in cell order: row p is atom order_[p], its neighbours neighbors_[first_[p] ..
  // first_[p + 1]) are rows too (atom order_[q]), each with its image shift in box lengths
  // (none stored when minimum_image(box)).
  std::vector<std::int64_t> order_;
  std::vector<std::int64_t> first_;
  std::vector<std::int32_t> neighbors_;
  std::vector<std::array<std::int8_t, 3>> shifts_;

 private:
  double cutoff_, skin_;
  std::vector<double> built_x_, built_y_, built_z_;
  Box built_box_;
  std::vector<std::vector<std::int32_t>> thread_neighbors_;  // the threads' parts, reused
  std::vector<std::vector<std::array<std::int8_t, 3>>> thread_shifts_;
  std::int64_t builds_ = 0;
};

// Forces through a neighbour list on all cores (`threads` 0: all), Newton's third law
// applied; deterministic for a given thread count.
void forces_cpu(const System& system, const ForceField& field, const NeighborList& list, Forces& out,
                int threads = 0);

// Thermodynamic state, LAMMPS's definitions: temperature from 3N - 3 degrees of freedom (less
// one per holonomic constraint), pressure (2 KE + virial) / 3V, in the units' own terms (lj:
// reduced).
struct Thermo {
  std::int64_t step = 0;
  double temperature = 0, potential = 0, kinetic = 0, total = 0, pressure = 0;
};
// Energies per atom in lj units (LAMMPS's thermo_modify norm yes default), total in real.
Thermo thermo(const System& system, const Forces& forces, std::int64_t step, std::int64_t constraints = 0);

// Constants of a unit system: k_B, and the factor that turns force / mass into acceleration
// and mass v^2 into energy (LAMMPS's ftm2v and mvv2e); pressure conversion (nktv2p).
struct UnitConstants {
  double boltzmann, force_to_acceleration, mv2_to_energy, pressure;
  double coulomb;  // q q / r to energy (LAMMPS's qqr2e)
};
UnitConstants unit_constants(Units units);

// Langevin thermostat as LAMMPS's fix langevin (Schneider & Stoll, Phys. Rev. B 17, 1302
// (1978)): after each force evaluation every atom gets a drag -m v / damping and a random
// force sqrt(24 k T m / (damping dt)) (u - 1/2) per component, u uniform on (0, 1), so the
// random force has the variance 2 k T m / (damping dt) the fluctuation-dissipation theorem
// asks. The numbers are counter-based (Philox4x32-10 of seed, call and atom index): a run is
// the same for a seed on any thread count, and the CPU and GPU engines draw the same numbers.
struct LangevinDraw;
class Langevin {
 public:
  Langevin(double temperature, double damping, std::uint64_t seed);
  // Adds the thermostat's forces for the system's velocities (one call).
  void apply(const System& system, Forces& forces, double dt);
  // What one call needs (engines that apply it themselves: GpuEngine); counts the call.
  LangevinDraw next_draw(Units units, double dt);
  double temperature() const { return temperature_; }
  double damping() const { return damping_; }
  // The calls so far, and a restart's: the random stream goes on from call `calls`.
  std::uint64_t calls() const { return calls_; }
  void resume_at(std::uint64_t calls) { calls_ = calls; }

 private:
  double temperature_, damping_;
  std::uint64_t seed_, calls_ = 0;
};

// Moves every atom into the box [lo, hi) by whole box lengths.
void wrap_into_box(System& system);

// One velocity-Verlet step (NVE): v += f/m dt/2, x += v dt, forces, v += f/m dt/2. When the
// list needs a rebuild, atoms are wrapped into the box first (as LAMMPS does at reneighbouring).
// With a thermostat, its forces are added after each force evaluation (and the caller adds
// them to the first evaluation, as LAMMPS's setup does).
void verlet_step(System& system, Forces& forces, const ForceField& field, NeighborList& list, double dt,
                 int threads = 0, Langevin* thermostat = nullptr);

// The whole velocity-Verlet step on one GPU (src/md/engine_cuda.cu): atoms, forces and the
// neighbour list stay on the device from step to step; a step is one CUDA graph launch whose
// list rebuild runs when the device finds an atom moved half the skin, and the host waits for
// the device only every 16 steps (and for thermo, download, forces). Atoms are sorted by cell
// at every list rebuild; a full list (each pair in both rows, no atomics) and fixed summation
// orders make a run the same bits every time on the same GPU. float32 computes the pair forces in single precision (positions and
// velocities stay float64, as OpenMM's mixed precision); float64 does everything in double.
// Boxes must be longer than twice (reach + skin) along every axis (the minimum image); smaller
// boxes run on the CPU path. NVE, or Langevin with the CPU's random numbers (same run within
// rounding). Builds without CUDA throw from the constructor.
class GpuEngine {
 public:
  struct Options {
    int device = 0;
    bool double_precision = false;
    int initial_neighbors = 0;  // list row capacity to start from (0: from the density); grows on overflow
    // Each step one CUDA graph launch, the rebuild decided on the device, the host checking
    // every 16 steps; false: the host reads the rebuild flag every step (a sync a step).
    bool step_graphs = true;
    // How the pair forces are found: a Verlet list per atom (the default, fastest measured:
    // docs/performance.md), the slides' patch pairs (NAMD: a thread block per cell, the
    // atoms of each neighbouring cell through shared memory, every pair tested; no list), or
    // cluster pairs (tiles of 32 atoms, a list of neighbour clusters, a warp per cluster).
    enum class PairKernel { verlet_list, patch_pairs, cluster_pairs };
    PairKernel pair_kernel = PairKernel::verlet_list;
  };
  GpuEngine(const System& system, const ForceField& field, double skin, Options options);
  ~GpuEngine();
  GpuEngine(const GpuEngine&) = delete;
  GpuEngine& operator=(const GpuEngine&) = delete;

  // One step: v += f/m dt/2, x += v dt, the rebuild check (atoms wrapped and re-sorted, the
  // list rebuilt, when one moved more than half the skin), forces (plus the thermostat's, if
  // given), v += f/m dt/2. With `energies`, the force evaluation also sums the potential
  // energy and the virial.
  void step(double dt, bool energies, Langevin* thermostat = nullptr);
  // Adds the thermostat's forces to the present ones (after the constructor's evaluation, as
  // LAMMPS's setup does and the CPU caller does with Langevin::apply).
  void apply_thermostat(Langevin& thermostat, double dt);
  // Thermodynamic state now (the potential and virial of the last evaluation with energies;
  // the constructor's evaluation has them).
  Thermo thermo(std::int64_t step) const;
  // Positions and velocities back into `system` (in its atom order).
  void download(System& system) const;
  // The last forces in the system's atom order, with the last potential and virial.
  void forces(Forces& out) const;
  std::int64_t builds() const;
  int neighbor_capacity() const;  // the list's row capacity now
  // The row capacity for the next list builds (rows that do not fit grow it again): tests
  // make rows overflow with it.
  void set_neighbor_capacity(int rows);
  std::string description() const;  // "NVIDIA H100 80GB HBM3, float32"

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace nbkit::md
