// Ion placement (ionize.hpp).
#include "nbkit/ionize.hpp"

#include <fmt/format.h>
#include <omp.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <limits>
#include <memory>

#include "maps/ion_map.hpp"
#include "nbkit/core/error.hpp"
#include "nbkit/core/units.hpp"

namespace nbkit {

IonSpecies ion_species(const std::string& name) {
  std::string key;
  for (char c : name) key += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  // Pauling's ionic radii (Angstrom).
  if (key == "na+" || key == "na" || key == "sod") return {"Na+", "NA", 1, 0.95};
  if (key == "k+" || key == "k" || key == "pot") return {"K+", "K", 1, 1.33};
  if (key == "li+" || key == "li") return {"Li+", "LI", 1, 0.60};
  if (key == "cs+" || key == "cs") return {"Cs+", "CS", 1, 1.69};
  if (key == "cl-" || key == "cl" || key == "cla") return {"Cl-", "CL", -1, 1.81};
  if (key == "br-" || key == "br") return {"Br-", "BR", -1, 1.95};
  if (key == "mg2+" || key == "mg" || key == "mg++") return {"Mg2+", "MG", 2, 0.65};
  if (key == "ca2+" || key == "ca" || key == "cal") return {"Ca2+", "CA", 2, 0.99};
  if (key == "zn2+" || key == "zn") return {"Zn2+", "ZN", 2, 0.74};
  throw Error("unknown ion '" + name + "': expected Na+, K+, Li+, Cs+, Cl-, Br-, Mg2+, Ca2+ or Zn2+");
}

void ion_counts(double net_charge, double ionic_strength, double volume, int* cations, int* anions) {
  if (!(ionic_strength >= 0) || !(volume > 0)) throw Error("ion counts need a non-negative ionic strength and a volume");
  // Molecules of salt in the volume: N_A [1/mol] * I [mol/L] * V [A^3] * 1e-27 [L/A^3].
  const int pairs = static_cast<int>(std::lround(units::avogadro * ionic_strength * volume * 1e-27));
  const int counter = static_cast<int>(std::lround(std::fabs(net_charge)));
  *cations = pairs + (net_charge < 0 ? counter : 0);
  *anions = pairs + (net_charge > 0 ? counter : 0);
}

namespace {

// Marks the lattice points closer than `radius` to `center`.
void exclude_around(const Lattice& lattice, Vec3 center, double radius, std::vector<char>& excluded) {
  const double r2 = radius * radius;
  std::int64_t lo[3], hi[3];
  for (int a = 0; a < 3; ++a) {
    lo[a] = std::max<std::int64_t>(0, static_cast<std::int64_t>(std::ceil((center[a] - radius - lattice.origin[a]) / lattice.spacing)));
    hi[a] = std::min<std::int64_t>(lattice.dims[a] - 1,
                                   static_cast<std::int64_t>(std::floor((center[a] + radius - lattice.origin[a]) / lattice.spacing)));
  }
  for (std::int64_t i = lo[0]; i <= hi[0]; ++i)
    for (std::int64_t j = lo[1]; j <= hi[1]; ++j)
      for (std::int64_t k = lo[2]; k <= hi[2]; ++k) {
        const Vec3 d = lattice.point(i, j, k) - center;
        if (d.x * d.x + d.y * d.y + d.z * d.z < r2) excluded[static_cast<std::size_t>(lattice.index(i, j, k))] = 1;
      }
}

}  // namespace

IonizeResult place_ions(const Atoms& structure, const Lattice& lattice, const IonizeOptions& options) {
  if (options.cations < 0 || options.anions < 0) throw Error("ion counts must not be negative");
  if (!(options.min_distance_solute >= 0) || !(options.min_distance_ion >= 0))
    throw Error("minimum distances must not be negative");
  if (options.cation.charge <= 0) throw Error(options.cation.name + " is not a cation");
  if (options.anion.charge >= 0) throw Error(options.anion.name + " is not an anion");
  const auto start = std::chrono::steady_clock::now();
  IonizeResult result;
  MapOptions map_options = options.map;
  map_options.progress = nullptr;
  result.map = compute_map(structure, lattice, map_options, &result.initial_map_stats);
  std::vector<char> excluded(static_cast<std::size_t>(lattice.size()), 0);
  for (std::size_t n = 0; n < structure.size(); ++n)
    exclude_around(lattice, structure.position(n), options.min_distance_solute, excluded);

  double net = structure.net_charge();
  int cations_left = options.cations, anions_left = options.anions;
  const int total = options.cations + options.anions;
  // The same law, units and backend for each ion's own contribution: the map stays the
  // map of the structure plus the ions placed, without recomputing the structure's part.
  // On the GPU (any map without a periodic box) the map stays there: each ion's
  // term is added, the lowest-energy point found and the points near the ion excluded on the
  // device, in float64; the host keeps nothing but the ions.
  // msm (no box): each ion's own term is its exact Coulomb potential, the sum msm
  // approximates, instead of a multilevel sum over one atom: a pass over the lattice per ion
  // as for the other methods, and exact. With a periodic box the ion's images matter, so its
  // term is a periodic msm map of the one ion (host path).
  MapOptions ion_term_options = map_options;
  if (map_options.method == MapMethod::msm && !map_options.periodic_box) ion_term_options.method = MapMethod::direct;
  std::unique_ptr<maps::GpuIonMap> on_gpu;
  if (result.initial_map_stats.backend == Backend::cuda && !map_options.periodic_box && total > 0)
    on_gpu = std::make_unique<maps::GpuIonMap>(resolve_gpu(map_options.gpus).index, lattice, result.map.values,
                                               excluded);
  const maps::AnyLaw law = on_gpu ? maps::map_law(ion_term_options) : maps::AnyLaw{};
  const double prefactor = maps::map_prefactor(map_options);
  std::vector<double> contribution(on_gpu ? 0 : static_cast<std::size_t>(lattice.size()));
  for (int placed = 0; placed < total; ++placed) {
    bool anion;
    if (net > 0.5 && anions_left > 0) anion = true;
    else if (net < -0.5 && cations_left > 0) anion = false;
    else anion = anions_left > cations_left;
    const IonSpecies& species = anion ? options.anion : options.cation;
    // Lowest charge * potential over the allowed points (ties: the lowest index).
    double best = std::numeric_limits<double>::infinity();
    std::int64_t best_index = -1;
    double potential = 0;
    if (on_gpu) {
      best_index = on_gpu->lowest_energy_point(species.charge, &potential);
      best = species.charge * potential;
    } else {
      for (std::int64_t p = 0; p < lattice.size(); ++p) {
        if (excluded[static_cast<std::size_t>(p)]) continue;
        const double energy = species.charge * result.map.values[static_cast<std::size_t>(p)];
        if (energy < best) best = energy, best_index = p;
      }
      if (best_index >= 0) potential = result.map.values[static_cast<std::size_t>(best_index)];
    }
    if (best_index < 0)
      throw Error(fmt::format("no lattice point is left for ion {} of {} ({}): every point is within {} A of the "
                              "structure or {} A of another ion; enlarge the lattice (--padding) or lower the minimum "
                              "distances",
                              placed + 1, total, species.name, options.min_distance_solute, options.min_distance_ion));
    const std::int64_t i = best_index / (lattice.dims[1] * lattice.dims[2]);
    const std::int64_t j = (best_index / lattice.dims[2]) % lattice.dims[1];
    const std::int64_t k = best_index % lattice.dims[2];
    PlacedIon ion;
    ion.species = species;
    ion.position = lattice.point(i, j, k);
    ion.potential = potential;
    ion.energy = best;
    result.ions.push_back(ion);
    if (on_gpu) {
      on_gpu->add_atom(ion.position, species.charge, species.radius, law, prefactor);
      on_gpu->exclude(ion.position, options.min_distance_ion, best_index);
    } else {
      Atoms one;
      one.push_back(ion.position, species.charge, species.radius);
      compute_map_rows(one, lattice, ion_term_options, 0, lattice.rows(), contribution.data());
      for (std::size_t p = 0; p < contribution.size(); ++p) result.map.values[p] += contribution[p];
      exclude_around(lattice, ion.position, options.min_distance_ion, excluded);
      excluded[static_cast<std::size_t>(best_index)] = 1;  // with a zero minimum distance too
    }
    net += species.charge;
    (anion ? anions_left : cations_left) -= 1;
    if (options.progress) options.progress(static_cast<double>(placed + 1) / total);
  }
  if (on_gpu) result.map.values = on_gpu->values();
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace nbkit
