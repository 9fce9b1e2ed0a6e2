#pragma once
// The potential map kept on a GPU while ions are placed (ionize.cpp; issue 8): each ion's
// contribution added there, the lowest-energy allowed point found there, the points near
// the new ion excluded there; nothing crosses to the host per ion but two numbers.
// ion_map_cuda.cu; builds without CUDA throw. Internal to the library.
#include <cstdint>
#include <memory>
#include <variant>
#include <vector>

#include "maps/kernels.hpp"
#include "nbkit/maps.hpp"

namespace nbkit::maps {

// Every law a map without a long range sums (direct, mdh, cutoff): ionize's per-ion term.
using AnyLaw = std::variant<CoulombLaw, DebyeHuckelLaw, CutoffLaw<Smoothing::none>, CutoffLaw<Smoothing::cutcp>,
                            CutoffLaw<Smoothing::taylor1>, CutoffLaw<Smoothing::taylor2>, CutoffLaw<Smoothing::taylor3>>;
// The law and prefactor of a map's sum (maps.cpp); throws for msm (its long range is no law).
AnyLaw map_law(const MapOptions& options);
double map_prefactor(const MapOptions& options);

class GpuIonMap {
 public:
  // The map's values (lattice order) and its excluded points (non-zero: not allowed).
  GpuIonMap(int gpu, const Lattice& lattice, const std::vector<double>& values, const std::vector<char>& excluded);
  ~GpuIonMap();
  GpuIonMap(const GpuIonMap&) = delete;
  GpuIonMap& operator=(const GpuIonMap&) = delete;
  // The allowed point of lowest charge * V (ties: the lowest index) and V there; -1 if none.
  std::int64_t lowest_energy_point(double charge, double* potential);
  // V += prefactor * law term of one atom at every point (a point within singular distance of
  // it excepted, as every method does), float64.
  void add_atom(Vec3 position, double charge, double radius, const AnyLaw& law, double prefactor);
  // Excludes the points closer than `radius` to `center`, and the point `index`.
  void exclude(Vec3 center, double radius, std::int64_t index);
  std::vector<double> values() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace nbkit::maps
