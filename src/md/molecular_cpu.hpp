#pragma once
// The host's evaluation of a biomolecular system's energy and forces (molecular_forces.cpp),
// kept from evaluation to evaluation by the molecular engine: the reference (every pair, one
// thread) or the CPU (a cell list with a skin, rebuilt when an atom has moved half of it, on
// `threads` threads). molecular_forces() builds one with no skin for a single evaluation.
// Internal.
#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "nbkit/md.hpp"
#include "md/bonded_law.hpp"
#include "md/dispersion_correction.hpp"
#include "nbkit/md/molecular_forces.hpp"

namespace nbkit::md {

class PmeCpu;
class MsmCpu;

// molecular_forces' checks of its inputs (the topology, the positions, the box, the settings).
void check_molecular_inputs(const Topology& topology, const std::vector<Vec3>& positions,
                            const std::optional<PeriodicBox>& box, const NonbondedSettings& settings);

class MolecularCpuForces {
 public:
  // `topology` must outlive this.
  MolecularCpuForces(const Topology& topology, const NonbondedSettings& settings, Backend backend, int threads,
                     double skin);
  ~MolecularCpuForces();
  // The inputs as molecular_forces checks them (the caller checks: this runs every step).
  MolecularForces evaluate(const std::vector<Vec3>& positions, const std::optional<PeriodicBox>& box);
  std::int64_t builds() const { return builds_; }
  // Whether the next evaluation at these positions rebuilds the cell list (the engine wraps
  // atoms into the box then, and only then: a wrapped atom jumps a box length).
  bool needs_rebuild(const std::vector<Vec3>& positions, const std::optional<PeriodicBox>& box);
  int threads() const { return threads_; }
  // The next evaluation builds the cell list afresh (checkpoints: as a restarted run does).
  void rebuild_next() { list_.reset(); }

 private:
  const NeighborList& list_for(const std::vector<Vec3>& positions, const std::optional<PeriodicBox>& box);
  double skin_for(const std::optional<PeriodicBox>& box) const;
  // PME's terms beyond the pairs (the mesh, self, excluded pairs' erf part, background) into
  // `f`, the energy's coulomb_reciprocal and the virial; the mesh planned at the first call's box.
  void add_pme_terms(const std::vector<Vec3>& positions, const PeriodicBox& box, std::vector<Vector3<double>>& f,
                     EnergyTerms& e, double& virial);
  // MSM's terms beyond the pairs (the grids, self, excluded pairs' g_a), the same way.
  void add_msm_terms(const std::vector<Vec3>& positions, const PeriodicBox& box, std::vector<Vector3<double>>& f,
                     EnergyTerms& e, double& virial);

  const Topology& t_;
  NonbondedSettings s_;
  Backend backend_;
  int threads_;
  double skin_;
  System atoms_;        // the positions as the list reads them
  ForceField reach_;    // the cutoff and the exclusions, as the list reads them
  std::unique_ptr<NeighborList> list_;
  std::unique_ptr<PmeCpu> pme_;
  DispersionCorrection dispersion_;  // its coefficients, of the topology's type counts
  std::array<int, 3> pme_mesh_{};  // the mesh pme_ was made for
  std::unique_ptr<MsmCpu> msm_;
  PeriodicBox msm_box_;
  std::int64_t builds_ = 0;
};

}  // namespace nbkit::md
