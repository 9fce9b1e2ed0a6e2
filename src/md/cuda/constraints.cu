// SETTLE, SHAKE and RATTLE on one GPU (cuda/constraints.cuh has the design).
#include "md/cuda/constraints.cuh"

#include <algorithm>

#include "cuda/check.hpp"
#include "md/constraint_solver.hpp"
#include "nbkit/core/error.hpp"

namespace nbkit::md {

namespace {

using V3 = Vector3<double>;
constexpr int kThreads = 128;
int blocks(std::int64_t n) { return static_cast<int>((n + kThreads - 1) / kThreads); }

// Water w's SETTLE of the positions.
__device__ void settle_positions_water(int w, const RigidWater* waters, const double* mass, const V3* reference, V3* x,
                                       const ConstraintImages& image, double* virial, int* failed) {
  const RigidWater water = waters[w];
  // Everything relative to the reference oxygen, bonds by their minimum images.
  const V3 a0 = reference[water.o];
  const V3 xo = x[water.o], xh1 = x[water.h1], xh2 = x[water.h2];
  const V3 a1 = image(xo - a0);
  V3 da, db, dc;
  double v = 0;
  if (!settle_positions(mass[water.o], mass[water.h1], water.oh, water.hh, image(reference[water.h1] - a0),
                        image(reference[water.h2] - a0), a1, a1 + image(xh1 - xo), a1 + image(xh2 - xo), da, db, dc,
                        v)) {
    atomicMax(failed, w + 1);
    virial[w] = 0;
    return;
  }
  x[water.o] = xo + da, x[water.h1] = xh1 + db, x[water.h2] = xh2 + dc;
  virial[w] = v;
}

// A small cluster held by its thread: its constraints with atoms renumbered to slots 0..atoms-1 of
// `atom`, so that SHAKE's and RATTLE's sweeps update the thread's own copies instead of global
// memory, where each sweep's loads waited on the previous sweep's stores. Nsight Compute at 30,677
// atoms on an H200 (session 34): constrain_positions_kernel 19.6 -> 17.5 us; what is left is
// presumably one warp a scheduler (81 blocks of waters) walking SETTLE's float64 chain (not
// profiled by source line). The arithmetic and its order are the global path's (the same bits
// by construction; not compared with the old kernel's on a GPU). Bonds to
// hydrogen make clusters of 1-3 constraints on 2-4 atoms (a heavy atom and its hydrogens);
// larger ones take the global path.
constexpr int kHeldConstraints = 4, kHeldAtoms = 8;
struct HeldCluster {
  int count = 0, atoms = 0;
  DistanceConstraint local[kHeldConstraints];  // i and j: slots in atom
  int atom[kHeldAtoms];

  // False when the cluster is too large to hold.
  __device__ bool hold(const DistanceConstraint* distances, int begin, int end) {
    if (end - begin > kHeldConstraints) return false;
    for (int k = begin; k < end; ++k) {
      const int i = slot(distances[k].i), j = slot(distances[k].j);
      if (i < 0 || j < 0) return false;
      local[count++] = {i, j, distances[k].d};
    }
    return true;
  }
  __device__ int slot(int a) {
    for (int s = 0; s < atoms; ++s)
      if (atom[s] == a) return s;
    if (atoms == kHeldAtoms) return -1;
    atom[atoms] = a;
    return atoms++;
  }
  __device__ int index(const DistanceConstraint& d) const { return static_cast<int>(&d - local); }
};

// Cluster c's SHAKE.
__device__ void shake_cluster(int c, const DistanceConstraint* distances, const std::int32_t* first,
                              const double* inverse_mass, const V3* reference, V3* x, const ConstraintImages& image,
                              double tolerance2, double* virial, int* failed) {
  double sum = 0;
  HeldCluster held;
  if (held.hold(distances, first[c], first[c + 1])) {
    V3 position[kHeldAtoms], bond0[kHeldConstraints];
    double w[kHeldAtoms];
    for (int a = 0; a < held.atoms; ++a) position[a] = x[held.atom[a]], w[a] = inverse_mass[held.atom[a]];
    for (int k = 0; k < held.count; ++k)
      bond0[k] = image(reference[held.atom[held.local[k].i]] - reference[held.atom[held.local[k].j]]);
    const bool converged = converge_cluster(held.local, 0, held.count, [&](const DistanceConstraint& d) {
      const V3 r0 = bond0[held.index(d)];
      const double wi = w[d.i], wj = w[d.j];
      double g = 0;
      const Correction done =
          shake_correction(image(position[d.i] - position[d.j]), r0, d.d * d.d, wi, wj, tolerance2, g, sum);
      if (done == Correction::corrected)
        position[d.i] = position[d.i] + (g * wi) * r0, position[d.j] = position[d.j] + (-g * wj) * r0;
      return done;
    });
    for (int a = 0; a < held.atoms; ++a) x[held.atom[a]] = position[a];
    if (!converged) atomicMax(failed, c + 1);
    virial[c] = sum;
    return;
  }
  const bool converged = converge_cluster(distances, first[c], first[c + 1], [&](const DistanceConstraint& d) {
    const V3 r0 = image(reference[d.i] - reference[d.j]);
    const double wi = inverse_mass[d.i], wj = inverse_mass[d.j];
    double g = 0;
    const Correction done = shake_correction(image(x[d.i] - x[d.j]), r0, d.d * d.d, wi, wj, tolerance2, g, sum);
    if (done == Correction::corrected) x[d.i] = x[d.i] + (g * wi) * r0, x[d.j] = x[d.j] + (-g * wj) * r0;
    return done;
  });
  if (!converged) atomicMax(failed, c + 1);
  virial[c] = sum;
}

// Water w's SETTLE of the velocities.
__device__ void settle_velocities_water(int w, const RigidWater* waters, const double* inverse_mass, const V3* x, V3* v,
                                        const ConstraintImages& image, double* virial) {
  const RigidWater water = waters[w];
  const int a = water.o, b = water.h1, c = water.h2;
  V3 va = v[a], vb = v[b], vc = v[c];
  virial[w] = settle_velocities(image(x[a] - x[b]), image(x[a] - x[c]), image(x[b] - x[c]), inverse_mass[a],
                                inverse_mass[b], inverse_mass[c], va, vb, vc);
  v[a] = va, v[b] = vb, v[c] = vc;
}

// Cluster c's RATTLE.
__device__ void rattle_cluster(int c, const DistanceConstraint* distances, const std::int32_t* first,
                               const double* inverse_mass, const V3* x, V3* v, const ConstraintImages& image,
                               double tolerance, double dt, double* virial, int* failed) {
  double sum = 0;
  HeldCluster held;
  if (held.hold(distances, first[c], first[c + 1])) {
    V3 velocity[kHeldAtoms], bond[kHeldConstraints];
    double w[kHeldAtoms];
    for (int a = 0; a < held.atoms; ++a) velocity[a] = v[held.atom[a]], w[a] = inverse_mass[held.atom[a]];
    for (int k = 0; k < held.count; ++k)
      bond[k] = image(x[held.atom[held.local[k].i]] - x[held.atom[held.local[k].j]]);
    const bool converged = converge_cluster(held.local, 0, held.count, [&](const DistanceConstraint& d) {
      const V3 r = bond[held.index(d)];
      const double wi = w[d.i], wj = w[d.j];
      double impulse = 0;
      const Correction done =
          rattle_correction(r, velocity[d.i] - velocity[d.j], d.d, wi, wj, tolerance, dt, impulse, sum);
      if (done == Correction::corrected)
        velocity[d.i] = velocity[d.i] + (impulse * wi) * r, velocity[d.j] = velocity[d.j] + (-impulse * wj) * r;
      return done;
    });
    for (int a = 0; a < held.atoms; ++a) v[held.atom[a]] = velocity[a];
    if (!converged) atomicMax(failed, c + 1);
    virial[c] = sum;
    return;
  }
  const bool converged = converge_cluster(distances, first[c], first[c + 1], [&](const DistanceConstraint& d) {
    const V3 r = image(x[d.i] - x[d.j]);
    const double wi = inverse_mass[d.i], wj = inverse_mass[d.j];
    double impulse = 0;
    const Correction done = rattle_correction(r, v[d.i] - v[d.j], d.d, wi, wj, tolerance, dt, impulse, sum);
    if (done == Correction::corrected) v[d.i] = v[d.i] + (impulse * wi) * r, v[d.j] = v[d.j] + (-impulse * wj) * r;
    return done;
  });
  if (!converged) atomicMax(failed, c + 1);
  virial[c] = sum;
}

// One launch for the waters and the clusters (they share no atom): the first `water_blocks`
// blocks a thread per water, the rest a thread per cluster. Two launches a step fewer than a
// kernel each, which at 30,000 atoms cost more than the work.
struct ConstraintLaunch {
  int waters, clusters, water_blocks;
  const RigidWater* water;
  const DistanceConstraint* distance;
  const std::int32_t* cluster_first;
  const double *mass, *inverse_mass;
  double* virial;  // waters' slots, then clusters'
  int* failed;     // [0] waters, [1] SHAKE, [2] RATTLE
};

__global__ void constrain_positions_kernel(ConstraintLaunch k, const V3* reference, V3* x, ConstraintImages image,
                                           double tolerance2) {
  if (static_cast<int>(blockIdx.x) < k.water_blocks) {
    const int w = blockIdx.x * blockDim.x + threadIdx.x;
    if (w < k.waters) settle_positions_water(w, k.water, k.mass, reference, x, image, k.virial, k.failed);
  } else {
    const int c = (blockIdx.x - k.water_blocks) * blockDim.x + threadIdx.x;
    if (c < k.clusters)
      shake_cluster(c, k.distance, k.cluster_first, k.inverse_mass, reference, x, image, tolerance2,
                    k.virial + k.waters, k.failed + 1);
  }
}

__global__ void constrain_velocities_kernel(ConstraintLaunch k, const V3* x, V3* v, ConstraintImages image,
                                            double tolerance, double dt) {
  if (static_cast<int>(blockIdx.x) < k.water_blocks) {
    const int w = blockIdx.x * blockDim.x + threadIdx.x;
    if (w < k.waters) settle_velocities_water(w, k.water, k.inverse_mass, x, v, image, k.virial);
  } else {
    const int c = (blockIdx.x - k.water_blocks) * blockDim.x + threadIdx.x;
    if (c < k.clusters)
      rattle_cluster(c, k.distance, k.cluster_first, k.inverse_mass, x, v, image, tolerance, dt, k.virial + k.waters,
                     k.failed + 2);
  }
}

// The step in one launch's blocks (ConstraintsGpu::langevin_middle_step): block b's atoms are
// atom[atom_first[b] .. atom_first[b + 1]) and its waters and clusters unit[unit_first[b] ..
// unit_first[b + 1]) (w < waters a water, else cluster w - waters), every unit's atoms in its
// block, at most kStepAtoms atoms a block.
constexpr int kStepAtoms = 64;
struct MiddleBlocks {
  const std::int32_t *atom_first, *atom, *unit_first, *unit;
};

// A thread per atom for the per-atom updates and a thread per unit for the constraints, the
// block's threads meeting between them (each unit's atoms are its block's, so a block needs no
// other's results): the five launches' updates in their order, each chain of SETTLE's or
// SHAKE's arithmetic in a thread as there, the thermostat's noise a thread an atom as there.
// `call` is parameter kMiddleStepCall (6). Measured on an H200 at DHFR's size (23,534 atoms,
// session 40, CUPTI traces of nvt-4fs): 20.3 us a step against 29.3 for the five launches
// (kick 2.6, RATTLE/SETTLE 8.7, thermostat 3.7, SHAKE/SETTLE 9.2, correction 2.6, and their
// gaps); a thread per unit walking its atoms in turn took 29.0 (the noise of 3-4 atoms in a row).
// The rate: 1,566.8-1,622.2 ns/day in six rows against 1,537.1-1,586.4 in five (two calls), ~2%.
__global__ void __launch_bounds__(kStepAtoms)
    langevin_middle_step_kernel(ConstraintLaunch k, double* position_virial, MiddleBlocks m, MiddleStep s,
                                ConstraintImages image, double tolerance, std::uint64_t call) {
  const int b = static_cast<int>(blockIdx.x), tid = static_cast<int>(threadIdx.x);
  const int a = m.atom_first[b] + tid, u = m.unit_first[b] + tid;
  const bool has_atom = a < m.atom_first[b + 1], has_unit = u < m.unit_first[b + 1];
  const int i = has_atom ? m.atom[a] : 0;
  const int unit = has_unit ? m.unit[u] : 0;
  if (has_atom) kick_atom(i, s.v, s.f, s.mass, s.kick_scale);
  __syncthreads();
  if (has_unit) {
    if (unit < k.waters) settle_velocities_water(unit, k.water, k.inverse_mass, s.x, s.v, image, k.virial);
    else
      rattle_cluster(unit - k.waters, k.distance, k.cluster_first, k.inverse_mass, s.x, s.v, image, tolerance, s.dt,
                     k.virial + k.waters, k.failed + 2);
  }
  __syncthreads();
  if (has_atom) langevin_middle_atom(i, s.x, s.v, s.mass, s.half, s.a, s.b, s.kt, s.seed, call, s.copies);
  __syncthreads();
  if (has_unit) {
    if (unit < k.waters)
      settle_positions_water(unit, k.water, k.mass, s.copies.reference, s.x, image, position_virial, k.failed);
    else
      shake_cluster(unit - k.waters, k.distance, k.cluster_first, k.inverse_mass, s.copies.reference, s.x, image,
                    2 * tolerance, position_virial + k.waters, k.failed + 1);
  }
  __syncthreads();
  if (has_atom) correct_velocity_atom(i, s.v, s.x, s.copies.unconstrained, s.dt, s.wrap, s.box);
}

template <class T>
cuda::DeviceBuffer<T> upload(const std::vector<T>& host, cudaStream_t stream) {
  cuda::DeviceBuffer<T> b(std::max<std::size_t>(host.size(), 1));
  if (!host.empty()) b.upload(host.data(), host.size(), stream);
  return b;
}

}  // namespace

ConstraintsGpu::ConstraintsGpu(const ConstraintSet& set, const std::vector<double>& mass, cudaStream_t stream)
    : set_(set), stream_(stream) {
  waters_ = static_cast<int>(set.waters.size());
  clusters_ = static_cast<int>(set.clusters());
  std::vector<double> inverse(mass.size());
  for (std::size_t i = 0; i < mass.size(); ++i) inverse[i] = 1.0 / mass[i];
  water_ = upload(set.waters, stream), distance_ = upload(set.distances, stream);
  cluster_first_ = upload(set.cluster_first, stream);
  mass_ = upload(mass, stream), inverse_mass_ = upload(inverse, stream);
  position_virial_ = upload(std::vector<double>(waters_ + clusters_, 0.0), stream);
  velocity_virial_ = upload(std::vector<double>(waters_ + clusters_, 0.0), stream);
  failed_ = upload(std::vector<int>(3, 0), stream);
  // The step in one launch's blocks: the waters, then the clusters, then the atoms in neither,
  // each unit whole in a block of at most kStepAtoms atoms.
  std::vector<char> constrained(mass.size(), 0);
  std::vector<std::int32_t> atom_first{0}, atoms, unit_first{0}, units;
  auto add_unit = [&](std::int32_t unit, const std::vector<std::int32_t>& members) {
    if (atoms.size() - static_cast<std::size_t>(atom_first.back()) + members.size() > kStepAtoms) {
      atom_first.push_back(static_cast<std::int32_t>(atoms.size()));
      unit_first.push_back(static_cast<std::int32_t>(units.size()));
    }
    if (unit >= 0) units.push_back(unit);
    for (const std::int32_t i : members) atoms.push_back(i), constrained[static_cast<std::size_t>(i)] = 1;
  };
  for (std::size_t w = 0; w < set.waters.size(); ++w)
    add_unit(static_cast<std::int32_t>(w), {set.waters[w].o, set.waters[w].h1, set.waters[w].h2});
  bool fits = true;
  for (std::size_t c = 0; c < set.clusters(); ++c) {
    std::vector<std::int32_t> members;
    for (std::int32_t k = set.cluster_first[c]; k < set.cluster_first[c + 1]; ++k)
      for (const std::int32_t a : {set.distances[k].i, set.distances[k].j})
        if (std::find(members.begin(), members.end(), a) == members.end()) members.push_back(a);
    if (members.size() > static_cast<std::size_t>(kStepAtoms)) fits = false;  // a cluster larger than a block
    add_unit(static_cast<std::int32_t>(waters_ + c), members);
  }
  for (std::size_t i = 0; i < mass.size(); ++i)
    if (!constrained[i]) add_unit(-1, {static_cast<std::int32_t>(i)});
  atom_first.push_back(static_cast<std::int32_t>(atoms.size()));
  unit_first.push_back(static_cast<std::int32_t>(units.size()));
  step_blocks_ = fits && !atoms.empty() ? static_cast<int>(atom_first.size()) - 1 : 0;
  step_atom_first_ = upload(atom_first, stream), step_atom_ = upload(atoms, stream);
  step_unit_first_ = upload(unit_first, stream), step_unit_ = upload(units, stream);
  NBKIT_CUDA_CHECK(cudaStreamSynchronize(stream));  // the host vectors above go out of scope
}

void ConstraintsGpu::constrain_positions(const V3* reference, V3* x, const ConstraintImages& image) {
  const int water_blocks = blocks(waters_), all = water_blocks + blocks(clusters_);
  if (all == 0) return;
  const ConstraintLaunch k{waters_,           clusters_,          water_blocks,           water_.data(),
                           distance_.data(), cluster_first_.data(), mass_.data(),        inverse_mass_.data(),
                           position_virial_.data(), failed_.data()};
  constrain_positions_kernel<<<all, kThreads, 0, stream_>>>(k, reference, x, image, 2 * set_.tolerance);
  NBKIT_CUDA_CHECK_LAUNCH();
}

void ConstraintsGpu::constrain_velocities(const V3* x, V3* v, const ConstraintImages& image, double dt) {
  const int water_blocks = blocks(waters_), all = water_blocks + blocks(clusters_);
  if (all == 0) return;
  const ConstraintLaunch k{waters_,           clusters_,          water_blocks,           water_.data(),
                           distance_.data(), cluster_first_.data(), mass_.data(),        inverse_mass_.data(),
                           velocity_virial_.data(), failed_.data()};
  constrain_velocities_kernel<<<all, kThreads, 0, stream_>>>(k, x, v, image, set_.tolerance, dt);
  NBKIT_CUDA_CHECK_LAUNCH();
}

void ConstraintsGpu::langevin_middle_step(const MiddleStep& step, const ConstraintImages& image, std::uint64_t call) {
  if (step_blocks_ == 0)
    throw Error("the GPU's Langevin-middle step in one launch: a cluster larger than a block (a bug)");
  const ConstraintLaunch k{waters_,           clusters_,          blocks(waters_),        water_.data(),
                           distance_.data(), cluster_first_.data(), mass_.data(),        inverse_mass_.data(),
                           velocity_virial_.data(), failed_.data()};
  const MiddleBlocks m{step_atom_first_.data(), step_atom_.data(), step_unit_first_.data(), step_unit_.data()};
  langevin_middle_step_kernel<<<step_blocks_, kStepAtoms, 0, stream_>>>(k, position_virial_.data(), m, step, image,
                                                                        set_.tolerance, call);
  NBKIT_CUDA_CHECK_LAUNCH();
}

bool ConstraintsGpu::steps_in_one_launch() const { return step_blocks_ > 0; }

const void* ConstraintsGpu::middle_step_function() {
  return reinterpret_cast<const void*>(langevin_middle_step_kernel);
}

std::array<double, 2> ConstraintsGpu::virials_and_check() {
  const std::size_t slots = static_cast<std::size_t>(waters_) + static_cast<std::size_t>(clusters_);
  std::vector<double> position(slots), velocity(slots);
  int failed[3] = {0, 0, 0};
  if (slots > 0) {
    position_virial_.download(position.data(), slots, stream_);
    velocity_virial_.download(velocity.data(), slots, stream_);
  }
  failed_.download(failed, 3, stream_);
  NBKIT_CUDA_CHECK(cudaMemsetAsync(failed_.data(), 0, 3 * sizeof(int), stream_));
  NBKIT_CUDA_CHECK(cudaStreamSynchronize(stream_));
  if (failed[0] > 0) throw_unsettled(set_, failed[0] - 1);
  if (failed[1] > 0) throw_unconverged(set_, "SHAKE", failed[1] - 1);
  if (failed[2] > 0) throw_unconverged(set_, "RATTLE", failed[2] - 1);
  std::array<double, 2> sums{0, 0};
  for (std::size_t k = 0; k < slots; ++k) sums[0] += position[k], sums[1] += velocity[k];
  return sums;
}

}  // namespace nbkit::md
