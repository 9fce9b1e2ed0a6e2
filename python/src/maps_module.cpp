// Maps for Python: nbkit.map, trajectory maps, ionize, structures and map files
// (python/nbkit/maps.py holds the public signatures and docstrings).
#include <pybind11/functional.h>
#include <pybind11/numpy.h>
#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include <filesystem>
#include <memory>
#include <optional>

#include "arrays.hpp"
#include "interrupt.hpp"
#include "modules.hpp"
#include "nbkit/core/backend.hpp"
#include "nbkit/core/error.hpp"
#include "nbkit/ionize.hpp"
#include "nbkit/io/cell.hpp"
#include "nbkit/io/map_files.hpp"
#include "nbkit/io/png.hpp"
#include "nbkit/io/structure.hpp"
#include "nbkit/maps.hpp"
#include "nbkit/trajectory.hpp"

namespace nbkit::python {

namespace {

// A computed (or read) map: the library's Map, shared with every numpy view of its values.
struct PyMap {
  std::shared_ptr<Map> map = std::make_shared<Map>();
  py::dict stats;
  std::vector<std::string> comments;  // the map file's header lines
  bool sequential = false;            // never negative (a standard deviation): the PNG's colour scale
};

void require_file(const std::string& path) {
  if (!std::filesystem::exists(path)) {
    PyErr_SetObject(PyExc_FileNotFoundError,
                    py::make_tuple(2, "No such file", path).ptr());  // errno ENOENT, message, filename
    throw py::error_already_set();
  }
}

Atoms atoms_from(const py::handle& positions, const py::handle& charges, const py::handle& radii) {
  Atoms a;
  read_xyz(positions, "positions", a.x, a.y, a.z);
  const auto n = static_cast<std::ptrdiff_t>(a.x.size());
  a.charge = read_column(charges, "charges", n);
  a.radius = radii.is_none() ? std::vector<double>(a.x.size(), 0.0) : read_column(radii, "radii", n);
  validate_atoms(a);
  return a;
}

std::optional<PeriodicBox> box_from(const py::object& box) {
  if (box.is_none()) return std::nullopt;
  std::vector<double> edges;
  try {
    edges = box.cast<std::vector<double>>();
  } catch (const py::cast_error&) {
    throw py::type_error("periodic_box: expected three edge lengths (a, b, c) in Angstrom");
  }
  if (edges.size() != 3) throw py::value_error("periodic_box: expected three edge lengths (a, b, c) in Angstrom");
  return PeriodicBox::from_edges(Vec3{edges[0], edges[1], edges[2]});
}

// The map options of nbkit.map's keywords (the command line's, with its defaults and rules).
MapOptions map_options(Options& o) {
  MapOptions options;
  options.method = parse_map_method(o.get<std::string>("method", "direct"));
  options.unit = units::parse_potential_unit(o.get<std::string>("units", "kT/e"));
  options.backend = parse_backend(o.get<std::string>("backend", "auto"));
  options.precision = parse_precision(o.get<std::string>("precision", "single"));
  // APBS's mdh is a boundary condition in water: water's dielectric there unless given.
  options.dielectric = o.get<double>("dielectric", options.method == MapMethod::mdh ? 78.54 : 1.0);
  options.temperature = o.get<double>("temperature", units::default_temperature);
  options.ionic_strength = o.get<double>("ionic_strength", 0.15);
  options.cutoff = o.get<double>("cutoff", 12.0);
  options.smoothing = parse_smoothing(o.get<std::string>("smoothing", "cutcp"));
  options.bin_size = o.get<double>("bin_size", 0.0);
  options.msm_spacing = o.get<double>("msm_spacing", 0.0);
  options.msm_interpolation = parse_msm_interpolation(o.get<std::string>("msm_interpolation", "cubic"));
  const std::string splitting = o.get<std::string>("msm_splitting", "");
  // Hardy's pairings: cubic with the C2 splitting, quintic with C3 (docs/methods.md).
  options.msm_splitting = !splitting.empty() ? parse_smoothing(splitting)
                          : options.msm_interpolation == MsmInterpolation::cubic ? Smoothing::taylor2
                                                                                 : Smoothing::taylor3;
  options.periodic_box = box_from(o.take("periodic_box"));
  if (options.periodic_box && options.method != MapMethod::cutoff && options.method != MapMethod::msm)
    throw Error("periodic_box needs method cutoff or msm: direct and mdh sums over all periodic images do not converge");
  const std::string weight = o.get<std::string>("weight", "number");
  if (weight != "number" && weight != "charge") throw py::value_error("weight=" + weight + ": expected 'number' or 'charge'");
  options.density_weight = weight == "charge" ? DensityWeight::charge : DensityWeight::number;
  options.radius_scale = o.get<double>("radius_scale", 1.0);
  options.density_sigma = o.get<double>("sigma", 0.0);
  options.occupancy_points = o.get<bool>("points", false);
  options.threads = resolve_threads(o.get<int>("threads", 0));
  options.gpus = read_gpus(o.take("gpus"));
  units::potential_prefactor(options.unit, options.dielectric, options.temperature);  // validates both
  screening_kappa(options);  // validates the ionic strength
  return options;
}

// The lattice: origin and shape when given, else the periodic cell, else the atoms' bounding box
// with `padding` (the command line's rule).
Lattice lattice_of(Options& o, const BoundingBox& atoms_box, const MapOptions& options) {
  const double spacing = o.get<double>("spacing", 0.5), padding = o.get<double>("padding", 10.0);
  const py::object origin = o.take("origin"), shape = o.take("shape");
  if (origin.is_none() != shape.is_none()) throw py::value_error("origin and shape go together: give both or neither");
  if (!origin.is_none()) {
    const auto xyz = origin.cast<std::vector<double>>();
    const auto dims = shape.cast<std::vector<std::int64_t>>();
    if (xyz.size() != 3 || dims.size() != 3) throw py::value_error("origin and shape: three values each");
    Lattice lattice;
    lattice.origin = {xyz[0], xyz[1], xyz[2]};
    lattice.dims = {dims[0], dims[1], dims[2]};
    lattice.spacing = spacing;
    validate(lattice);
    return lattice;
  }
  if (options.periodic_box) return lattice_spanning_cell(options.periodic_box->edges(), spacing);
  return lattice_around(atoms_box, spacing, padding);
}

py::dict stats_dict(const MapStats& s) {
  py::dict d;
  d["backend"] = to_string(s.backend), d["detail"] = s.detail, d["notice"] = s.notice;
  d["seconds"] = s.seconds, d["kernel_seconds"] = s.kernel_seconds;
  d["lattice_points"] = s.lattice_points, d["evaluations"] = s.evaluations;
  d["evaluations_per_second"] = s.evaluations_per_second(), d["points_per_second"] = s.points_per_second();
  py::dict stages;
  for (const auto& [name, seconds] : s.stage_seconds) stages[py::str(name)] = seconds;
  d["stage_seconds"] = stages;
  return d;
}

std::string method_line(const MapOptions& options) {
  std::string line = "method " + to_string(options.method) + ", dielectric " + std::to_string(options.dielectric) +
                     ", temperature " + std::to_string(options.temperature) + " K";
  if (options.method == MapMethod::mdh)
    line += ", ionic strength " + std::to_string(options.ionic_strength) + " mol/L";
  if (options.method == MapMethod::cutoff || options.method == MapMethod::msm)
    line += ", cutoff " + std::to_string(options.cutoff) + " A";
  if (options.method == MapMethod::cutoff) line += ", smoothing " + to_string(options.smoothing);
  return line;
}

std::vector<std::string> comments_of(std::size_t atom_count, double net_charge, const MapOptions& options) {
  const std::string quantity = options.method == MapMethod::occupancy ? "Occupancy"
                               : options.method == MapMethod::density ? "Density"
                                                                      : "Electrostatic potential";
  return {quantity + " in " + units::to_string(map_unit(options)) + " written by nbkit " + build_info().version +
              " (Python)",
          std::to_string(atom_count) + " atoms, net charge " + std::to_string(net_charge) + " e",
          method_line(options),
          "vertex-centred lattice: point (i,j,k) at origin + (i,j,k)*delta; x index slowest, z fastest"};
}
std::vector<std::string> comments_of(const Atoms& atoms, const MapOptions& options) {
  return comments_of(atoms.size(), atoms.net_charge(), options);
}

// nbkit.map's arguments: the atoms, the options with the progress hook, the lattice.
struct MapRequest {
  Atoms atoms;
  MapOptions options;
  Lattice lattice;
};
MapRequest map_request(const py::handle& positions, const py::handle& charges, const py::handle& radii,
                       py::dict kwargs) {
  Options o(std::move(kwargs), "map");
  MapRequest r;
  r.atoms = atoms_from(positions, charges, radii);
  r.options = map_options(o);
  r.lattice = lattice_of(o, bounding_box(r.atoms), r.options);
  const py::object progress = o.take("progress");
  o.finish();
  r.options.progress = progress_hook(progress, to_string(r.options.method) + " map");
  return r;
}

PyMap compute(const py::handle& positions, const py::handle& charges, const py::handle& radii, py::dict kwargs) {
  const auto [atoms, options, lattice] = map_request(positions, charges, radii, std::move(kwargs));
  PyMap out;
  MapStats stats;
  {
    InterruptScope interrupt;
    {
      py::gil_scoped_release release;
      *out.map = compute_map(atoms, lattice, options, &stats);
    }
    interrupt.raise_if_requested();
  }
  out.stats = stats_dict(stats);
  out.comments = comments_of(atoms, options);
  return out;
}

// The maps of a trajectory's frames combined: next_frame() returns the next frame's (n, 3)
// positions, or None after the last; the first frame is `positions`.
PyMap trajectory(const py::handle& positions, const py::handle& charges, const py::handle& radii,
                 const py::object& next_frame, const std::string& combine_name, py::dict kwargs) {
  Options o(std::move(kwargs), "trajectory_map");
  Atoms atoms = atoms_from(positions, charges, radii);
  MapOptions options = map_options(o);
  const Lattice lattice = lattice_of(o, bounding_box(atoms), options);
  const Combine combine = parse_combine(combine_name);
  const py::object progress = o.take("progress");
  const auto expected = o.get<std::int64_t>("frames", 0);  // for the progress (0: unknown)
  o.finish();
  const std::function<void(double)> hook = progress_hook(progress, "trajectory map");
  options.progress = nullptr;
  const std::size_t n = atoms.size();
  PyMap out;
  out.comments = comments_of(atoms, options);
  TrajectoryMapStats stats;
  bool first = true;
  std::vector<double> x, y, z;
  {
    InterruptScope interrupt;
    {
      py::gil_scoped_release release;
      *out.map = combine_frame_maps(
          std::move(atoms), lattice, options, combine,
          [&](Atoms& target) {
            if (first) return !(first = false);  // already loaded
            py::gil_scoped_acquire gil;
            py::object frame = next_frame();
            if (frame.is_none()) return false;
            read_xyz(frame, "frame positions", x, y, z);
            if (x.size() != n)
              throw Error("a trajectory frame has " + std::to_string(x.size()) + " atoms, the first " + std::to_string(n));
            target.x = x, target.y = y, target.z = z;
            validate_atoms(target);
            return true;
          },
          [&](int done) { hook(expected > 0 ? std::min(1.0, static_cast<double>(done) / static_cast<double>(expected)) : 0.0); },
          &stats);
    }
    interrupt.raise_if_requested();
  }
  hook(1.0);
  MapStats s = stats.last_frame;
  s.seconds = stats.seconds;
  s.lattice_points *= stats.frames, s.evaluations *= stats.frames;
  out.stats = stats_dict(s);
  out.stats["frames"] = stats.frames;
  out.stats["combined_on_device"] = stats.combined_on_device;
  out.comments.push_back(to_string(combine) + " of the maps of " + std::to_string(stats.frames) + " frames");
  out.sequential = combine == Combine::stdev;
  return out;
}

py::dict ionize(const py::handle& positions, const py::handle& charges, const py::handle& radii, py::dict kwargs) {
  Options o(std::move(kwargs), "ionize");
  const Atoms structure = atoms_from(positions, charges, radii);
  IonizeOptions options;
  options.map.method = parse_map_method(o.get<std::string>("method", "direct"));
  options.map.backend = parse_backend(o.get<std::string>("backend", "auto"));
  options.map.precision = parse_precision(o.get<std::string>("precision", "single"));
  options.map.threads = resolve_threads(o.get<int>("threads", 0));
  options.map.gpus = read_gpus(o.take("gpus"));
  options.map.dielectric = o.get<double>("dielectric", 78.54);
  options.map.cutoff = o.get<double>("cutoff", 12.0);
  options.cation = ion_species(o.get<std::string>("cation", "Na+"));
  options.anion = ion_species(o.get<std::string>("anion", "Cl-"));
  options.min_distance_solute = o.get<double>("min_distance_solute", 5.0);
  options.min_distance_ion = o.get<double>("min_distance_ion", 5.0);
  const Lattice lattice = lattice_around(structure, o.get<double>("spacing", 1.0), o.get<double>("padding", 12.0));
  const bool neutralize = o.get<bool>("neutralize", false);
  const double ionic_strength = o.get<double>("ionic_strength", 0.0);
  const py::object cations = o.take("cations"), anions = o.take("anions");
  if (neutralize || ionic_strength > 0) {
    if (!cations.is_none() || !anions.is_none())
      throw Error("cations/anions give the counts; neutralize and ionic_strength compute them: use one way");
    // The lattice's box stands for the solvent box, as autoionize counts it.
    const Vec3 e = lattice.extent();
    ion_counts(structure.net_charge(), ionic_strength, e.x * e.y * e.z, &options.cations, &options.anions);
  } else {
    if (cations.is_none() && anions.is_none()) throw Error("give cations=N and/or anions=M, or neutralize=True");
    options.cations = cations.is_none() ? 0 : cations.cast<int>();
    options.anions = anions.is_none() ? 0 : anions.cast<int>();
    if (options.cations < 0 || options.anions < 0) throw Error("cations and anions: counts must not be negative");
  }
  const py::object progress = o.take("progress");
  o.finish();
  options.progress = progress_hook(progress, "ionize");
  IonizeResult result;
  {
    InterruptScope interrupt;
    {
      py::gil_scoped_release release;
      result = place_ions(structure, lattice, options);
    }
    interrupt.raise_if_requested();
  }
  py::list ions;
  for (const PlacedIon& ion : result.ions) {
    py::dict d;
    d["name"] = ion.species.name, d["residue"] = ion.species.residue, d["charge"] = ion.species.charge;
    d["radius"] = ion.species.radius;
    d["position"] = py::make_tuple(ion.position.x, ion.position.y, ion.position.z);
    d["potential"] = ion.potential, d["energy"] = ion.energy;
    ions.append(d);
  }
  PyMap map;
  *map.map = std::move(result.map);
  map.stats = stats_dict(result.initial_map_stats);
  map.comments = comments_of(structure, options.map);
  map.comments.push_back("with the ions placed");
  py::dict out;
  out["ions"] = ions, out["map"] = map, out["seconds"] = result.seconds;
  return out;
}

py::dict read_structure(const std::string& path, const std::string& charges, bool allow_missing) {
  require_file(path);
  io::ChargeOptions options;
  options.force_field = charges;
  options.allow_missing = allow_missing;
  std::string notice;
  options.notice = &notice;
  Atoms atoms;
  {
    py::gil_scoped_release release;
    atoms = io::read_atoms(path, options);
  }
  py::dict out;
  out["positions"] = xyz_array(atoms.x, atoms.y, atoms.z);
  out["charges"] = column_array(atoms.charge);
  out["radii"] = column_array(atoms.radius);
  out["notice"] = notice;
  const std::optional<PeriodicBox> box = io::read_periodic_box(path);
  out["box"] = box ? py::cast(std::vector<double>{box->length(0), box->length(1), box->length(2)}) : py::none();
  return out;
}

// The atoms of GPU arrays (CuPy, PyTorch) as the library takes them: views, on one GPU.
DeviceAtomArrays device_atoms(const py::handle& positions, const py::handle& charges, const py::handle& radii) {
  const CudaArray x = cuda_array(positions, "positions"), q = cuda_array(charges, "charges");
  if (x.shape.size() != 2 || x.shape[1] != 3) throw py::value_error("positions: expected shape (n, 3)");
  const py::ssize_t n = x.shape[0];
  auto column = [&](const CudaArray& a, const char* name) {
    if (a.shape.size() != 1 || a.shape[0] != n)
      throw py::value_error(std::string(name) + ": expected shape (" + std::to_string(n) + ",), one value an atom");
    if (n > 0 && a.device != x.device) throw py::value_error(std::string("positions and ") + name + ": on different GPUs");
  };
  column(q, "charges");
  DeviceAtomArrays a;
  a.device = x.device, a.n = n;
  a.positions = x.data, a.positions_float64 = x.float64;
  a.position_strides[0] = x.strides[0], a.position_strides[1] = x.strides[1];
  a.charges = q.data, a.charges_float64 = q.float64, a.charge_stride = q.strides[0];
  if (!radii.is_none()) {
    const CudaArray r = cuda_array(radii, "radii");
    column(r, "radii");
    a.radii = r.data, a.radii_float64 = r.float64, a.radius_stride = r.strides[0];
  }
  return a;
}

// nbkit.map with GPU-array inputs (every input on the GPU: the Python layer moves the others
// there): the atoms read, checked, prepared and binned on their GPU, the values written by the
// GPUs straight into a device array made by `allocate(shape)` (CuPy or PyTorch, as the inputs):
// neither the atoms nor the map pass through the host.
py::dict compute_on_device(const py::handle& positions, const py::handle& charges, const py::handle& radii,
                           py::dict kwargs, const py::object& allocate) {
  const DeviceAtomArrays atoms = device_atoms(positions, charges, radii);
  Options o(std::move(kwargs), "map");
  MapOptions options = map_options(o);
  if (atoms.n == 0) throw Error("no atoms to compute a map from");
  DeviceAtomSummary summary;
  {
    py::gil_scoped_release release;
    summary = check_device_atoms(atoms);  // the box for the lattice, the net charge for the header
  }
  const Lattice lattice = lattice_of(o, summary.box, options);
  const py::object progress = o.take("progress");
  o.finish();
  options.progress = progress_hook(progress, to_string(options.method) + " map");
  const auto& d = lattice.dims;
  py::object values = allocate(py::make_tuple(d[0], d[1], d[2]));
  const CudaArray out = cuda_array(values, "output");
  if (!out.float64 || out.shape.size() != 3 || out.strides != std::vector<py::ssize_t>{d[1] * d[2], d[2], 1})
    throw py::value_error("output: expected a C-contiguous float64 GPU array of shape (nx, ny, nz)");
  MapStats stats;
  {
    InterruptScope interrupt;
    {
      py::gil_scoped_release release;
      compute_map_on_device(atoms, lattice, options, out.device, static_cast<double*>(out.data), &stats);
    }
    interrupt.raise_if_requested();
  }
  py::dict result;
  result["values"] = values;
  result["origin"] = py::make_tuple(lattice.origin.x, lattice.origin.y, lattice.origin.z);
  result["spacing"] = lattice.spacing;
  result["units"] = units::to_string(map_unit(options));
  result["stats"] = stats_dict(stats);
  result["comments"] = comments_of(static_cast<std::size_t>(atoms.n), summary.net_charge, options);
  return result;
}

// A host Map of values already computed (a GPU map brought to the host), for the file writers.
PyMap map_from_array(const py::array_t<double, py::array::c_style | py::array::forcecast>& values,
                     const std::vector<double>& origin, double spacing, const std::string& unit,
                     const std::vector<std::string>& comments) {
  if (values.ndim() != 3 || origin.size() != 3) throw py::value_error("values: expected shape (nx, ny, nz)");
  PyMap p;
  p.map->lattice.origin = {origin[0], origin[1], origin[2]};
  p.map->lattice.spacing = spacing;
  p.map->lattice.dims = {values.shape(0), values.shape(1), values.shape(2)};
  validate(p.map->lattice);
  p.map->unit = units::parse_potential_unit(unit);
  p.map->values.assign(values.data(), values.data() + values.size());
  p.comments = comments;
  return p;
}

}  // namespace

void add_maps(py::module_& m) {
  py::class_<PyMap>(m, "Map", "A potential map on a lattice (see nbkit.map).")
      .def_property_readonly(
          "values",
          [](py::object self) {
            PyMap& p = self.cast<PyMap&>();
            const auto& d = p.map->lattice.dims;
            const py::ssize_t s = sizeof(double);
            // A view of the library's values, no copy: shape (nx, ny, nz), x slowest as in DX files.
            return py::array_t<double>({py::ssize_t{d[0]}, py::ssize_t{d[1]}, py::ssize_t{d[2]}},
                                       {d[1] * d[2] * s, d[2] * s, s}, p.map->values.data(), self);
          },
          "The potential, a numpy view (no copy) of shape (nx, ny, nz), x slowest as in DX files.")
      .def_property_readonly(
          "origin", [](const PyMap& p) { const Vec3 o = p.map->lattice.origin; return py::make_tuple(o.x, o.y, o.z); },
          "Position of lattice point (0, 0, 0), Angstrom.")
      .def_property_readonly("spacing", [](const PyMap& p) { return p.map->lattice.spacing; }, "Lattice spacing, Angstrom.")
      .def_property_readonly(
          "shape", [](const PyMap& p) { const auto& d = p.map->lattice.dims; return py::make_tuple(d[0], d[1], d[2]); },
          "Lattice points along x, y, z.")
      .def_property_readonly("units", [](const PyMap& p) { return units::to_string(p.map->unit); },
                             "Unit of the values: kT/e, kcal/mol/e or V.")
      .def_readonly("stats", &PyMap::stats, "What the computation did: backend, detail, seconds, rates.")
      .def(
          "to_dx",
          [](const PyMap& p, const std::filesystem::path& path) {
            py::gil_scoped_release release;
            io::write_dx(path.string(), *p.map, p.comments);
          },
          py::arg("path"), "Writes the map as OpenDX (APBS's layout; VMD, PyMOL, ChimeraX read it), atomically.")
      .def(
          "to_mrc",
          [](const PyMap& p, const std::filesystem::path& path) {
            py::gil_scoped_release release;
            io::write_ccp4(path.string(), *p.map);
          },
          py::arg("path"), "Writes the map as CCP4/MRC (float32), atomically.")
      .def(
          "to_png",
          [](const PyMap& p, const std::filesystem::path& path, const std::string& slice) {
            const io::SliceInfo info = io::write_slice_png(
                path.string(), *p.map, io::parse_slice(slice), {}, 0,
                p.sequential ? io::ColorScale::sequential : io::ColorScale::diverging);
            py::dict d;
            d["axis"] = std::string(1, "xyz"[info.axis]), d["index"] = info.index, d["coordinate"] = info.coordinate;
            d["color_range"] = info.range, d["low"] = info.low, d["high"] = info.high;
            return d;
          },
          py::arg("path"), py::arg("slice") = "z",
          "Writes a PNG of a slice ('z', 'z=12.5', 'x=0', ...) with labelled axes and a colour legend; returns what was drawn.")
      .def("__repr__", [](const PyMap& p) {
        const auto& d = p.map->lattice.dims;
        return "<nbkit.Map " + std::to_string(d[0]) + "x" + std::to_string(d[1]) + "x" + std::to_string(d[2]) +
               " points, spacing " + std::to_string(p.map->lattice.spacing) + " A, " + units::to_string(p.map->unit) + ">";
      });
  m.def("_map", &compute, py::arg("positions"), py::arg("charges"), py::arg("radii"), py::arg("options"));
  m.def("_map_on_device", &compute_on_device, py::arg("positions"), py::arg("charges"), py::arg("radii"),
        py::arg("options"), py::arg("allocate"));
  m.def("_map_from_array", &map_from_array, py::arg("values"), py::arg("origin"), py::arg("spacing"),
        py::arg("units"), py::arg("comments"));
  m.def("_trajectory_map", &trajectory, py::arg("positions"), py::arg("charges"), py::arg("radii"),
        py::arg("next_frame"), py::arg("combine"), py::arg("options"));
  m.def("_ionize", &ionize, py::arg("positions"), py::arg("charges"), py::arg("radii"), py::arg("options"));
  m.def("_read_structure", &read_structure, py::arg("path"), py::arg("charges") = "", py::arg("allow_missing") = false);
  m.def(
      "read_map",
      [](const std::filesystem::path& path) {
        require_file(path.string());
        PyMap p;
        *p.map = io::read_dx(path.string());
        return p;
      },
      py::arg("path"), "Reads an OpenDX map (nbkit's, APBS's, VMD's, GridDataFormats').");
}

}  // namespace nbkit::python
