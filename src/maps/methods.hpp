#pragma once
// Each map method in one place: its checks and its backends (reference, CPU, CUDA), called by
// compute_map_rows (maps.cpp) once the request's common part is checked and the backend and
// threads are resolved. A new method is one more pair of functions here and its loops in
// src/maps/<method>/. Internal to the library.
#include <string>
#include <utility>
#include <vector>

#include "maps/kernels.hpp"
#include "nbkit/maps.hpp"

namespace nbkit::maps {

// Where and how a method ran, for MapStats.
struct MethodRun {
  std::string detail;
  double kernel_seconds = 0;
  std::vector<std::pair<std::string, double>> stage_seconds;
};

// The cutoff method's law for a smoothing (msm's short range: its splitting).
CutoffMapLaw cutoff_law_for(Smoothing smoothing, double cutoff);

// Throws nbkit::Error for options the method cannot use (a cutoff, bins, msm's grid, a box).
void check_method_options(const MapOptions& options);

// direct and mdh: every atom at every point.
MethodRun run_direct(const MapAtoms& atoms, const MapOptions& options, Backend backend, int threads, const RowRange& rows);
// cutoff and msm: the short range within the cutoff (with a periodic box, over the atoms'
// images), and for msm the long range on the multilevel grids.
MethodRun run_cutoff_or_msm(const MapAtoms& atoms, const MapOptions& options, Backend backend, int threads,
                            const RowRange& rows);

// density and occupancy (maps/density/): Gaussians or spheres gathered from cells, float64.
MethodRun run_density(const Atoms& atoms, const MapOptions& options, Backend backend, int threads, const RowRange& rows);

}  // namespace nbkit::maps
