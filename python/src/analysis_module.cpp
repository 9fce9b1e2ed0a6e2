// nbkit._nbkit's trajectory analysis: g(r) accumulated frame by frame from the coordinates the
// Python layer reads (an MDAnalysis trajectory), the library's Rdf doing the counting with the GIL
// released (nbkit/analysis.hpp).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <optional>

#include "arrays.hpp"
#include "modules.hpp"
#include "nbkit/analysis.hpp"
#include "nbkit/core/error.hpp"

namespace nbkit::python {

namespace {

std::vector<std::int32_t> int_column(const py::handle& object, const char* name, std::ptrdiff_t expected = -1) {
  const auto a = py::array_t<std::int64_t, py::array::c_style | py::array::forcecast>::ensure(object);
  if (!a || a.ndim() != 1) throw py::value_error(std::string(name) + ": expected a 1-D array of integers");
  if (expected >= 0 && a.shape(0) != expected)
    throw py::value_error(std::string(name) + ": expected " + std::to_string(expected) + " values, got " +
                          std::to_string(a.shape(0)));
  std::vector<std::int32_t> v(a.shape(0));
  for (py::ssize_t i = 0; i < a.shape(0); ++i) v[i] = static_cast<std::int32_t>(a.at(i));
  return v;
}

class PyRdf {
 public:
  // atoms: the universe's atom count; groups: residue or molecule numbers per atom (None: not
  // given); a, b: 0-based indices into the universe's atoms.
  PyRdf(std::ptrdiff_t atoms, const py::handle& a, const py::handle& b, const py::handle& residues,
        const py::handle& molecules, py::dict options_dict) {
    Options o(std::move(options_dict), "rdf");
    analysis::RdfOptions options;
    options.rmin = o.get<double>("rmin", 0.0);
    options.rmax = o.get<double>("rmax", 15.0);
    options.bins = o.get<int>("bins", 75);
    options.exclude = analysis::parse_rdf_exclusion(o.get<std::string>("exclude", "none"));
    options.norm = analysis::parse_rdf_norm(o.get<std::string>("norm", "rdf"));
    options.volume = o.get<double>("volume", 0.0);
    options.threads = o.get<int>("threads", 0);
    options.backend = parse_backend(o.get<std::string>("backend", "auto"));
    options.gpus = read_gpus(o.take("gpus"));
    o.finish();
    if (atoms < 1) throw py::value_error("rdf(): no atoms");
    analysis::AtomTable table;
    table.source = "the universe";
    table.name.assign(atoms, "");
    if (!residues.is_none()) table.residue = int_column(residues, "residues", atoms);
    if (!molecules.is_none()) table.molecule = int_column(molecules, "molecules", atoms);
    atoms_ = atoms;
    rdf_.emplace(table, int_column(a, "group a"), int_column(b, "group b"), options);
  }

  // One frame: every atom's positions (n, 3) in Angstrom; dimensions [a, b, c, alpha, beta,
  // gamma] (MDAnalysis's) or None for no cell.
  void add_frame(const py::handle& positions, const py::handle& dimensions) {
    const auto p = py::array_t<float, py::array::c_style | py::array::forcecast>::ensure(positions);
    if (!p || p.ndim() != 2 || p.shape(1) != 3 || p.shape(0) != atoms_)
      throw py::value_error("positions: expected shape (" + std::to_string(atoms_) + ", 3)");
    std::optional<analysis::Cell> cell;
    if (!dimensions.is_none()) {
      const std::vector<double> d = read_column(dimensions, "dimensions", 6);
      if (d[0] > 0 && d[1] > 0 && d[2] > 0) cell = analysis::cell_from_lengths_angles(d[0], d[1], d[2], d[3], d[4], d[5]);
    }
    x_.resize(atoms_), y_.resize(atoms_), z_.resize(atoms_);
    const float* data = p.data();
    for (std::ptrdiff_t i = 0; i < atoms_; ++i) x_[i] = data[3 * i], y_[i] = data[3 * i + 1], z_[i] = data[3 * i + 2];
    py::gil_scoped_release release;
    rdf_->add_frame(x_.data(), y_.data(), z_.data(), cell);
  }

  py::dict result() const {
    const analysis::RdfResult r = rdf_->result();
    py::dict out;
    out["edges"] = py::array_t<double>(static_cast<py::ssize_t>(r.edges.size()), r.edges.data());
    out["counts"] = py::array_t<std::uint64_t>(static_cast<py::ssize_t>(r.counts.size()), r.counts.data());
    out["rdf"] = py::array_t<double>(static_cast<py::ssize_t>(r.g.size()), r.g.data());
    out["coordination"] = py::array_t<double>(static_cast<py::ssize_t>(r.coordination.size()), r.coordination.data());
    out["frames"] = r.frames, out["pairs"] = r.pairs, out["mean_volume"] = r.mean_volume;
    out["distances"] = r.distances, out["backend"] = to_string(r.backend), out["detail"] = r.detail;
    out["notice"] = r.notice;
    return out;
  }

 private:
  std::ptrdiff_t atoms_ = 0;
  std::optional<analysis::Rdf> rdf_;
  std::vector<float> x_, y_, z_;
};

}  // namespace

void add_analysis(py::module_& m) {
  py::class_<PyRdf>(m, "_Rdf")
      .def(py::init<std::ptrdiff_t, const py::handle&, const py::handle&, const py::handle&, const py::handle&, py::dict>())
      .def("add_frame", &PyRdf::add_frame)
      .def("result", &PyRdf::result);
}

}  // namespace nbkit::python
