#pragma once
// Atoms made ready for the map kernels on one GPU: GPU arrays (compute_map_on_device of CuPy
// arrays or PyTorch tensors) on their own GPU, so that they never pass through the host, and
// host atoms uploaded as they are (40 bytes an atom). Read and checked (validate_atoms' rules),
// imaged in a periodic box (periodic_images' law), prepared (prepare_atoms: relative to the
// lattice's origin, the law's coefficient) and split into lattice units (split_atom) in float64
// with no fused operations; a few kernels and a scan, where the host took tens of milliseconds
// a million atoms. The cutoff sum's binning is in cutoff/cuda.cu. CUDA code only.
#include <cub/device/device_scan.cuh>
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/check.hpp"
#include "cuda/current_device.hpp"
#include "cuda/device_buffer.hpp"
#include "maps/device_atoms.cuh"
#include "maps/kernels.hpp"
#include "nbkit/core/lattice.hpp"
#include "nbkit/maps.hpp"

namespace nbkit::maps::gpu {

using cuda::KeepCurrentDevice;  // the atoms are prepared on the caller's thread

// Atoms as float64 columns on one GPU: as read (charges and radii), or once prepared,
// positions relative to the lattice's origin and the law's coefficient in `charge`.
struct AtomColumns {
  int device = 0;
  std::int64_t count = 0;
  cuda::DeviceBuffer<double> x, y, z, charge, radius;
  AtomColumns() = default;
  AtomColumns(int device, std::int64_t count);  // allocated on `device`, which must be current
};

// The arrays read into columns on their GPU (left current), after their stream's work, and
// checked there: throws validate_atoms' message for the first atom it refuses.
AtomColumns read_device_atoms(const DeviceAtomArrays& arrays);
// Host atoms (checked by the caller: validate_atoms) copied into columns on `device` (left
// current): the GPU maps of host atoms take the path of GPU arrays from here on.
AtomColumns upload_atoms(const Atoms& atoms, int device);
// Either kind of atoms in columns, host atoms on `device`.
AtomColumns atom_columns(const MapAtoms& atoms, int device);

// The images of the atoms within `cutoff` of the lattice in a periodic box, listed as
// periodic_images lists them (periodic_images-inl.hpp), on the atoms' GPU.
AtomColumns periodic_images_on_device(const AtomColumns& atoms, Vec3 box, const Lattice& lattice, double cutoff);

constexpr int kPrepareThreads = 256;

inline unsigned blocks_for(std::int64_t count) {
  return static_cast<unsigned>((count + kPrepareThreads - 1) / kPrepareThreads);
}

template <class Law>
__global__ void prepare_kernel(long long count, double origin_x, double origin_y, double origin_z, Law law,
                               double* __restrict__ x, double* __restrict__ y, double* __restrict__ z,
                               double* __restrict__ charge, const double* __restrict__ radius) {
  const long long n = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (n >= count) return;
  x[n] -= origin_x, y[n] -= origin_y, z[n] -= origin_z;
  charge[n] = law.coefficient(charge[n], radius[n]);
}

// prepare_atoms in place: positions relative to the lattice's origin, charges to the law's
// coefficients (the same functions, laws.hpp).
template <class Law>
void prepare_on_device(AtomColumns& atoms, const Lattice& lattice, const Law& law) {
  if (atoms.count == 0) return;
  prepare_kernel<<<blocks_for(atoms.count), kPrepareThreads>>>(
      atoms.count, lattice.origin.x, lattice.origin.y, lattice.origin.z, law, atoms.x.data(), atoms.y.data(),
      atoms.z.data(), atoms.charge.data(), atoms.radius.data());
  NBKIT_CUDA_CHECK_LAUNCH();
}

// Prepared atoms split into lattice units (direct summation): those that may sit on a lattice
// point after the others, each part in the input's order, two quads an atom
// (atoms_in_lattice_units in direct/cuda.cu, on the host).
template <class Real>
struct SplitAtoms {
  int device = 0;
  cuda::DeviceBuffer<Quad<Real>> quads;
  std::size_t regular = 0, on_lattice = 0;  // atoms
  Source<Quad<Real>> regular_source() const { return {quads.data(), 2 * regular, device}; }
  Source<Quad<Real>> on_lattice_source() const { return {quads.data() + 2 * regular, 2 * on_lattice, device}; }
};

template <class Real>
__global__ void split_kernel(long long count, double spacing, const double* __restrict__ x,
                             const double* __restrict__ y, const double* __restrict__ z,
                             const double* __restrict__ coefficient, Quad<Real>* __restrict__ quads,
                             int* __restrict__ on_lattice) {
  const long long n = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (n >= count) return;
  bool singular = false;
  split_atom(x[n], y[n], z[n], coefficient[n], spacing, quads[2 * n], quads[2 * n + 1], singular);
  on_lattice[n] = singular ? 1 : 0;
}

// Atom n to its place: the regular atoms first, in order, then those on the lattice.
template <class Real>
__global__ void place_split_kernel(long long count, long long regular_total, const Quad<Real>* __restrict__ quads,
                                   const int* __restrict__ on_lattice, const int* __restrict__ on_lattice_before,
                                   Quad<Real>* __restrict__ out) {
  const long long n = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (n >= count) return;
  const long long place = on_lattice[n] ? regular_total + on_lattice_before[n] : n - on_lattice_before[n];
  out[2 * place] = quads[2 * n];
  out[2 * place + 1] = quads[2 * n + 1];
}

template <class Real>
SplitAtoms<Real> split_on_device(const AtomColumns& prepared, double spacing) {
  SplitAtoms<Real> out;
  out.device = prepared.device;
  const std::int64_t n = prepared.count;
  if (n > (std::int64_t{1} << 30)) throw Error("more than 2^30 atoms are not supported on the GPU");
  cuda::DeviceBuffer<Quad<Real>> quads(2 * static_cast<std::size_t>(n));
  cuda::DeviceBuffer<int> flags(static_cast<std::size_t>(n) + 1), before(static_cast<std::size_t>(n) + 1);
  out.quads = cuda::DeviceBuffer<Quad<Real>>(2 * static_cast<std::size_t>(n));
  if (n == 0) return out;
  split_kernel<Real><<<blocks_for(n), kPrepareThreads>>>(n, spacing, prepared.x.data(), prepared.y.data(),
                                                         prepared.z.data(), prepared.charge.data(), quads.data(),
                                                         flags.data());
  NBKIT_CUDA_CHECK_LAUNCH();
  NBKIT_CUDA_CHECK(cudaMemsetAsync(flags.data() + n, 0, sizeof(int)));
  std::size_t scratch_bytes = 0;  // before[n] = atoms on the lattice among the first n; before[count]: all
  NBKIT_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(nullptr, scratch_bytes, flags.data(), before.data(), n + 1));
  cuda::DeviceBuffer<unsigned char> scratch(scratch_bytes);
  NBKIT_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(scratch.data(), scratch_bytes, flags.data(), before.data(), n + 1));
  int on_lattice = 0;
  NBKIT_CUDA_CHECK(cudaMemcpy(&on_lattice, before.data() + n, sizeof(int), cudaMemcpyDeviceToHost));
  out.on_lattice = static_cast<std::size_t>(on_lattice);
  out.regular = static_cast<std::size_t>(n) - out.on_lattice;
  place_split_kernel<Real><<<blocks_for(n), kPrepareThreads>>>(n, static_cast<long long>(out.regular), quads.data(),
                                                               flags.data(), before.data(), out.quads.data());
  NBKIT_CUDA_CHECK_LAUNCH();
  NBKIT_CUDA_CHECK(cudaDeviceSynchronize());  // the other GPUs copy from it next
  return out;
}

}  // namespace nbkit::maps::gpu
