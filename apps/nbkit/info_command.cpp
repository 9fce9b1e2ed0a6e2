// nbkit info: what this build and this machine offer.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <nlohmann/json.hpp>

#include "command.hpp"
#include "nbkit/core/machine.hpp"
#include "nbkit/core/memory.hpp"
#include "nbkit/core/ranks.hpp"

namespace nbkit::cli {

Action setup_info(CLI::App& app) {
  auto json = std::make_shared<bool>(false);
  app.add_flag("--json", *json, "print the same facts as JSON");
  return [json]() {
    const MachineInfo m = machine_info();
    const BuildInfo& build = m.build;
    const auto& gpus = m.gpus;
    const std::string& why_no_gpu = m.gpu_unavailable_reason;
    if (*json) {
      nlohmann::json out;
      out["version"] = build.version;
      out["compiler"] = build.compiler;
      out["build_type"] = build.build_type;
      out["simd_target"] = m.simd_target;
      out["simd_targets_compiled"] = m.simd_targets_compiled;
      out["cpu_threads"] = m.cpu_threads;
      out["memory_available_bytes"] = m.memory_available_bytes;
      out["cuda_compiled"] = build.cuda_compiled;
      out["cuda_runtime"] = build.cuda_runtime;
      const Ranks& ranks = Ranks::world();
      out["mpi"] = {{"compiled", Ranks::mpi_compiled()}, {"library", Ranks::mpi_library()},
                    {"rank", ranks.rank()}, {"ranks", ranks.size()},
                    {"node_rank", ranks.node_rank()}, {"node_ranks", ranks.node_size()}};
      out["gpus"] = nlohmann::json::array();
      for (const auto& g : gpus)
        out["gpus"].push_back({{"index", g.index}, {"name", g.name},
                               {"compute_capability", fmt::format("{}.{}", g.compute_capability_major, g.compute_capability_minor)},
                               {"multiprocessors", g.multiprocessors}, {"memory_gib", g.memory_gib}});
      if (gpus.empty()) out["gpu_unavailable_reason"] = why_no_gpu;
      fmt::print("{}\n", out.dump(2));
      return 0;
    }
    fmt::print("nbkit {}\n", build.version);
    fmt::print("build:        {} {}, {}\n", build.build_type, build.compiler,
               build.cuda_compiled ? "CUDA " + build.cuda_runtime : std::string("CPU only (no CUDA)"));
    fmt::print("SIMD target:  {} (compiled: {})\n", m.simd_target, fmt::join(m.simd_targets_compiled, " "));
    fmt::print("CPU threads:  {}\n", m.cpu_threads);
    fmt::print("memory:       {} available\n", format_bytes(m.memory_available_bytes));
    fmt::print("backends:     reference, cpu{}\n", gpus.empty() ? "" : ", cuda");
    const Ranks& ranks = Ranks::world();
    if (!Ranks::mpi_compiled())
      fmt::print("MPI:          not compiled (one process a run)\n");
    else if (ranks.distributed())
      fmt::print("MPI:          {}, rank {} of {} ({} of {} on this machine)\n", Ranks::mpi_library(), ranks.rank(),
                 ranks.size(), ranks.node_rank(), ranks.node_size());
    else
      fmt::print("MPI:          {} (under mpirun, nbkit map shares its rows among the ranks)\n", Ranks::mpi_library());
    if (gpus.empty()) fmt::print("GPUs:         none ({})\n", why_no_gpu);
    for (const auto& g : gpus)
      fmt::print("GPU {}:        {} (compute capability {}.{}, {} SMs, {:.1f} GiB)\n", g.index, g.name,
                 g.compute_capability_major, g.compute_capability_minor, g.multiprocessors, g.memory_gib);
    return 0;
  };
}

}  // namespace nbkit::cli
