#pragma once
// Gravitational N-body simulation: all-pairs softened gravity, leapfrog, Plummer spheres
// (seed 002; Nyland, Harris, Prins, GPU Gems 3 ch. 31).
//
// Units: Henon's N-body units (Heggie & Mathieu 1986): G = 1, total mass M = 1, total energy
// E = -1/4, so the virial radius is 1 and the crossing time 2 sqrt(2). Plain C++: the same
// header for CPU-only and CUDA builds.
#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "nbkit/core/backend.hpp"

namespace nbkit::nbody {

// Bodies as structure of arrays (positions, velocities, masses).
struct Bodies {
  std::vector<double> x, y, z, vx, vy, vz, mass;
  std::size_t size() const { return x.size(); }
  void resize(std::size_t n);
};

// A Plummer sphere of n equal masses in Henon units, centre of mass at rest at the origin
// (Aarseth, Henon & Wielen, A&A 37:183, 1974). Deterministic for a given seed. n >= 2: Henon
// units scale by the potential energy, which one body does not have.
Bodies plummer(std::size_t n, std::uint64_t seed);

// Test masses for force accuracy: n equal masses at rest drawn from a Hernquist (1990) profile,
// rho(r) ~ 1 / (r (r + a)^3) with a = 1, cut at r = 100 a (98% of the mass), centre of mass at
// the origin; total mass 1. A cuspy profile (the tree's hard case), not an equilibrium.
Bodies hernquist_bodies(std::size_t n, std::uint64_t seed);
// Two Plummer spheres of n/2 and n - n/2 bodies (total mass 1; each the size of a Henon-unit
// sphere, in its own virial equilibrium), centres `separation` apart on the x axis, at rest
// with respect to each other: a head-on merger.
Bodies merging_plummer_spheres(std::size_t n, std::uint64_t seed, double separation = 4.0);

// How the accelerations are summed.
//   all_pairs  every pair j != i (GPU Gems 3 ch. 31; seed 002): exact up to the arithmetic.
//   tree       Barnes-Hut (Nature 324:446, 1986): an octree of Morton-ordered bodies, far cells
//              acting through their multipole expansions (monopole and quadrupole), near ones
//              pair by pair. O(N log N) instead of N^2.
enum class GravityMethod { all_pairs, tree };
GravityMethod parse_gravity_method(const std::string& name);  // "all-pairs", "tree"
std::string to_string(GravityMethod method);

struct TreeOptions {
  // Opening angle: a cell of side l whose centre of mass is a distance d from the nearest point
  // of a group of bodies acts on them as a whole when d > l / theta + delta, delta the distance
  // of its centre of mass from its geometric centre (Barnes 1994's correction, Bonsai's
  // criterion: Bedorf et al. 2012). 0 opens every cell (all pairs, in the tree's order);
  // at most 1, beyond which the expansion can diverge at a cell's corner.
  double theta = 0.5;
  bool quadrupole = true;  // false: monopoles (cells' centres of mass) only
  int leaf_size = 0;       // most bodies in a leaf (a group walking the tree together); 0: the backend's choice
};

// Host memory of a run of n bodies: the bodies, accelerations and the force loop's copies
// (for the resource check before a run); a tree adds its cells and the walk's lists.
std::uint64_t run_memory_bytes(std::size_t n, GravityMethod method = GravityMethod::all_pairs);

// Where a tree evaluation's time went (seconds): building the tree (on the GPU: the bodies'
// copy to the device included) and walking it (on the GPU: the results' copy back included).
struct TreeTimings {
  double build = 0, walk = 0;
};

struct ForceOptions {
  double softening = 0.01;  // epsilon, length units: the Plummer-softened law below
  GravityMethod method = GravityMethod::all_pairs;  // the reference backend sums all pairs only
  TreeOptions tree;                                 // method tree
  Backend backend = Backend::cpu;  // automatic: the GPUs when one is usable, else the CPU
  Precision precision = Precision::single;
  int threads = 0;          // 0: all hardware threads
  std::vector<int> gpus;    // --backend cuda: the device indices to split the bodies over; empty: all
  // Hears the fraction of one evaluation done (CPU backends, whose million-body evaluations
  // take minutes); may be empty.
  std::function<void(double)> progress;
};

// Per body: acceleration a_i = sum_{j != i} m_j (r_j - r_i) / (|r_j - r_i|^2 + eps^2)^(3/2) and
// potential phi_i = -sum_{j != i} m_j / (|r_j - r_i|^2 + eps^2)^(1/2).
struct Accelerations {
  std::vector<double> ax, ay, az, potential;
  bool has_potential = false;  // false when the last evaluation skipped the potentials
  void resize(std::size_t n);
};

// Bodies already in a GPU's memory (a CuPy array, a PyTorch CUDA tensor, another CUDA code's
// buffers): views, no ownership. Positions (n, 3) and masses (n,) as float32 or float64 with
// strides in elements; results written to the same device as float64: accelerations (n, 3)
// row-major and, when `potentials` is not null, potentials (n,). Nothing passes through the
// host but a few flags (the inputs' and results' checks).
struct DeviceBodies {
  int device = 0;  // the CUDA device the arrays live on
  std::int64_t n = 0;
  const void* positions = nullptr;
  bool positions_float64 = true;
  std::int64_t position_strides[2] = {3, 1};
  const void* masses = nullptr;
  bool masses_float64 = true;
  std::int64_t mass_stride = 1;
  double* accelerations = nullptr;
  double* potentials = nullptr;
  // The cudaStream_t the inputs were written on (0: the legacy default stream): the engine's
  // work waits for it; the call returns when the results are written.
  void* stream = nullptr;
};

// The force evaluator of a run: checks the options once, resolves --backend auto, and keeps
// its backend's resources (GPU buffers, pinned staging memory) from one step to the next.
class ForceEngine {
 public:
  explicit ForceEngine(const ForceOptions& options);
  ~ForceEngine();
  ForceEngine(ForceEngine&&) noexcept;
  ForceEngine& operator=(ForceEngine&&) noexcept;

  // Accelerations, and the potentials too when with_potential (what diagnostics need; on
  // the GPU a step without them is ~10% faster). The accelerations are the same bits either way.
  // Throws nbkit::Error for bodies with non-finite positions or masses that are not positive
  // and finite, and when a result is not finite (never returns NaN).
  void compute(const Bodies& bodies, Accelerations& out, bool with_potential = true);
  // The accelerations and potentials of bodies [first, last) only, each against every body (a
  // rank's share under mpirun), the same bits as compute()'s for them (on the GPUs: as one GPU
  // of the same model computing every body); the other entries of `out` (sized to all bodies)
  // are left as they were. All pairs (the tree is refused: one process's).
  void compute_range(const Bodies& bodies, std::size_t first, std::size_t last, Accelerations& out);
  // The same for bodies in a GPU's memory (backend cuda, one GPU: the arrays' own). Throws
  // nbkit::Error naming the first body whose position is not finite or whose mass is not positive
  // and finite, and when a result is not finite.
  void compute_on_device(const DeviceBodies& bodies);
  Backend backend() const;  // never automatic
  const ForceOptions& options() const;  // as checked (backend resolved, threads counted)
  // What runs, for logs: "CPU AVX3, float32 with float64 sums", "2 x NVIDIA H200, float32...".
  std::string description() const;
  // Why --backend auto chose the CPU; empty otherwise.
  const std::string& notice() const;
  // The GPU kernels' seconds in the last compute (CUDA events; the slowest device); 0 on the CPU.
  double last_kernel_seconds() const;
  // The last tree evaluation's build and walk (zeros for all pairs).
  TreeTimings last_tree_timings() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// One evaluation with a temporary engine (tests, one-off uses).
void accelerations(const Bodies& bodies, const ForceOptions& options, Accelerations& out);

// The SIMD target the CPU force loop runs on here (e.g. "AVX3").
const char* nbody_cpu_target_name();

// What an astrophysicist checks before trusting a run.
struct Diagnostics {
  double time = 0;
  double kinetic = 0, potential = 0, total = 0;
  std::array<double, 3> momentum{}, angular_momentum{};
  double virial_ratio = 0;  // K / |W|: 1/2 in virial equilibrium
};
// `acc` must hold the accelerations and potentials at the bodies' current positions.
Diagnostics diagnose(const Bodies& bodies, const Accelerations& acc, double time);

// One kick-drift-kick leapfrog step (symplectic, second order): v += a dt/2, x += v dt,
// a = a(x), v += a dt/2. `acc` holds the accelerations at the current positions on entry
// and at the new positions on return (the potentials too when with_potential).
void leapfrog_step(Bodies& bodies, Accelerations& acc, double dt, ForceEngine& forces, bool with_potential = true);
// The same with a temporary engine (tests; a run keeps one engine for all its steps).
void leapfrog_step(Bodies& bodies, Accelerations& acc, double dt, const ForceOptions& options);

}  // namespace nbkit::nbody
