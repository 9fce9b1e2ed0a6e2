// How the ranks of a job that share a machine share its GPUs and cores (issue 22).
#include <fmt/format.h>

#include <algorithm>

#include "nbkit/core/backend.hpp"
#include "nbkit/core/error.hpp"
#include "nbkit/core/ranks.hpp"

namespace nbkit {

NodeShare share_node(const Ranks& ranks, Backend backend, const std::vector<int>& gpus, int threads) {
  NodeShare share{backend, gpus, threads, ""};
  const int local = ranks.node_rank(), on_node = ranks.node_size();
  if (on_node <= 1) return share;
  // Every core for each rank would run node_size threads a core: each rank takes its share.
  if (threads == 0) share.threads = std::max(1, hardware_threads() / on_node);
  if (backend != Backend::cuda && backend != Backend::automatic) return share;
  std::vector<int> machine = gpus;
  if (machine.empty())
    for (const GpuInfo& gpu : list_gpus()) machine.push_back(gpu.index);
  if (machine.empty()) return share;  // no GPU here: resolve_backend and resolve_gpus say why
  share.gpus.clear();
  for (std::size_t k = static_cast<std::size_t>(local); k < machine.size(); k += static_cast<std::size_t>(on_node))
    share.gpus.push_back(machine[k]);
  if (!share.gpus.empty()) return share;
  const std::string why = fmt::format("rank {} of this machine's {} has no GPU of its own (the machine's {} GPU{} go{} "
                                      "to its first ranks, one rank a GPU)",
                                      local, on_node, machine.size(), machine.size() == 1 ? "" : "s",
                                      machine.size() == 1 ? "es" : "");
  if (backend == Backend::cuda)
    throw Error(why + ": run at most one rank a GPU with --backend cuda, or --backend auto to let the other ranks use "
                      "the CPU");
  share.backend = Backend::cpu;
  share.notice = why + ": it computes on the CPU";
  return share;
}

}  // namespace nbkit
