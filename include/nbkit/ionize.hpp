#pragma once
// Ion placement around a structure from its potential map (VMD's cionize; seed 000,
// "Multi-GPU DCS Performance: Initial Ion Placement"): each ion goes to the allowed lattice
// point where its energy q V is lowest, then only its own contribution is added to the
// map, and the next ion is placed.
#include <functional>
#include <string>
#include <vector>

#include "nbkit/core/atoms.hpp"
#include "nbkit/core/lattice.hpp"
#include "nbkit/core/vec3.hpp"
#include "nbkit/maps.hpp"

namespace nbkit {

struct IonSpecies {
  std::string name;     // as the user writes it: Na+, K+, Cl-, Mg2+, Ca2+
  std::string residue;  // residue and atom name in PQR/PDB output: NA, K, CL, MG, CA
  double charge = 0;    // e
  double radius = 0;    // Angstrom (Pauling ionic radius by default)
};
// Na+, K+, Li+, Cs+, Cl-, Br-, Mg2+, Ca2+, Zn2+ (case-insensitive); throws for others.
IonSpecies ion_species(const std::string& name);

struct IonizeOptions {
  MapOptions map;                     // how the potential is computed (any method, backend)
  IonSpecies cation = ion_species("Na+"), anion = ion_species("Cl-");
  int cations = 0, anions = 0;
  double min_distance_solute = 5.0;   // Angstrom from every structure atom
  double min_distance_ion = 5.0;      // Angstrom from every ion placed before
  std::function<void(double)> progress;  // fraction of ions placed
};

struct PlacedIon {
  IonSpecies species;
  Vec3 position;
  double potential = 0;  // V at the ion's point when it was placed (the map's unit)
  double energy = 0;     // charge * potential (kT for kT/e, kcal/mol for kcal/mol/e, eV for V)
};

struct IonizeResult {
  std::vector<PlacedIon> ions;
  Map map;                    // the potential of the structure and every ion placed
  MapStats initial_map_stats;
  double seconds = 0;
};

// Ions alternate so that the running net charge moves toward zero: an anion while the
// structure and ions placed so far are positive (and anions remain), a cation while they
// are negative, otherwise the species with more ions left. Throws when no allowed lattice
// point is left for an ion (the message says which ion and what to change).
IonizeResult place_ions(const Atoms& structure, const Lattice& lattice, const IonizeOptions& options);

// Counts that neutralize `net_charge` and reach `ionic_strength` (mol/L of 1:1 salt) in a
// box of `volume` cubic Angstrom, as VMD's autoionize computes them: salt pairs
// round(N_A * I * V * 1e-27), plus counter-ions for the net charge (monovalent ions).
void ion_counts(double net_charge, double ionic_strength, double volume, int* cations, int* anions);

}  // namespace nbkit
