#pragma once
// The lattice-cutoff convolution of one grid already on the device (lattice_cutoff_cuda.cu), for
// the GPU's grid stages (grids_cuda.cu): potential[m] += scale sum_d K(d) charge[m + d] over a
// grid of n[0] x n[1] x n[2] points (x slowest), K given as rows of non-zero weights along z
// (msm.hpp's StencilRow), queued on `stream`.
#include <cuda_runtime.h>

#include <cstdint>

#include "maps/msm/msm.hpp"

namespace nbkit::maps::msm {

void queue_lattice_cutoff(const std::int64_t n[3], const double* charge, const StencilRow* rows, int row_count,
                          const double* weights, double scale, double* potential, bool periodic, cudaStream_t stream);

}  // namespace nbkit::maps::msm
