// The host engines behind md::Simulation (the float64 reference over every periodic image,
// and the neighbour-list CPU engine) and the adapter to the GPU engine (engine_cuda.cu).
#include <fmt/format.h>

#include "md/engine.hpp"
#include "md/integrator.hpp"
#include "nbkit/core/backend.hpp"

namespace nbkit::md {

namespace {

// Every pair over every image within the cutoff, one thread, float64: slow (N^2 per step) and
// exact, for small systems and as the oracle the other engines are tested against. Atoms are
// wrapped into the box every step (the forces do not depend on it).
class ReferenceEngine final : public Engine {
 public:
  ReferenceEngine(System& system, const ForceField& field) : system_(system), field_(field) {
    forces_reference(system_, field_, forces_);
  }
  void step(double dt, bool, Langevin* thermostat) override {
    half_kick(system_, forces_, dt, 1);
    drift(system_, dt, 1);
    wrap_into_box(system_);
    forces_reference(system_, field_, forces_);
    if (thermostat) thermostat->apply(system_, forces_, dt);
    half_kick(system_, forces_, dt, 1);
  }
  void apply_thermostat(Langevin& thermostat, double dt) override { thermostat.apply(system_, forces_, dt); }
  Thermo thermo(std::int64_t step) const override { return md::thermo(system_, forces_, step); }
  void sync_host() override {}
  void forces(Forces& out) const override { out = forces_; }
  std::int64_t builds() const override { return 0; }
  std::string description() const override { return "reference, 1 thread, float64"; }

 private:
  System& system_;
  const ForceField& field_;
  Forces forces_;
};

// The neighbour list with a skin, rebuilt when an atom has moved half of it, forces on all
// cores with SIMD rows where the box allows (forces_cpu).
class CpuEngine final : public Engine {
 public:
  CpuEngine(System& system, const ForceField& field, double skin, int threads)
      : system_(system), field_(field), list_(field.reach(), skin), threads_(resolve_threads(threads)) {
    wrap_into_box(system_);
    list_.build(system_, field_);
    forces_cpu(system_, field_, list_, forces_, threads_);
  }
  void step(double dt, bool, Langevin* thermostat) override {
    verlet_step(system_, forces_, field_, list_, dt, threads_, thermostat);
  }
  void apply_thermostat(Langevin& thermostat, double dt) override { thermostat.apply(system_, forces_, dt); }
  Thermo thermo(std::int64_t step) const override { return md::thermo(system_, forces_, step); }
  void sync_host() override {}
  void forces(Forces& out) const override { out = forces_; }
  std::int64_t builds() const override { return list_.builds(); }
  std::string description() const override {
    return fmt::format("CPU, {} thread{}, float64", threads_, threads_ == 1 ? "" : "s");
  }

 private:
  System& system_;
  const ForceField& field_;
  NeighborList list_;
  int threads_;
  Forces forces_;
};

class GpuAdapter final : public Engine {
 public:
  GpuAdapter(System& system, const ForceField& field, double skin, const GpuEngine::Options& options)
      : system_(system), engine_((wrap_into_box(system), system), field, skin, options) {}
  void step(double dt, bool energies, Langevin* thermostat) override { engine_.step(dt, energies, thermostat); }
  void apply_thermostat(Langevin& thermostat, double dt) override { engine_.apply_thermostat(thermostat, dt); }
  Thermo thermo(std::int64_t step) const override { return engine_.thermo(step); }
  void sync_host() override { engine_.download(system_); }
  void forces(Forces& out) const override { engine_.forces(out); }
  std::int64_t builds() const override { return engine_.builds(); }
  std::string description() const override { return "GPU: " + engine_.description(); }

 private:
  System& system_;
  GpuEngine engine_;
};

}  // namespace

std::unique_ptr<Engine> make_reference_engine(System& system, const ForceField& field) {
  return std::make_unique<ReferenceEngine>(system, field);
}
std::unique_ptr<Engine> make_cpu_engine(System& system, const ForceField& field, double skin, int threads) {
  return std::make_unique<CpuEngine>(system, field, skin, threads);
}
std::unique_ptr<Engine> make_gpu_engine(System& system, const ForceField& field, double skin,
                                        const GpuEngine::Options& options) {
  return std::make_unique<GpuAdapter>(system, field, skin, options);
}

}  // namespace nbkit::md
