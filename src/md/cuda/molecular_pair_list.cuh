#pragma once
// The nonbonded pairs of a periodic biomolecular system on one GPU through a Verlet list
// (cuda/molecular_pair_list.cu): the GPU side of MolecularGpuForces for cutoff_periodic, PME
// and MSM. Atoms are binned into cells at least cutoff + skin wide and sorted by cell (CUB's
// stable radix sort, and below 2^18 atoms within a cell by 4 x 4 x 4 sub-cells in Morton order,
// so the order is the same every run); each sorted atom's row lists the atoms within cutoff +
// skin, excluded pairs left out (built a warp per 4 rows of an 8-atom group below 2^18 atoms,
// the group's box tested before its atoms, a lane a row above: the same rows;
// NBKIT_PAIR_LIST_BUILD=group|row|cell forces one); the list is rebuilt when an atom has moved
// more than half the skin since the last build (or the box changed), as NAMD's and OpenMM's
// are, decided on the device by a CUDA graph's conditional node (or by the host, which then
// waits for the check every step: NBKIT_PAIR_LIST_DEVICE_CHECK=0), a row longer than the list's
// capacity summed in full from the cells until the host grows the list. A thread per atom sums its row in order (each pair met from both ends, no atomics), so a
// force is the same bits every evaluation. Arithmetic: float64, or "mixed" as OpenMM's mixed
// precision: each pair's law in float32 on float32 positions (wrapped into the box), the sums of
// forces, energies and virial in float64. Excluded pairs' corrections (PME's erf, MSM's smoothed
// 1/r) are summed in float64 in either case.
// Internal to the CUDA build.
#include <cuda_runtime.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "md/bonded_law.hpp"  // Vector3
#include "nbkit/core/box.hpp"
#include "nbkit/md/molecular_forces.hpp"

namespace nbkit::md {

// Per-atom results (device arrays of n, in the topology's order, overwritten): the force, half of
// each pair's Lennard-Jones and Coulomb energy and virial, and the excluded pairs' corrections.
struct PairSums {
  Vector3<double>* force;
  double *lennard_jones, *coulomb, *virial, *excluded;
};

// Each atom's excluded partners (both directions, sorted): row i is partner[first[i] ..
// first[i + 1]). The pair list and the every-pair kernel (cuda/molecular_forces.cu) walk them.
struct ExcludedRows {
  std::vector<int> first, partner;
};
ExcludedRows excluded_rows(const Topology& topology);

// A switch of the GPU step from the environment (A/B runs, tests): unset or empty gives
// `otherwise`, 0 is off, 1 is on, anything else refused (nbkit::Error).
bool env_switch(const char* name, bool otherwise);

class MolecularPairListGpu {
 public:
  // `settings`: a periodic method (cutoff_periodic, pme, msm). `single`: mixed precision.
  MolecularPairListGpu(const Topology& topology, const NonbondedSettings& settings, bool single, double skin,
                       cudaStream_t stream);
  ~MolecularPairListGpu();
  MolecularPairListGpu(const MolecularPairListGpu&) = delete;
  MolecularPairListGpu& operator=(const MolecularPairListGpu&) = delete;

  // The list's check for the positions `x` (device, n, any image) in `box` started on a stream of
  // its own: the largest displacement since the build, read back to the host. Called once the
  // positions are final on the stream and before the work that does not need the list (bonded
  // terms, the mesh), so that the host's wait for that one word does not leave the GPU idle.
  void start_check(const Vector3<double>* x, const PeriodicBox& box);
  void forget_check();  // a started check that no evaluation follows (an error between them)
  // The positions packed in the last build's order ahead of evaluate (on the stream), so that
  // the host can queue more work on the stream before evaluate waits for the check; evaluate does
  // it itself where this was not called.
  void prepare(const Vector3<double>* x, const PeriodicBox& box);
  // The pairs of the positions `x` in `box`: rebuilds the list first where the check (started
  // here if start_check was not called) says so, then sums. On the stream. `energies`: each
  // atom's energies and virial too (out.lennard_jones, coulomb, virial, excluded); otherwise only
  // the forces are written, with the same bits (mixed precision; float64 sums them anyway).
  // Where corrects_apart(), the excluded pairs' corrections are left out of `out` (see correct).
  // `pairs_after`, where not null: the pair sums (not the list's check or build) wait for it.
  void evaluate(const Vector3<double>* x, const PeriodicBox& box, const PairSums& out, bool energies = true,
                cudaEvent_t pairs_after = nullptr);
  // Are the excluded pairs' corrections (PME's) computed apart from the pair sums, by `correct`?
  // (PME, unless NBKIT_CORRECTIONS_APART=0.)
  bool corrects_apart() const;
  // Those corrections for the positions `x` in `box`, on `stream` (any: they read the positions
  // alone): each atom's force into out.force and, with `energies` (float64: always), half its
  // virial into out.virial and its energy into out.excluded (n each, overwritten;
  // out.lennard_jones and out.coulomb unused). The caller adds them to the pair sums' force and
  // virial in that order (gather_forces), so the sums are the same bits as when evaluate adds them.
  void correct(const Vector3<double>* x, const PeriodicBox& box, const PairSums& out, bool energies,
               cudaStream_t stream);
  // Can the next evaluation be captured into a step's CUDA graph (replayed without the host)? Where
  // the device decides the rebuilds, the list exists for this box and need not grow. The graph
  // holds the list's buffers, cells and capacity: recapture it when configuration() changes.
  bool graph_ready(const PeriodicBox& box);
  std::uint64_t configuration() const;
  std::int64_t builds() const;
  void rebuild_next();  // the next evaluation builds the list afresh
  int capacity() const;  // the longest row the list holds
  // Benchmarks: the last evaluation's seconds in the list check and build, and in the pair sums
  // (waits for it). Events are recorded from the first call on.
  struct Seconds {
    double list, pairs;
  };
  Seconds phase_seconds();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace nbkit::md
