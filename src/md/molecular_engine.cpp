// The engine of biomolecular systems behind md::Simulation: velocity Verlet with each atom's own
// mass around the energy and forces of MolecularCpuForces (the float64 reference, or the CPU's
// cell list with a skin, rebuilt when an atom has moved half of it) or MolecularGpuForces (one
// GPU, a pair list with the same skin: the topology stays on the device, positions go up and
// forces come back each step; the whole step on the GPU is issue 19's). Periodic atoms are wrapped into the box every step (the
// bonded terms take their atoms' nearest images, so a molecule may straddle the box's faces).
#include <fmt/format.h>

#include <cmath>

#include "md/engine.hpp"
#include "md/integrator.hpp"
#include "md/molecular_cpu.hpp"
#include "md/molecular_gpu.hpp"
#include "nbkit/core/error.hpp"

namespace nbkit::md {

namespace {

class MolecularEngine final : public Engine {
 public:
  MolecularEngine(System& system, const MolecularForceField& field, Backend backend, int threads, int gpu,
                  double skin, bool single)
      : system_(system),
        field_(field),
        backend_(backend),
        threads_(backend == Backend::reference ? 1 : resolve_threads(threads)),
        periodic_(field.nonbonded.periodic()) {
    if (system_.size() != field_.topology.size() || system_.atom_mass.size() != system_.size())
      throw Error("the system was not made from this topology (md::molecular_system makes it)");
    positions_.resize(system_.size());
    copy_positions();
    check_molecular_inputs(field_.topology, positions_, box(), field_.nonbonded);
    if (backend == Backend::cuda)
      gpu_ = std::make_unique<MolecularGpuForces>(field_.topology, field_.nonbonded, gpu, single, skin);
    else
      cpu_ = std::make_unique<MolecularCpuForces>(field_.topology, field_.nonbonded, backend, threads_, skin);
    if (periodic_) wrap_into_box(system_);
    evaluate();
  }
  void step(double dt, bool, Langevin* thermostat) override {
    half_kick(system_, forces_, dt, threads_);
    drift(system_, dt, threads_);
    // Atoms wrapped into the box where the CPU's cell list is rebuilt anyway, so that a wrap never
    // forces a rebuild; every step on the GPU, whose list measures moves by the minimum image.
    if (periodic_) {
      copy_positions();
      if (!cpu_ || cpu_->needs_rebuild(positions_, box())) wrap_into_box(system_);
    }
    evaluate();
    if (thermostat) thermostat->apply(system_, forces_, dt);
    half_kick(system_, forces_, dt, threads_);
  }
  void apply_thermostat(Langevin& thermostat, double dt) override { thermostat.apply(system_, forces_, dt); }
  Thermo thermo(std::int64_t step) const override { return md::thermo(system_, forces_, step); }
  void sync_host() override {}
  void forces(Forces& out) const override { out = forces_; }
  std::int64_t builds() const override { return cpu_ ? cpu_->builds() : gpu_->list_builds(); }
  std::string description() const override {
    if (gpu_) return "GPU: " + gpu_->description();
    return backend_ == Backend::reference ? "reference, 1 thread, float64"
                                          : fmt::format("CPU, {} thread{}, float64", threads_, threads_ == 1 ? "" : "s");
  }
  std::optional<EnergyTerms> energy_terms() const override { return terms_; }
  void rebuild_at_next_evaluation() override {
    if (cpu_) cpu_->rebuild_next();
    if (gpu_) gpu_->rebuild_next();
  }
  void set_forces(const Forces& f, const std::optional<EnergyTerms>& terms) override {
    forces_ = f;
    if (terms) terms_ = *terms;
  }
  void reevaluate() override {
    if (periodic_) {  // as step() wraps: where the CPU's list is rebuilt anyway, always on the GPU
      copy_positions();
      if (!cpu_ || cpu_->needs_rebuild(positions_, box())) wrap_into_box(system_);
    }
    evaluate();
  }

 private:
  void copy_positions() {
    for (std::size_t i = 0; i < system_.size(); ++i) positions_[i] = {system_.x[i], system_.y[i], system_.z[i]};
  }
  std::optional<PeriodicBox> box() const {
    return periodic_ ? std::optional<PeriodicBox>(system_.box) : std::nullopt;
  }
  void evaluate() {
    copy_positions();
    const MolecularForces result = gpu_ ? checked(gpu_->evaluate(positions_, box())) : cpu_->evaluate(positions_, box());
    forces_.resize(system_.size());
    for (std::size_t i = 0; i < system_.size(); ++i)
      forces_.fx[i] = result.force[i].x, forces_.fy[i] = result.force[i].y, forces_.fz[i] = result.force[i].z;
    forces_.potential = result.energy.total();
    forces_.virial = result.virial;
    terms_ = result.energy;
  }

  System& system_;
  const MolecularForceField& field_;
  Backend backend_;
  int threads_;
  bool periodic_;
  std::vector<Vec3> positions_;
  Forces forces_;
  EnergyTerms terms_;
  std::unique_ptr<MolecularGpuForces> gpu_;
  std::unique_ptr<MolecularCpuForces> cpu_;

  // The GPU's forces, checked finite as molecular_forces checks the host's.
  static MolecularForces checked(MolecularForces f) {
    for (std::size_t i = 0; i < f.force.size(); ++i)
      if (!std::isfinite(f.force[i].x + f.force[i].y + f.force[i].z))
        throw Error(fmt::format("the force on atom {} is not finite: do two atoms overlap?", i + 1));
    if (!std::isfinite(f.energy.total())) throw Error("the energy is not finite: do two atoms overlap?");
    return f;
  }
};

}  // namespace

std::unique_ptr<Engine> make_molecular_engine(System& system, const MolecularForceField& field, Backend backend,
                                              int threads, int gpu, double skin, bool single) {
  return std::make_unique<MolecularEngine>(system, field, backend, threads, gpu, skin, single);
}

}  // namespace nbkit::md
