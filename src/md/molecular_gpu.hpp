#pragma once
// The energy and forces of a biomolecular system on one GPU (src/md/cuda/molecular_forces.cu),
// float64 throughout: the topology uploaded once, positions each evaluation. What
// molecular_forces(..., Backend::cuda) and the molecular engine's cuda backend call. Every sum
// has a fixed order (each bonded term writes its atoms' forces to slots of its own, gathered
// per atom in a fixed order; each atom sums its nonbonded pairs itself; energies are reduced by
// fixed trees; PME's mesh is spread in fixed point: md/cuda/pme.cuh), so an evaluation is the
// same bits every time on the same GPU. The nonbonded pairs are found by testing every pair (a
// thread per atom): O(N^2), for the correctness of the GPU path first; the cell list of the
// Lennard-Jones engine is the next step. Internal; no CUDA
// in this header (the state is opaque). Builds without CUDA throw from the constructor.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "nbkit/md/molecular_forces.hpp"

namespace nbkit::md {

class MolecularGpuForces {
 public:
  MolecularGpuForces(const Topology& topology, const NonbondedSettings& settings, int device);
  ~MolecularGpuForces();
  MolecularGpuForces(const MolecularGpuForces&) = delete;
  MolecularGpuForces& operator=(const MolecularGpuForces&) = delete;

  // `box`: the periodic box (cutoff_periodic; checked by the caller).
  MolecularForces evaluate(const std::vector<Vec3>& positions, const std::optional<PeriodicBox>& box);
  std::string description() const;  // "NVIDIA H100 80GB HBM3, float64"

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace nbkit::md
