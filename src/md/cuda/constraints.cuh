#pragma once
// SETTLE, SHAKE and RATTLE on one GPU (cuda/constraints.cu): constraint_law.hpp's functions, the
// host solver's (constraint_solver.cpp), with a thread per water and a thread per cluster of
// distances in one launch (waters and clusters share no atom, so no two threads write one atom,
// and each cluster's Gauss-Seidel order is the host's). Each water's and cluster's virial goes to a slot of its own,
// summed on the host in a fixed order when asked; a water that cannot be placed or a cluster that
// does not converge is flagged on the device and reported (with its atoms, as the host solver
// reports it) at the next check, so the step never waits for the host. Internal to the CUDA build.
#include <cuda_runtime.h>

#include <array>
#include <vector>

#include "cuda/device_buffer.hpp"
#include "md/constraint_law.hpp"
#include "md/cuda/middle_step.cuh"

namespace nbkit::md {

class ConstraintsGpu {
 public:
  ConstraintsGpu(const ConstraintSet& set, const std::vector<double>& mass, cudaStream_t stream);

  // Moves x (an unconstrained update of `reference`) onto the constraints (SETTLE, then SHAKE).
  void constrain_positions(const Vector3<double>* reference, Vector3<double>* x, const ConstraintImages& image);
  // Removes each constraint's relative velocity along its bond at positions x (velocity SETTLE,
  // then RATTLE to the tolerance over a step dt).
  void constrain_velocities(const Vector3<double>* x, Vector3<double>* v, const ConstraintImages& image, double dt);
  // The whole Langevin-middle step around the forces in one launch, the waters, clusters and
  // other atoms in blocks that each hold their units whole, a thread per atom and per unit: the
  // kick (v += kick_scale f / m), the velocities' constraints at x, the thermostat's drift,
  // noise and drift (langevin_middle_atom: the reference and unconstrained copies kept), the
  // positions' constraints, the velocities' correction and the wrap. The same per-atom and
  // per-constraint arithmetic as the five launches (kick, constrain_velocities, langevin_middle,
  // constrain_positions, the correction) in their order: each block's atoms are its own through
  // the step (the constraints join no two units), so the same bits
  // (Constraints.GpuMiddleStepInOneLaunchGivesTheSameBits).
  // `call`: the thermostat's call (its parameter kMiddleStepCall of middle_step_function()'s).
  void langevin_middle_step(const MiddleStep& step, const ConstraintImages& image, std::uint64_t call);
  bool steps_in_one_launch() const;  // false where a cluster has more atoms than a block holds
  static const void* middle_step_function();
  static constexpr int kMiddleStepParameters = 7, kMiddleStepCall = 6;
  // The last calls' virials, sum_i r_i . m_i dx_i for positions and sum_i r_i . m_i dv_i for
  // velocities (constraint_solver.hpp's units); throws nbkit::Error for a water or cluster that
  // failed since the last check. Waits for the stream.
  std::array<double, 2> virials_and_check();
  bool empty() const { return set_.empty(); }

 private:
  ConstraintSet set_;  // the host's copy, for the errors
  cudaStream_t stream_;
  int waters_ = 0, clusters_ = 0;
  cuda::DeviceBuffer<RigidWater> water_;
  cuda::DeviceBuffer<DistanceConstraint> distance_;
  cuda::DeviceBuffer<std::int32_t> cluster_first_;
  // The step in one launch's blocks (constraints.cu's MiddleBlocks; 0: a cluster too large for one).
  int step_blocks_ = 0;
  cuda::DeviceBuffer<std::int32_t> step_atom_first_, step_atom_, step_unit_first_, step_unit_;
  cuda::DeviceBuffer<double> mass_, inverse_mass_;
  // Slots: waters then clusters, for positions and for velocities.
  cuda::DeviceBuffer<double> position_virial_, velocity_virial_;
  // failed_[0]: the last water SETTLE could not place, + 1; [1], [2]: the last cluster SHAKE,
  // RATTLE did not converge, + 1 (0: none).
  cuda::DeviceBuffer<int> failed_;
};

}  // namespace nbkit::md
