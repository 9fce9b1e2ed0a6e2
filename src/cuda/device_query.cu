// Which GPUs this process can use (nbkit info, --backend auto).
#include <filesystem>
#include <string>
#include <vector>

#include "cuda/check.hpp"
#include "nbkit/core/backend.hpp"

namespace nbkit {

std::string cuda_runtime_version();

int gpu_of_pointer(const void* pointer) {
  cudaPointerAttributes attributes{};
  if (cudaPointerGetAttributes(&attributes, pointer) != cudaSuccess) {
    cudaGetLastError();  // not a pointer the runtime knows: clear the error
    return -1;
  }
  return attributes.type == cudaMemoryTypeDevice || attributes.type == cudaMemoryTypeManaged ? attributes.device : -1;
}

namespace {

std::vector<GpuInfo> query_gpus(std::string* why_none) {
  std::vector<GpuInfo> gpus;
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    if (why_none) {
      // Without an NVIDIA driver the runtime reports an "insufficient driver": say what it means.
      const bool driver_loaded = std::filesystem::exists("/proc/driver/nvidia/version");
      if (status == cudaErrorNoDevice || (status == cudaErrorInsufficientDriver && !driver_loaded))
        *why_none = "no NVIDIA GPU found";
      else if (status == cudaErrorInsufficientDriver)
        *why_none = "the NVIDIA driver is older than this build's CUDA runtime " + cuda_runtime_version() +
                    " needs: update the driver";
      else
        *why_none = std::string("no usable CUDA device: ") + cudaGetErrorString(status);
    }
    cudaGetLastError();  // clear the sticky state of a failed query
    return gpus;
  }
  for (int device = 0; device < count; ++device) {
    cudaDeviceProp properties{};
    NBKIT_CUDA_CHECK(cudaGetDeviceProperties(&properties, device));
    GpuInfo info;
    info.index = device;
    info.name = properties.name;
    info.compute_capability_major = properties.major;
    info.compute_capability_minor = properties.minor;
    info.multiprocessors = properties.multiProcessorCount;
    info.memory_gib = static_cast<double>(properties.totalGlobalMem) / (1024.0 * 1024.0 * 1024.0);
    gpus.push_back(info);
  }
  if (gpus.empty() && why_none) *why_none = "no CUDA device found";
  return gpus;
}

}  // namespace

// The runtime's devices do not change within a process (CUDA_VISIBLE_DEVICES is read once),
// and cudaGetDeviceProperties fills every field of every device: asked once, not on every map
// call (resolve_backend and resolve_gpus each asked).
std::vector<GpuInfo> list_gpus(std::string* why_none) {
  struct Answer {
    std::vector<GpuInfo> gpus;
    std::string why_none;
  };
  static const Answer answer = [] {
    Answer a;
    a.gpus = query_gpus(&a.why_none);
    return a;
  }();
  if (why_none && answer.gpus.empty()) *why_none = answer.why_none;
  return answer.gpus;
}

std::string cuda_runtime_version() {
  int version = 0;
  if (cudaRuntimeGetVersion(&version) != cudaSuccess) return "unknown";
  return std::to_string(version / 1000) + "." + std::to_string((version % 1000) / 10);
}

}  // namespace nbkit
