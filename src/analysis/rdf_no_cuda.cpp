// Compiled only into builds without CUDA: g(r) on the GPUs is refused where it is asked for.
#include "analysis/rdf_gpus.hpp"
#include "nbkit/core/backend.hpp"

namespace nbkit::analysis::detail {

struct RdfGpus::State {};
RdfGpus::RdfGpus(const std::vector<int>&, const std::vector<double>&, const std::vector<std::int32_t>&,
                 const std::vector<std::int32_t>&, const std::vector<std::int32_t>&) {
  throw_no_cuda_build();
}
RdfGpus::~RdfGpus() = default;
void RdfGpus::submit(const float*, const float*, const float*, const PairGrid&, const BinRule&) {}
bool RdfGpus::collect(std::uint64_t*, std::uint64_t*) { return false; }
std::string RdfGpus::detail() const { return ""; }

}  // namespace nbkit::analysis::detail
