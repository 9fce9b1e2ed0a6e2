#pragma once
// The long-range part of the multilevel summation method (MSM) for potential maps
// (Skeel, Tezcan, Hardy, J Comp Chem 23:673, 2002; Hardy, Stone, Schulten, Parallel
// Computing 35:164, 2009; Hardy's thesis, UIUC 2006; seed 000, "Multilevel Summation").
//
// 1/r = (1/r - g_a(r)) + g_a(r), g_a(r) = gamma(r/a)/a below the cutoff a and 1/r beyond:
// the first part is the short-range cutoff sum (CutoffLaw<taylorN>, any backend); the
// smooth second part is split further, g_a = (g_a - g_2a) + (g_2a - g_4a) + ... + g_{2^L a},
// each piece summed on a grid twice as coarse as the one before:
//   anterpolation   q0[m] = sum_i q_i Phi(x_i/h - m)              charges to the finest grid
//   restriction     q(l+1) = I^T q(l)                             up the levels
//   lattice cutoff  e(l)[m] = sum_n K_l(m - n) q(l)[n],  K_l = g_{2^l a} - g_{2^(l+1) a},
//                   zero beyond 2^(l+1) a: the same stencil at every level, scaled by 2^-l
//   top level       e(L)[m] = sum_n g_{2^L a}(|m - n|) q(L)[n], all pairs
//   prolongation    e(l) += I e(l+1)                              down the levels
//   interpolation   V(r) = sum_m e0[m] Phi(r/h - m)               onto the map lattice
// Phi is the nodal basis of piecewise cubic (C1) or quintic (C1) interpolation, separable
// in x, y, z. Everything here is float64 (the method's own error, 1e-3 to 1e-5, dwarfs float32
// rounding, but the grids' sums cancel), on the CPU's cores (OpenMP) or on a GPU: there every
// stage runs on the device (grids_cuda.cu) and the interpolation is added to the short range's
// slabs before they leave it (interpolation_cuda.cu), so the map crosses the bus once.
#include <array>
#include <cstdint>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "maps/kernels.hpp"
#include "nbkit/maps.hpp"

namespace nbkit::maps::msm {

struct Parameters {
  double cutoff = 12;       // a, Angstrom
  double grid_spacing = 2;  // h of the finest grid, Angstrom
  MsmInterpolation interpolation = MsmInterpolation::cubic;
  Smoothing splitting = Smoothing::taylor2;  // gamma: taylor1..3
  int gpu = -1;  // the GPU of the long range's stages (add_long_range_on_gpu; periodic: the lattice cutoff); -1: the CPU
};

// Throws nbkit::Error for a spacing or cutoff that is not positive, or a cutoff under 2 h.
void check_parameters(const Parameters& parameters);

// The stages' parallel regions take the caller's thread count; the previous default is put
// back on the way out.
class ScopedThreadCount {
 public:
  explicit ScopedThreadCount(int threads);
  ~ScopedThreadCount();
  ScopedThreadCount(const ScopedThreadCount&) = delete;
  ScopedThreadCount& operator=(const ScopedThreadCount&) = delete;

 private:
  int previous_;
};

// Seconds per stage and the grid sizes, for reports and benchmarks.
struct Stages {
  double anterpolation = 0, restriction = 0, lattice_cutoff = 0, top_level = 0, prolongation = 0,
         interpolation = 0;
  int levels = 0;                  // grids, the finest and the top one included
  std::int64_t finest_points = 0;  // points of the finest grid
};

// The finest grid's long-range potential, all interpolation needs: a map computed a slab at a
// time (stream_map) sums the grids for its first slab and interpolates every later slab from
// this (the grids depend on the atoms and the whole lattice, never on the rows).
struct LongRangeGrid {
  std::array<std::int64_t, 3> lo{}, n{};  // the grid's first index and points per axis
  std::vector<double> potential;          // n[0] x n[1] x n[2], x slowest; empty: not summed yet
  int levels = 0;
  std::int64_t finest_points = 0;
  std::uint64_t bytes() const { return potential.size() * sizeof(double); }
};

// Adds rows.prefactor times the long-range potential at the rows' lattice points to
// rows.out. `atoms` hold charges as coefficients, positions relative to the lattice origin;
// `lattice` is the whole map's lattice (the grids depend on it, not on the rows, so that
// any split into rows gives the same values). With `kept`: the grids are summed only when it
// is empty, and their finest potential is left there for the next rows.
void add_long_range(const PreparedAtoms& atoms, const Parameters& parameters, const RowRange& rows, int threads,
                    Stages* stages = nullptr, LongRangeGrid* kept = nullptr);

struct InterpolationPlan;

// The same on parameters.gpu, for a short range computed there (cutoff_cuda): every grid stage
// on the GPU (or the finest grid from `kept`), returning what a GpuInterpolation needs to add
// the long range to each slab of the short range on its device (RowRange::slab_term). The points
// within singular distance of an atom are not corrected: call remove_singular_long_range on the
// rows once the slabs are on the host. Stages' interpolation: the term's kernel_seconds().
InterpolationPlan long_range_on_gpu(const PreparedAtoms& atoms, const Parameters& parameters, const RowRange& rows,
                                    Stages* stages = nullptr, LongRangeGrid* kept = nullptr);

// The same for an orthorhombic periodic box [0, a) x [0, b) x [0, c) (periodic_msm.cpp):
// `atoms` anterpolated (any image of each), `images` (every image within the cutoff of the
// lattice, as the short range used) for the points within singular distance. Neutral
// systems: the result is Ewald's potential (tin-foil boundaries) to MSM's accuracy.
void add_long_range_periodic(const PreparedAtoms& atoms, const PreparedAtoms& images, const Vec3& box,
                             const Parameters& parameters, const RowRange& rows, int threads, Stages* stages = nullptr,
                             LongRangeGrid* kept = nullptr);

// The periodic grids' geometry in a box (add_long_range_periodic's rule): R halvings down to at
// least 4 points on the shortest axis, N_0 = c 2^R points per axis (spacing L / N_0 <= h).
// Throws nbkit::Error for a box too elongated for the top grid.
struct PeriodicLevels {
  std::array<std::int64_t, 3> finest{};
  int halvings = 0;
};
PeriodicLevels periodic_levels(const Vec3& box, const Parameters& parameters);

// The long-range potential on the finest periodic grid of `levels` in `box` (spacing box / N_0
// per axis) from the charges anterpolated onto it, both x slowest: restriction, the lattice
// cutoff at every level, the top level's periodic sum, prolongation (the stages above). The
// molecular dynamics' MSM (md/msm.cpp) interpolates it and its gradient at the atoms.
// `top_table`: the top level's kernel between its points for this box (an Ewald sum per point,
// the stage's cost): used when it has the top grid's size, else computed and stored there.
std::vector<double> periodic_grid_potential(std::vector<double> q0, const PeriodicLevels& levels, const Vec3& box,
                                            const Parameters& parameters, Stages& stages,
                                            std::vector<double>* top_table = nullptr);

// Takes out g_a(r) of every atom within singular distance of a lattice point of the rows (the
// short range left those out, as every method does).
void remove_singular_long_range(const PreparedAtoms& atoms, const Parameters& parameters, const RowRange& rows);

// Weights of restriction and prolongation, Phi(k/2) for k = -K .. K (K = 2 support - 1).
std::vector<double> transfer_weights(MsmInterpolation interpolation, int& half_width);

// The lattice-cutoff sums on a GPU (lattice_cutoff_cuda.cu; builds without CUDA throw), float64
// as on the CPU: for each level, potential[m] += scale sum_d K(d) charge[m + d] over the
// level's grid of n[0] x n[1] x n[2] points (x slowest), K given as rows of non-zero weights
// along z. The same sums as the CPU's, in the same order per point.
struct StencilRow {
  int dx, dy, dz_first, dz_last;
  int weight_offset;  // weights[weight_offset + dz - dz_first]
};
struct LevelGrids {
  std::int64_t n[3];
  const double* charge;
  double* potential;
  double scale;
};
// `periodic`: the grids wrap (each stencil offset taken modulo the grid, every image).
void lattice_cutoff_cuda(int gpu, const std::vector<StencilRow>& rows, const std::vector<double>& weights,
                         const std::vector<LevelGrids>& levels, bool periodic = false);

// A grid's first index and points per axis (x slowest).
struct GridBox {
  std::array<std::int64_t, 3> lo{}, n{};
  std::int64_t size() const { return n[0] * n[1] * n[2]; }
};

// The grid stages on a GPU (grids_cuda.cu; builds without CUDA throw): anterpolation (each
// finest point gathering the atoms of the cells its basis reaches, in an order fixed by the
// input: the same bits every run), restriction, the lattice cutoff, the top level and
// prolongation, float64, the CPU's terms. Returns the finest grid's potential (levels[0]'s
// points, x slowest).
struct DeviceGridsPlan {
  int gpu = 0;
  MsmInterpolation interpolation = MsmInterpolation::cubic;
  double spacing = 2;                  // h, Angstrom; atoms in Angstrom from the lattice origin
  std::vector<GridBox> levels;         // the finest first, each restricted from the one before; the last is the top
  std::vector<double> transfer;        // restriction's and prolongation's weights (transfer_weights)
  int transfer_half_width = 0;
  std::vector<StencilRow> cutoff_rows;  // the lattice cutoff's stencil at level 0, scaled by 2^-l at level l
  std::vector<double> cutoff_weights;
  std::vector<StencilRow> top_rows;  // the top level's all-pairs stencil, scaled by 2^-(levels - 1)
  std::vector<double> top_weights;
};
std::vector<double> finest_potential_cuda(const PreparedAtoms& atoms, const DeviceGridsPlan& plan, Stages& stages);

// The interpolation of the finest grid's potential onto a lattice, added on a GPU to the slabs
// of a short-range sum (interpolation_cuda.cu; builds without CUDA throw): every point the CPU's
// sum (the grid's columns collapsed in x and y, then the point's z stencil), times `prefactor`.
// Thread-safe: the host threads of several devices (or of one device listed twice) call add().
// The plan may still be in the making (the grids overlap the short range's start): the first
// add() on each device waits for it, and rethrows its error.
struct InterpolationPlan {
  GridBox grid;
  std::vector<double> potential;  // grid.size() values
  int width = 4;                  // 2 support: grid points per axis each lattice point reads
  // Per lattice index along each axis: its first grid index, and `width` weights [index * width + t].
  std::array<std::vector<std::int64_t>, 3> first;
  std::array<std::vector<double>, 3> weights;
  std::int64_t ny = 0, nz = 0;  // the lattice's rows per x plane and points per row
  double prefactor = 1;
};
class GpuInterpolation final : public DeviceSlabTerm {
 public:
  explicit GpuInterpolation(std::shared_future<InterpolationPlan> plan);
  ~GpuInterpolation() override;
  GpuInterpolation(const GpuInterpolation&) = delete;
  GpuInterpolation& operator=(const GpuInterpolation&) = delete;
  void add(int device, std::int64_t first, std::int64_t last, double* device_slab, void* stream) override;
  bool ready() const override;  // the grids are done (or failed: add rethrows)
  // The kernels' seconds (CUDA events), summed over slabs; call once the slabs are done.
  double kernel_seconds() const;
  // Waits for the plan (for a request whose slabs never asked for it) and rethrows its error.
  void wait() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// g_a(r) of the splitting, a float64 scalar (for the stages' tests and the reference).
double smoothed_kernel(Smoothing splitting, double cutoff, double distance);

// The nodal basis function Phi(t) and its support: Phi(t) = 0 for |t| >= support.
double basis(MsmInterpolation interpolation, double t);
double basis_derivative(MsmInterpolation interpolation, double t);  // dPhi/dt
int basis_support(MsmInterpolation interpolation);

}  // namespace nbkit::maps::msm
