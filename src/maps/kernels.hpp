#pragma once
// The interface of every maps kernel: the lattice rows a call fills (RowRange), the atoms as
// the fast paths hold them (PreparedAtoms), and each method's backends: direct summation over
// all atoms for every point (seed 000, "Direct Coulomb Summation"; direct/) and cutoff
// summation over binned atoms (direct/cpu.cpp's binned rows, cutoff/cuda.cu), for any law of
// laws.hpp. maps/methods.cpp chooses among them. Internal to the library.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "maps/laws.hpp"
#include "nbkit/core/atoms.hpp"
#include "nbkit/core/lattice.hpp"

namespace nbkit::maps {

namespace msm {
struct LongRangeGrid;
}

// What one backend keeps between the slabs of a streamed map; each defines its own kind.
class KeptWork {
 public:
  virtual ~KeptWork() = default;
};

// Laws of direct summation over all atoms (CPU and GPU).
using MapLaw = std::variant<CoulombLaw, DebyeHuckelLaw>;
// Short-range laws of cutoff summation (atoms in spatial bins: cpu.cpp, cutoff_cuda.cu).
using CutoffMapLaw = std::variant<CutoffLaw<Smoothing::none>, CutoffLaw<Smoothing::cutcp>,
                                  CutoffLaw<Smoothing::taylor1>, CutoffLaw<Smoothing::taylor2>,
                                  CutoffLaw<Smoothing::taylor3>>;

// Atoms relative to the lattice origin (removing the origin once, as the slides advise,
// keeps float32 coordinates small) with each law's per-atom coefficient.
struct PreparedAtoms {
  std::vector<double> x, y, z, coefficient;
  std::int64_t size() const { return static_cast<std::int64_t>(x.size()); }
};
template <class LawVariant>
PreparedAtoms prepare_atoms(const Atoms& atoms, const Lattice& lattice, const LawVariant& law);

// The atoms of a request: on the host, or in a GPU's memory (compute_map_on_device of GPU
// arrays: the GPU backends of direct, mdh and cutoff only, which read them there).
struct MapAtoms {
  MapAtoms(const Atoms& atoms) : host(&atoms) {}               // NOLINT: either kind converts
  MapAtoms(const DeviceAtomArrays& atoms) : device(&atoms) {}  // NOLINT
  const Atoms* host = nullptr;
  const DeviceAtomArrays* device = nullptr;
  std::int64_t size() const { return host ? static_cast<std::int64_t>(host->size()) : device->n; }
};

// Where the GPU backends put their slabs of rows instead of copying them to RowRange::out:
// the maps of a trajectory's frames are combined where they are computed (trajectory_cuda.cu).
// consume() runs on the host thread of `device`, with that device current, and must queue its
// work on `stream` (a cudaStream_t), after the kernels that wrote `device_slab` (rows
// [first, last), nz values a row); the slab buffer is reused once that stream passes it.
// With a sink, each device owns a fixed share of the rows for every request, so every point
// meets its frames on the same device in frame order.
class DeviceSlabSink {
 public:
  virtual ~DeviceSlabSink() = default;
  virtual void consume(int device, std::int64_t first, std::int64_t last, const double* device_slab, void* stream) = 0;
};

// Added to every GPU slab on its device before the slab leaves for the host (msm's long range,
// interpolated from its finest grid: msm/interpolation_cuda.cu), so that a method whose parts are
// all on the GPU copies its map once. add() runs on the host thread of `device`, with that device
// current, and queues its work on `stream` (a cudaStream_t) after the kernels that wrote
// `device_slab` (rows [first, last), nz values a row). add() may wait until the term can be
// computed (msm: for its grids); while ready() is false the slab loop queues further slabs on
// more buffers and adds the term to them once it is (gpu_slabs.cuh: run_slabs).
class DeviceSlabTerm {
 public:
  virtual ~DeviceSlabTerm() = default;
  virtual void add(int device, std::int64_t first, std::int64_t last, double* device_slab, void* stream) = 0;
  virtual bool ready() const { return true; }
};

// Kept between the slabs of one streamed map (stream_map): work that depends on the atoms and the
// whole lattice, never on the rows, so that each slab pays only for its own rows. A slab finds
// each part empty the first time and fills it. (A 2048^3 map in 24 slabs on an H100 spent 0.4 s
// a slab binning a million atoms again for the GPU cutoff sum, a third of the run.)
struct SlabKeep {
  msm::LongRangeGrid* long_range = nullptr;  // msm: the finest grid's potential (owned by the caller)
  std::unique_ptr<KeptWork> cutoff_bins;     // the cutoff sum's binned atoms (cutoff/cuda.cu, direct/cpu.cpp)
};

// One request: lattice rows [row_begin, row_end) into out (row-major, nz values per row),
// each value the plain sum over atoms times `prefactor`.
struct RowRange {
  const Lattice* lattice = nullptr;
  std::int64_t row_begin = 0, row_end = 0;
  double* out = nullptr;                                  // unused with a device_sink
  double prefactor = 1.0;
  const std::function<void(double)>* progress = nullptr;  // may be null or empty
  DeviceSlabSink* device_sink = nullptr;                  // GPU backends only; null: copy to out
  SlabKeep* keep = nullptr;                               // stream_map: work kept between its slabs
  DeviceSlabTerm* slab_term = nullptr;                    // GPU backends only: added to each slab there
};

// float64 plain loops over the textbook formula, every atom for every point: the oracle
// (for cutoff laws too: the law is zero beyond the cutoff).
void direct_reference(const Atoms& atoms, const MapLaw& law, const RowRange& rows);
void direct_reference(const Atoms& atoms, const CutoffMapLaw& law, const RowRange& rows);

// All cores, SIMD over z, float32 (chunked float64 accumulation) or float64.
void direct_cpu(const PreparedAtoms& atoms, const MapLaw& law, const RowRange& rows,
                bool double_precision, int threads);

// Cutoff summation on the CPU: atoms hashed into cubic bins of `bin_size` Angstrom (0:
// chosen from the cutoff), each lattice row gathering only the bins within the cutoff.
// Same arithmetic and guarantees as direct_cpu.
void cutoff_cpu(const PreparedAtoms& atoms, const CutoffMapLaw& law, const RowRange& rows, bool double_precision,
                int threads, double bin_size = 0);

// What a GPU run did: devices used and the slowest device's kernel time.
struct CudaRunInfo {
  std::vector<int> devices;
  std::vector<std::string> device_names;
  double kernel_seconds = 0;
  int segments = 1;  // atom segments per launch
};

// NVIDIA GPUs (device indices; empty: all), float32 (float64 sums across atom tiles) or
// float64. The atoms, on the host or in a GPU's memory, go to the first GPU listed (or stay on
// theirs), are checked, prepared and split into lattice units there (device_input.cuh), and
// are copied from there to the other GPUs. Throws nbkit::Error when no GPU is usable or the
// build has no CUDA.
void direct_cuda(const MapAtoms& atoms, const MapLaw& law, const RowRange& rows, bool double_precision,
                 const std::vector<int>& devices, CudaRunInfo* info = nullptr);

// Cutoff summation on NVIDIA GPUs (cutoff/cuda.cu): atoms in bins of one lattice region,
// each thread block gathering the bins within the cutoff of its region, the atoms imaged (with
// a periodic box: periodic_images), prepared and binned on one GPU as direct_cuda's are. Same
// devices, precision and guarantees as direct_cuda.
void cutoff_cuda(const MapAtoms& atoms, const std::optional<Vec3>& periodic_box, const CutoffMapLaw& law,
                 const RowRange& rows, bool double_precision, const std::vector<int>& devices,
                 CudaRunInfo* info = nullptr);

// Host memory the GPUs copy slabs into, page-locked while this lives (cudaHostRegister), so
// that the copies run at the bus's rate and overlap the next slab's kernels (stream_map's slab
// buffers). Speed only: where it cannot be locked (no CUDA build, no GPU, a memlock limit)
// the memory stays pageable and nothing else changes.
class PinnedHostRange {
 public:
  PinnedHostRange(void* data, std::size_t bytes);
  ~PinnedHostRange();
  PinnedHostRange(const PinnedHostRange&) = delete;
  PinnedHostRange& operator=(const PinnedHostRange&) = delete;
  bool pinned() const { return data_ != nullptr; }

 private:
  void* data_ = nullptr;
};

// Name of the SIMD target direct_cpu runs on this machine.
const char* direct_cpu_target();

}  // namespace nbkit::maps
