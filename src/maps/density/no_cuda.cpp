// Compiled only into builds without CUDA: density maps on the GPUs are refused.
#include "maps/density/density.hpp"
#include "nbkit/core/backend.hpp"

namespace nbkit::maps::density {

void density_cuda(const BinnedAtoms&, bool, const RowRange&, const std::vector<int>&, CudaRunInfo*) {
  throw_no_cuda_build();
}

}  // namespace nbkit::maps::density
