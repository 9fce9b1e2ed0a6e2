// The biomolecular step on one GPU (md/molecular_gpu_dynamics.hpp has the design): each kernel
// is the host engine's loop over atoms (molecular_engine.cpp, integrator.cpp) with the same
// arithmetic, a thread per atom.
#include <cuda_runtime.h>

#include <array>
#include <cmath>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cuda/check.hpp"
#include "cuda/device_buffer.hpp"
#include "cuda/pinned_buffer.hpp"
#include "md/cuda/constraints.cuh"
#include "md/cuda/middle_step.cuh"
#include "md/cuda/molecular_pair_list.cuh"  // env_switch
#include "md/kinetic_sum.hpp"
#include "md/langevin_noise.hpp"
#include "md/molecular_gpu.hpp"
#include "md/molecular_gpu_dynamics.hpp"
#include "md/periodic.hpp"

namespace nbkit::md {

namespace {

using V3 = Vector3<double>;
constexpr int kThreads = 128;
int blocks(std::int64_t n) { return static_cast<int>((n + kThreads - 1) / kThreads); }

__global__ void kick_kernel(int n, V3* v, const V3* f, const double* mass, double scale) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  kick_atom(i, v, f, mass, scale);
}

__global__ void drift_kernel(int n, V3* x, const V3* v, double dt, ConstraintCopies copies) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const V3 start = x[i];
  x[i] = start + dt * v[i];
  if (copies.reference) copies.reference[i] = start, copies.unconstrained[i] = x[i];
}

__global__ void langevin_middle_kernel(int n, V3* x, V3* v, const double* mass, double half, double a, double b,
                                       double kt, std::uint64_t seed, std::uint64_t call, ConstraintCopies copies) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  langevin_middle_atom(i, x, v, mass, half, a, b, kt, seed, call, copies);
}

// The sum of m v^2 in kinetic_sum.hpp's order, a thread a slice of kKineticSlice, each in
// order: `kinetic_slices` writes slice k's sum of the atoms' terms, `slice_sums` slice k's sum of
// the level below's sums, and `total_of` adds the last level's in order (one thread).
__global__ void kinetic_slices(int n, const V3* v, const double* mass, double* out) {
  const int k = blockIdx.x * blockDim.x + threadIdx.x;
  const int first = k * kKineticSlice;
  if (first >= n) return;
  double sum = 0;
  for (int i = first; i < min(n, first + kKineticSlice); ++i) sum = add_mass_velocity2(sum, mass[i], v[i].x, v[i].y, v[i].z);
  out[k] = sum;
}
__global__ void slice_sums(int count, const double* in, double* out) {
  const int k = blockIdx.x * blockDim.x + threadIdx.x;
  const int first = k * kKineticSlice;
  if (first >= count) return;
  double sum = 0;
  for (int i = first; i < min(count, first + kKineticSlice); ++i) sum = __dadd_rn(sum, in[i]);
  out[k] = sum;
}
__global__ void total_of(int count, const double* in, double* out) {
  double sum = 0;
  for (int i = 0; i < count; ++i) sum = __dadd_rn(sum, in[i]);
  *out = sum;
}

__global__ void wrap_kernel(int n, V3* x, BoxEdges box) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  x[i] = wrapped(x[i], box);
}

__global__ void correct_velocities_kernel(int n, V3* v, V3* x, const V3* unconstrained, double dt, bool wrap,
                                          BoxEdges box) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  correct_velocity_atom(i, v, x, unconstrained, dt, wrap, box);
}

bool same_box(const BoxEdges& a, const BoxEdges& b) {
  for (int k = 0; k < 3; ++k)
    if (a.lo[k] != b.lo[k] || a.length[k] != b.length[k]) return false;
  return true;
}

BoxEdges edges_of(const PeriodicBox& box) {
  BoxEdges edges{};
  for (int a = 0; a < 3; ++a) edges.lo[a] = box.lo[a], edges.length[a] = box.length(a);
  return edges;
}

}  // namespace

struct MolecularGpuDynamics::State {
  MolecularGpuForces* forces = nullptr;
  int device = 0;  // the forces' (set at each step's first kernel and each transfer)
  cudaStream_t stream = nullptr;
  int n = 0;
  double force_to_acceleration = 1;
  double dt = 0;  // the last constraint step's, for the virial's units
  cuda::DeviceBuffer<V3> v, reference, unconstrained;
  // The positions already wrapped into this box since their last update (constrain_positions
  // wraps as it corrects the velocities, so evaluate need not).
  std::optional<BoxEdges> wrapped;
  ConstraintCopies copies() {
    return constraints ? ConstraintCopies{reference.data(), unconstrained.data()} : ConstraintCopies{};
  }
  cuda::DeviceBuffer<double> mass;
  cuda::DeviceBuffer<double> kinetic;  // the sum of m v^2's slices, their slices, and the total
  bool thermo_on_device = true;        // NBKIT_MD_DEVICE_THERMO
  std::unique_ptr<ConstraintsGpu> constraints;
  // Staging between the System's arrays and the device's: positions, velocities and forces side
  // by side (3 n), so that a download is three copies and one wait; page-locked, where it can be
  // had, for the copies' speed (a thermo row, a frame or a checkpoint brings all three to the
  // host), else pageable (NBKIT_MD_PINNED_STAGING=0: pageable always, for A/B runs).
  std::optional<cuda::PinnedBuffer<V3>> pinned;
  bool pinned_refused = !env_switch("NBKIT_MD_PINNED_STAGING", true);
  std::vector<V3> pageable;
  V3* staging() {
    const auto count = static_cast<std::size_t>(3) * static_cast<std::size_t>(n);
    if (!pinned && !pinned_refused) {
      try {
        pinned.emplace(count);
      } catch (const Error&) {
        pinned_refused = true;
      }
    }
    if (pinned) return pinned->data();
    pageable.resize(count);
    return pageable.data();
  }
  // Steps as graphs (step_as_graph): the last few keys' (an energies step and a plain one at least).
  struct StepGraph {
    StepKey key;
    std::uint64_t configuration = 0;
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t exec = nullptr;
    cudaGraphNode_t langevin = nullptr;  // langevin_middle_kernel's node, its `call` set per launch
    cudaKernelNodeParams langevin_parameters{};
    int parameters = 0, call = 0;  // its parameters' count, and where `call` is
    StepGraph() = default;
    StepGraph(const StepGraph&) = delete;
    StepGraph& operator=(const StepGraph&) = delete;
    ~StepGraph() {
      if (exec) cudaGraphExecDestroy(exec);
      if (graph) cudaGraphDestroy(graph);
    }
  };
  bool graphs = true, graph_priorities = true;
  std::vector<std::unique_ptr<StepGraph>> step_graphs;
  // The thermostat's node in the graph being captured (langevin_middle_kernel's, or the step in
  // one launch's), its kernel and where its `call` parameter is.
  cudaGraphNode_t captured_langevin = nullptr;
  const void* captured_function = nullptr;
  int captured_parameters = 0, captured_call = 0;
  bool fused = true;  // the Langevin-middle step with constraints in one launch (NBKIT_MIDDLE_STEP_FUSED)
  // The node just launched on `stream` as the thermostat's, where a capture is active.
  void note_langevin_node(const void* function, int parameters, int call_index) {
    cudaStreamCaptureStatus status;
    NBKIT_CUDA_CHECK(cudaStreamIsCapturing(stream, &status));
    if (status != cudaStreamCaptureStatusActive) return;
    const cudaGraphNode_t* last = nullptr;
    std::size_t count = 0;
    NBKIT_CUDA_CHECK(cudaStreamGetCaptureInfo(stream, &status, nullptr, nullptr, &last, nullptr, &count));
    captured_langevin = count == 1 ? last[0] : nullptr;
    captured_function = function, captured_parameters = parameters, captured_call = call_index;
  }
};

bool MolecularGpuDynamics::StepKey::operator==(const StepKey& o) const {
  for (int k = 0; k < 6; ++k)
    if (box[k] != o.box[k]) return false;
  return dt == o.dt && a == o.a && b == o.b && kt == o.kt && seed == o.seed && energies == o.energies &&
         langevin == o.langevin;
}

// langevin_middle_kernel's parameters: `call` is the tenth (index 9).
constexpr int kLangevinParameters = 11, kLangevinCall = 9;
constexpr int kMostLangevinParameters = 11;  // of it and the step in one launch's
static_assert(ConstraintsGpu::kMiddleStepParameters <= kMostLangevinParameters);

bool MolecularGpuDynamics::step_as_graph(const StepKey& key, std::uint64_t langevin_call,
                                         const std::function<void()>& queue, const std::optional<PeriodicBox>& box) {
  State& s = *state_;
  if (!s.graphs || !s.forces->graph_ready(box)) return false;
  const std::uint64_t configuration = s.forces->graph_configuration();
  State::StepGraph* g = nullptr;
  for (auto& candidate : s.step_graphs)
    if (candidate->key == key && candidate->configuration == configuration) g = candidate.get();
  if (!g) {
    // Graphs of an older configuration hold freed buffers: gone; at most four keys kept.
    std::erase_if(s.step_graphs, [&](const auto& old) { return old->configuration != configuration; });
    if (s.step_graphs.size() >= 4) s.step_graphs.erase(s.step_graphs.begin());
    auto made = std::make_unique<State::StepGraph>();
    made->key = key, made->configuration = configuration;
    NBKIT_CUDA_CHECK(cudaSetDevice(s.device));
    s.captured_langevin = nullptr;
    NBKIT_CUDA_CHECK(cudaStreamBeginCapture(s.stream, cudaStreamCaptureModeThreadLocal));
    try {
      queue();
    } catch (...) {
      cudaGraph_t ended = nullptr;
      cudaStreamEndCapture(s.stream, &ended);
      if (ended) cudaGraphDestroy(ended);
      throw;
    }
    NBKIT_CUDA_CHECK(cudaStreamEndCapture(s.stream, &made->graph));
    // With the nodes' own priorities (captured from their streams': PME's mesh high), as the
    // launches without a graph run; NBKIT_STEP_GRAPH_PRIORITIES=0: the stream's it is launched into.
    NBKIT_CUDA_CHECK(cudaGraphInstantiate(&made->exec, made->graph,
                                          s.graph_priorities ? cudaGraphInstantiateFlagUseNodePriority : 0));
    if (key.langevin) {  // its node, noted as it was captured, checked by its function and call
      cudaKernelNodeParams p{};
      if (s.captured_langevin) NBKIT_CUDA_CHECK(cudaGraphKernelNodeGetParams(s.captured_langevin, &p));
      if (!s.captured_langevin || p.func != s.captured_function ||
          *static_cast<const std::uint64_t*>(p.kernelParams[s.captured_call]) != langevin_call)
        throw Error("the GPU step's graph: its Langevin kernel is not as captured (NBKIT_STEP_GRAPH=0 runs without graphs)");
      made->langevin = s.captured_langevin, made->langevin_parameters = p;
      made->parameters = s.captured_parameters, made->call = s.captured_call;
    }
    s.step_graphs.push_back(std::move(made));
    g = s.step_graphs.back().get();
  }
  if (g->langevin) {
    void* arguments[kMostLangevinParameters];
    for (int k = 0; k < g->parameters; ++k) arguments[k] = g->langevin_parameters.kernelParams[k];
    arguments[g->call] = &langevin_call;
    cudaKernelNodeParams p = g->langevin_parameters;
    p.kernelParams = arguments;
    NBKIT_CUDA_CHECK(cudaGraphExecKernelNodeSetParams(g->exec, g->langevin, &p));
  }
  NBKIT_CUDA_CHECK(cudaGraphLaunch(g->exec, s.stream));
  return true;
}

MolecularGpuDynamics::MolecularGpuDynamics(MolecularGpuForces& forces, const System& system,
                                           const ConstraintSet& constraints)
    : state_(std::make_unique<State>()) {
  if (!forces.resident()) throw Error("the GPU's step needs an evaluation kept on the device (not MSM's)");
  State& s = *state_;
  s.forces = &forces;
  s.stream = forces.stream();
  NBKIT_CUDA_CHECK(cudaGetDevice(&s.device));  // MolecularGpuForces's constructor set it
  s.n = static_cast<int>(system.size());
  s.force_to_acceleration = unit_constants(system.units).force_to_acceleration;
  s.v = cuda::DeviceBuffer<V3>(s.n);
  std::vector<double> mass(system.size());
  for (std::size_t i = 0; i < system.size(); ++i) mass[i] = system.mass(i);
  s.mass = cuda::DeviceBuffer<double>(s.n);
  s.mass.upload(mass.data(), mass.size(), s.stream);
  s.graphs = env_switch("NBKIT_STEP_GRAPH", true);
  s.graph_priorities = env_switch("NBKIT_STEP_GRAPH_PRIORITIES", true);
  s.fused = env_switch("NBKIT_MIDDLE_STEP_FUSED", true);
  s.thermo_on_device = env_switch("NBKIT_MD_DEVICE_THERMO", true);
  if (!constraints.empty()) {
    s.reference = cuda::DeviceBuffer<V3>(s.n), s.unconstrained = cuda::DeviceBuffer<V3>(s.n);
    s.constraints = std::make_unique<ConstraintsGpu>(constraints, mass, s.stream);
  }
  NBKIT_CUDA_CHECK(cudaStreamSynchronize(s.stream));
}

MolecularGpuDynamics::~MolecularGpuDynamics() = default;

void MolecularGpuDynamics::upload(const System& system, const Forces& forces) {
  State& s = *state_;
  NBKIT_CUDA_CHECK(cudaSetDevice(s.device));
  V3* const host = s.staging();
  auto put = [&](const std::vector<double>& x, const std::vector<double>& y, const std::vector<double>& z, int part,
                 V3* to) {
    V3* const from = host + static_cast<std::size_t>(part) * s.n;
    for (int i = 0; i < s.n; ++i) from[i] = {x[i], y[i], z[i]};
    NBKIT_CUDA_CHECK(cudaMemcpyAsync(to, from, s.n * sizeof(V3), cudaMemcpyHostToDevice, s.stream));
  };
  put(system.x, system.y, system.z, 0, s.forces->positions());
  put(system.vx, system.vy, system.vz, 1, s.v.data());
  put(forces.fx, forces.fy, forces.fz, 2, s.forces->forces());
  NBKIT_CUDA_CHECK(cudaStreamSynchronize(s.stream));  // the staging is reused
  s.wrapped.reset();
}

double MolecularGpuDynamics::download(System& system, Forces& forces, EnergyTerms& terms) {
  State& s = *state_;
  NBKIT_CUDA_CHECK(cudaSetDevice(s.device));
  const std::array<double, 2> constraint_virial = checked_constraint_virial();
  V3* const host = s.staging();
  const V3* const parts[3] = {s.forces->positions(), s.v.data(), s.forces->forces()};
  for (int part = 0; part < 3; ++part)
    NBKIT_CUDA_CHECK(cudaMemcpyAsync(host + static_cast<std::size_t>(part) * s.n, parts[part], s.n * sizeof(V3),
                                     cudaMemcpyDeviceToHost, s.stream));
  NBKIT_CUDA_CHECK(cudaStreamSynchronize(s.stream));
  auto get = [&](int part, std::vector<double>& x, std::vector<double>& y, std::vector<double>& z) {
    const V3* const from = host + static_cast<std::size_t>(part) * s.n;
    x.resize(s.n), y.resize(s.n), z.resize(s.n);
    for (int i = 0; i < s.n; ++i) x[i] = from[i].x, y[i] = from[i].y, z[i] = from[i].z;
  };
  get(0, system.x, system.y, system.z);
  get(1, system.vx, system.vy, system.vz);
  get(2, forces.fx, forces.fy, forces.fz);
  return energies_and_virial(constraint_virial, forces, terms);
}

// What download checks before it copies: a force not finite, a constraint the device could not
// satisfy; the constraint forces' virial halves (position, velocity) if there are constraints.
std::array<double, 2> MolecularGpuDynamics::checked_constraint_virial() {
  State& s = *state_;
  const int nonfinite = s.forces->first_nonfinite_force();
  if (nonfinite >= 0)
    throw Error("the force on atom " + std::to_string(nonfinite + 1) + " is not finite: do two atoms overlap?");
  std::array<double, 2> constraint_virial{0, 0};
  if (s.constraints) constraint_virial = s.constraints->virials_and_check();
  return constraint_virial;
}

// The last evaluation's energies and virial into `forces` and `terms`, the constraint forces'
// virial added (returned), as the host engine adds it.
double MolecularGpuDynamics::energies_and_virial(const std::array<double, 2>& constraint_virial, Forces& forces,
                                                 EnergyTerms& terms) {
  State& s = *state_;
  const MolecularForces sums = s.forces->device_sums();
  if (!std::isfinite(sums.energy.total())) throw Error("the energy is not finite: do two atoms overlap?");
  terms = sums.energy;
  forces.potential = sums.energy.total();
  forces.virial = sums.virial;
  double constraints = 0;
  if (s.constraints && s.dt > 0)
    constraints = (constraint_virial[0] / (s.dt * s.dt) + constraint_virial[1] / s.dt) / s.force_to_acceleration;
  forces.virial += constraints;
  return constraints;
}

bool MolecularGpuDynamics::thermo_on_device() const { return state_->thermo_on_device; }

double MolecularGpuDynamics::sums(Forces& forces, EnergyTerms& terms, double& mass_velocity2) {
  State& s = *state_;
  NBKIT_CUDA_CHECK(cudaSetDevice(s.device));
  const std::array<double, 2> constraint_virial = checked_constraint_virial();
  // Slices of atoms, slices of those, then the total: kinetic_sum.hpp's order.
  const int first = (s.n + kKineticSlice - 1) / kKineticSlice;
  const int second = (first + kKineticSlice - 1) / kKineticSlice;
  if (s.kinetic.size() < static_cast<std::size_t>(first + second + 1))
    s.kinetic = cuda::DeviceBuffer<double>(static_cast<std::size_t>(first + second + 1));
  double* const level1 = s.kinetic.data();
  double* const level2 = level1 + first;
  kinetic_slices<<<blocks(first), kThreads, 0, s.stream>>>(s.n, s.v.data(), s.mass.data(), level1);
  NBKIT_CUDA_CHECK_LAUNCH();
  slice_sums<<<blocks(second), kThreads, 0, s.stream>>>(first, level1, level2);
  NBKIT_CUDA_CHECK_LAUNCH();
  total_of<<<1, 1, 0, s.stream>>>(second, level2, level2 + second);
  NBKIT_CUDA_CHECK_LAUNCH();
  NBKIT_CUDA_CHECK(cudaMemcpyAsync(&mass_velocity2, level2 + second, sizeof(double), cudaMemcpyDeviceToHost, s.stream));
  NBKIT_CUDA_CHECK(cudaStreamSynchronize(s.stream));
  if (!std::isfinite(mass_velocity2)) throw Error("the kinetic energy is not finite: a velocity is not finite");
  return energies_and_virial(constraint_virial, forces, terms);
}

void MolecularGpuDynamics::kick(double scale) {
  State& s = *state_;
  NBKIT_CUDA_CHECK(cudaSetDevice(s.device));
  kick_kernel<<<blocks(s.n), kThreads, 0, s.stream>>>(s.n, s.v.data(), s.forces->forces(), s.mass.data(), scale);
  NBKIT_CUDA_CHECK_LAUNCH();
}

void MolecularGpuDynamics::drift(double dt) {
  State& s = *state_;
  drift_kernel<<<blocks(s.n), kThreads, 0, s.stream>>>(s.n, s.forces->positions(), s.v.data(), dt, s.copies());
  NBKIT_CUDA_CHECK_LAUNCH();
  s.wrapped.reset();
}

void MolecularGpuDynamics::langevin_middle(double dt, double a, double b, double kt_mv2, std::uint64_t seed,
                                           std::uint64_t call) {
  State& s = *state_;
  langevin_middle_kernel<<<blocks(s.n), kThreads, 0, s.stream>>>(s.n, s.forces->positions(), s.v.data(),
                                                                 s.mass.data(), 0.5 * dt, a, b, kt_mv2, seed, call,
                                                                 s.copies());
  NBKIT_CUDA_CHECK_LAUNCH();
  s.wrapped.reset();
  s.note_langevin_node(reinterpret_cast<const void*>(langevin_middle_kernel), kLangevinParameters, kLangevinCall);
}

bool MolecularGpuDynamics::fuses_middle_step() const {
  return state_->constraints && state_->fused && state_->constraints->steps_in_one_launch();
}

void MolecularGpuDynamics::langevin_middle_step(double kick_scale, double dt, double a, double b, double kt_mv2,
                                                std::uint64_t seed, std::uint64_t call,
                                                const std::optional<PeriodicBox>& box) {
  State& s = *state_;
  if (!s.constraints) throw Error("the GPU's Langevin-middle step in one launch is for runs with constraints (a bug)");
  NBKIT_CUDA_CHECK(cudaSetDevice(s.device));
  s.dt = dt;
  MiddleStep step{};
  step.x = s.forces->positions(), step.v = s.v.data(), step.f = s.forces->forces(), step.mass = s.mass.data();
  step.kick_scale = kick_scale, step.half = 0.5 * dt, step.a = a, step.b = b, step.kt = kt_mv2, step.seed = seed;
  step.copies = s.copies(), step.dt = dt, step.wrap = box.has_value(), step.box = box ? edges_of(*box) : BoxEdges{};
  s.constraints->langevin_middle_step(step, constraint_images(box), call);
  s.note_langevin_node(ConstraintsGpu::middle_step_function(), ConstraintsGpu::kMiddleStepParameters,
                       ConstraintsGpu::kMiddleStepCall);
  s.wrapped.reset();
  if (box) s.wrapped = edges_of(*box);
}

void MolecularGpuDynamics::constrain_positions(double dt, const std::optional<PeriodicBox>& box) {
  State& s = *state_;
  if (!s.constraints) return;
  s.dt = dt;
  V3* x = s.forces->positions();
  s.constraints->constrain_positions(s.reference.data(), x, constraint_images(box));
  correct_velocities_kernel<<<blocks(s.n), kThreads, 0, s.stream>>>(s.n, s.v.data(), x, s.unconstrained.data(), dt,
                                                                    box.has_value(), box ? edges_of(*box) : BoxEdges{});
  NBKIT_CUDA_CHECK_LAUNCH();
  if (box) s.wrapped = edges_of(*box);
}

void MolecularGpuDynamics::constrain_velocities(double dt, const std::optional<PeriodicBox>& box) {
  State& s = *state_;
  if (!s.constraints) return;
  s.dt = dt;
  s.constraints->constrain_velocities(s.forces->positions(), s.v.data(), constraint_images(box), dt);
}

void MolecularGpuDynamics::evaluate(const std::optional<PeriodicBox>& box, bool energies) {
  State& s = *state_;
  if (box && !(s.wrapped && same_box(*s.wrapped, edges_of(*box)))) {
    wrap_kernel<<<blocks(s.n), kThreads, 0, s.stream>>>(s.n, s.forces->positions(), edges_of(*box));
    NBKIT_CUDA_CHECK_LAUNCH();
  }
  s.wrapped.reset();
  s.forces->evaluate_on_device(box, energies);
}

void MolecularGpuDynamics::synchronize() { NBKIT_CUDA_CHECK(cudaStreamSynchronize(state_->stream)); }

}  // namespace nbkit::md
