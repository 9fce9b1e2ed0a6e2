#include "nbkit/core/backend.hpp"

#include <fmt/format.h>
#include <hwy/targets.h>

#include <algorithm>
#include <thread>

#include "nbkit/core/error.hpp"

namespace nbkit {

Backend parse_backend(const std::string& name) {
  if (name == "auto") return Backend::automatic;
  if (name == "reference") return Backend::reference;
  if (name == "cpu") return Backend::cpu;
  if (name == "cuda" || name == "gpu") return Backend::cuda;
  throw Error("unknown backend '" + name + "': expected auto, cpu, cuda or reference");
}

std::string to_string(Backend backend) {
  switch (backend) {
    case Backend::automatic: return "auto";
    case Backend::reference: return "reference";
    case Backend::cpu: return "cpu";
    case Backend::cuda: return "cuda";
  }
  return "?";
}

Precision parse_precision(const std::string& name) {
  if (name == "single" || name == "float" || name == "float32") return Precision::single;
  if (name == "double" || name == "float64") return Precision::double_;
  throw Error("unknown precision '" + name + "': expected single or double");
}

std::string to_string(Precision precision) {
  return precision == Precision::single ? "single" : "double";
}

std::string simd_target() {
  const std::int64_t supported = hwy::SupportedTargets() & HWY_TARGETS;
  if (supported == 0) return "none";
  // Lower bits are better targets in Highway's encoding.
  return hwy::TargetName(supported & -supported);
}

std::vector<std::string> simd_targets_compiled() {
  std::vector<std::string> names;
  for (std::int64_t targets = HWY_TARGETS; targets != 0; targets &= targets - 1)
    names.emplace_back(hwy::TargetName(targets & -targets));
  return names;
}

int hardware_threads() {
  const unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<int>(n);
}

Backend resolve_backend(Backend requested, std::string* notice) {
  if (requested != Backend::automatic) return requested;
  std::string why;
  if (!list_gpus(&why).empty()) return Backend::cuda;
  if (notice && build_info().cuda_compiled) *notice = why + "; running on the CPU";
  return Backend::cpu;
}

int resolve_threads(int requested, std::string* notice) {
  if (requested < 0) throw Error(fmt::format("--threads: expected 0 (all) or a positive count, got {}", requested));
  const int hardware = hardware_threads();
  if (requested == 0) return hardware;
  if (requested > std::max(64, 4 * hardware)) {
    if (notice)
      *notice = fmt::format("--threads {}: this machine has {} hardware thread{}; using {}", requested, hardware,
                            hardware == 1 ? "" : "s", hardware);
    return hardware;
  }
  return requested;
}

std::vector<GpuInfo> resolve_gpus(const std::vector<int>& requested) {
  std::string why;
  const std::vector<GpuInfo> gpus = list_gpus(&why);
  if (gpus.empty()) throw Error("--backend cuda: " + why);
  if (requested.empty()) return gpus;
  std::vector<GpuInfo> chosen;
  for (const int device : requested) {
    if (device < 0 || device >= static_cast<int>(gpus.size()))
      throw Error(fmt::format("--gpus: there is no GPU {} (this machine has {})", device, gpus.size()));
    chosen.push_back(gpus[static_cast<std::size_t>(device)]);
  }
  return chosen;
}

GpuInfo resolve_gpu(const std::vector<int>& requested) {
  return resolve_gpus(requested.empty() ? std::vector<int>{0} : std::vector<int>{requested.front()}).front();
}

void throw_no_cuda_build() {
  throw Error("--backend cuda: this build of nbkit has no CUDA backend (nvcc was not found at build time)");
}

}  // namespace nbkit
