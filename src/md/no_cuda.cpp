// Compiled only into builds without CUDA: the GPU MD engine and the GPU's molecular forces,
// saying they are not there.
#include "nbkit/core/backend.hpp"
#include "md/molecular_gpu.hpp"
#include "nbkit/md.hpp"

namespace nbkit::md {

struct GpuEngine::State {};

GpuEngine::GpuEngine(const System&, const ForceField&, double, Options) {
  throw_no_cuda_build();
}
GpuEngine::~GpuEngine() = default;
void GpuEngine::step(double, bool, Langevin*) {}
void GpuEngine::apply_thermostat(Langevin&, double) {}
Thermo GpuEngine::thermo(std::int64_t) const { return {}; }
void GpuEngine::download(System&) const {}
void GpuEngine::forces(Forces&) const {}
std::int64_t GpuEngine::builds() const { return 0; }
int GpuEngine::neighbor_capacity() const { return 0; }
void GpuEngine::set_neighbor_capacity(int) {}
std::string GpuEngine::description() const { return "no GPU"; }

struct MolecularGpuForces::State {};
MolecularGpuForces::MolecularGpuForces(const Topology&, const NonbondedSettings&, int, bool, double) {
  throw_no_cuda_build();
}
MolecularGpuForces::~MolecularGpuForces() = default;
MolecularForces MolecularGpuForces::evaluate(const std::vector<Vec3>&, const std::optional<PeriodicBox>&) { return {}; }
std::string MolecularGpuForces::description() const { return "no GPU"; }
std::int64_t MolecularGpuForces::list_builds() const { return 0; }
void MolecularGpuForces::rebuild_next() {}
void MolecularGpuForces::time_phases() {}
MolecularGpuForces::Phases MolecularGpuForces::phase_seconds() const { return {}; }

}  // namespace nbkit::md
