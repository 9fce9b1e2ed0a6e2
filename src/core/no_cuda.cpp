// Compiled only into builds without CUDA: the same functions, saying so.
#include <string>
#include <vector>

#include "nbkit/core/backend.hpp"

namespace nbkit {

int gpu_of_pointer(const void*) { return -1; }

std::vector<GpuInfo> list_gpus(std::string* why_none) {
  if (why_none) *why_none = "this build of nbkit has no CUDA backend (nvcc was not found at build time)";  // throw_no_cuda_build's words
  return {};
}

std::string cuda_runtime_version() { return ""; }

}  // namespace nbkit
