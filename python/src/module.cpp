// nbkit._nbkit: the library's maps, N-body and MD engines for Python (pybind11). The public
// names, signatures and docstrings users read are in the package's Python layer (python/nbkit);
// this module does the work: arrays in, the library's calls with the GIL released, arrays out.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "interrupt.hpp"
#include "modules.hpp"
#include "nbkit/core/error.hpp"
#include "nbkit/core/machine.hpp"

namespace py = pybind11;
using namespace nbkit;

namespace {

py::dict info() {  // the facts of `nbkit info --json`
  const MachineInfo m = machine_info();
  py::dict out;
  out["version"] = m.build.version, out["compiler"] = m.build.compiler, out["build_type"] = m.build.build_type;
  out["simd_target"] = m.simd_target, out["simd_targets_compiled"] = m.simd_targets_compiled;
  out["cpu_threads"] = m.cpu_threads, out["memory_available_bytes"] = m.memory_available_bytes;
  out["cuda_compiled"] = m.build.cuda_compiled, out["cuda_runtime"] = m.build.cuda_runtime;
  py::list devices;
  for (const auto& g : m.gpus) {
    py::dict d;
    d["index"] = g.index, d["name"] = g.name;
    d["compute_capability"] = std::to_string(g.compute_capability_major) + "." + std::to_string(g.compute_capability_minor);
    d["multiprocessors"] = g.multiprocessors, d["memory_gib"] = g.memory_gib;
    devices.append(d);
  }
  out["gpus"] = devices;
  if (m.gpus.empty()) out["gpu_unavailable_reason"] = m.gpu_unavailable_reason;
  return out;
}

}  // namespace

PYBIND11_MODULE(_nbkit, m) {
  m.doc() = "nbkit's compiled core; use the package `nbkit`, whose functions document themselves.";
  // The library's errors: nbkit.Error (a ValueError: almost every one is about the input or the
  // options) with the library's one-line message; its memory and disk checks as MemoryError and
  // OSError; Ctrl-C as KeyboardInterrupt.
  static py::exception<Error> error(m, "Error", PyExc_ValueError);
  error.doc() = "An nbkit error: the library's one-line message (a ValueError: bad input, options or state).";
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const python::Interrupted&) {
      PyErr_SetNone(PyExc_KeyboardInterrupt);
    } catch (const MemoryError& e) {
      PyErr_SetString(PyExc_MemoryError, e.what());
    } catch (const DiskError& e) {
      PyErr_SetString(PyExc_OSError, e.what());
    } catch (const Error& e) {
      error(e.what());
    }
  });
  m.def("info", &info, "Version, build, SIMD target, CPU threads, memory and GPUs, as a dict.");
  python::add_maps(m);
  python::add_nbody(m);
  python::add_md(m);
  python::add_analysis(m);
}
