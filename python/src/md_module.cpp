// MD for Python: the library's md::Simulation built from the same TOML the command line reads
// (a file, or its text from a dict), with positions, velocities, forces and the box as numpy
// arrays, step(n), per-term energies, and reporters as Python callables
// (python/nbkit/md.py holds the public signatures and docstrings).
#include <pybind11/functional.h>
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <filesystem>
#include <memory>

#include "arrays.hpp"
#include "interrupt.hpp"
#include "modules.hpp"
#include "nbkit/core/error.hpp"
#include "nbkit/io/checkpoint.hpp"
#include "nbkit/io/md_config.hpp"
#include "nbkit/md/simulation.hpp"

namespace nbkit::python {

namespace {

py::dict thermo_dict(const md::Thermo& t, const std::optional<md::EnergyTerms>& terms) {
  py::dict d;
  d["step"] = t.step, d["temperature"] = t.temperature, d["potential"] = t.potential;
  d["kinetic"] = t.kinetic, d["total"] = t.total, d["pressure"] = t.pressure;
  if (terms)
    for (const auto& [name, value] : terms->named()) d[py::str(name)] = value;
  return d;
}

class PyMdSimulation {
 public:
  // `text`: the TOML; `source` names it in messages; `base`: the folder its relative paths start from.
  PyMdSimulation(const std::string& text, const std::string& source, const std::string& base, py::dict kwargs) {
    Options o(std::move(kwargs), "Simulation");
    md::SimulationOptions options;
    options.backend = parse_backend(o.get<std::string>("backend", "auto"));
    const std::string precision = o.get<std::string>("precision", "");
    if (!precision.empty()) options.precision = parse_precision(precision);
    options.threads = resolve_threads(o.get<int>("threads", 0));
    options.gpus = read_gpus(o.take("gpus"));
    options.time_phases = o.get<bool>("time_phases", false);
    o.finish();
    io::MdConfig config;
    {
      py::gil_scoped_release release;
      config = io::parse_md_config(text, source, base);
    }
    options.skin = config.skin;
    steps_ = config.steps, thermo_every_ = config.thermo_every, timestep_ = config.timestep;
    const md::Integrator integrator = io::integrator_of(config);
    py::gil_scoped_release release;
    if (config.molecular)
      simulation_ = std::make_unique<md::Simulation>(std::move(config.system), std::move(*config.molecular), integrator,
                                                     options);
    else
      simulation_ = std::make_unique<md::Simulation>(std::move(config.system), config.field, integrator, options);
  }

  md::RunSummary step(std::int64_t steps, std::int64_t thermo_every, const py::object& thermo,
                      std::int64_t frame_every, const py::object& frame, const py::object& progress) {
    if (steps < 0) throw py::value_error("steps: must not be negative");
    if (thermo_every < 0 || frame_every < 0) throw py::value_error("thermo_every, frame_every: must not be negative");
    md::Reporters r;
    md::Simulation& s = *simulation_;
    if (!thermo.is_none()) {
      r.thermo_every = thermo_every > 0 ? thermo_every : thermo_every_;
      r.thermo = [&thermo, &s](const md::Thermo& t) {
        py::gil_scoped_acquire gil;
        thermo(thermo_dict(t, s.energy_terms()));
      };
    }
    if (!frame.is_none()) {
      if (frame_every == 0) throw py::value_error("frame: give frame_every too (steps between frames)");
      r.frame_every = frame_every;
      r.frame = [&frame](const md::System& system, std::int64_t step) {
        py::gil_scoped_acquire gil;
        frame(step, xyz_array(system.x, system.y, system.z),
              py::make_tuple(system.box.length(0), system.box.length(1), system.box.length(2)));
      };
    }
    r.progress = progress_hook(progress, "md");
    md::RunSummary summary;
    InterruptScope interrupt;
    {
      py::gil_scoped_release release;
      summary = s.run(steps, r);
    }
    interrupt.raise_if_requested();
    return summary;
  }

  py::dict minimize(double tolerance, std::int64_t max_iterations, const py::object& progress) {
    md::MinimizeOptions options;
    if (tolerance > 0) options.tolerance = tolerance;
    options.max_iterations = max_iterations;
    options.progress = progress_hook(progress, "minimize");
    md::MinimizeResult m;
    InterruptScope interrupt;
    {
      py::gil_scoped_release release;
      m = simulation_->minimize(options);
    }
    interrupt.raise_if_requested();
    py::dict d;
    d["initial_energy"] = m.initial_energy, d["final_energy"] = m.final_energy;
    d["initial_max_force"] = m.initial_max_force, d["final_max_force"] = m.final_max_force;
    d["iterations"] = m.iterations, d["evaluations"] = m.evaluations, d["converged"] = m.converged;
    d["seconds"] = m.seconds;
    return d;
  }

  const md::System& state() {
    py::gil_scoped_release release;
    return simulation_->state();
  }
  py::array_t<double> positions() { const auto& s = state(); return xyz_array(s.x, s.y, s.z); }
  py::array_t<double> velocities() { const auto& s = state(); return xyz_array(s.vx, s.vy, s.vz); }
  py::array_t<double> forces() const {
    md::Forces f;
    simulation_->forces(f);
    return xyz_array(f.fx, f.fy, f.fz);
  }
  py::tuple box() { const auto& s = state(); return py::make_tuple(s.box.length(0), s.box.length(1), s.box.length(2)); }
  py::array_t<double> masses() {
    const auto& s = state();
    std::vector<double> m(s.size());
    for (std::size_t i = 0; i < m.size(); ++i) m[i] = s.mass(i);
    return column_array(m);
  }
  py::dict thermo() const { return thermo_dict(simulation_->thermo(), simulation_->energy_terms()); }
  py::object energies() const {
    const auto terms = simulation_->energy_terms();
    if (!terms) return py::none();
    py::dict d;
    for (const auto& [name, value] : terms->named()) d[py::str(name)] = value;
    d["total"] = terms->total();
    return d;
  }
  py::object phases() const {
    const auto p = simulation_->step_phases();
    if (!p) return py::none();
    py::dict d;
    d["steps"] = p->steps, d["evaluations"] = p->evaluations, d["integrate"] = p->integrate;
    d["constraints"] = p->constraints, d["forces"] = p->forces, d["barostat"] = p->barostat;
    d["gpu_upload"] = p->upload, d["gpu_bonded"] = p->bonded, d["gpu_list"] = p->list, d["gpu_pairs"] = p->pairs;
    d["gpu_mesh"] = p->mesh, d["gpu_finish"] = p->finish, d["gpu_download"] = p->download;
    return d;
  }
  void checkpoint(const std::string& path) {
    py::gil_scoped_release release;
    io::write_checkpoint(path, simulation_->checkpoint());
  }
  void restore(const std::string& path) {
    py::gil_scoped_release release;
    simulation_->restore(io::read_checkpoint(path));
  }
  md::Simulation& simulation() { return *simulation_; }
  std::int64_t steps() const { return steps_; }
  std::int64_t thermo_every() const { return thermo_every_; }
  double timestep() const { return timestep_; }

 private:
  std::unique_ptr<md::Simulation> simulation_;
  std::int64_t steps_ = 0, thermo_every_ = 0;
  double timestep_ = 0;
};

}  // namespace

void add_md(py::module_& m) {
  py::class_<md::RunSummary>(m, "_MdRunSummary")
      .def_readonly("atoms", &md::RunSummary::atoms)
      .def_readonly("steps", &md::RunSummary::steps)
      .def_readonly("seconds", &md::RunSummary::seconds)
      .def_property_readonly("atom_steps_per_second", &md::RunSummary::atom_steps_per_second);
  py::class_<PyMdSimulation>(m, "_MdSimulation")
      .def(py::init<const std::string&, const std::string&, const std::string&, py::dict>(), py::arg("text"),
           py::arg("source"), py::arg("base"), py::arg("options"))
      .def("step", &PyMdSimulation::step, py::arg("steps"), py::arg("thermo_every"), py::arg("thermo"),
           py::arg("frame_every"), py::arg("frame"), py::arg("progress"))
      .def("minimize", &PyMdSimulation::minimize, py::arg("tolerance"), py::arg("max_iterations"), py::arg("progress"))
      .def_property_readonly("positions", &PyMdSimulation::positions)
      .def_property_readonly("velocities", &PyMdSimulation::velocities)
      .def_property_readonly("forces", &PyMdSimulation::forces)
      .def_property_readonly("box", &PyMdSimulation::box)
      .def_property_readonly("masses", &PyMdSimulation::masses)
      .def_property_readonly("thermo", &PyMdSimulation::thermo)
      .def_property_readonly("energies", &PyMdSimulation::energies)
      .def_property_readonly("phases", &PyMdSimulation::phases)
      .def_property_readonly("step_count", [](PyMdSimulation& s) { return s.simulation().step_count(); })
      .def_property_readonly("backend", [](PyMdSimulation& s) { return to_string(s.simulation().backend()); })
      .def_property_readonly("description", [](PyMdSimulation& s) { return s.simulation().description(); })
      .def_property_readonly("notice", [](PyMdSimulation& s) { return s.simulation().notice(); })
      .def_property_readonly("list_builds", [](PyMdSimulation& s) { return s.simulation().list_builds(); })
      .def_property_readonly("constraint_count", [](PyMdSimulation& s) { return s.simulation().constraint_count(); })
      .def_property_readonly("largest_constraint_deviation",
                             [](PyMdSimulation& s) { return s.simulation().largest_constraint_deviation(); })
      .def_property_readonly("steps", &PyMdSimulation::steps)
      .def_property_readonly("thermo_every", &PyMdSimulation::thermo_every)
      .def_property_readonly("timestep", &PyMdSimulation::timestep)
      .def("checkpoint", &PyMdSimulation::checkpoint, py::arg("path"))
      .def("restore", &PyMdSimulation::restore, py::arg("path"));
}

}  // namespace nbkit::python
