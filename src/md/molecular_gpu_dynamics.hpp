#pragma once
// The biomolecular step kept on one GPU (src/md/cuda/molecular_dynamics.cu): positions,
// velocities and forces live on the device between steps, and the molecular engine
// (molecular_engine.cpp) runs the same sequence of kicks, drifts, Langevin-middle updates,
// SETTLE/SHAKE/RATTLE (cuda/constraints.cuh: constraint_law.hpp, the host's functions) and
// evaluations (MolecularGpuForces::evaluate_on_device) as on the host, each a kernel over atoms,
// waters or clusters (with constraints, the Langevin-middle step's five in one launch:
// langevin_middle_step). The host sees the state only when it asks (download: thermo rows, frames,
// checkpoints, barostat moves); nothing is read back per step (the pair list's rebuilds are
// decided on the device), and a step is one CUDA graph launch where it can be (step_as_graph). Errors found on the device (a force not finite, a water SETTLE cannot place, a cluster
// that does not converge) are reported at the next download with the atoms they concern.
// Internal; no CUDA in this header. Builds without CUDA throw from the constructor.
#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>

#include "nbkit/core/box.hpp"
#include "nbkit/md.hpp"
#include "nbkit/md/constraints.hpp"
#include "nbkit/md/molecular_forces.hpp"

namespace nbkit::md {

class MolecularGpuForces;

class MolecularGpuDynamics {
 public:
  // `forces` (resident()) must outlive this: its positions and forces are the state's.
  MolecularGpuDynamics(MolecularGpuForces& forces, const System& system, const ConstraintSet& constraints);
  ~MolecularGpuDynamics();
  MolecularGpuDynamics(const MolecularGpuDynamics&) = delete;
  MolecularGpuDynamics& operator=(const MolecularGpuDynamics&) = delete;

  // The host's positions, velocities and forces onto the device.
  void upload(const System& system, const Forces& forces);
  // The device's positions, velocities and forces into the host's, with the last evaluation's
  // energies and virial (the constraint forces' virial of the last step added, as the host
  // engine adds it; returned); throws nbkit::Error for what failed on the device since the last
  // download.
  double download(System& system, Forces& forces, EnergyTerms& terms);
  // The same without the arrays: the last evaluation's energies and virial (the constraint
  // forces' virial added, as download adds it; returned) and the sum of m v^2 over the atoms in
  // kinetic_sum.hpp's order, reduced on the device (a thermo row's sums); the same checks.
  double sums(Forces& forces, EnergyTerms& terms, double& mass_velocity2);
  // Whether a step with energies takes sums() rather than the whole state (NBKIT_MD_DEVICE_THERMO,
  // on unless 0).
  bool thermo_on_device() const;

  // v += scale f / m (scale: dt or dt/2 times the units' force-to-acceleration factor).
  void kick(double scale);
  void drift(double dt);  // x += dt v
  // The Langevin-middle integrator's middle (Integrator::LangevinMiddleSettings): x += dt/2 v,
  // v = a v + b sqrt(kT/m) N(0, 1) (normal_triplet of seed, call), x += dt/2 v. kt_mv2: k T in
  // velocity^2 x mass units.
  void langevin_middle(double dt, double a, double b, double kt_mv2, std::uint64_t seed, std::uint64_t call);
  // The positions onto the constraints against the step's start (the positions before the last
  // drift or langevin_middle, which keep them), the velocities given the same correction over
  // dt, and the atoms wrapped into `box` (evaluate's wrap, done here); and the velocities'
  // constraints. Nothing without constraints.
  void constrain_positions(double dt, const std::optional<PeriodicBox>& box);
  void constrain_velocities(double dt, const std::optional<PeriodicBox>& box);
  // With constraints, the Langevin-middle step's calls around the evaluation in one launch: kick
  // (dt times the units' force-to-acceleration factor: kick_scale), constrain_velocities,
  // langevin_middle, constrain_positions, with the same bits (ConstraintsGpu::langevin_middle_step).
  // fuses_middle_step: whether this dynamics does (constraints, and not NBKIT_MIDDLE_STEP_FUSED=0).
  bool fuses_middle_step() const;
  void langevin_middle_step(double kick_scale, double dt, double a, double b, double kt_mv2, std::uint64_t seed,
                            std::uint64_t call, const std::optional<PeriodicBox>& box);
  // Atoms wrapped into the box one by one (as the host engine wraps before each GPU evaluation),
  // then the forces, and the energies and virial when `energies` (download() reads the last
  // evaluation's that had them).
  void evaluate(const std::optional<PeriodicBox>& box, bool energies = true);
  void synchronize();  // waits for the device (phase timing)

  // One step's calls (`queue`: the ones above, as the engine makes them) as one CUDA graph: captured
  // the first time for `key` (again where MolecularGpuForces::graph_configuration changed: a list
  // the host built or grew, a new PME mesh), then each step replayed by one launch, the
  // Langevin-middle call's index (`langevin_call`) set in it. A step of ~60 launches left the GPU
  // waiting on the host's launch calls (session 37's timeline: the host 1.6 us ahead of the
  // pairs); the graph's kernels follow one another on the device. Returns false, having queued
  // nothing, where the step cannot be a graph now (MolecularGpuForces::graph_ready: the list's
  // rebuilds must be decided on the device; NBKIT_STEP_GRAPH=0 turns graphs off): the caller then
  // makes the calls itself.
  struct StepKey {
    double dt = 0, a = 0, b = 0, kt = 0;  // the integrator's constants (a, b, kt: Langevin's)
    std::uint64_t seed = 0;
    bool energies = false, langevin = false;
    double box[6] = {0, 0, 0, 0, 0, 0};  // lo, lengths
    bool operator==(const StepKey& o) const;
  };
  bool step_as_graph(const StepKey& key, std::uint64_t langevin_call, const std::function<void()>& queue,
                     const std::optional<PeriodicBox>& box);

 private:
  std::array<double, 2> checked_constraint_virial();
  double energies_and_virial(const std::array<double, 2>& constraint_virial, Forces& forces, EnergyTerms& terms);
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace nbkit::md
