#include <fmt/format.h>

#include "nbkit/core/backend.hpp"

namespace nbkit {

std::string cuda_runtime_version();  // src/cuda/device_query.cu or src/core/no_cuda.cpp

BuildInfo build_info() {
  BuildInfo info;
  info.version = NBKIT_VERSION;
#if defined(__clang__)
  info.compiler = fmt::format("clang {}.{}.{}", __clang_major__, __clang_minor__, __clang_patchlevel__);
#elif defined(__GNUC__)
  info.compiler = fmt::format("gcc {}.{}.{}", __GNUC__, __GNUC_MINOR__, __GNUC_PATCHLEVEL__);
#else
  info.compiler = "unknown";
#endif
  info.build_type = NBKIT_BUILD_TYPE;
#if NBKIT_HAVE_CUDA
  info.cuda_compiled = true;
  info.cuda_runtime = cuda_runtime_version();
#endif
  return info;
}

}  // namespace nbkit
