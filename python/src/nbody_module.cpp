// N-body for Python: the force engine (accelerations and potentials of numpy bodies), Plummer
// spheres, and the leapfrog simulation with its diagnostics as numpy arrays
// (python/nbkit/nbody.py holds the public signatures and docstrings).
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <memory>
#include <optional>

#include "arrays.hpp"
#include "interrupt.hpp"
#include "modules.hpp"
#include "nbkit/core/error.hpp"
#include "nbkit/nbody.hpp"
#include "nbkit/nbody/simulation.hpp"

namespace nbkit::python {

namespace {

using nbody::Bodies;

nbody::ForceOptions force_options(Options& o) {
  nbody::ForceOptions f;
  f.softening = o.get<double>("softening", 0.01);
  f.backend = parse_backend(o.get<std::string>("backend", "auto"));
  f.precision = parse_precision(o.get<std::string>("precision", "single"));
  f.threads = resolve_threads(o.get<int>("threads", 0));
  f.gpus = read_gpus(o.take("gpus"));
  f.method = nbody::parse_gravity_method(o.get<std::string>("method", "all-pairs"));
  f.tree.theta = o.get<double>("theta", 0.5);
  const std::string multipole = o.get<std::string>("multipole", "quadrupole");
  if (multipole != "quadrupole" && multipole != "monopole")
    throw py::value_error("multipole: 'quadrupole' or 'monopole', got '" + multipole + "'");
  f.tree.quadrupole = multipole == "quadrupole";
  return f;
}

Bodies bodies_from(const py::handle& positions, const py::handle& velocities, const py::handle& masses) {
  Bodies b;
  read_xyz(positions, "positions", b.x, b.y, b.z);
  const auto n = static_cast<std::ptrdiff_t>(b.x.size());
  if (velocities.is_none()) b.vx.assign(b.x.size(), 0.0), b.vy = b.vx, b.vz = b.vx;
  else read_xyz(velocities, "velocities", b.vx, b.vy, b.vz);
  if (static_cast<std::ptrdiff_t>(b.vx.size()) != n) throw py::value_error("velocities: expected the shape of positions");
  b.mass = read_column(masses, "masses", n);
  return b;
}

py::dict bodies_dict(const Bodies& b) {
  py::dict d;
  d["positions"] = xyz_array(b.x, b.y, b.z);
  d["velocities"] = xyz_array(b.vx, b.vy, b.vz);
  d["masses"] = column_array(b.mass);
  return d;
}

// The engine keeps its backend's resources (GPU buffers) from call to call.
class PyForceEngine {
 public:
  explicit PyForceEngine(py::dict kwargs) {
    Options o(std::move(kwargs), "ForceEngine");
    nbody::ForceOptions f = force_options(o);
    o.finish();
    engine_ = std::make_unique<nbody::ForceEngine>(f);
  }
  py::tuple compute(const py::handle& positions, const py::handle& masses, bool potential) {
    Bodies b;
    read_xyz(positions, "positions", b.x, b.y, b.z);
    b.mass = read_column(masses, "masses", static_cast<std::ptrdiff_t>(b.x.size()));
    b.vx.assign(b.x.size(), 0.0), b.vy = b.vx, b.vz = b.vx;
    nbody::Accelerations acc;
    {
      py::gil_scoped_release release;
      engine_->compute(b, acc, potential);
    }
    return py::make_tuple(xyz_array(acc.ax, acc.ay, acc.az),
                          potential && acc.has_potential ? py::object(column_array(acc.potential)) : py::object(py::none()));
  }
  // GPU arrays in (positions (n, 3), masses (n,)), GPU arrays out (made by allocate(shape) on
  // the inputs' device): nothing but the checks' flags crosses to the host.
  py::tuple compute_on_device(const py::handle& positions, const py::handle& masses, bool potential,
                              const py::object& allocate) {
    const CudaArray x = cuda_array(positions, "positions"), m = cuda_array(masses, "masses");
    if (x.shape.size() != 2 || x.shape[1] != 3) throw py::value_error("positions: expected shape (n, 3)");
    if (m.shape.size() != 1 || m.shape[0] != x.shape[0])
      throw py::value_error("masses: expected shape (" + std::to_string(x.shape[0]) + ",), one value a body");
    if (x.shape[0] > 0 && m.device != x.device) throw py::value_error("positions and masses: on different GPUs");
    const py::ssize_t n = x.shape[0];
    py::object acc = allocate(py::make_tuple(n, 3));
    py::object phi = potential ? allocate(py::make_tuple(n)) : py::object(py::none());
    const CudaArray a = cuda_array(acc, "accelerations");
    nbody::DeviceBodies b;
    b.device = x.device, b.n = n;
    b.positions = x.data, b.positions_float64 = x.float64;
    b.position_strides[0] = x.strides[0], b.position_strides[1] = x.strides[1];
    b.masses = m.data, b.masses_float64 = m.float64, b.mass_stride = m.strides[0];
    b.accelerations = static_cast<double*>(a.data);
    b.potentials = potential ? static_cast<double*>(cuda_array(phi, "potentials").data) : nullptr;
    {
      py::gil_scoped_release release;
      engine_->compute_on_device(b);
    }
    return py::make_tuple(acc, phi);
  }
  std::string backend() const { return to_string(engine_->backend()); }
  std::string description() const { return engine_->description(); }
  std::string notice() const { return engine_->notice(); }

 private:
  std::unique_ptr<nbody::ForceEngine> engine_;
};

class PySimulation {
 public:
  PySimulation(const py::handle& positions, const py::handle& velocities, const py::handle& masses, double dt,
               py::dict kwargs) {
    Options o(std::move(kwargs), "Simulation");
    nbody::ForceOptions f = force_options(o);
    o.finish();
    simulation_ = std::make_unique<nbody::Simulation>(bodies_from(positions, velocities, masses), dt, f);
  }
  // Steps to `steps` more; the diagnostics rows (every `every` steps, and at the first and last).
  py::dict run(std::int64_t steps, std::int64_t every, const py::object& progress) {
    if (steps < 0) throw py::value_error("steps: must not be negative");
    if (every < 1) throw py::value_error("diagnostics_every: must be at least 1");
    std::vector<double> time, kinetic, potential, total, virial, step;
    std::vector<double> px, py_, pz, lx, ly, lz;
    nbody::Reporters r;
    r.diagnostics_every = every;
    r.diagnostics = [&](const nbody::Diagnostics& d, std::int64_t s) {
      step.push_back(static_cast<double>(s)), time.push_back(d.time), kinetic.push_back(d.kinetic);
      potential.push_back(d.potential), total.push_back(d.total), virial.push_back(d.virial_ratio);
      px.push_back(d.momentum[0]), py_.push_back(d.momentum[1]), pz.push_back(d.momentum[2]);
      lx.push_back(d.angular_momentum[0]), ly.push_back(d.angular_momentum[1]), lz.push_back(d.angular_momentum[2]);
    };
    r.progress = progress_hook(progress, "nbody");
    nbody::RunSummary summary;
    {
      InterruptScope interrupt;
      {
        py::gil_scoped_release release;
        summary = simulation_->run_to(simulation_->step() + steps, r);
      }
      interrupt.raise_if_requested();
    }
    py::dict out;
    std::vector<std::int64_t> steps_int(step.begin(), step.end());
    out["step"] = py::array_t<std::int64_t>(static_cast<py::ssize_t>(steps_int.size()), steps_int.data());
    out["time"] = column_array(time), out["kinetic"] = column_array(kinetic);
    out["potential"] = column_array(potential), out["total"] = column_array(total);
    out["virial_ratio"] = column_array(virial);
    out["momentum"] = xyz_array(px, py_, pz), out["angular_momentum"] = xyz_array(lx, ly, lz);
    out["seconds"] = summary.seconds, out["interactions_per_second"] = summary.interactions_per_second();
    out["bodies_per_second"] = summary.bodies_per_second();
    return out;
  }
  py::dict bodies() const { return bodies_dict(simulation_->bodies()); }
  std::int64_t step() const { return simulation_->step(); }
  double dt() const { return simulation_->dt(); }
  double initial_energy() const { return simulation_->initial_energy(); }
  double largest_energy_error() const { return simulation_->largest_energy_error(); }
  std::string description() const { return simulation_->forces().description(); }

 private:
  std::unique_ptr<nbody::Simulation> simulation_;
};

}  // namespace

void add_nbody(py::module_& m) {
  py::class_<PyForceEngine>(m, "_ForceEngine")
      .def(py::init<py::dict>(), py::arg("options"))
      .def("compute", &PyForceEngine::compute, py::arg("positions"), py::arg("masses"), py::arg("potential") = true)
      .def("compute_on_device", &PyForceEngine::compute_on_device, py::arg("positions"), py::arg("masses"),
           py::arg("potential"), py::arg("allocate"))
      .def_property_readonly("backend", &PyForceEngine::backend)
      .def_property_readonly("description", &PyForceEngine::description)
      .def_property_readonly("notice", &PyForceEngine::notice);
  py::class_<PySimulation>(m, "_NbodySimulation")
      .def(py::init<const py::handle&, const py::handle&, const py::handle&, double, py::dict>(), py::arg("positions"),
           py::arg("velocities"), py::arg("masses"), py::arg("dt"), py::arg("options"))
      .def("run", &PySimulation::run, py::arg("steps"), py::arg("diagnostics_every"), py::arg("progress"))
      .def_property_readonly("bodies", &PySimulation::bodies)
      .def_property_readonly("step", &PySimulation::step)
      .def_property_readonly("dt", &PySimulation::dt)
      .def_property_readonly("initial_energy", &PySimulation::initial_energy)
      .def_property_readonly("largest_energy_error", &PySimulation::largest_energy_error)
      .def_property_readonly("description", &PySimulation::description);
  m.def(
      "_plummer", [](std::size_t n, std::uint64_t seed) { return bodies_dict(nbody::plummer(n, seed)); }, py::arg("n"),
      py::arg("seed"));
}

}  // namespace nbkit::python
