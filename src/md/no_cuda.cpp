// Compiled only into builds without CUDA: the GPU MD engine and the GPU's molecular forces,
// saying they are not there.
#include "nbkit/core/backend.hpp"
#include "md/molecular_gpu.hpp"
#include "md/molecular_gpu_dynamics.hpp"
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
bool MolecularGpuForces::graph_ready(const std::optional<PeriodicBox>&) { return false; }
std::uint64_t MolecularGpuForces::graph_configuration() const { return 0; }
void MolecularGpuForces::time_phases() {}
MolecularGpuForces::Phases MolecularGpuForces::phase_seconds() const { return {}; }
bool MolecularGpuForces::resident() const { return false; }
void MolecularGpuForces::evaluate_on_device(const std::optional<PeriodicBox>&, bool) {}
MolecularForces MolecularGpuForces::device_sums() { return {}; }
Vector3<double>* MolecularGpuForces::positions() { return nullptr; }
Vector3<double>* MolecularGpuForces::forces() { return nullptr; }
CUstream_st* MolecularGpuForces::stream() const { return nullptr; }
int MolecularGpuForces::first_nonfinite_force() { return -1; }

struct MolecularGpuDynamics::State {};
MolecularGpuDynamics::MolecularGpuDynamics(MolecularGpuForces&, const System&, const ConstraintSet&) {
  throw_no_cuda_build();
}
MolecularGpuDynamics::~MolecularGpuDynamics() = default;
void MolecularGpuDynamics::upload(const System&, const Forces&) {}
double MolecularGpuDynamics::download(System&, Forces&, EnergyTerms&) { return 0; }
double MolecularGpuDynamics::sums(Forces&, EnergyTerms&, double&) { return 0; }
bool MolecularGpuDynamics::thermo_on_device() const { return false; }
void MolecularGpuDynamics::kick(double) {}
void MolecularGpuDynamics::drift(double) {}
void MolecularGpuDynamics::langevin_middle(double, double, double, double, std::uint64_t, std::uint64_t) {}
void MolecularGpuDynamics::constrain_positions(double, const std::optional<PeriodicBox>&) {}
void MolecularGpuDynamics::constrain_velocities(double, const std::optional<PeriodicBox>&) {}
bool MolecularGpuDynamics::fuses_middle_step() const { return false; }
void MolecularGpuDynamics::langevin_middle_step(double, double, double, double, double, std::uint64_t, std::uint64_t,
                                                const std::optional<PeriodicBox>&) {}
void MolecularGpuDynamics::evaluate(const std::optional<PeriodicBox>&, bool) {}
void MolecularGpuDynamics::synchronize() {}
bool MolecularGpuDynamics::StepKey::operator==(const StepKey&) const { return false; }
bool MolecularGpuDynamics::step_as_graph(const StepKey&, std::uint64_t, const std::function<void()>&,
                                         const std::optional<PeriodicBox>&) {
  return false;
}

}  // namespace nbkit::md
