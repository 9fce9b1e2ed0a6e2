// The MD step on one GPU (md::GpuEngine): NAMD's GPU nonbonded design (seed 001: atoms
// binned into cells at least a cutoff wide, forces from the atoms of neighbouring cells)
// reshaped the way GPU MD codes do it on current hardware (HOOMD-blue, LAMMPS's GPU and KOKKOS
// packages): atoms re-sorted by cell at every list rebuild so that a warp's atoms and their
// neighbours lie close in memory, a full Verlet list per atom stored column by column (the
// k-th neighbours of consecutive atoms are consecutive words), and one thread per atom summing
// its own force without atomics. Everything stays on the device. A step is one CUDA graph
// launch: the drift, then a conditional node that runs the list rebuild only when an atom has
// moved more than half the skin (decided on the device: cudaGraphSetConditional), then the
// forces and the kick; the host runs ahead and checks the device's record every few steps. A
// row that does not fit the list freezes the graph steps (each kernel returns at once) until
// the host notices, grows the list and redoes the frozen steps: no force is ever computed
// from a truncated list. Without graphs (Options::step_graphs false) the host reads the
// rebuild flag every step instead.
//
// The kernels live beside this file by job (src/md/cuda/): device_types.cuh, integrate.cuh
// (the Verlet halves, the thermostat, the graph steps' decisions), cell_list.cuh (wrap, bin,
// sort, pack, the list build), verlet_list_forces.cuh (the engine's pair kernel), and two
// measured baselines that GpuEngine::Options can select (bench_md_cuda and the tests do; no
// command does): patch_pairs.cuh, the slides' design (41% of the list's rate for 1M atoms of
// in.lj on an H100, session 7), and cluster_pairs.cuh, tiles of 32 as OpenMM and GROMACS lay
// them out (3%). They stay in the library because they run inside this engine's cell sort,
// graph step and state; the pair law itself is pair_law.hpp's for all three. This file holds
// the engine: its state, the step graph and the launches.
//
// Determinism: the cell sort is CUB's stable radix sort on (cell, current index); each row's
// neighbours come in a fixed cell-stencil order; each force is summed by one thread in row
// order; the energy, virial and kinetic sums are CUB reductions (run-to-run deterministic).

#include <algorithm>
#include <climits>
#include <optional>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "cuda/check.hpp"
#include "cuda/device_buffer.hpp"
#include "cuda/pinned_buffer.hpp"
#include "cuda/primitives.hpp"
#include "cuda/stream.hpp"
#include "md/exclusions.hpp"
#include "md/force_field.hpp"
#include "md/langevin_noise.hpp"
#include "md/pair_law.hpp"
#include "md/periodic.hpp"
#include "md/thermo_sums.hpp"
#include "nbkit/core/backend.hpp"
#include "nbkit/core/error.hpp"
#include "nbkit/core/memory.hpp"

#include "md/cuda/device_types.cuh"
#include "md/cuda/integrate.cuh"
#include "md/cuda/cell_list.cuh"
#include "md/cuda/verlet_list_forces.cuh"
#include "md/cuda/patch_pairs.cuh"
#include "md/cuda/cluster_pairs.cuh"

namespace nbkit::md {

using cuda::DeviceBuffer;

// ---- the engine ----------------------------------------------------------------------------

namespace {

// The engine behind GpuEngine, one instance per precision.
struct EngineBase {
  virtual ~EngineBase() = default;
  virtual void step(double dt, bool energies, Langevin* thermostat) = 0;
  virtual void apply_thermostat(Langevin& thermostat, double dt) = 0;
  virtual Thermo thermo(std::int64_t step) = 0;
  virtual void download(System& system) = 0;
  virtual void forces(Forces& out) = 0;
  virtual std::int64_t verified_builds() = 0;
  virtual int verified_capacity() = 0;
  virtual void set_capacity(int rows) = 0;
  std::string description;
};

// One captured step (graph and its instance), destroyed with the engine or when its baked-in
// parameters change.
struct StepGraph {
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  double dt = 0;
  LangevinDraw draw{};  // the thermostat's constants baked in (its call comes from the device)
  StepGraph() = default;
  StepGraph(const StepGraph&) = delete;
  StepGraph& operator=(const StepGraph&) = delete;
  ~StepGraph() { reset(); }
  void reset() {
    if (exec) cudaGraphExecDestroy(exec);
    if (graph) cudaGraphDestroy(graph);
    exec = nullptr, graph = nullptr;
  }
};

// Steps between the host's checks of graph steps (a sync each): frozen steps are redone from
// the first one, so the interval bounds the work an overflow costs.
constexpr std::size_t kStepsBetweenChecks = 16;

std::string number(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.6g", value);
  return text;
}

template <class Real>
class Engine final : public EngineBase {
 public:
  Engine(const System& s, const ForceField& f, double skin, const GpuEngine::Options& options)
      : device_(select_device(options.device)), units_(s.units), n_(static_cast<int>(s.size())), volume_(s.box.volume()) {
    check_force_field(s, f);
    if (s.size() == 0) throw Error("the GPU MD engine needs at least one atom");
    if (s.size() >= static_cast<std::size_t>(1) << 30) throw Error("the GPU MD engine handles fewer than 2^30 atoms");
    if (!(skin >= 0) || !std::isfinite(skin)) throw Error("the neighbour skin must not be negative");
    cudaDeviceProp properties{};
    NBKIT_CUDA_CHECK(cudaGetDeviceProperties(&properties, device_));
    description = std::string(properties.name) + (sizeof(Real) == 4 ? ", float32" : ", float64");

    // The box and its cells: at least (reach + skin) wide; every box length above twice that,
    // so that the minimum image is the only image within reach.
    const double list_cutoff = f.reach() + skin;
    int cell_count = 1;
    for (int a = 0; a < 3; ++a) {
      const double length = s.box.length(a);
      if (!(length > 2 * list_cutoff))
        throw Error(std::string("the GPU MD engine needs every box length above twice the cutoff plus skin: box ") +
                    "xyz"[a] + " is " + number(length) + ", 2 x " + number(list_cutoff) + " = " +
                    number(2 * list_cutoff) + "; use the CPU backend for this box");
      geometry_.lo[a] = s.box.lo[a];
      geometry_.length[a] = length;
      geometry_.inverse_length[a] = 1 / length;
      geometry_.cells[a] = static_cast<int>(std::min(1024.0, std::floor(length / list_cutoff)));
      geometry_.cells_per_length[a] = geometry_.cells[a] / length;
      cell_count *= geometry_.cells[a];
    }
    cells_ = cell_count;
    list_cutoff2_ = static_cast<Real>(list_cutoff * list_cutoff);
    half_skin2_ = 0.25 * skin * skin;
    coulomb_ = f.coulomb_cutoff > 0 && s.has_charges;

    // The row capacity from the density (a sphere of the list cutoff), with room for a
    // denser region; grown on overflow.
    const double expected = static_cast<double>(n_) / volume_ * 4.18879020478639 * list_cutoff * list_cutoff * list_cutoff;
    patch_pairs_ = options.pair_kernel == GpuEngine::Options::PairKernel::patch_pairs;
    cluster_pairs_ = options.pair_kernel == GpuEngine::Options::PairKernel::cluster_pairs;
    clusters_ = (n_ + 31) / 32;
    if (patch_pairs_) description += ", patch pairs";
    if (cluster_pairs_) description += ", cluster pairs";
    capacity_ = options.initial_neighbors > 0 ? options.initial_neighbors
                                             : static_cast<int>(std::ceil((1.3 * expected + 16) / 8) * 8);
    if (patch_pairs_) capacity_ = 0;  // no list
    if (cluster_pairs_ && options.initial_neighbors <= 0) capacity_ = 64;  // neighbour clusters a row
    check_memory(capacity_);
    allocated_capacity_ = capacity_;

    const std::size_t n = static_cast<std::size_t>(n_);
    for (auto* b : {&x_, &y_, &z_, &vx_, &vy_, &vz_, &x2_, &y2_, &z2_, &vx2_, &vy2_, &vz2_, &built_x_, &built_y_,
                    &built_z_, &energy_, &virial_, &scratch_})
      *b = DeviceBuffer<double>(n);
    for (auto* b : {&fx_, &fy_, &fz_}) *b = DeviceBuffer<Real>(n);
    for (auto* b : {&type_, &type2_, &tag_, &tag2_, &index_, &order_, &row_length_}) *b = DeviceBuffer<int>(n);
    cell_ = DeviceBuffer<unsigned>(n), sorted_cell_ = DeviceBuffer<unsigned>(n);
    cell_start_ = DeviceBuffer<int>(static_cast<std::size_t>(cells_) + 1);
    packed_ = DeviceBuffer<typename Packed<Real>::type>(n);
    list_ = DeviceBuffer<int>(list_rows() * static_cast<std::size_t>(capacity_));
    if (cluster_pairs_) boxes_ = DeviceBuffer<ClusterBox<Real>>(static_cast<std::size_t>(clusters_));
    control_ = DeviceBuffer<Control>(1);
    sums_ = DeviceBuffer<double>(3);
    host_control_ = cuda::PinnedBuffer<Control>(1);
    use_graphs_ = options.step_graphs;
    host_sums_ = cuda::PinnedBuffer<double>(3);

    // Per-type tables: force -> acceleration, masses, pair coefficients.
    if (!s.atom_mass.empty()) throw Error("the GPU engine takes masses per atom type, not per atom");
    const UnitConstants u = unit_constants(s.units);
    std::vector<double> acceleration(s.types()), mass(s.type_mass);
    for (int t = 0; t < s.types(); ++t) acceleration[t] = u.force_to_acceleration / s.type_mass[t];
    acceleration_per_force_ = upload(acceleration);
    type_mass_ = upload(mass);
    const PairTable table = pair_table(f);
    std::vector<LennardJonesCoefficients<Real>> parameters(table.coefficients.size());
    for (std::size_t k = 0; k < parameters.size(); ++k)
      parameters[k] = {static_cast<Real>(table.coefficients[k].c12), static_cast<Real>(table.coefficients[k].c6),
                       static_cast<Real>(table.coefficients[k].offset)};
    parameters_ = upload(parameters);
    types_ = f.types();
    cutoff2_ = static_cast<Real>(f.cutoff * f.cutoff);
    // The kernels without Coulomb take the reach for the Lennard-Jones cutoff (no second test
    // in the innermost loop): uncharged atoms with a longer Coulomb cutoff must not widen it,
    // or Lennard-Jones would reach past its cutoff (it did: fixed with the one pair law).
    reach2_ = coulomb_ ? static_cast<Real>(f.reach() * f.reach()) : cutoff2_;
    if (coulomb_) {
      coulomb2_ = static_cast<Real>(f.coulomb_cutoff * f.coulomb_cutoff);
      inverse_coulomb_cutoff_ = static_cast<Real>(1 / f.coulomb_cutoff);
      // q_i sqrt(k / eps) per atom, so that a pair's product is k q_i q_j / eps.
      const double scale = std::sqrt(u.coulomb / f.dielectric);
      std::vector<Real> charge(n);
      for (std::size_t i = 0; i < n; ++i) charge[i] = static_cast<Real>(scale * s.charge[i]);
      charge_ = upload(charge);
      charge2_ = DeviceBuffer<Real>(n);
    }
    self_energy_ = coulomb_self_energy(s, f);

    // Exclusions by original atom index: row a lists the partners b of a (both ways).
    if (!f.exclusions.empty()) {
      const auto set = exclusion_set(static_cast<std::int64_t>(n), f);  // checks the indices
      std::vector<std::vector<int>> partners(n);
      for (const std::uint64_t key : set) {
        const int a = static_cast<int>(key >> 32), b = static_cast<int>(key & 0xffffffffu);
        partners[a].push_back(b), partners[b].push_back(a);
      }
      std::vector<int> first(n + 1, 0), partner;
      for (std::size_t a = 0; a < n; ++a) {
        std::sort(partners[a].begin(), partners[a].end());
        partner.insert(partner.end(), partners[a].begin(), partners[a].end());
        first[a + 1] = static_cast<int>(partner.size());
      }
      exclusion_first_ = upload(first);
      exclusion_partner_ = upload(partner);
    }

    // CUB's scratch: the larger of the sort's and the reduction's.
    std::size_t sort_bytes = 0, reduce_bytes = 0;
    key_bits_ = 1;
    while ((1ll << key_bits_) < cells_) ++key_bits_;
    NBKIT_CUDA_CHECK(cuda::sort_pairs(nullptr, sort_bytes, cell_.data(), sorted_cell_.data(), index_.data(),
                                      order_.data(), n_, 0, key_bits_, stream_));
    NBKIT_CUDA_CHECK(cuda::reduce_sum(nullptr, reduce_bytes, energy_.data(), sums_.data(), n_, stream_));
    cub_scratch_ = DeviceBuffer<unsigned char>(std::max(sort_bytes, reduce_bytes));

    // The atoms, in the system's order; their tags are those indices.
    x_.upload(s.x.data(), n, stream_), y_.upload(s.y.data(), n, stream_), z_.upload(s.z.data(), n, stream_);
    vx_.upload(s.vx.data(), n, stream_), vy_.upload(s.vy.data(), n, stream_), vz_.upload(s.vz.data(), n, stream_);
    type_.upload(s.type.data(), n, stream_);
    std::vector<int> tags(n);
    for (std::size_t i = 0; i < n; ++i) tags[i] = static_cast<int>(i);
    tag_.upload(tags.data(), n, stream_);
    NBKIT_CUDA_CHECK(cudaMemsetAsync(control_.data(), 0, sizeof(Control), stream_));
    rebuild();
    evaluate(true);
    NBKIT_CUDA_CHECK(cudaStreamSynchronize(stream_));
  }

  ~Engine() override { cudaSetDevice(device_); }

  void apply_thermostat(Langevin& thermostat, double dt) override {
    verify();  // a frozen graph step would skip it
    NBKIT_CUDA_CHECK(cudaSetDevice(device_));
    queue_langevin(thermostat.next_draw(units_, dt), false);
  }

  void step(double dt, bool energies, Langevin* thermostat) override {
    NBKIT_CUDA_CHECK(cudaSetDevice(device_));
    const std::optional<LangevinDraw> draw =
        thermostat ? std::optional<LangevinDraw>(thermostat->next_draw(units_, dt)) : std::nullopt;
    if (!use_graphs_) {
      synchronous_step(dt, energies, draw);
      return;
    }
    graph_step(dt, energies, draw);
    if (pending_.size() >= kStepsBetweenChecks) verify();
  }

  std::int64_t verified_builds() override {
    verify();
    return builds_;
  }
  int verified_capacity() override {
    verify();
    return capacity_;
  }
  void set_capacity(int rows) override {
    verify();
    NBKIT_CUDA_CHECK(cudaSetDevice(device_));
    if (patch_pairs_) throw Error("the patch-pair kernel keeps no neighbour list");
    if (rows < 1) throw Error("the neighbour list needs room for at least one neighbour a row");
    for (auto& row : graphs_)
      for (StepGraph& graph : row) graph.reset();  // the capacity is baked into them
    // Rows are stored by columns (entry k of row i at k n + i): a smaller capacity leaves the
    // present list valid; a larger one needs a larger buffer and a new list (which may grow
    // the capacity further).
    capacity_ = rows;
    if (rows > allocated_capacity_) {
      list_ = DeviceBuffer<int>();
      check_memory(rows);
      list_ = DeviceBuffer<int>(list_rows() * static_cast<std::size_t>(rows));
      allocated_capacity_ = rows;
      build_lists_growing();
    }
  }

  Thermo thermo(std::int64_t step) override {
    verify();
    NBKIT_CUDA_CHECK(cudaSetDevice(device_));
    mass_velocity2<<<blocks_for(n_), kThreads, 0, stream_>>>(n_, atoms(), type_mass_.data(), scratch_.data());
    NBKIT_CUDA_CHECK_LAUNCH();
    sum(scratch_, 2);
    NBKIT_CUDA_CHECK(cudaMemcpyAsync(host_sums_.data(), sums_.data(), 3 * sizeof(double), cudaMemcpyDeviceToHost, stream_));
    NBKIT_CUDA_CHECK(cudaStreamSynchronize(stream_));
    const double* s = host_sums_.data();
    return thermo_from_sums(units_, static_cast<std::size_t>(n_), volume_, s[2], s[0] + self_energy_, s[1], step);
  }

  void download(System& s) override {
    if (s.size() != static_cast<std::size_t>(n_)) throw Error("GpuEngine::download: the system has another atom count");
    verify();
    const std::vector<int> tags = fetch(tag_);
    const std::vector<double> values[6] = {fetch(x_), fetch(y_), fetch(z_), fetch(vx_), fetch(vy_), fetch(vz_)};
    std::vector<double>* to[6] = {&s.x, &s.y, &s.z, &s.vx, &s.vy, &s.vz};
    for (int k = 0; k < 6; ++k)
      for (int i = 0; i < n_; ++i) (*to[k])[tags[i]] = values[k][i];
  }

  void forces(Forces& out) override {
    verify();
    out.resize(static_cast<std::size_t>(n_));
    const std::vector<int> tags = fetch(tag_);
    const std::vector<Real> fx = fetch(fx_), fy = fetch(fy_), fz = fetch(fz_);
    for (int i = 0; i < n_; ++i) out.fx[tags[i]] = fx[i], out.fy[tags[i]] = fy[i], out.fz[tags[i]] = fz[i];
    out.potential = host_sums_.data()[0] + self_energy_;
    out.virial = host_sums_.data()[1];
  }

 private:
  Atoms atoms() { return {x_.data(), y_.data(), z_.data(), vx_.data(), vy_.data(), vz_.data(), type_.data()}; }

  template <class T>
  DeviceBuffer<T> upload(const std::vector<T>& values) {
    DeviceBuffer<T> buffer(values.size());
    if (!values.empty()) {
      buffer.upload(values.data(), values.size(), stream_);
      NBKIT_CUDA_CHECK(cudaStreamSynchronize(stream_));  // `values` may go before the copy would
    }
    return buffer;
  }
  template <class T>
  std::vector<T> fetch(const DeviceBuffer<T>& buffer) {
    NBKIT_CUDA_CHECK(cudaSetDevice(device_));
    std::vector<T> values(buffer.size());
    buffer.download(values.data(), values.size(), stream_);
    NBKIT_CUDA_CHECK(cudaStreamSynchronize(stream_));
    return values;
  }

  // What the engine holds on the device, checked against the free memory before allocating.
  void check_memory(int row_capacity) const {
    const std::size_t per_atom = 18 * sizeof(double) + 3 * sizeof(Real) + 7 * sizeof(int) + 2 * sizeof(unsigned) +
                                 sizeof(typename Packed<Real>::type) + 2 * sizeof(Real);
    const std::size_t needed = per_atom * static_cast<std::size_t>(n_) + static_cast<std::size_t>(cells_) * sizeof(int) +
                               list_rows() * static_cast<std::size_t>(row_capacity) * sizeof(int) +
                               (cluster_pairs_ ? static_cast<std::size_t>(clusters_) * sizeof(ClusterBox<Real>) : 0);
    std::size_t free_bytes = 0, total_bytes = 0;
    NBKIT_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
    if (needed > free_bytes)
      throw Error("the GPU MD engine needs " + format_bytes(needed) + " on GPU " + std::to_string(device_) + " for " +
                  std::to_string(n_) + " atoms (" + std::to_string(row_capacity) + " neighbours a row); " +
                  format_bytes(free_bytes) + " is free");
  }

  // ---- one step, the host deciding (sync path, and redoing frozen graph steps) ----------

  void synchronous_step(double dt, bool energies, const std::optional<LangevinDraw>& draw) {
    queue_kick_drift(dt);
    NBKIT_CUDA_CHECK(cudaMemcpyAsync(host_control_.data(), control_.data(), sizeof(int), cudaMemcpyDeviceToHost, stream_));
    NBKIT_CUDA_CHECK(cudaStreamSynchronize(stream_));
    if (host_control_.data()->rebuild) rebuild();
    finish_step(dt, energies, draw);
  }

  // Forces (and the thermostat's), then the closing half kick.
  void finish_step(double dt, bool energies, const std::optional<LangevinDraw>& draw) {
    evaluate(energies);
    if (draw) queue_langevin(*draw, false);
    queue_kick(dt);
  }

  void queue_kick_drift(double dt) {
    kick_drift<Real><<<blocks_for(n_), kThreads, 0, stream_>>>(n_, atoms(), fx_.data(), fy_.data(), fz_.data(),
                                                                 acceleration_per_force_.data(), dt, built_x_.data(),
                                                                 built_y_.data(), built_z_.data(), half_skin2_,
                                                                 geometry_, packed_.data(), control_.data());
    NBKIT_CUDA_CHECK_LAUNCH();
  }
  void queue_kick(double dt) {
    kick<Real><<<blocks_for(n_), kThreads, 0, stream_>>>(n_, atoms(), fx_.data(), fy_.data(), fz_.data(),
                                                           acceleration_per_force_.data(), dt, control_.data());
    NBKIT_CUDA_CHECK_LAUNCH();
  }
  void queue_langevin(const LangevinDraw& draw, bool call_from_control) {
    langevin_forces<Real><<<blocks_for(n_), kThreads, 0, stream_>>>(n_, atoms(), tag_.data(), type_mass_.data(), draw,
                                                                      control_.data(), call_from_control, fx_.data(),
                                                                      fy_.data(), fz_.data());
    NBKIT_CUDA_CHECK_LAUNCH();
  }

  // Wrap, sort by cell, gather every per-atom array into the new order, find the cells,
  // build the list (again, longer rows, if one overflowed).
  void rebuild() {
    queue_sort_and_pack();
    if (!patch_pairs_) build_lists_growing();
    ++builds_;
  }

  void queue_sort_and_pack() {
    const int blocks = blocks_for(n_);
    wrap_and_bin<<<blocks, kThreads, 0, stream_>>>(n_, atoms(), geometry_, cell_.data(), index_.data());
    NBKIT_CUDA_CHECK_LAUNCH();
    std::size_t bytes = cub_scratch_.size();
    NBKIT_CUDA_CHECK(cuda::sort_pairs(cub_scratch_.data(), bytes, cell_.data(), sorted_cell_.data(), index_.data(),
                                      order_.data(), n_, 0, key_bits_, stream_));
    reorder(x_, x2_), reorder(y_, y2_), reorder(z_, z2_);
    reorder(vx_, vx2_), reorder(vy_, vy2_), reorder(vz_, vz2_);
    reorder(type_, type2_), reorder(tag_, tag2_);
    if (coulomb_) reorder(charge_, charge2_);
    cell_starts<<<blocks_for(cells_ + 1), kThreads, 0, stream_>>>(n_, cells_, sorted_cell_.data(), cell_start_.data());
    NBKIT_CUDA_CHECK_LAUNCH();
    pack<Real><<<blocks, kThreads, 0, stream_>>>(n_, atoms(), geometry_, packed_.data(), built_x_.data(),
                                                   built_y_.data(), built_z_.data());
    NBKIT_CUDA_CHECK_LAUNCH();
  }

  // Rows of the list: one per atom, or one per cluster of 32.
  std::size_t list_rows() const { return static_cast<std::size_t>(cluster_pairs_ ? clusters_ : n_); }

  void queue_build_list() {
    if (cluster_pairs_) {
      cluster_bounds<Real><<<blocks_for(static_cast<std::int64_t>(clusters_) * 32), kThreads, 0, stream_>>>(
          n_, clusters_, packed_.data(), boxes_.data());
      NBKIT_CUDA_CHECK_LAUNCH();
      build_cluster_list<Real><<<blocks_for(clusters_), kThreads, 0, stream_>>>(
          n_, clusters_, boxes_.data(), cell_start_.data(), geometry_, static_cast<Real>(std::sqrt(static_cast<double>(list_cutoff2_))),
          capacity_, list_.data(), row_length_.data(), &control_.data()->longest);
      NBKIT_CUDA_CHECK_LAUNCH();
      return;
    }
    build_list<Real><<<static_cast<unsigned>(cells_), kListThreads, 0, stream_>>>(
        n_, packed_.data(), cell_start_.data(), geometry_, list_cutoff2_, tag_.data(),
        exclusion_first_.size() ? exclusion_first_.data() : nullptr, exclusion_partner_.data(), capacity_,
        list_.data(), row_length_.data(), &control_.data()->longest);
    NBKIT_CUDA_CHECK_LAUNCH();
  }

  // The list of the sorted, packed atoms; a row that does not fit is never truncated: the
  // list grows (by a margin) and is built again. Invalidates the captured steps when it grows.
  void build_lists_growing() {
    for (;;) {
      NBKIT_CUDA_CHECK(cudaMemsetAsync(control_.data(), 0, 2 * sizeof(int), stream_));  // rebuild, longest
      queue_build_list();
      NBKIT_CUDA_CHECK(
          cudaMemcpyAsync(host_control_.data(), control_.data(), 2 * sizeof(int), cudaMemcpyDeviceToHost, stream_));
      NBKIT_CUDA_CHECK(cudaStreamSynchronize(stream_));
      const int longest = host_control_.data()->longest;
      if (longest <= capacity_) break;
      const int grown = static_cast<int>(std::ceil(longest * 1.15 / 8) * 8);
      if (grown > allocated_capacity_) {
        list_ = DeviceBuffer<int>();
        check_memory(grown);
        list_ = DeviceBuffer<int>(list_rows() * static_cast<std::size_t>(grown));
        allocated_capacity_ = grown;
      }
      capacity_ = grown;
      for (auto& row : graphs_)
        for (StepGraph& graph : row) graph.reset();
    }
  }

  // Gathered into the spare buffer and copied back: every kernel and captured step keeps
  // reading the same buffers.
  template <class T>
  void reorder(DeviceBuffer<T>& values, DeviceBuffer<T>& spare) {
    gather<T><<<blocks_for(n_), kThreads, 0, stream_>>>(n_, order_.data(), values.data(), spare.data());
    NBKIT_CUDA_CHECK_LAUNCH();
    NBKIT_CUDA_CHECK(cudaMemcpyAsync(values.data(), spare.data(), static_cast<std::size_t>(n_) * sizeof(T),
                                     cudaMemcpyDeviceToDevice, stream_));
  }

  // ---- graph steps -----------------------------------------------------------------------

  struct PendingStep {  // a graph step launched since the host last checked
    double dt;
    bool energies;
    std::optional<LangevinDraw> draw;
  };

  static bool same_constants(const LangevinDraw& a, const LangevinDraw& b) {
    return a.seed == b.seed && a.damping == b.damping && a.kick_per_sqrt_mass == b.kick_per_sqrt_mass &&
           a.force_to_acceleration == b.force_to_acceleration;
  }

  void graph_step(double dt, bool energies, const std::optional<LangevinDraw>& draw) {
    StepGraph& graph = graphs_[energies ? 1 : 0][draw ? 1 : 0];
    if (!graph.exec || graph.dt != dt || (draw && !same_constants(graph.draw, *draw))) capture(graph, dt, energies, draw);
    if (draw && draw->call != device_langevin_call_) {  // another thermostat call was made in between
      set_langevin_call<<<1, 1, 0, stream_>>>(control_.data(), draw->call);
      NBKIT_CUDA_CHECK_LAUNCH();
    }
    NBKIT_CUDA_CHECK(cudaGraphLaunch(graph.exec, stream_));
    if (draw) device_langevin_call_ = draw->call + 1;
    pending_.push_back({dt, energies, draw});
  }

  // The step as a graph: drift, the device's rebuild decision, the rebuild as a conditional
  // body (one list build; a row that does not fit freezes the steps), forces, thermostat, kick.
  void capture(StepGraph& graph, double dt, bool energies, const std::optional<LangevinDraw>& draw) {
    graph.reset();
    NBKIT_CUDA_CHECK(cudaGraphCreate(&graph.graph, 0));
    cudaGraphConditionalHandle rebuild_body_handle;
    NBKIT_CUDA_CHECK(cudaGraphConditionalHandleCreate(&rebuild_body_handle, graph.graph, 0, cudaGraphCondAssignDefault));
    cudaGraph_t body = nullptr;
    auto captured = [&](cudaGraph_t target, auto&& queue) {
      NBKIT_CUDA_CHECK(cudaStreamBeginCaptureToGraph(stream_, target, nullptr, nullptr, 0, cudaStreamCaptureModeThreadLocal));
      try {
        queue();
      } catch (...) {
        cudaGraph_t ended = nullptr;
        cudaStreamEndCapture(stream_, &ended);
        graph.reset();
        throw;
      }
      cudaGraph_t ended = nullptr;
      NBKIT_CUDA_CHECK(cudaStreamEndCapture(stream_, &ended));
    };
    captured(graph.graph, [&] {
      queue_kick_drift(dt);
      choose_rebuild<<<1, 1, 0, stream_>>>(control_.data(), rebuild_body_handle);
      NBKIT_CUDA_CHECK_LAUNCH();
      // The conditional node after what is captured so far; capture goes on after it.
      cudaStreamCaptureStatus status;
      cudaGraph_t capturing = nullptr;
      const cudaGraphNode_t* dependencies = nullptr;
      std::size_t dependency_count = 0;
      NBKIT_CUDA_CHECK(cudaStreamGetCaptureInfo(stream_, &status, nullptr, &capturing, &dependencies, nullptr,
                                                &dependency_count));
      cudaGraphNodeParams parameters{};
      parameters.type = cudaGraphNodeTypeConditional;
      parameters.conditional.handle = rebuild_body_handle;
      parameters.conditional.type = cudaGraphCondTypeIf;
      parameters.conditional.size = 1;
      cudaGraphNode_t conditional;
      NBKIT_CUDA_CHECK(cudaGraphAddNode(&conditional, capturing, dependencies, nullptr, dependency_count, &parameters));
      body = parameters.conditional.phGraph_out[0];
      NBKIT_CUDA_CHECK(cudaStreamUpdateCaptureDependencies(stream_, &conditional, nullptr, 1,
                                                           cudaStreamSetCaptureDependencies));
      evaluate(energies);
      if (draw) queue_langevin(*draw, true);
      queue_kick(dt);
      if (draw) {
        count_langevin_call<<<1, 1, 0, stream_>>>(control_.data());
        NBKIT_CUDA_CHECK_LAUNCH();
      }
    });
    captured(body, [&] {
      queue_sort_and_pack();
      if (!patch_pairs_) queue_build_list();
      after_graph_build<<<1, 1, 0, stream_>>>(control_.data(), patch_pairs_ ? INT_MAX : capacity_);
      NBKIT_CUDA_CHECK_LAUNCH();
    });
    NBKIT_CUDA_CHECK(cudaGraphInstantiate(&graph.exec, graph.graph, 0));
    graph.dt = dt;
    if (draw) graph.draw = *draw;
  }

  // The host's check of the graph steps launched since the last one: list builds counted;
  // after a freeze, the list grown and the frozen steps redone by the synchronous path.
  void verify() {
    if (pending_.empty()) return;
    NBKIT_CUDA_CHECK(cudaSetDevice(device_));
    NBKIT_CUDA_CHECK(cudaMemcpyAsync(host_control_.data(), control_.data(), sizeof(Control), cudaMemcpyDeviceToHost, stream_));
    NBKIT_CUDA_CHECK(cudaStreamSynchronize(stream_));
    const Control control = *host_control_.data();
    builds_ += static_cast<std::int64_t>(control.builds - graph_builds_seen_);
    graph_builds_seen_ = control.builds;
    std::vector<PendingStep> steps;
    steps.swap(pending_);
    const unsigned long long first = graph_steps_seen_;
    graph_steps_seen_ = control.graph_steps;
    if (!control.frozen) return;
    // Step m wrapped, sorted and packed the atoms, and a row did not fit its list: nothing
    // after its drift ran. Grow the list, finish step m, redo the rest.
    const std::size_t m = static_cast<std::size_t>(control.frozen_at - first - 1);
    unfreeze<<<1, 1, 0, stream_>>>(control_.data());
    NBKIT_CUDA_CHECK_LAUNCH();
    build_lists_growing();
    ++builds_;
    finish_step(steps[m].dt, steps[m].energies, steps[m].draw);
    for (std::size_t k = m + 1; k < steps.size(); ++k) synchronous_step(steps[k].dt, steps[k].energies, steps[k].draw);
    device_langevin_call_ = ~0ull;  // the device's counter stopped at step m: set again by the next graph step
  }

  void evaluate(bool energies) {
    PairKernelArguments<Real> p{};
    p.packed = packed_.data();
    p.charge = coulomb_ ? charge_.data() : nullptr;
    p.list = list_.data();
    p.row_length = row_length_.data();
    p.parameters = parameters_.data();
    p.types = types_;
    for (int a = 0; a < 3; ++a)
      p.length[a] = static_cast<Real>(geometry_.length[a]), p.inverse_length[a] = static_cast<Real>(geometry_.inverse_length[a]);
    p.reach2 = reach2_;
    p.cutoffs = {cutoff2_, coulomb2_, inverse_coulomb_cutoff_};
    p.fx = fx_.data(), p.fy = fy_.data(), p.fz = fz_.data();
    p.energy = energy_.data(), p.virial = virial_.data();
    p.control = control_.data();
    if (patch_pairs_ || cluster_pairs_) {
      PatchKernelArguments<Real> a{};
      a.pair = p;
      a.cell_start = cell_start_.data();
      a.tag = tag_.data();
      a.exclusion_first = exclusion_first_.size() ? exclusion_first_.data() : nullptr;
      a.exclusion_partner = exclusion_partner_.data();
      for (int axis = 0; axis < 3; ++axis) a.cells[axis] = geometry_.cells[axis];
      if (cluster_pairs_) {
        const int blocks = blocks_for(static_cast<std::int64_t>(clusters_) * 32);
        if (coulomb_) {
          if (energies) cluster_pair_forces<Real, true, true><<<blocks, kThreads, 0, stream_>>>(n_, clusters_, a);
          else cluster_pair_forces<Real, true, false><<<blocks, kThreads, 0, stream_>>>(n_, clusters_, a);
        } else {
          if (energies) cluster_pair_forces<Real, false, true><<<blocks, kThreads, 0, stream_>>>(n_, clusters_, a);
          else cluster_pair_forces<Real, false, false><<<blocks, kThreads, 0, stream_>>>(n_, clusters_, a);
        }
      } else {
        const unsigned grid = static_cast<unsigned>(cells_);
        if (coulomb_) {
          if (energies) patch_pair_forces<Real, true, true><<<grid, kPatchThreads, 0, stream_>>>(a);
          else patch_pair_forces<Real, true, false><<<grid, kPatchThreads, 0, stream_>>>(a);
        } else {
          if (energies) patch_pair_forces<Real, false, true><<<grid, kPatchThreads, 0, stream_>>>(a);
          else patch_pair_forces<Real, false, false><<<grid, kPatchThreads, 0, stream_>>>(a);
        }
      }
      NBKIT_CUDA_CHECK_LAUNCH();
    } else {
      const int blocks = blocks_for(n_);
      if (coulomb_) {
        if (energies) pair_forces<Real, true, true><<<blocks, kThreads, 0, stream_>>>(n_, p);
        else pair_forces<Real, true, false><<<blocks, kThreads, 0, stream_>>>(n_, p);
      } else {
        if (energies) pair_forces<Real, false, true><<<blocks, kThreads, 0, stream_>>>(n_, p);
        else pair_forces<Real, false, false><<<blocks, kThreads, 0, stream_>>>(n_, p);
      }
      NBKIT_CUDA_CHECK_LAUNCH();
    }
    if (energies) {
      sum(energy_, 0), sum(virial_, 1);
      NBKIT_CUDA_CHECK(
          cudaMemcpyAsync(host_sums_.data(), sums_.data(), 2 * sizeof(double), cudaMemcpyDeviceToHost, stream_));
    }
  }

  void sum(const DeviceBuffer<double>& values, int slot) {
    std::size_t bytes = cub_scratch_.size();
    NBKIT_CUDA_CHECK(cuda::reduce_sum(cub_scratch_.data(), bytes, values.data(), sums_.data() + slot, n_, stream_));
  }

  // Checks the index and makes the device current, before stream_ (declared next) is created
  // on it: the stream must belong to the engine's GPU whatever GPU was current before.
  static int select_device(int device) {
    const int index = resolve_gpu({device}).index;  // checked as every engine checks its GPUs
    NBKIT_CUDA_CHECK(cudaSetDevice(index));
    return index;
  }

  int device_;
  cuda::Stream stream_;
  Units units_;
  int n_;
  double volume_;
  Geometry geometry_{};
  int cells_ = 0, key_bits_ = 1, types_ = 1;
  bool coulomb_ = false;
  Real list_cutoff2_ = 0, cutoff2_ = 0, reach2_ = 0, coulomb2_ = 0, inverse_coulomb_cutoff_ = 0;
  double half_skin2_ = 0, self_energy_ = 0;
  DeviceBuffer<double> x_, y_, z_, vx_, vy_, vz_, x2_, y2_, z2_, vx2_, vy2_, vz2_, built_x_, built_y_, built_z_;
  DeviceBuffer<double> energy_, virial_, scratch_, sums_, acceleration_per_force_, type_mass_;
  DeviceBuffer<Real> fx_, fy_, fz_, charge_, charge2_;
  DeviceBuffer<int> type_, type2_, tag_, tag2_, index_, order_, row_length_, list_, cell_start_;
  DeviceBuffer<Control> control_;
  DeviceBuffer<int> exclusion_first_, exclusion_partner_;
  DeviceBuffer<unsigned> cell_, sorted_cell_;
  DeviceBuffer<typename Packed<Real>::type> packed_;
  DeviceBuffer<LennardJonesCoefficients<Real>> parameters_;
  DeviceBuffer<unsigned char> cub_scratch_;
  cuda::PinnedBuffer<Control> host_control_;
  std::int64_t builds_ = 0;
  int capacity_ = 0, allocated_capacity_ = 0;
  bool use_graphs_ = true;
  bool patch_pairs_ = false, cluster_pairs_ = false;
  int clusters_ = 0;
  DeviceBuffer<ClusterBox<Real>> boxes_;
  StepGraph graphs_[2][2];  // [energies][thermostat]
  std::vector<PendingStep> pending_;
  unsigned long long graph_steps_seen_ = 0, graph_builds_seen_ = 0;
  std::uint64_t device_langevin_call_ = ~0ull;  // the device's thermostat counter as the host knows it
  cuda::PinnedBuffer<double> host_sums_;
};

}  // namespace

struct GpuEngine::State {
  std::unique_ptr<EngineBase> engine;
};

GpuEngine::GpuEngine(const System& system, const ForceField& field, double skin, Options options)
    : state_(std::make_unique<State>()) {
  if (options.double_precision) state_->engine = std::make_unique<Engine<double>>(system, field, skin, options);
  else state_->engine = std::make_unique<Engine<float>>(system, field, skin, options);
}
GpuEngine::~GpuEngine() = default;
void GpuEngine::step(double dt, bool energies, Langevin* thermostat) { state_->engine->step(dt, energies, thermostat); }
void GpuEngine::apply_thermostat(Langevin& thermostat, double dt) { state_->engine->apply_thermostat(thermostat, dt); }
Thermo GpuEngine::thermo(std::int64_t step) const { return state_->engine->thermo(step); }
void GpuEngine::download(System& system) const { state_->engine->download(system); }
void GpuEngine::forces(Forces& out) const { state_->engine->forces(out); }
std::int64_t GpuEngine::builds() const { return state_->engine->verified_builds(); }
int GpuEngine::neighbor_capacity() const { return state_->engine->verified_capacity(); }
void GpuEngine::set_neighbor_capacity(int rows) { state_->engine->set_capacity(rows); }
std::string GpuEngine::description() const { return state_->engine->description; }

}  // namespace nbkit::md
