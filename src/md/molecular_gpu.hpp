#pragma once
// The energy and forces of a biomolecular system on one GPU (src/md/cuda/molecular_forces.cu),
// float64, or mixed precision (the pairs' law in float32, every sum in float64: OpenMM's
// "mixed") for periodic systems: the topology uploaded once, positions each evaluation. What
// molecular_forces(..., Backend::cuda) and the molecular engine's cuda backend call. Every sum
// has a fixed order (each bonded term writes its atoms' forces to slots of its own, gathered
// per atom in a fixed order; each atom sums its nonbonded pairs itself; energies are reduced by
// fixed trees; PME's mesh is spread in fixed point: md/cuda/pme.cuh), so an evaluation is the
// same bits every time on the same GPU. Periodic systems find their pairs through a Verlet list
// built from cells on the GPU (cuda/molecular_pair_list.cuh; rebuilt when an atom has moved
// half the skin); without a box every pair is tested (a thread per atom, O(N^2): molecules in
// vacuum are small). Internal; no CUDA
// in this header (the state is opaque). Builds without CUDA throw from the constructor.
#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "md/bonded_law.hpp"  // Vector3
#include "nbkit/md/molecular_forces.hpp"

struct CUstream_st;  // cudaStream_t, without the CUDA headers

namespace nbkit::md {

class MolecularGpuForces {
 public:
  // `single`: mixed precision (periodic settings only). `skin`: the pair list's (A; 0 rebuilds it
  // every evaluation, as one `nbkit energy` needs).
  MolecularGpuForces(const Topology& topology, const NonbondedSettings& settings, int device, bool single = false,
                     double skin = 0);
  ~MolecularGpuForces();
  MolecularGpuForces(const MolecularGpuForces&) = delete;
  MolecularGpuForces& operator=(const MolecularGpuForces&) = delete;

  // `box`: the periodic box (cutoff_periodic; checked by the caller).
  MolecularForces evaluate(const std::vector<Vec3>& positions, const std::optional<PeriodicBox>& box);

  // The device-resident step's side (MolecularGpuDynamics): an evaluation of the positions
  // already on the device (positions()), the forces left there (forces()) and every sum kept
  // there until device_sums() reads them back (the energies and virial, no forces; waits). Not
  // MSM's (resident() false: its grids run on the host). Without `energies` only the forces are
  // made (the same bits) and device_sums() keeps the last evaluation's that had them.
  bool resident() const;
  void evaluate_on_device(const std::optional<PeriodicBox>& box, bool energies = true);
  MolecularForces device_sums();
  Vector3<double>* positions();             // device, n
  Vector3<double>* forces();                // device, n
  CUstream_st* stream() const;              // the stream every evaluation runs on
  // The lowest atom whose force was not finite in an evaluation since the last call (-1: none);
  // waits for the stream.
  int first_nonfinite_force();
  std::string description() const;  // "NVIDIA H100 80GB HBM3, float64, pair list"
  std::int64_t list_builds() const;
  // The next evaluation builds the pair list afresh (checkpoints: as a restarted run does).
  void rebuild_next();
  // Can the next evaluate_on_device be captured into a step's CUDA graph and replayed (the pair
  // list's rebuilds decided on the device, the list and PME's mesh made for this box, phases not
  // timed)? A graph holds the list's and the mesh's buffers: recapture when graph_configuration()
  // changes.
  bool graph_ready(const std::optional<PeriodicBox>& box);
  std::uint64_t graph_configuration() const;

  // Benchmarks: each evaluation's phases timed by events from now on; the last one's seconds
  // (waits for it). mesh_phases: PME's spread, forward FFT, convolution, inverse FFT, gather.
  struct Phases {
    double upload = 0, bonded = 0, list = 0, pairs = 0, mesh = 0, finish = 0, download = 0, total = 0;
    std::array<double, 5> mesh_phases{};
  };
  void time_phases();
  Phases phase_seconds() const;

 private:
  struct State;
  static void launch(State& s, const std::optional<PeriodicBox>& box, bool energies);
  static void launch_after_check(State& s, const std::optional<PeriodicBox>& box, bool energies);
  static void finish_sums(State& s, MolecularForces& result, bool mark);
  std::unique_ptr<State> state_;
};

}  // namespace nbkit::md
