#pragma once
// Velocity Verlet and the Langevin thermostat on the device, the graph steps' decisions, the kinetic sum.
// Part of the GPU MD engine (engine_cuda.cu, whose comment has the design); included there
// only, one translation unit, split by job as GROMACS's nbnxm splits its GPU code.
#include "md/cuda/device_types.cuh"
#include "md/langevin_noise.hpp"
#include "md/periodic.hpp"

namespace nbkit::md {
namespace {

// ---- integration ---------------------------------------------------------------------------

struct Atoms {  // the float64 state, in the current (cell-sorted) order
  double *x, *y, *z, *vx, *vy, *vz;
  int* type;
};

// What the device tells the host, and what graph steps keep on the device.
struct Control {
  int rebuild;  // kick_drift: an atom moved more than half the skin since the list was built
  int longest;  // build_list: the longest row that did not fit (0: every row fit)
  int frozen;   // graph steps: a row did not fit; every later kernel returns until the host grows the list
  int unused;
  unsigned long long graph_steps;    // graph steps launched
  unsigned long long frozen_at;      // graph_steps at the step whose rebuild froze them
  unsigned long long builds;         // list builds completed in graph steps
  unsigned long long langevin_call;  // the thermostat call of the next graph step
};

// v += f/m dt/2, x += v dt; raises `rebuild` when an atom is more than half the skin from
// where the list was built; refreshes the packed positions the pair kernel reads.
template <class Real>
__global__ void kick_drift(int n, Atoms a, const Real* __restrict__ fx, const Real* __restrict__ fy,
                           const Real* __restrict__ fz, const double* __restrict__ acceleration_per_force, double dt,
                           const double* __restrict__ built_x, const double* __restrict__ built_y,
                           const double* __restrict__ built_z, double half_skin2, Geometry g,
                           typename Packed<Real>::type* __restrict__ packed, Control* __restrict__ control) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n || control->frozen) return;
  const int t = a.type[i];
  const double half = 0.5 * dt * acceleration_per_force[t];
  const double vx = a.vx[i] + half * fx[i], vy = a.vy[i] + half * fy[i], vz = a.vz[i] + half * fz[i];
  const double x = a.x[i] + dt * vx, y = a.y[i] + dt * vy, z = a.z[i] + dt * vz;
  a.vx[i] = vx, a.vy[i] = vy, a.vz[i] = vz;
  a.x[i] = x, a.y[i] = y, a.z[i] = z;
  const double dx = x - built_x[i], dy = y - built_y[i], dz = z - built_z[i];
  if (dx * dx + dy * dy + dz * dz > half_skin2) control->rebuild = 1;  // every writer writes 1: no race on the value
  packed[i] = Packed<Real>::make(x - g.lo[0], y - g.lo[1], z - g.lo[2], t);
}

template <class Real>
__global__ void kick(int n, Atoms a, const Real* __restrict__ fx, const Real* __restrict__ fy,
                     const Real* __restrict__ fz, const double* __restrict__ acceleration_per_force, double dt,
                     const Control* __restrict__ control) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n || control->frozen) return;
  const double half = 0.5 * dt * acceleration_per_force[a.type[i]];
  a.vx[i] += half * fx[i], a.vy[i] += half * fy[i], a.vz[i] += half * fz[i];
}

// The thermostat's forces added to the pair forces (langevin_noise.hpp), in float64; each
// atom's numbers drawn by its original index (tag), as the CPU draws them. In a graph step
// the call number comes from the device's counter (call_from_control).
template <class Real>
__global__ void langevin_forces(int n, Atoms a, const int* __restrict__ tag, const double* __restrict__ type_mass,
                                LangevinDraw draw, const Control* __restrict__ control, bool call_from_control,
                                Real* __restrict__ fx, Real* __restrict__ fy, Real* __restrict__ fz) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n || control->frozen) return;
  if (call_from_control) draw.call = control->langevin_call;
  const double velocity[3] = {a.vx[i], a.vy[i], a.vz[i]};
  double force[3] = {static_cast<double>(fx[i]), static_cast<double>(fy[i]), static_cast<double>(fz[i])};
  add_langevin_force(draw, static_cast<std::uint32_t>(tag[i]), type_mass[a.type[i]], velocity, force);
  fx[i] = static_cast<Real>(force[0]), fy[i] = static_cast<Real>(force[1]), fz[i] = static_cast<Real>(force[2]);
}

// ---- graph steps: the decisions made on the device ------------------------------------------

// After the drift: counts the step and runs the rebuild body when an atom moved too far.
__global__ void choose_rebuild(Control* control, cudaGraphConditionalHandle rebuild_body) {
  ++control->graph_steps;
  const bool rebuild = !control->frozen && control->rebuild;
  control->rebuild = 0, control->longest = 0;
  cudaGraphSetConditional(rebuild_body, rebuild ? 1u : 0u);
}

// The last kernel of a rebuild body: a row that did not fit freezes the graph steps.
__global__ void after_graph_build(Control* control, int capacity) {
  if (control->longest > capacity) control->frozen = 1, control->frozen_at = control->graph_steps;
  else ++control->builds;
}

__global__ void count_langevin_call(Control* control) {
  if (!control->frozen) ++control->langevin_call;
}

__global__ void set_langevin_call(Control* control, unsigned long long call) { control->langevin_call = call; }

__global__ void unfreeze(Control* control) { control->frozen = 0, control->rebuild = 0, control->longest = 0; }

__global__ void mass_velocity2(int n, Atoms a, const double* __restrict__ type_mass, double* __restrict__ out) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  out[i] = type_mass[a.type[i]] * (a.vx[i] * a.vx[i] + a.vy[i] * a.vy[i] + a.vz[i] * a.vz[i]);
}

}  // namespace
}  // namespace nbkit::md
