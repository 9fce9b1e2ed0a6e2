#pragma once
// The calling thread's current GPU again when the scope ends, whatever happens: the maps select
// each device they use on the caller's thread, and a Python caller's CuPy or PyTorch keeps its
// own current device.
#include <cuda_runtime.h>

#include "cuda/check.hpp"

namespace nbkit::cuda {

struct KeepCurrentDevice {
  int previous = 0;
  KeepCurrentDevice() { NBKIT_CUDA_CHECK(cudaGetDevice(&previous)); }
  ~KeepCurrentDevice() { cudaSetDevice(previous); }
  KeepCurrentDevice(const KeepCurrentDevice&) = delete;
  KeepCurrentDevice& operator=(const KeepCurrentDevice&) = delete;
};

}  // namespace nbkit::cuda
