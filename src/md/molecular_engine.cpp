// The engine of biomolecular systems behind md::Simulation: velocity Verlet around
// molecular_forces (every term on the float64 reference or the CPU backend), with each atom's
// own mass. The cell list is rebuilt at every evaluation (no skin yet: a measured next step,
// docs/performance.md), and periodic atoms are wrapped into the box every step (the bonded
// terms take their atoms' nearest images, so a molecule may straddle the box's faces).
#include <fmt/format.h>

#include "md/engine.hpp"
#include "md/integrator.hpp"
#include "nbkit/core/error.hpp"

namespace nbkit::md {

namespace {

class MolecularEngine final : public Engine {
 public:
  MolecularEngine(System& system, const MolecularForceField& field, Backend backend, int threads)
      : system_(system),
        field_(field),
        backend_(backend),
        threads_(backend == Backend::reference ? 1 : resolve_threads(threads)),
        periodic_(field.nonbonded.method == NonbondedSettings::Method::cutoff_periodic) {
    if (system_.size() != field_.topology.size() || system_.atom_mass.size() != system_.size())
      throw Error("the system was not made from this topology (md::molecular_system makes it)");
    positions_.resize(system_.size());
    if (periodic_) wrap_into_box(system_);
    evaluate();
  }
  void step(double dt, bool, Langevin* thermostat) override {
    half_kick(system_, forces_, dt, threads_);
    drift(system_, dt, threads_);
    if (periodic_) wrap_into_box(system_);
    evaluate();
    if (thermostat) thermostat->apply(system_, forces_, dt);
    half_kick(system_, forces_, dt, threads_);
  }
  void apply_thermostat(Langevin& thermostat, double dt) override { thermostat.apply(system_, forces_, dt); }
  Thermo thermo(std::int64_t step) const override { return md::thermo(system_, forces_, step); }
  void sync_host() override {}
  void forces(Forces& out) const override { out = forces_; }
  std::int64_t builds() const override { return evaluations_; }
  std::string description() const override {
    return backend_ == Backend::reference ? "reference, 1 thread, float64"
                                          : fmt::format("CPU, {} thread{}, float64", threads_, threads_ == 1 ? "" : "s");
  }
  std::optional<EnergyTerms> energy_terms() const override { return terms_; }

 private:
  void evaluate() {
    for (std::size_t i = 0; i < system_.size(); ++i) positions_[i] = {system_.x[i], system_.y[i], system_.z[i]};
    const std::optional<PeriodicBox> box = periodic_ ? std::optional<PeriodicBox>(system_.box) : std::nullopt;
    const MolecularForces result = molecular_forces(field_.topology, positions_, box, field_.nonbonded, backend_, threads_);
    forces_.resize(system_.size());
    for (std::size_t i = 0; i < system_.size(); ++i)
      forces_.fx[i] = result.force[i].x, forces_.fy[i] = result.force[i].y, forces_.fz[i] = result.force[i].z;
    forces_.potential = result.energy.total();
    forces_.virial = result.virial;
    terms_ = result.energy;
    ++evaluations_;
  }

  System& system_;
  const MolecularForceField& field_;
  Backend backend_;
  int threads_;
  bool periodic_;
  std::vector<Vec3> positions_;
  Forces forces_;
  EnergyTerms terms_;
  std::int64_t evaluations_ = 0;
};

}  // namespace

std::unique_ptr<Engine> make_molecular_engine(System& system, const MolecularForceField& field, Backend backend,
                                              int threads) {
  return std::make_unique<MolecularEngine>(system, field, backend, threads);
}

}  // namespace nbkit::md
