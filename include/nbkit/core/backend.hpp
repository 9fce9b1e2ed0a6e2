#pragma once
// Where a sum runs and in what arithmetic, and what this build and machine offer.
#include <string>
#include <vector>

namespace nbkit {

enum class Backend {
  automatic,  // the fastest available: cuda when a GPU is usable, else cpu
  reference,  // float64 plain loops, one thread: the test oracle
  cpu,        // all cores, SIMD
  cuda,       // NVIDIA GPUs
};
enum class Precision { single, double_ };

Backend parse_backend(const std::string& name);  // "auto", "reference", "cpu", "cuda"
std::string to_string(Backend backend);
Precision parse_precision(const std::string& name);  // "single" | "float", "double"
std::string to_string(Precision precision);

struct GpuInfo {
  int index = 0;
  std::string name;
  int compute_capability_major = 0, compute_capability_minor = 0;
  int multiprocessors = 0;
  double memory_gib = 0;
};

struct BuildInfo {
  std::string version;
  std::string compiler;
  std::string build_type;
  bool cuda_compiled = false;
  std::string cuda_runtime;  // empty when not compiled with CUDA
};

BuildInfo build_info();
std::string simd_target();           // the SIMD instruction set chosen at run time, e.g. "AVX3"
std::vector<std::string> simd_targets_compiled();
int hardware_threads();

// --backend auto: the GPUs when one is usable, else the CPU, with `notice` (when given) saying
// why no GPU is used in a build that has CUDA. Other requests come back unchanged.
Backend resolve_backend(Backend requested, std::string* notice = nullptr);

// The CPU thread count a run uses, decided once for every command: 0 means all hardware
// threads; a negative count is an error; a count far beyond the machine (more than 4 threads
// per hardware thread and more than 64, where OpenMP fails to start its team or crashes) is
// cut to the hardware threads, and `notice` says so. Oversubscription within that limit is
// honoured (tests check results per thread count).
int resolve_threads(int requested, std::string* notice = nullptr);
// GPUs usable now; empty when the build has no CUDA. `why_none` says why (no driver, no
// device, CPU-only build) when the list is empty.
std::vector<GpuInfo> list_gpus(std::string* why_none = nullptr);

// The GPUs a run on --backend cuda uses, decided here for every engine (maps, N-body, MD,
// ions): `requested` (--gpus' device indices; empty: every usable GPU), each checked against
// the machine's. Throws nbkit::Error when no GPU is usable (saying why) or an index does not
// exist. A device may be listed twice (two host threads share it).
std::vector<GpuInfo> resolve_gpus(const std::vector<int>& requested);
// One GPU, for engines that run on one (MD, the ion map, msm's lattice cutoff): the first
// requested, or GPU 0.
GpuInfo resolve_gpu(const std::vector<int>& requested);
// The CUDA device whose memory holds `pointer` (a CuPy or PyTorch array's data), or -1 for host
// memory, an unknown pointer or a build without CUDA.
int gpu_of_pointer(const void* pointer);
// What every CUDA entry point of a build without CUDA throws.
[[noreturn]] void throw_no_cuda_build();

}  // namespace nbkit
