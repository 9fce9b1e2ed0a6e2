// Compiled only into builds without CUDA: the GPU N-body path, saying it is not there.
#include "nbkit/core/backend.hpp"
#include "nbody/forces.hpp"

namespace nbkit::nbody {

struct GpuForces::State {};

GpuForces::GpuForces(const std::vector<int>&, double, bool) {
  throw_no_cuda_build();
}
GpuForces::~GpuForces() = default;
void GpuForces::compute(const Bodies&, Accelerations&, bool, Targets, bool) {}
void GpuForces::compute_on_device(const DeviceBodies&) {}
double GpuForces::last_kernel_seconds() const { return 0; }
std::string GpuForces::description() const { return "no GPU"; }

struct GpuTree::State {};

GpuTree::GpuTree(const std::vector<int>&, double, const TreeOptions&, bool, int) { throw_no_cuda_build(); }
GpuTree::~GpuTree() = default;
void GpuTree::compute(const Bodies&, Accelerations&, bool) {}
void GpuTree::compute_on_device(const DeviceBodies&) {}
double GpuTree::last_kernel_seconds() const { return 0; }
TreeTimings GpuTree::last_timings() const { return {}; }
std::string GpuTree::description() const { return "no GPU"; }

}  // namespace nbkit::nbody
