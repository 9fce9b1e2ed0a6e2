#pragma once
// Checked CUDA calls (OpenMM's CHECK_RESULT habit): every runtime call and every launch is
// checked, and a failure throws nbkit::Error naming the call, file and line. Only .cu files
// include this header.
#include <cuda_runtime.h>

#include <string>

#include "nbkit/core/error.hpp"

namespace nbkit::cuda {

[[noreturn]] inline void throw_cuda_error(cudaError_t status, const char* call, const char* file, int line) {
  throw Error(std::string("CUDA error: ") + cudaGetErrorString(status) + " (" + cudaGetErrorName(status) +
              ") in " + call + " at " + file + ":" + std::to_string(line));
}

}  // namespace nbkit::cuda

#define NBKIT_CUDA_CHECK(call)                                                         \
  do {                                                                                 \
    const cudaError_t nbkit_status_ = (call);                                          \
    if (nbkit_status_ != cudaSuccess)                                                  \
      ::nbkit::cuda::throw_cuda_error(nbkit_status_, #call, __FILE__, __LINE__);       \
  } while (0)

// After a kernel launch: launch-configuration errors now, execution errors at the next sync.
#define NBKIT_CUDA_CHECK_LAUNCH() NBKIT_CUDA_CHECK(cudaGetLastError())
