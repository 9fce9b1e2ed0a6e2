#pragma once
// What this build and this machine offer, gathered once for every front end (`nbkit info`,
// Python's nbkit.info()).
#include <cstdint>
#include <string>
#include <vector>

#include "nbkit/core/backend.hpp"

namespace nbkit {

struct MachineInfo {
  BuildInfo build;
  std::string simd_target;                         // chosen at run time, e.g. "AVX3"
  std::vector<std::string> simd_targets_compiled;
  int cpu_threads = 0;
  std::uint64_t memory_available_bytes = 0;
  std::vector<GpuInfo> gpus;                       // usable now
  std::string gpu_unavailable_reason;              // why `gpus` is empty
};
MachineInfo machine_info();

}  // namespace nbkit
