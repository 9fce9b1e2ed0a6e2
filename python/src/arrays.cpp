#include "arrays.hpp"

#include "nbkit/core/backend.hpp"

#include <algorithm>
#include <cstdlib>

namespace nbkit::python {

namespace {

py::array float_array(const py::handle& object, const char* name) {
  if (!py::isinstance<py::array>(object)) {
    // Lists and other sequences: numpy decides the dtype (ints are refused below, as in an array).
    py::object converted = py::module_::import("numpy").attr("asarray")(object);
    return float_array(converted, name);
  }
  py::array a = py::reinterpret_borrow<py::array>(object);
  const py::dtype dt = a.dtype();
  if (dt.kind() != 'f' || (dt.itemsize() != 4 && dt.itemsize() != 8))
    throw py::type_error(std::string(name) + ": expected float32 or float64 values, got dtype " +
                         std::string(py::str(py::handle(dt))));
  return a;
}

}  // namespace

void read_xyz(const py::handle& object, const char* name, std::vector<double>& x, std::vector<double>& y,
              std::vector<double>& z) {
  py::array a = float_array(object, name);
  if (a.ndim() != 2 || a.shape(1) != 3) {
    std::string shape;
    for (py::ssize_t d = 0; d < a.ndim(); ++d) shape += (d ? ", " : "") + std::to_string(a.shape(d));
    throw py::value_error(std::string(name) + ": expected shape (n, 3), got (" + shape + ")");
  }
  auto doubles = py::array_t<double, py::array::c_style | py::array::forcecast>::ensure(a);
  const auto n = static_cast<std::size_t>(a.shape(0));
  const double* p = doubles.data();
  x.resize(n), y.resize(n), z.resize(n);
  for (std::size_t i = 0; i < n; ++i) x[i] = p[3 * i], y[i] = p[3 * i + 1], z[i] = p[3 * i + 2];
}

std::vector<double> read_column(const py::handle& object, const char* name, std::ptrdiff_t expected) {
  py::array a = float_array(object, name);
  if (a.ndim() != 1 || (expected >= 0 && a.shape(0) != expected))
    throw py::value_error(std::string(name) + ": expected shape (" +
                          (expected >= 0 ? std::to_string(expected) : std::string("n")) + ",), one value an atom, got " +
                          std::to_string(a.ndim()) + "-d array of " + std::to_string(a.size()) + " values");
  auto doubles = py::array_t<double, py::array::c_style | py::array::forcecast>::ensure(a);
  return std::vector<double>(doubles.data(), doubles.data() + doubles.size());
}

py::array_t<double> xyz_array(const std::vector<double>& x, const std::vector<double>& y, const std::vector<double>& z) {
  const auto n = static_cast<py::ssize_t>(x.size());
  py::array_t<double> out({n, py::ssize_t{3}});
  double* p = out.mutable_data();
  for (py::ssize_t i = 0; i < n; ++i) p[3 * i] = x[i], p[3 * i + 1] = y[i], p[3 * i + 2] = z[i];
  return out;
}

py::array_t<double> column_array(const std::vector<double>& v) {
  py::array_t<double> out(static_cast<py::ssize_t>(v.size()));
  std::copy(v.begin(), v.end(), out.mutable_data());
  return out;
}

std::vector<int> read_gpus(const py::handle& gpus) {
  if (gpus.is_none()) return {};
  if (py::isinstance<py::str>(gpus)) {
    const std::string text = gpus.cast<std::string>();
    if (text == "all" || text.empty()) return {};
    std::vector<int> out;
    std::size_t start = 0;
    while (start <= text.size()) {
      const std::size_t comma = std::min(text.find(',', start), text.size());
      const std::string item = text.substr(start, comma - start);
      start = comma + 1;
      char* end = nullptr;
      const long v = std::strtol(item.c_str(), &end, 10);
      if (item.empty() || *end != '\0' || v < 0) throw py::value_error("gpus: expected \"all\", an index or indices like \"0,2\", got \"" + text + "\"");
      out.push_back(static_cast<int>(v));
    }
    return out;
  }
  if (py::isinstance<py::int_>(gpus)) return {gpus.cast<int>()};
  try {
    return gpus.cast<std::vector<int>>();
  } catch (const py::cast_error&) {
    throw py::type_error("gpus: expected \"all\", an index or a list of indices");
  }
}

bool is_cuda_array(const py::handle& object) { return py::hasattr(object, "__cuda_array_interface__"); }

CudaArray cuda_array(const py::handle& object, const char* name) {
  const py::dict cai = object.attr("__cuda_array_interface__");
  CudaArray a;
  const std::string type = py::str(cai["typestr"]);
  if (type != "<f4" && type != "<f8")
    throw py::type_error(std::string(name) + ": expected float32 or float64 values, got typestr " + type);
  a.float64 = type == "<f8";
  const auto item = static_cast<py::ssize_t>(a.float64 ? 8 : 4);
  for (const auto& d : py::tuple(cai["shape"])) a.shape.push_back(d.cast<py::ssize_t>());
  if (cai.contains("strides") && !cai["strides"].is_none()) {
    for (const auto& st : py::tuple(cai["strides"])) {
      const auto bytes = st.cast<py::ssize_t>();
      if (bytes % item != 0) throw py::value_error(std::string(name) + ": strides that are not whole elements");
      a.strides.push_back(bytes / item);
    }
  } else {  // C-contiguous
    a.strides.assign(a.shape.size(), 1);
    for (std::size_t d = a.shape.size(); d-- > 1;) a.strides[d - 1] = a.strides[d] * a.shape[d];
  }
  a.data = reinterpret_cast<void*>(py::tuple(cai["data"])[0].cast<std::uintptr_t>());
  std::size_t elements = 1;
  for (const auto d : a.shape) elements *= static_cast<std::size_t>(d);
  a.device = elements > 0 ? gpu_of_pointer(a.data) : 0;
  if (a.device < 0) throw py::value_error(std::string(name) + ": its __cuda_array_interface__ points to no GPU memory");
  return a;
}

py::object Options::take(const char* key) {
  taken_.emplace_back(key);
  if (!d_.contains(key)) return py::none();
  return d_[key];
}

void Options::finish() const {
  for (const auto& item : d_) {
    const std::string key = py::str(item.first);
    if (std::find(taken_.begin(), taken_.end(), key) == taken_.end())
      throw py::type_error(function_ + "() got an unexpected keyword argument '" + key + "'");
  }
}

}  // namespace nbkit::python
