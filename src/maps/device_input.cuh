#pragma once
// Atoms made ready for the map kernels on one GPU: GPU arrays (compute_map_on_device of CuPy
// arrays or PyTorch tensors) on their own GPU, so that they never pass through the host, and
// host atoms uploaded as they are (40 bytes an atom). Read and checked (validate_atoms' rules),
// imaged in a periodic box (periodic_images' law), prepared (prepare_atoms: relative to the
// lattice's origin, the law's coefficient) and split into lattice units (split_atom) in float64
// with no fused operations; a few kernels and a scan, where the host took tens of milliseconds
// a million atoms. The cutoff sum's binning is in cutoff/cuda.cu. CUDA code only. The split's
// scan is in device_input_cuda.cu, so that the files including this one compile without CUB's
// headers (half of direct/cuda.cu's host code, which CI compiles on 2 cores).
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/check.hpp"
#include "cuda/current_device.hpp"
#include "cuda/device_buffer.hpp"
#include "cuda/scratch_buffer.hpp"
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
// The quads live in a scratch buffer (cuda/scratch_buffer.hpp; the maps synchronise their streams
// before it goes): mapping and unmapping device memory for each call's few small buffers cost a
// small map ~0.1 ms at its start and its end (CUPTI trace, session 45).
template <class Real>
struct SplitAtoms {
  int device = 0;
  cuda::ScratchBuffer storage;  // 2 (regular + on_lattice) quads
  std::size_t regular = 0, on_lattice = 0;  // atoms
  const Quad<Real>* quads() const { return reinterpret_cast<const Quad<Real>*>(storage.data()); }
  Source<Quad<Real>> regular_source() const { return {quads(), 2 * regular, device}; }
  Source<Quad<Real>> on_lattice_source() const { return {quads() + 2 * regular, 2 * on_lattice, device}; }
};

// A scratch buffer (kept between calls) holding `count` values of T (cudaMalloc's alignment).
template <class T>
cuda::ScratchBuffer scratch_of(std::size_t count) {
  return cuda::ScratchBuffer((count * sizeof(T) + sizeof(double) - 1) / sizeof(double));
}
template <class T>
T* scratch_as(cuda::ScratchBuffer& buffer) {
  return reinterpret_cast<T*>(buffer.data());
}

// The prepared atoms split on their GPU (split_atom's law; an exclusive scan places the atoms on
// the lattice after the others); float and double (device_input_cuda.cu).
template <class Real>
SplitAtoms<Real> split_on_device(const AtomColumns& prepared, double spacing);

}  // namespace nbkit::maps::gpu
