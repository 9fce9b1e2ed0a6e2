#pragma once
// Ctrl-C during a long call. The library runs with the GIL released, so Python's own SIGINT
// handler cannot run until the call returns; while a call goes (on the main thread, when
// Python's default handler is installed) a handler of ours notes the signal, the progress
// callbacks the library calls between units of work throw Interrupted, the library stops
// (core/progress.hpp: a callback may throw) and the module raises KeyboardInterrupt.
#include <pybind11/pybind11.h>

#include <exception>
#include <functional>

namespace nbkit::python {

namespace py = pybind11;

struct Interrupted : std::exception {
  const char* what() const noexcept override { return "interrupted (Ctrl-C)"; }
};

class InterruptScope {
 public:
  InterruptScope();  // with the GIL held
  ~InterruptScope();
  InterruptScope(const InterruptScope&) = delete;
  InterruptScope& operator=(const InterruptScope&) = delete;
  static bool requested();
  // After the call: a Ctrl-C that came too late for a callback still raises.
  void raise_if_requested() const;

 private:
  bool installed_ = false;
};

// What the library's progress hook runs: throws Interrupted once Ctrl-C was pressed; then the
// user's `progress` (None, False, True for a bar on a terminal's stderr, or a callable taking
// the fraction done, called with the GIL from whichever thread reports). `label` names the bar.
std::function<void(double)> progress_hook(const py::object& progress, const std::string& label);

}  // namespace nbkit::python
