// Compiled only into builds without CUDA.
#include "maps/kernels.hpp"
#include "maps/frame_combiner.hpp"
#include "maps/ion_map.hpp"
#include "maps/msm/msm.hpp"
#include "nbkit/core/backend.hpp"

namespace nbkit::maps {

void direct_cuda(const MapAtoms&, const MapLaw&, const RowRange&, bool, const std::vector<int>&, CudaRunInfo*) {
  throw_no_cuda_build();
}

void cutoff_cuda(const MapAtoms&, const std::optional<Vec3>&, const CutoffMapLaw&, const RowRange&, bool,
                 const std::vector<int>&, CudaRunInfo*) {
  throw_no_cuda_build();
}

PinnedHostRange::PinnedHostRange(void*, std::size_t) {}
PinnedHostRange::~PinnedHostRange() = default;

struct GpuIonMap::State {};
GpuIonMap::GpuIonMap(int, const Lattice&, const std::vector<double>&, const std::vector<char>&) {
  throw_no_cuda_build();
}
GpuIonMap::~GpuIonMap() = default;
std::int64_t GpuIonMap::lowest_energy_point(double, double*) { return -1; }
void GpuIonMap::add_atom(Vec3, double, double, const AnyLaw&, double) {}
void GpuIonMap::exclude(Vec3, double, std::int64_t) {}
std::vector<double> GpuIonMap::values() const { return {}; }

}  // namespace nbkit::maps

namespace nbkit {
void compute_map_on_device(const Atoms&, const Lattice&, const MapOptions&, int, double*, MapStats*) {
  throw_no_cuda_build();
}
void compute_map_on_device(const DeviceAtomArrays&, const Lattice&, const MapOptions&, int, double*, MapStats*) {
  throw_no_cuda_build();
}
DeviceAtomSummary check_device_atoms(const DeviceAtomArrays&) { throw_no_cuda_build(); }
}  // namespace nbkit

namespace nbkit::maps {

struct GpuFrameCombiner::State {};
GpuFrameCombiner::GpuFrameCombiner(const Lattice&, Combine) {
  throw_no_cuda_build();
}
GpuFrameCombiner::~GpuFrameCombiner() = default;
void GpuFrameCombiner::begin_frame(int) {}
void GpuFrameCombiner::consume(int, std::int64_t, std::int64_t, const double*, void*) {}
void GpuFrameCombiner::download(std::vector<double>&) {}

namespace msm {
void lattice_cutoff_cuda(int, const std::vector<StencilRow>&, const std::vector<double>&, const std::vector<LevelGrids>&,
                         bool) {
  throw_no_cuda_build();
}
std::vector<double> finest_potential_cuda(const PreparedAtoms&, const DeviceGridsPlan&, Stages&) { throw_no_cuda_build(); }
struct GpuInterpolation::State {};
GpuInterpolation::GpuInterpolation(std::shared_future<InterpolationPlan>) { throw_no_cuda_build(); }
void GpuInterpolation::wait() const {}
GpuInterpolation::~GpuInterpolation() = default;
void GpuInterpolation::add(int, std::int64_t, std::int64_t, double*, void*) {}
bool GpuInterpolation::ready() const { return true; }
double GpuInterpolation::kernel_seconds() const { return 0; }
}  // namespace msm

}  // namespace nbkit::maps
