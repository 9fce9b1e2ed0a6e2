#include "nbkit/core/machine.hpp"

#include "nbkit/core/memory.hpp"

namespace nbkit {

MachineInfo machine_info() {
  MachineInfo m;
  m.build = build_info();
  m.simd_target = simd_target();
  m.simd_targets_compiled = simd_targets_compiled();
  m.cpu_threads = hardware_threads();
  m.memory_available_bytes = available_memory_bytes();
  m.gpus = list_gpus(&m.gpu_unavailable_reason);
  return m;
}

}  // namespace nbkit
