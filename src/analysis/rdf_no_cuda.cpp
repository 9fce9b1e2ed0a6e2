// Compiled only into builds without CUDA: g(r) on the GPUs is refused where it is asked for.
#include "analysis/rdf_gpus.hpp"
#include "nbkit/core/backend.hpp"

namespace nbkit::analysis::detail {

struct RdfGpus::State {};
RdfGpus::RdfGpus(const std::vector<int>&, const std::vector<double>&) { throw_no_cuda_build(); }
RdfGpus::~RdfGpus() = default;
std::uint64_t RdfGpus::count(const FrameArrays&, const BinRule&, std::uint64_t*) { return 0; }
std::string RdfGpus::detail() const { return ""; }

}  // namespace nbkit::analysis::detail
