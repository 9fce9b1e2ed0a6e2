#include "interrupt.hpp"

#include <atomic>
#include <csignal>
#include <memory>

#include "nbkit/core/progress.hpp"

namespace nbkit::python {

namespace {

std::atomic<bool> g_interrupted{false};
struct sigaction g_saved;
int g_depth = 0;  // nested scopes (a callback that calls the library again); main thread only

extern "C" void note_interrupt(int) { g_interrupted.store(true); }

}  // namespace

InterruptScope::InterruptScope() {
  py::module_ threading = py::module_::import("threading");
  if (!threading.attr("current_thread")().is(threading.attr("main_thread")())) return;  // signals go to the main thread
  py::module_ signal = py::module_::import("signal");
  if (!signal.attr("getsignal")(signal.attr("SIGINT")).is(signal.attr("default_int_handler"))) return;  // the user's own
  if (g_depth++ == 0) {
    g_interrupted.store(false);
    struct sigaction ours {};
    ours.sa_handler = note_interrupt;
    sigemptyset(&ours.sa_mask);
    sigaction(SIGINT, &ours, &g_saved);
  }
  installed_ = true;
}

InterruptScope::~InterruptScope() {
  if (!installed_) return;
  if (--g_depth == 0) {
    sigaction(SIGINT, &g_saved, nullptr);
    g_interrupted.store(false);
  }
}

bool InterruptScope::requested() { return g_interrupted.load(std::memory_order_relaxed); }

void InterruptScope::raise_if_requested() const {
  if (installed_ && requested()) throw Interrupted();
}

std::function<void(double)> progress_hook(const py::object& progress, const std::string& label) {
  if (progress.is_none() || (py::isinstance<py::bool_>(progress) && !progress.cast<bool>()))
    return [](double) {
      if (InterruptScope::requested()) throw Interrupted();
    };
  if (py::isinstance<py::bool_>(progress)) {  // True: the command line's bar (terminals only)
    auto bar = std::make_shared<ProgressBar>(label, true);
    return [bar](double fraction) {
      if (InterruptScope::requested()) throw Interrupted();
      if (fraction >= 1.0) bar->finish();
      else bar->update(fraction);
    };
  }
  if (!PyCallable_Check(progress.ptr())) throw py::type_error("progress: expected True, False, None or a callable");
  // Shared so that copies of the hook made on other threads release the callable under the GIL.
  auto callable = std::shared_ptr<py::object>(new py::object(progress), [](py::object* o) {
    py::gil_scoped_acquire gil;
    delete o;
  });
  return [callable](double fraction) {
    if (InterruptScope::requested()) throw Interrupted();
    py::gil_scoped_acquire gil;
    (*callable)(fraction);
  };
}

}  // namespace nbkit::python
