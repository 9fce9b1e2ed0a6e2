// nbody::ForceEngine: checks the request, picks the backend, keeps its resources; the float64 reference.
#include "nbody/forces.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "nbkit/core/error.hpp"
#include "nbody/gravity.hpp"
#include "nbody/tree.hpp"

namespace nbkit::nbody {

void accelerations_reference(const Bodies& b, double softening, Accelerations& out, Targets targets) {
  const std::size_t n = b.size();
  out.resize(n);
  out.has_potential = true;
  const double eps2 = softening * softening;
  for (std::size_t i = targets.first; i < std::min(n, targets.last); ++i) {
    double ax = 0, ay = 0, az = 0, phi = 0;
    for (std::size_t j = 0; j < n; ++j) {
      if (j == i) continue;
      const double dx = b.x[j] - b.x[i], dy = b.y[j] - b.y[i], dz = b.z[j] - b.z[i];
      const double inverse_distance = 1 / std::sqrt(dx * dx + dy * dy + dz * dz + eps2);
      const double s = gravity_acceleration_factor(b.mass[j], inverse_distance);
      ax += s * dx, ay += s * dy, az += s * dz;
      phi += gravity_potential_term(b.mass[j], inverse_distance);
    }
    out.ax[i] = ax, out.ay[i] = ay, out.az[i] = az, out.potential[i] = -phi;
  }
}

struct ForceEngine::Impl {
  ForceOptions options;
  std::string notice;
  std::unique_ptr<GpuForces> gpu;
  std::unique_ptr<GpuTree> gpu_tree;
  Octree tree;  // the CPU tree code's, rebuilt each evaluation in the same memory
  TreeTimings tree_timings;
};

namespace {

void check_tree_options(const TreeOptions& tree) {
  if (!(tree.theta >= 0 && tree.theta <= 1))
    throw Error(fmt::format("the tree's opening angle theta must be in [0, 1] (0: every cell opened; beyond 1 the "
                            "multipole expansion can diverge), got {}",
                            tree.theta));
  if (tree.leaf_size < 0 || tree.leaf_size > 4096)
    throw Error(fmt::format("the tree's leaf size must be 0 (the backend's choice) to 4096 bodies, got {}",
                            tree.leaf_size));
}

}  // namespace

ForceEngine::ForceEngine(const ForceOptions& options) : impl_(std::make_unique<Impl>()) {
  if (!(options.softening > 0) || !std::isfinite(options.softening))
    throw Error(fmt::format("softening must be a positive length (N-body units), got {}", options.softening));
  impl_->options = options;
  std::string threads_notice;
  impl_->options.threads = resolve_threads(options.threads, &threads_notice);
  Backend& backend = impl_->options.backend;
  backend = resolve_backend(backend, &impl_->notice);
  if (!threads_notice.empty()) impl_->notice += (impl_->notice.empty() ? "" : "; ") + threads_notice;
  if (options.method == GravityMethod::tree) {
    check_tree_options(options.tree);
    if (backend == Backend::reference)
      throw Error("the reference backend is the float64 all-pairs oracle; the tree runs on the cpu or cuda backend");
  }
  if (backend != Backend::cuda && !options.gpus.empty())
    throw Error("--gpus picks GPUs for --backend cuda; this run is on the " + to_string(backend));
  const bool double_precision = options.precision == Precision::double_;
  if (backend == Backend::cuda && options.method == GravityMethod::tree) {
    impl_->gpu_tree = std::make_unique<GpuTree>(options.gpus, options.softening, options.tree, double_precision,
                                                impl_->options.threads);
    if (options.gpus.size() > 1 || (options.gpus.empty() && list_gpus().size() > 1))
      impl_->notice += std::string(impl_->notice.empty() ? "" : "; ") + "the tree runs on one GPU: " +
                       impl_->gpu_tree->description();
  } else if (backend == Backend::cuda) {
    impl_->gpu = std::make_unique<GpuForces>(options.gpus, options.softening, double_precision);
  }
}

ForceEngine::~ForceEngine() = default;
ForceEngine::ForceEngine(ForceEngine&&) noexcept = default;
ForceEngine& ForceEngine::operator=(ForceEngine&&) noexcept = default;

namespace {

// The checks cost O(N) next to the sums' O(N^2) (O(N log N) for the tree), on all cores (a
// single core took 0.2 s of a 67-million-body tree step): inputs that would poison every sum,
// and any result that is not a number, end the run with a sentence instead of NaN diagnostics.
// The first offending body is named, whatever the thread count.
template <class Bad>
std::int64_t first_bad(std::size_t n, int threads, const Bad& bad) {
  std::int64_t first = std::numeric_limits<std::int64_t>::max();
  const int team = static_cast<int>(std::min<std::size_t>(static_cast<std::size_t>(std::max(threads, 1)), n / 65536 + 1));
#pragma omp parallel for num_threads(team) schedule(static) reduction(min : first)
  for (std::int64_t i = 0; i < static_cast<std::int64_t>(n); ++i)
    if (bad(static_cast<std::size_t>(i))) first = std::min(first, i);
  return first == std::numeric_limits<std::int64_t>::max() ? -1 : first;
}

void check_bodies(const Bodies& b, int threads) {
  const std::int64_t i = first_bad(b.size(), threads, [&b](std::size_t k) {
    return !std::isfinite(b.x[k]) || !std::isfinite(b.y[k]) || !std::isfinite(b.z[k]) || !(b.mass[k] > 0) ||
           !std::isfinite(b.mass[k]);
  });
  if (i < 0) return;
  const auto k = static_cast<std::size_t>(i);
  if (!std::isfinite(b.x[k]) || !std::isfinite(b.y[k]) || !std::isfinite(b.z[k]))
    throw Error(fmt::format("body {}: position ({}, {}, {}) is not finite", k + 1, b.x[k], b.y[k], b.z[k]));
  throw Error(fmt::format("body {}: mass {} is not a positive finite number", k + 1, b.mass[k]));
}

// Bodies [first, last) (all: the default).
void check_results(const Accelerations& a, bool with_potential, int threads, std::size_t first = 0,
                   std::size_t last = static_cast<std::size_t>(-1)) {
  const bool potential = with_potential && a.has_potential;
  last = std::min(last, a.ax.size());
  const std::int64_t i = first_bad(last - first, threads, [&a, potential, first](std::size_t r) {
    const std::size_t k = first + r;
    return !std::isfinite(a.ax[k]) || !std::isfinite(a.ay[k]) || !std::isfinite(a.az[k]) ||
           (potential && !std::isfinite(a.potential[k]));
  });
  if (i < 0) return;
  const auto k = first + static_cast<std::size_t>(i);
  throw Error(fmt::format("the acceleration of body {} is not finite ({}, {}, {}): the sums overflowed", k + 1, a.ax[k],
                          a.ay[k], a.az[k]));
}

}  // namespace

void ForceEngine::compute(const Bodies& bodies, Accelerations& out, bool with_potential) {
  const ForceOptions& o = impl_->options;
  check_bodies(bodies, o.threads);
  switch (o.backend) {
    case Backend::reference:
      accelerations_reference(bodies, o.softening, out);
      out.has_potential = true;
      break;
    case Backend::automatic:
    case Backend::cpu:
      if (o.method == GravityMethod::tree) {
        impl_->tree_timings = tree_accelerations_cpu(bodies, o.softening, o.tree, o.precision == Precision::double_,
                                                     o.threads, impl_->tree, out, o.progress);
        out.has_potential = true;
        break;
      }
      accelerations_cpu(bodies, o.softening, o.precision == Precision::double_, o.threads, out, o.progress);
      out.has_potential = true;  // the CPU loops always sum the potentials: they cost ~1/12 more there
      break;
    case Backend::cuda:
      if (impl_->gpu_tree) impl_->gpu_tree->compute(bodies, out, with_potential);
      else impl_->gpu->compute(bodies, out, with_potential);
      break;
  }
  check_results(out, with_potential, o.threads);
}

void ForceEngine::compute_range(const Bodies& bodies, std::size_t first, std::size_t last, Accelerations& out) {
  const ForceOptions& o = impl_->options;
  if (first > last || last > bodies.size())
    throw Error(fmt::format("internal: bodies [{}, {}) of {}", first, last, bodies.size()));
  if (o.method == GravityMethod::tree)
    throw Error("the tree sums every body's forces from one tree: it is not shared among processes (yet); run the tree "
                "without mpirun");
  check_bodies(bodies, o.threads);
  out.resize(bodies.size());
  if (o.backend == Backend::cuda)  // the bodies j split as one GPU with every body i would: its bits
    impl_->gpu->compute(bodies, out, true, {first, last}, true);
  else if (o.backend == Backend::reference)
    accelerations_reference(bodies, o.softening, out, {first, last});
  else
    accelerations_cpu(bodies, o.softening, o.precision == Precision::double_, o.threads, out, o.progress, {first, last});
  out.has_potential = true;
  check_results(out, true, o.threads, first, last);
}

void ForceEngine::compute_on_device(const DeviceBodies& bodies) {
  if (impl_->options.backend != Backend::cuda)
    throw Error("bodies in GPU memory need the cuda backend; this engine runs on the " +
                to_string(impl_->options.backend));
  if (bodies.n < 0 || (bodies.n > 0 && (!bodies.positions || !bodies.masses || !bodies.accelerations)))
    throw Error("device bodies: positions, masses and accelerations must point to device memory");
  if (impl_->gpu_tree) impl_->gpu_tree->compute_on_device(bodies);
  else impl_->gpu->compute_on_device(bodies);
}

Backend ForceEngine::backend() const { return impl_->options.backend; }
const ForceOptions& ForceEngine::options() const { return impl_->options; }
const std::string& ForceEngine::notice() const { return impl_->notice; }
TreeTimings ForceEngine::last_tree_timings() const {
  return impl_->gpu_tree ? impl_->gpu_tree->last_timings() : impl_->tree_timings;
}

double ForceEngine::last_kernel_seconds() const {
  if (impl_->gpu_tree) return impl_->gpu_tree->last_kernel_seconds();
  return impl_->gpu ? impl_->gpu->last_kernel_seconds() : 0.0;
}

std::string ForceEngine::description() const {
  const ForceOptions& o = impl_->options;
  const std::string arithmetic =
      o.precision == Precision::double_ ? "float64" : "float32 with float64 sums";
  switch (o.backend) {
    case Backend::reference: return "float64 reference";
    case Backend::cuda:
      if (impl_->gpu_tree)
        return fmt::format("{} tree (theta {:g}, {}), {}", impl_->gpu_tree->description(), o.tree.theta,
                           o.tree.quadrupole ? "quadrupole" : "monopole", arithmetic);
      return impl_->gpu->description() + ", " + arithmetic;
    default:
      if (o.method == GravityMethod::tree)
        return fmt::format("CPU {} tree (theta {:g}, {}), {}", nbody_cpu_target(), o.tree.theta,
                           o.tree.quadrupole ? "quadrupole" : "monopole", arithmetic);
      return fmt::format("CPU {}, {}", nbody_cpu_target(), arithmetic);
  }
}

void accelerations(const Bodies& bodies, const ForceOptions& options, Accelerations& out) {
  ForceEngine(options).compute(bodies, out, true);
}

const char* nbody_cpu_target_name() { return nbody_cpu_target(); }

}  // namespace nbkit::nbody
