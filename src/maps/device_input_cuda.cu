// Atoms from GPU arrays read, checked and imaged on their GPU (device_input.cuh), and
// check_device_atoms (maps.hpp).
#include <cuda_runtime.h>

#include <climits>
#include <string>

#include "cuda/check.hpp"
#include "cuda/primitives.hpp"
#include "maps/device_input.cuh"
#include "maps/periodic_images-inl.hpp"
#include "nbkit/core/atoms.hpp"
#include "nbkit/core/error.hpp"

namespace nbkit::maps::gpu {

namespace {

__device__ __forceinline__ double load(const void* values, bool float64, long long at) {
  return float64 ? static_cast<const double*>(values)[at] : static_cast<double>(static_cast<const float*>(values)[at]);
}

// Columns of the arrays (float32 widened exactly); the first atom validate_atom refuses, to *first_bad.
__global__ void read_kernel(long long count, DeviceAtomArrays a, double* __restrict__ x, double* __restrict__ y,
                            double* __restrict__ z, double* __restrict__ charge, double* __restrict__ radius,
                            unsigned long long* __restrict__ first_bad) {
  const long long n = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (n >= count) return;
  const long long row = n * a.position_strides[0], column = a.position_strides[1];
  const double p[3] = {load(a.positions, a.positions_float64, row), load(a.positions, a.positions_float64, row + column),
                       load(a.positions, a.positions_float64, row + 2 * column)};
  const double q = load(a.charges, a.charges_float64, n * a.charge_stride);
  const double r = a.radii ? load(a.radii, a.radii_float64, n * a.radius_stride) : 0.0;
  x[n] = p[0], y[n] = p[1], z[n] = p[2], charge[n] = q, radius[n] = r;
  bool bad = !isfinite(q) || !isfinite(r) || r < 0;  // validate_atom's rules (atoms.cpp)
  for (int axis = 0; axis < 3; ++axis) bad = bad || !isfinite(p[axis]) || fabs(p[axis]) > kMaxCoordinate;
  if (bad) atomicMin(first_bad, static_cast<unsigned long long>(n));
}

__global__ void count_images_kernel(long long count, ImageSpace space, const double* __restrict__ x,
                                    const double* __restrict__ y, const double* __restrict__ z,
                                    long long* __restrict__ images) {
  const long long n = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (n >= count) return;
  const double p[3] = {x[n], y[n], z[n]};
  long long found = 0;
  for_each_image(space, p, [&](const double*) { ++found; });
  images[n] = found;
}

__global__ void write_images_kernel(long long count, ImageSpace space, const double* __restrict__ x,
                                    const double* __restrict__ y, const double* __restrict__ z,
                                    const double* __restrict__ charge, const double* __restrict__ radius,
                                    const long long* __restrict__ first_image, double* __restrict__ ix,
                                    double* __restrict__ iy, double* __restrict__ iz, double* __restrict__ icharge,
                                    double* __restrict__ iradius) {
  const long long n = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (n >= count) return;
  const double p[3] = {x[n], y[n], z[n]};
  long long at = first_image[n];
  for_each_image(space, p, [&](const double* image) {
    ix[at] = image[0], iy[at] = image[1], iz[at] = image[2], icharge[at] = charge[n], iradius[at] = radius[n];
    ++at;
  });
}

template <class T>
T download_one(const T* device_value) {
  T value{};
  NBKIT_CUDA_CHECK(cudaMemcpy(&value, device_value, sizeof(T), cudaMemcpyDeviceToHost));
  return value;
}

}  // namespace

AtomColumns::AtomColumns(int device_index, std::int64_t n)
    : device(device_index), count(n), x(static_cast<std::size_t>(n)), y(static_cast<std::size_t>(n)),
      z(static_cast<std::size_t>(n)), charge(static_cast<std::size_t>(n)), radius(static_cast<std::size_t>(n)) {}

AtomColumns read_device_atoms(const DeviceAtomArrays& a) {
  if (a.n < 0) throw Error("atoms in GPU memory: a negative count");
  if (a.n > 0 && (!a.positions || !a.charges)) throw Error("atoms in GPU memory: no positions or no charges");
  NBKIT_CUDA_CHECK(cudaSetDevice(a.device));
  NBKIT_CUDA_CHECK(cudaStreamSynchronize(static_cast<cudaStream_t>(a.stream)));  // the inputs are written
  AtomColumns columns(a.device, a.n);
  if (a.n == 0) return columns;
  cuda::DeviceBuffer<unsigned long long> first_bad(1);
  NBKIT_CUDA_CHECK(cudaMemset(first_bad.data(), 0xff, sizeof(unsigned long long)));  // ULLONG_MAX: none
  read_kernel<<<blocks_for(a.n), kPrepareThreads>>>(a.n, a, columns.x.data(), columns.y.data(), columns.z.data(),
                                                    columns.charge.data(), columns.radius.data(), first_bad.data());
  NBKIT_CUDA_CHECK_LAUNCH();
  const unsigned long long bad = download_one(first_bad.data());
  if (bad != ULLONG_MAX) {  // that atom's values to the host, for validate_atom's message
    const Vec3 position{download_one(columns.x.data() + bad), download_one(columns.y.data() + bad),
                        download_one(columns.z.data() + bad)};
    validate_atom(static_cast<std::size_t>(bad), position, download_one(columns.charge.data() + bad),
                  download_one(columns.radius.data() + bad));
    throw Error("atom " + std::to_string(bad + 1) + " was refused on the GPU but passes on the host (internal)");
  }
  return columns;
}

AtomColumns upload_atoms(const Atoms& atoms, int device) {
  NBKIT_CUDA_CHECK(cudaSetDevice(device));
  const auto n = static_cast<std::int64_t>(atoms.size());
  AtomColumns columns(device, n);
  columns.x.upload(atoms.x.data(), atoms.size());
  columns.y.upload(atoms.y.data(), atoms.size());
  columns.z.upload(atoms.z.data(), atoms.size());
  columns.charge.upload(atoms.charge.data(), atoms.size());
  columns.radius.upload(atoms.radius.data(), atoms.size());
  return columns;
}

AtomColumns atom_columns(const MapAtoms& atoms, int device) {
  return atoms.device ? read_device_atoms(*atoms.device) : upload_atoms(*atoms.host, device);
}

AtomColumns periodic_images_on_device(const AtomColumns& atoms, Vec3 box, const Lattice& lattice, double cutoff) {
  const ImageSpace space = image_space(box, lattice, cutoff);
  NBKIT_CUDA_CHECK(cudaSetDevice(atoms.device));
  const std::int64_t n = atoms.count;
  cuda::DeviceBuffer<long long> images(static_cast<std::size_t>(n) + 1), first(static_cast<std::size_t>(n) + 1);
  NBKIT_CUDA_CHECK(cudaMemset(images.data(), 0, images.size() * sizeof(long long)));
  if (n > 0) {
    count_images_kernel<<<blocks_for(n), kPrepareThreads>>>(n, space, atoms.x.data(), atoms.y.data(), atoms.z.data(),
                                                            images.data());
    NBKIT_CUDA_CHECK_LAUNCH();
  }
  std::size_t scratch_bytes = 0;  // first[n]: the images of the atoms before n; first[count]: all
  NBKIT_CUDA_CHECK(cuda::exclusive_sum(nullptr, scratch_bytes, images.data(), first.data(), n + 1));
  cuda::DeviceBuffer<unsigned char> scratch(scratch_bytes);
  NBKIT_CUDA_CHECK(cuda::exclusive_sum(scratch.data(), scratch_bytes, images.data(), first.data(), n + 1));
  const long long total = download_one(first.data() + n);
  AtomColumns out(atoms.device, total);
  if (n > 0 && total > 0) {
    write_images_kernel<<<blocks_for(n), kPrepareThreads>>>(
        n, space, atoms.x.data(), atoms.y.data(), atoms.z.data(), atoms.charge.data(), atoms.radius.data(),
        first.data(), out.x.data(), out.y.data(), out.z.data(), out.charge.data(), out.radius.data());
    NBKIT_CUDA_CHECK_LAUNCH();
  }
  return out;
}

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
  // Scratch buffers: the maps' calls repeat, and each of these is done with at the synchronisation
  // below (out.storage when the map's slabs are).
  const auto count = static_cast<std::size_t>(n);
  cuda::ScratchBuffer unplaced = scratch_of<Quad<Real>>(2 * count), flag_storage = scratch_of<int>(count + 1),
                      before_storage = scratch_of<int>(count + 1);
  out.storage = scratch_of<Quad<Real>>(2 * count);
  if (n == 0) return out;
  Quad<Real>* quads = scratch_as<Quad<Real>>(unplaced);
  int* flags = scratch_as<int>(flag_storage);
  int* before = scratch_as<int>(before_storage);
  split_kernel<Real><<<blocks_for(n), kPrepareThreads>>>(n, spacing, prepared.x.data(), prepared.y.data(),
                                                         prepared.z.data(), prepared.charge.data(), quads, flags);
  NBKIT_CUDA_CHECK_LAUNCH();
  NBKIT_CUDA_CHECK(cudaMemsetAsync(flags + n, 0, sizeof(int)));
  std::size_t scratch_bytes = 0;  // before[n] = atoms on the lattice among the first n; before[count]: all
  NBKIT_CUDA_CHECK(cuda::exclusive_sum(nullptr, scratch_bytes, flags, before, n + 1));
  cuda::ScratchBuffer scratch = scratch_of<unsigned char>(scratch_bytes);
  NBKIT_CUDA_CHECK(cuda::exclusive_sum(scratch_as<unsigned char>(scratch), scratch_bytes, flags, before, n + 1));
  int on_lattice = 0;
  NBKIT_CUDA_CHECK(cudaMemcpy(&on_lattice, before + n, sizeof(int), cudaMemcpyDeviceToHost));
  out.on_lattice = static_cast<std::size_t>(on_lattice);
  out.regular = count - out.on_lattice;
  place_split_kernel<Real><<<blocks_for(n), kPrepareThreads>>>(n, static_cast<long long>(out.regular), quads, flags,
                                                               before, scratch_as<Quad<Real>>(out.storage));
  NBKIT_CUDA_CHECK_LAUNCH();
  NBKIT_CUDA_CHECK(cudaDeviceSynchronize());  // the other GPUs copy from it next
  return out;
}

template SplitAtoms<float> split_on_device<float>(const AtomColumns&, double);
template SplitAtoms<double> split_on_device<double>(const AtomColumns&, double);

}  // namespace nbkit::maps::gpu

namespace nbkit {

DeviceAtomSummary check_device_atoms(const DeviceAtomArrays& arrays) {
  if (arrays.n <= 0) throw Error("no atoms");
  const maps::gpu::KeepCurrentDevice keep;
  const maps::gpu::AtomColumns atoms = maps::gpu::read_device_atoms(arrays);
  // Reduced on the GPU: the bounding box exactly (minima and maxima do not round), the net
  // charge in CUB's order.
  cuda::DeviceBuffer<double> result(7);
  std::size_t bytes = 0, most = 0;
  const int n = static_cast<int>(std::min<std::int64_t>(atoms.count, INT_MAX));
  if (atoms.count > INT_MAX) throw Error("more than 2^31 atoms in GPU memory are not supported");
  NBKIT_CUDA_CHECK(cuda::reduce_min(nullptr, bytes, atoms.x.data(), result.data(), n));
  most = bytes;
  NBKIT_CUDA_CHECK(cuda::reduce_max(nullptr, bytes, atoms.x.data(), result.data(), n));
  most = std::max(most, bytes);
  NBKIT_CUDA_CHECK(cuda::reduce_sum(nullptr, bytes, atoms.charge.data(), result.data(), n));
  most = std::max(most, bytes);
  cuda::DeviceBuffer<unsigned char> scratch(std::max<std::size_t>(most, 1));
  const double* column[3] = {atoms.x.data(), atoms.y.data(), atoms.z.data()};
  for (int axis = 0; axis < 3; ++axis) {
    bytes = most;
    NBKIT_CUDA_CHECK(cuda::reduce_min(scratch.data(), bytes, column[axis], result.data() + axis, n));
    bytes = most;
    NBKIT_CUDA_CHECK(cuda::reduce_max(scratch.data(), bytes, column[axis], result.data() + 3 + axis, n));
  }
  bytes = most;
  NBKIT_CUDA_CHECK(cuda::reduce_sum(scratch.data(), bytes, atoms.charge.data(), result.data() + 6, n));
  double host[7];
  result.download(host, 7);
  NBKIT_CUDA_CHECK(cudaDeviceSynchronize());
  DeviceAtomSummary summary;
  summary.box.lower = {host[0], host[1], host[2]};
  summary.box.upper = {host[3], host[4], host[5]};
  summary.net_charge = host[6];
  return summary;
}

}  // namespace nbkit
