#pragma once
// Density and occupancy maps (MapMethod::density, occupancy: VMD's volmap density and
// occupancy): the atoms prepared and binned once per request (density.cpp), the points summed on
// the CPU threads or the GPUs (density_cuda.cu). Internal to the library.
#include <string>
#include <vector>

#include "maps/density/density_terms-inl.hpp"
#include "maps/kernels.hpp"
#include "nbkit/maps.hpp"

namespace nbkit::maps::density {

// The binned atoms in host arrays (Cells points into them).
struct BinnedAtoms {
  Cells cells;
  std::vector<std::int32_t> start;
  std::vector<double> x, y, z, amplitude, exponent, reach2;
};

// Rows of a density (Gaussian) or occupancy (spheres) map on the GPUs; float64.
void density_cuda(const BinnedAtoms& atoms, bool occupancy, const RowRange& rows, const std::vector<int>& devices,
                  CudaRunInfo* info);

}  // namespace nbkit::maps::density
