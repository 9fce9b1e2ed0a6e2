// Compiled only into builds without CUDA.
#include "maps/direct/direct.hpp"
#include "maps/msm/msm.hpp"
#include "nbkit/core/error.hpp"

namespace nbkit::maps {

void direct_cuda(const PreparedAtoms&, const MapLaw&, const RowRange&, bool, const std::vector<int>&, CudaRunInfo*) {
  throw Error("--backend cuda: this build of nbkit has no CUDA backend (nvcc was not found at build time)");
}

void cutoff_cuda(const PreparedAtoms&, const CutoffMapLaw&, const RowRange&, bool, const std::vector<int>&, CudaRunInfo*) {
  throw Error("--backend cuda: this build of nbkit has no CUDA backend (nvcc was not found at build time)");
}

namespace msm {
void lattice_cutoff_cuda(int, const std::vector<StencilRow>&, const std::vector<double>&, const std::vector<LevelGrids>&,
                         bool) {
  throw Error("--backend cuda: this build of nbkit has no CUDA backend (nvcc was not found at build time)");
}
}  // namespace msm

}  // namespace nbkit::maps
