#pragma once
// numpy arrays in and out of the library: shapes and dtypes checked with the messages a
// Python user expects (TypeError for a dtype, ValueError for a shape), copies only where the
// library's structure-of-arrays layout needs them.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <string>
#include <vector>

namespace nbkit::python {

namespace py = pybind11;

// An (n, 3) float32 or float64 array (any strides) into three float64 columns.
void read_xyz(const py::handle& array, const char* name, std::vector<double>& x, std::vector<double>& y,
              std::vector<double>& z);
// An (n,) float32 or float64 array into float64; n checked when `expected` >= 0.
std::vector<double> read_column(const py::handle& array, const char* name, std::ptrdiff_t expected);
// Three columns as a new (n, 3) float64 array.
py::array_t<double> xyz_array(const std::vector<double>& x, const std::vector<double>& y, const std::vector<double>& z);
// A column as a new (n,) float64 array.
py::array_t<double> column_array(const std::vector<double>& v);
// gpus="all" | an index | a list of indices | "0,2": the device indices (empty: all).
std::vector<int> read_gpus(const py::handle& gpus);
// A GPU array (CuPy, a PyTorch CUDA tensor, Numba: anything with __cuda_array_interface__):
// its data pointer, device, shape and strides in elements; float32 or float64 only.
struct CudaArray {
  void* data = nullptr;
  int device = -1;
  bool float64 = true;
  std::vector<py::ssize_t> shape, strides;
};
bool is_cuda_array(const py::handle& object);
CudaArray cuda_array(const py::handle& object, const char* name);

// Options handed over as a dict by the package's Python layer: each key taken once; whatever
// is left is an unknown option (TypeError naming it), as Python itself says of a keyword.
class Options {
 public:
  Options(py::dict d, std::string function) : d_(std::move(d)), function_(std::move(function)) {}
  bool has(const char* key) const { return d_.contains(key) && !d_[key].is_none(); }
  py::object take(const char* key);  // None when absent
  template <class T>
  T get(const char* key, T fallback) {
    py::object v = take(key);
    if (v.is_none()) return fallback;
    try {
      return v.cast<T>();
    } catch (const py::cast_error&) {
      throw py::type_error(function_ + "(): " + key + "=" + std::string(py::str(py::repr(v))) + " has the wrong type");
    }
  }
  void finish() const;  // TypeError for any key not taken
 private:
  py::dict d_;
  std::string function_;
  std::vector<std::string> taken_;
};

}  // namespace nbkit::python
