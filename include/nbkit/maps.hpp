#pragma once
// Electrostatic potential maps on a 3-D lattice around a molecule (VMD's volmap coulomb,
// APBS's mdh boundary condition). Plain C++: this header is the same for CPU-only and
// CUDA builds.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "nbkit/core/atoms.hpp"
#include "nbkit/core/box.hpp"
#include "nbkit/core/backend.hpp"
#include "nbkit/core/lattice.hpp"
#include "nbkit/core/units.hpp"

namespace nbkit {

enum class MapMethod {
  direct,  // Coulomb: V(r) = C/eps * sum_i q_i / |r - r_i|
  mdh,     // Debye-Hueckel with ion-exclusion radii (APBS bcfl mdh):
           // V(r) = C/eps * sum_i q_i exp(-kappa (d_i - a_i)) / ((1 + kappa a_i) d_i)
  cutoff,  // short-range Coulomb within a cutoff, smoothed (see Smoothing), in linear time
  msm,     // full Coulomb in linear time: multilevel summation (cutoff part + grids)
  // Not potentials: VMD's volmap density and occupancy (Krone, Stone, Ertl and Schulten 2012).
  density,    // each atom a normalised 3-D Gaussian of standard deviation sigma = radius x scale
              // (or one sigma), weighted by 1 or its charge, cut at 5 sigma: atoms (or e) per A^3
  occupancy,  // 1 where a point lies within an atom's sphere (radius x scale), else 0; or, with
              // occupancy_points, where an atom's centre lies in the point's voxel
};

// density: what each atom's Gaussian integrates to.
enum class DensityWeight { number, charge };
// How far a density Gaussian reaches, in standard deviations: exp(-12.5) = 3.7e-6 of its peak.
inline constexpr double kDensityReachSigmas = 5.0;

// The multilevel summation method's interpolation between grid levels and onto the map.
enum class MsmInterpolation {
  cubic,    // piecewise cubic, C1, 4 grid points per axis
  quintic,  // piecewise quintic, C1, 6 grid points per axis
};
MsmInterpolation parse_msm_interpolation(const std::string& name);
std::string to_string(MsmInterpolation interpolation);
// The finest grid spacing (Angstrom) used when MapOptions::msm_spacing is 0.
double default_msm_spacing(MsmInterpolation interpolation);

// How the cutoff method's Coulomb law goes to zero at the cutoff c (src/maps/laws.hpp):
enum class Smoothing {
  none,     // q/r, truncated
  cutcp,    // q/r (1 - r^2/c^2)^2, as Parboil's cutcp
  taylor1,  // q (1/r - gamma(r/c)/c), the multilevel summation splitting, C1 at c
  taylor2,  // ... C2
  taylor3,  // ... C3
};
Smoothing parse_smoothing(const std::string& name);  // none, cutcp, taylor1..3 (or c1..c3)
std::string to_string(Smoothing smoothing);
MapMethod parse_map_method(const std::string& name);
std::string to_string(MapMethod method);

// Atoms closer than this to a lattice point are left out of that point's sum, so a lattice
// point on top of an atom gets the finite potential of all the other atoms (the potential
// the atom itself feels), never inf or NaN. 1e-3 Angstrom is far below any lattice spacing
// or interatomic distance in use and far above float32 rounding of coordinates.
inline constexpr double singular_distance = 1e-3;  // Angstrom

struct MapOptions {
  MapMethod method = MapMethod::direct;
  Backend backend = Backend::automatic;
  Precision precision = Precision::single;
  units::PotentialUnit unit = units::PotentialUnit::kT_per_e;
  double dielectric = 1.0;                          // relative permittivity of the medium
  double temperature = units::default_temperature;  // K (kT/e and kappa)
  double ionic_strength = 0.15;                     // mol/L, mdh only
  double cutoff = 12.0;                             // Angstrom, cutoff only
  Smoothing smoothing = Smoothing::cutcp;           // cutoff only
  double bin_size = 0;                              // Angstrom, cutoff only; 0: cutoff / 3
  // msm only (the cutoff above is its splitting distance a):
  double msm_spacing = 0;                                    // finest grid spacing h, Angstrom; 0: the default
  MsmInterpolation msm_interpolation = MsmInterpolation::cubic;
  Smoothing msm_splitting = Smoothing::taylor2;              // taylor1..3 (the Taylor C1..C3 splittings)
  // Cutoff and msm: an orthorhombic periodic box, edge lengths a, b, c in Angstrom, the cell
  // spanning [0, a) x [0, b) x [0, c) (as a PDB CRYST1 record places it). Cutoff sums then
  // take each atom's minimum image (the cutoff must be under half the shortest edge); msm adds
  // the periodic long range (Ewald's potential with tin-foil boundaries, for neutral systems).
  // Empty: no box. The cell must start at the origin (PeriodicBox::from_edges).
  std::optional<PeriodicBox> periodic_box;
  // density and occupancy:
  DensityWeight density_weight = DensityWeight::number;
  double radius_scale = 1.0;      // sigma (density) or sphere radius (occupancy) = radius x scale
  double density_sigma = 0;       // density: > 0, one sigma (Angstrom) for every atom instead
  bool occupancy_points = false;  // occupancy: atoms as points, a point occupied by the centres in its voxel
  int threads = 0;                                  // 0: all hardware threads
  std::vector<int> gpus;                            // CUDA device indices; empty: all
  // Called with the fraction done, 0..1, never concurrently (calls are serialized); may be empty.
  std::function<void(double)> progress;
};

struct Map {
  Lattice lattice;
  std::vector<double> values;  // lattice.size() values, x slowest, z fastest
  units::PotentialUnit unit = units::PotentialUnit::kT_per_e;
  double at(std::int64_t i, std::int64_t j, std::int64_t k) const {
    return values[static_cast<std::size_t>(lattice.index(i, j, k))];
  }
};

// What a computation did, for the summary line and --report.
struct MapStats {
  Backend backend = Backend::cpu;  // the backend that ran (never automatic)
  std::string detail;              // e.g. SIMD target and threads, or GPU model
  std::string notice;              // e.g. why --backend auto fell back to the CPU
  double seconds = 0;
  double kernel_seconds = 0;       // GPU kernels alone (cuda backend)
  double lattice_points = 0;       // points computed
  double evaluations = 0;          // atom-lattice pair evaluations (direct summation; 0 for cutoff)
  double min_value = 0, max_value = 0;  // the values' span (found as they are checked finite)
  // msm: seconds of each stage ("short range", "anterpolation", ...), in order
  std::vector<std::pair<std::string, double>> stage_seconds;
  double evaluations_per_second() const { return seconds > 0 ? evaluations / seconds : 0; }
  double points_per_second() const { return seconds > 0 ? lattice_points / seconds : 0; }
};

// Bytes a map of this lattice needs in memory. compute_map checks it against what the
// machine has before allocating and throws MemoryError naming both.
std::uint64_t map_memory_bytes(const Lattice& lattice);

Map compute_map(const Atoms& atoms, const Lattice& lattice, const MapOptions& options,
                MapStats* stats = nullptr);

// Lattice rows [row_begin, row_end) only (row r = i*ny + j holds the nz points along z),
// written to out[(r - row_begin)*nz + k]. The building block of compute_map, slabs and
// multi-device splits; lets a caller work on part of a lattice too large to hold.
void compute_map_rows(const Atoms& atoms, const Lattice& lattice, const MapOptions& options,
                      std::int64_t row_begin, std::int64_t row_end, double* out,
                      MapStats* stats = nullptr);

// ---- Lattices larger than memory --------------------------------------------------------
// A slab of consecutive lattice rows [row_begin, row_end) (x slowest: a run of whole x-planes
// when it starts and ends on plane boundaries), (row_end - row_begin) * nz values.
struct MapSlab {
  std::int64_t row_begin = 0, row_end = 0;
  const double* values = nullptr;
};

// The map computed a slab of `slab_rows` rows at a time, in order, each slab handed to `consume`
// as soon as it is done: memory holds one slab (two with `overlap`), never the whole map. The
// values are compute_map's, bit for bit, for any slab_rows: each row's sum is independent of
// the others, and msm's grids (which depend on the whole lattice) are summed once, with the
// first slab, and kept. With `overlap`, `consume` runs on a second thread while the next slab
// is computed (for GPU runs, whose host threads are free while the GPUs work); an exception it
// throws ends the run and is rethrown here. `stats` sums the slabs' (seconds: computing only).
void stream_map(const Atoms& atoms, const Lattice& lattice, const MapOptions& options, std::int64_t slab_rows,
                const std::function<void(const MapSlab&)>& consume, MapStats* stats = nullptr, bool overlap = false);

// stream_map for rows [row_begin, row_end) of the lattice only (a rank's share of a map computed
// by several processes; none is allowed): the slabs hold those rows, the values are stream_map's.
void stream_map_rows(const Atoms& atoms, const Lattice& lattice, const MapOptions& options, std::int64_t row_begin,
                     std::int64_t row_end, std::int64_t slab_rows, const std::function<void(const MapSlab&)>& consume,
                     MapStats* stats = nullptr, bool overlap = false);

// ---- A map shared among processes (MPI ranks; issue 22) -----------------------------------------
// Lattice rows a second this process computes the map at, at the margin: one row timed after a
// row that pays the method's set-up (binning, msm's grids, a GPU's start), then `sample_rows`
// rows in the middle of the lattice, the sample grown fourfold (up to max_rows) until it takes
// min_seconds more than the one row; the rate is the rows beyond the one over the time beyond
// it. Every call pays a fixed cost besides its rows (a GPU's: the atoms prepared and uploaded,
// 60 ms for a million atoms on an H100, which a 450-row sample read as a third of the GPU's
// speed), and a rank's share pays it once: the margin is what splits the rows right between a
// GPU and a CPU. Every rank measures the same rows, so the rates compare the ranks' hardware.
double measure_map_rows_per_second(const Atoms& atoms, const Lattice& lattice, const MapOptions& options,
                                   std::int64_t sample_rows, std::int64_t max_rows, double min_seconds = 0.02);
// The rows [bounds[r], bounds[r+1]) of each rank, consecutive and in rank order, in proportion to
// the ranks' rates (rows a second): every rank computes the same split from the same rates.
std::vector<std::int64_t> split_rows_by_rate(std::int64_t rows, const std::vector<double>& rates);

// Bytes a map of this method holds besides its values, estimated for a memory budget: the
// prepared atoms and bins, and msm's grids (every level while they are summed).
std::uint64_t map_method_memory_bytes(const Atoms& atoms, const Lattice& lattice, const MapOptions& options);

// The map written into a GPU's memory (a CuPy array, a PyTorch CUDA tensor): lattice.size()
// float64 values, x slowest, at `values` on CUDA device `device`; the values never pass through
// the host. Backend cuda, methods direct, mdh and cutoff (msm's long range is summed on the
// host): each GPU computes its share of the lattice's slabs and copies them there (a peer copy
// from the others). Throws as compute_map does, and naming the first value that is not finite.
void compute_map_on_device(const Atoms& atoms, const Lattice& lattice, const MapOptions& options, int device,
                           double* values, MapStats* stats = nullptr);

// Atoms already in a GPU's memory (CuPy arrays, PyTorch CUDA tensors, another CUDA code's
// buffers): views, no ownership. Positions (n, 3), charges (n,) and radii (n,) as float32 or
// float64 with strides in elements; no radii: every radius 0 (the Coulomb and cutoff laws
// ignore them). `stream` (a cudaStream_t; 0: the legacy default stream) is the one the inputs
// were written on: it is waited for before they are read.
struct DeviceAtomArrays {
  int device = 0;  // the CUDA device the arrays live on
  std::int64_t n = 0;
  const void* positions = nullptr;
  bool positions_float64 = true;
  std::int64_t position_strides[2] = {3, 1};
  const void* charges = nullptr;
  bool charges_float64 = true;
  std::int64_t charge_stride = 1;
  const void* radii = nullptr;
  bool radii_float64 = true;
  std::int64_t radius_stride = 1;
  void* stream = nullptr;
};

// What check_device_atoms found: the atoms' bounding box (for lattice_around) and net charge
// (summed on the GPU: to float64 rounding, not in the host's order).
struct DeviceAtomSummary {
  BoundingBox box;
  double net_charge = 0;
};

// validate_atoms for atoms in a GPU's memory, checked there: throws its message for the first
// atom it refuses (only that atom's values come to the host). Needs a CUDA build and the GPU.
DeviceAtomSummary check_device_atoms(const DeviceAtomArrays& atoms);

// compute_map_on_device for atoms in a GPU's memory: neither the atoms nor the map pass through
// the host (the atoms are checked, prepared, split into lattice units and binned on their GPU,
// and copied from there to the other GPUs used). Periodic cutoff maps make the images there
// too. The values are those of the host-atoms call for the same atoms, to the bit: GPU maps of
// host atoms upload them and take the same path from there.
void compute_map_on_device(const DeviceAtomArrays& atoms, const Lattice& lattice, const MapOptions& options,
                           int device, double* values, MapStats* stats = nullptr);

// The lattice that spans a periodic cell [0, a) x [0, b) x [0, c): origin (0,0,0) and
// ceil(edge / spacing) points along each axis. It is exactly periodic (the point after the
// last one is the first one's image) when the edges are multiples of the spacing.
Lattice lattice_spanning_cell(Vec3 box, double spacing);

// The atoms and their periodic images that lie within `cutoff` of the lattice: summing
// these without a box is the minimum-image sum (each atom's one image within the cutoff of
// any point, as cutoff < half the shortest edge). Atoms anywhere are wrapped into the cell.
Atoms periodic_images(const Atoms& atoms, Vec3 box, const Lattice& lattice, double cutoff);

// The unit of the values these options give: options.unit for the potentials, the density or
// occupancy unit for those methods.
units::PotentialUnit map_unit(const MapOptions& options);
// Whether the method computes a density (density, occupancy) rather than a potential.
bool is_density_method(MapMethod method);
// Whether the method's GPU maps can stay on the GPUs (compute_map_on_device, trajectories
// combined there): direct, mdh and cutoff; msm's long range and the density methods' rows are
// finished on the host.
bool map_stays_on_device(MapMethod method);

// The Debye-Hueckel kappa (1/Angstrom) these options imply; 0 for the direct method.
double screening_kappa(const MapOptions& options);

}  // namespace nbkit
