// The molecular pair list and its pair sums on one GPU (molecular_pair_list.cuh has the design):
// the host's side, what each evaluation launches; the kernels are in pair_list_layout.cuh (the
// shared data), pair_list_build.cuh (the build) and pair_list_sums.cuh (the sums).
#include "md/cuda/molecular_pair_list.cuh"


#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "cuda/check.hpp"
#include "cuda/device_buffer.hpp"
#include "cuda/pinned_buffer.hpp"
#include "cuda/primitives.hpp"
#include "cuda/stream.hpp"
#include "md/cuda/cell_starts.cuh"
#include "md/cuda/pair_list_build.cuh"
#include "md/cuda/pair_list_layout.cuh"
#include "md/cuda/pair_list_order.cuh"
#include "md/cuda/pair_list_sums.cuh"
#include "md/fast_pair_math.hpp"
#include "md/molecular_pair_constants.hpp"
#include "md/pair_law.hpp"
#include "nbkit/core/error.hpp"

namespace nbkit::md {

namespace {

using cuda::DeviceBuffer;

int blocks(std::int64_t n) { return static_cast<int>((n + kThreads - 1) / kThreads); }

template <class T>
DeviceBuffer<T> upload(const std::vector<T>& host) {
  DeviceBuffer<T> b(host.size());
  if (!host.empty()) b.upload(host.data(), host.size());
  return b;
}

template <class Real>
std::vector<Real> converted(const std::vector<double>& v) {
  return std::vector<Real>(v.begin(), v.end());
}

}  // namespace

bool env_switch(const char* name, bool otherwise) {
  const char* value = std::getenv(name);
  if (!value || !*value) return otherwise;
  const std::string v = value;
  if (v != "0" && v != "1") throw Error(std::string(name) + " is \"" + v + "\": expected 0 or 1");
  return v == "1";
}

ExcludedRows excluded_rows(const Topology& t) {
  std::vector<std::vector<int>> partners(t.size());
  for (const auto& [a, b] : t.exclusions) partners[a].push_back(b), partners[b].push_back(a);
  ExcludedRows rows;
  rows.first.assign(t.size() + 1, 0);
  for (std::size_t i = 0; i < t.size(); ++i) {
    std::sort(partners[i].begin(), partners[i].end());
    rows.partner.insert(rows.partner.end(), partners[i].begin(), partners[i].end());
    rows.first[i + 1] = static_cast<int>(rows.partner.size());
  }
  return rows;
}

struct MolecularPairListGpu::State {
  int n = 0;
  NonbondedSettings settings;
  bool single = false;
  double skin = 0;
  cudaStream_t stream = nullptr;
  int types = 0;
  DeviceBuffer<int> type, excluded_first, excluded;
  DeviceBuffer<double> charge;
  DeviceBuffer<float> c12f, c6f;
  DeviceBuffer<double> c12d, c6d;
  // The list: built at the first evaluation, again when an atom has moved half the skin or the
  // box's edges change.
  std::array<double, 3> edges{};
  Cells cells{};
  DeviceBuffer<unsigned> key, sorted_key, moved;
  DeviceBuffer<int> index, order, cell_start, list, row_length, longest;
  DeviceBuffer<TypeCell> attributes;
  DeviceBuffer<unsigned char> sort_scratch;
  // The build's sort by counting (bin_and_count, place_by_key, order_keys: the radix sort's order,
  // sorted keys and cell starts, the same bits) where the keys are sub-cells (a few atoms each:
  // order_keys sorts each key's atoms by insertion, which a whole cell's ~150 would make slow)
  // and number at most 4 n (or 2^16); NBKIT_PAIR_LIST_SORT=radix: cub's radix sort always (A/B
  // runs, tests). Six graph nodes instead of ten (a memset, the count, cub's scan's two kernels,
  // the placing and the ordering; order_keys_and_pack also writes the attributes, the build's
  // copy of the positions and the packed positions: 13 nodes the radix sort's way): the list's
  // phase 0.064 against 0.068 ms a step at 23,534 atoms, 0.075 against 0.079 at 30,671 (H200,
  // session 39: two rows each; ns/day within the noise, 1,539.0 and 1,500.4 against 1,508.1 and
  // 1,544.7). With order_keys_and_pack (session 40): 0.064 against the radix sort's 0.067,
  // order_keys_and_pack ~10-11 us a build in the trace, the rate again within the noise (1,580.1
  // and 1,533.1 against 1,555.7).
  bool counting_wanted = true;
  bool counting = false;  // this configuration's sort counts
  int keys = 0;           // its keys
  DeviceBuffer<int> key_count, key_start, key_rank;
  DeviceBuffer<unsigned char> scan_scratch;
  DeviceBuffer<PositionCharge<float>> packed_f;
  DeviceBuffer<PositionCharge<double>> packed_d;
  DeviceBuffer<V3> built;
  int capacity = 0;  // a multiple of kChunk
  int lanes = 1;     // threads per atom in the pair kernel (listed_pairs)
  // The build's kernel: build_rows_by_group (where every axis has 3 or more cells and the groups
  // are on; else by row), build_rows_by_row, build_rows_by_cell.
  enum class Build { group, row, cell } build = Build::group;
  bool offsets_wanted = true;  // entries with cell offsets (offset_code); NBKIT_PAIR_LIST_OFFSETS=0: not
  bool offsets = false;        // the list's entries have them (wanted, and 3 or more cells an axis)
  bool fast_law = true;        // mixed precision's PME pairs by FastFloatPairMath; NBKIT_PAIR_FAST_LAW=0: not
  bool lean_entries = true;    // listed_pairs' Lean (fewer instructions an entry); NBKIT_PAIR_LEAN_ENTRIES=0: not
  bool round_sums = false;     // listed_pairs' RoundSums (a candidate); NBKIT_PAIR_ROUND_SUMS=1: on
  bool near_first = false;     // near_entries_first after each build (a candidate); NBKIT_PAIR_LIST_NEAR_FIRST=1: on
  // Atoms sorted by sub-cell within each cell (bin_atoms), which the build by group needs;
  // NBKIT_PAIR_LIST_GROUPS=0: not, and the build by group falls back to a warp a row (session 34's
  // order, list and bits).
  bool groups_wanted = true;
  // The build by group through one queue of passing groups a warp (pair_list_build.cuh's
  // `Queued`; NBKIT_PAIR_LIST_GROUP_QUEUE=0: a cell's groups at a time, as up to session 40).
  bool group_queue = true;
  // The atoms a box stands for in the queued build (pair_list_build.cuh's `Unit`;
  // NBKIT_PAIR_LIST_UNIT=8: a whole group's, as up to session 41).
  int group_unit = 4;
  // The queue's entries hold a unit's first atom in 21 bits.
  bool queued() const { return group_queue && n <= (1 << 21); }
  int unit() const { return queued() ? group_unit : kGroup; }
  int sub_bits = 0;     // the sort key's sub-cell bits (kSubcellBits or 0)
  bool groups = false;  // this list's build is by group (wanted, sub-cells, 3 or more cells an axis)
  int group_rows = 4;   // rows a warp in the build by group (NBKIT_PAIR_LIST_GROUP_ROWS=4|8)
  DeviceBuffer<float4> group_lo, group_hi;
  std::int64_t builds = 0;     // those the host queued (the device's own: control)
  bool rebuild_next = false;  // asked for (checkpoints), or the list must grow
  int sort_bits = 0;          // the sort key's bits at the last configuration
  int wanted_capacity = 0;    // the longest row the device found, past the capacity (grows the list)
  // NBKIT_PAIR_LIST_CAPACITY=k (tests): a capacity of k entries (in whole chunks) that the host's
  // builds keep, so that rows past it take walk_row's path; a longer row the device finds grows it.
  int fixed_capacity = 0;
  // The rebuild decided on the device (NBKIT_PAIR_LIST_DEVICE_CHECK=0: by the host, which waits
  // for the check's word every step, as up to session 36): the check's word compared and the
  // list rebuilt by a CUDA graph's conditional node, so that the host never waits; inside a
  // step's graph (MolecularGpuDynamics::step_as_graph) the whole step is then one launch. Rows
  // longer than the capacity are summed in full (walk_row) until the host, reading `control`
  // before a later step, grows the list. A build the host must do (the first, a new box, a grown
  // list, a checkpoint's) is queued as before. Measured on an H200 (session 37, 30,671 atoms,
  // nvt-4fs): with the step's graph 1,190 ns/day against 1,105 for the host's check; without the
  // step's graph the decision's own small graph costs ~20 us of latency a step: 1,047.
  bool device_check = true;
  // The device's record, in page-locked host memory that the kernels write directly (mapped: one
  // address space), so no copy is queued: the host reads it when it likes, a few steps stale.
  cuda::PinnedBuffer<ListControl> control{1};
  // Inside a step's graph the check's last block decides (largest_displacement's `decider`): the
  // conditional's handle, made as the check is captured, for add_decision; the blocks' ticket.
  // NBKIT_PAIR_LIST_CHECK_DECIDES=0 (A/B runs): decide_rebuild inside the step's graph too.
  bool check_may_decide = true;
  bool check_decides = false;
  cudaGraphConditionalHandle decided{};
  DeviceBuffer<unsigned> ticket;
  cuda::Event check_done;
  // Where the decision's body is captured. In a step's graph at 23,534 atoms on an H200 a
  // rebuild's first kernel starts ~50 us after the check whatever the priority (of this stream,
  // of each body node, of the stream the graph was launched into; session 38), whatever the
  // bonded terms' stream waits for and whether the decision is captured before or after the mesh
  // (session 39, calls 1-2), and an empty kernel put first in the body starts as late (56.5 us,
  // median of 112 builds; call 5): the body's launch itself is late. What the GPU does with a
  // conditional body (bench/graph_conditional_latency.cu; H200, session 39, call 6): it starts
  // ~5 us after the kernel that set its condition (a plain node 0.7 us), alone or beside chains
  // of small kernels; beside chains of kernels that each fill the GPU, it and a plain node alike
  // wait for running kernels' blocks to drain (5 us kernels: 11.6 us, plain 5.6; 20 us kernels:
  // 41 and 61), and each of the body's kernels waits again (16 tiny kernels: 40-70 us, not 10).
  // Here the mesh's and the bonded terms' chains fill the GPU beside the check.
  cuda::Stream body_stream = cuda::Stream::high_priority();
  std::uint64_t configuration = 0;  // counts the host's builds and regrowths (graphs bake the list in)
  struct Decision {              // the graph: decide_rebuild, then the rebuild if it said so
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t exec = nullptr;
    const V3* x = nullptr;  // the positions it reads (baked in, as are the list's buffers and cells)
    Decision() = default;
    Decision(const Decision&) = delete;
    Decision& operator=(const Decision&) = delete;
    ~Decision() { reset(); }
    void reset() {
      if (exec) cudaGraphExecDestroy(exec);
      if (graph) cudaGraphDestroy(graph);
      exec = nullptr, graph = nullptr, x = nullptr;
    }
  } decision;
  // The check's stream, the event it waits for (the positions final on the main stream) and
  // the largest displacement's bits read back to page-locked memory.
  cuda::Stream check_stream = cuda::Stream::high_priority();
  cuda::Event positions_ready;
  cuda::PinnedBuffer<unsigned> moved_host{1};
  std::int64_t checks = 0;  // started so far: moved[checks % 2] is the next check's word, zero
  bool check_started = false;
  bool prepared = false;  // prepare() packed the positions for this evaluation
  std::unique_ptr<std::array<cuda::Event, 3>> events;
  void mark(int k) {
    if (!events) events = std::make_unique<std::array<cuda::Event, 3>>();
    (*events)[static_cast<std::size_t>(k)].record(stream);
  }

  double reach() const {
    // Mixed precision: a margin of 1e-3 A on the list's reach, far beyond float32's rounding of
    // the cell-relative positions and separations (~1e-6 A), so no pair within the cutoff is
    // left out by a list built in float32.
    return settings.cutoff + skin + (single ? 1e-3 : 0.0);
  }

  template <class Real>
  PositionCharge<Real>* packed();

  template <class Real>
  void build_list(bool zero_longest = true);
  void rebuild(const V3* x, const PeriodicBox& box);
  template <class Real>
  void queue_sort_and_pack(const V3* x);  // binning, sort, cells, attributes, built positions, packing
  int fit(int entries) const;   // a capacity for rows of `entries`: at most n, in whole chunks
  void grow(int needed);        // the list reallocated for rows of `needed` and 10% more
  void regrow(const V3* x);     // grown to wanted_capacity, the last build's rows written again
  void device_step(const V3* x, const PeriodicBox& box);
  void capture_decision(const V3* x);
  void add_decision(const V3* x);  // into the graph `stream` is being captured to
  void read_control();
  Decide decide_with(cudaGraphConditionalHandle handle) {
    return Decide{0.25 * skin * skin, longest.data(), control.data(), handle, ticket.data()};
  }
  bool must_rebuild(const PeriodicBox& box) const;  // whatever the atoms did
  void start_check(const V3* x);
  bool needs_rebuild(const V3* x, const PeriodicBox& box);
  template <class Real, bool Energies>
  void sum_pairs(const V3* x, const PairSums& out, bool corrections);
  // PME's excluded pairs' corrections apart from the pair sums (correct(), queued by the caller
  // on a stream of its choosing), into arrays of their own; NBKIT_CORRECTIONS_APART=0:
  // after the pairs, added to their sums, as up to session 35.
  bool corrections_apart = true;
};

template <>
PositionCharge<float>* MolecularPairListGpu::State::packed<float>() {
  return packed_f.data();
}
template <>
PositionCharge<double>* MolecularPairListGpu::State::packed<double>() {
  return packed_d.data();
}

MolecularPairListGpu::MolecularPairListGpu(const Topology& t, const NonbondedSettings& settings, bool single,
                                           double skin, cudaStream_t stream)
    : state_(std::make_unique<State>()) {
  State& s = *state_;
  if (!settings.periodic()) throw Error("the GPU's pair list serves periodic systems");
  // An entry keeps its neighbour's index in kIndexBits bits (offset_code). 2^26 atoms' rows would
  // need ~170 GB of list at the usual ~600 entries a row, more than any one GPU holds.
  if (t.size() > std::size_t{kIndexMask} + 1)
    throw Error("the GPU's pair list holds at most " + std::to_string(kIndexMask + 1) + " atoms (" +
                std::to_string(t.size()) + " given)");
  if (!(skin >= 0) || !std::isfinite(skin)) throw Error("the neighbour skin must not be negative");
  s.n = static_cast<int>(t.size());
  s.settings = settings, s.single = single, s.skin = skin, s.stream = stream;
  s.types = t.lj_types;
  s.type = upload(std::vector<int>(t.lj_type.begin(), t.lj_type.end()));
  s.charge = upload(t.charge);
  if (single) s.c12f = upload(converted<float>(t.c12)), s.c6f = upload(converted<float>(t.c6));
  else s.c12d = upload(t.c12), s.c6d = upload(t.c6);
  const ExcludedRows rows = excluded_rows(t);
  s.excluded_first = upload(rows.first), s.excluded = upload(rows.partner);
  // Lanes per atom: enough threads for ~2^18 in all (an H100 holds 270,336 resident), at least 4
  // and at most 8. At least 2 from session 41 (a lane an atom from 2^18 atoms before, which also
  // loaded one entry at a time, listed_pairs' Ahead = 1): at 1,073,485 atoms on an H200 (nvt-4fs,
  // 300 steps, one binary, the build by group) 2 lanes gave 44.8 ns/day against 39.1 with 1, the
  // pairs 2.871 against 3.662 ms a step. At least 4 from session 44 (H200, nvt-4fs, 300 steps, one
  // binary, lean entries): 1,073,905 atoms 55.1 and 55.1 ns/day against 54.1, 54.4 and 54.2 with
  // 2 (the pairs 2.737 against 2.751 ms a step); 368,196 atoms 157.7 against 155.2 (0.977 against
  // 0.999 ms). Below 131,072 atoms the rule gave 4 or 8 already.
  s.lanes = 4;
  while (s.lanes < 8 && static_cast<std::int64_t>(s.n) * s.lanes < (std::int64_t{1} << 18)) s.lanes *= 2;
  // NBKIT_PAIR_LANES=1|2|4|8 (A/B runs): fewer lanes leave SMs to PME's mesh beside the pairs,
  // whose small kernels waited ~50 us a step for the pairs' blocks at 30,671 atoms on an H200
  // (session 36's CUPTI timeline). Measured in session 37 (H200, before the step's graph): 4
  // lanes instead of 8 slower, 1,086.5 against 1,109.6 ns/day at 30,671 atoms and 1,218.9
  // against 1,248.0 at 23,534, so the count stays by size. Another count sums each row in another
  // order: other last bits, within float32's rounding (MolecularGpu.PairLanesAgree...).
  if (const char* pick = std::getenv("NBKIT_PAIR_LANES"); pick && *pick) {
    const std::string p = pick;
    if (p != "1" && p != "2" && p != "4" && p != "8")
      throw Error("NBKIT_PAIR_LANES is \"" + p + "\": expected 1, 2, 4 or 8 (or unset: by the atom count)");
    s.lanes = std::stoi(p);
  }
  // The build: a warp per group of rows at every size. Up to session 40 a lane per row (by cell)
  // above 2^18 atoms (measured on an H100 at 1,074,325 atoms then, by cell faster than by row;
  // at 30,695 a warp a row faster). With the group build's queue and trimmed rounds (session 41,
  // H200, nvt-4fs at 1,073,485 atoms, one binary): by group 41.7 ns/day against 39.2 by cell,
  // the list's phase 1.617 against 1.920 ms a step and the pairs 3.652 against 3.747 (the
  // sub-cell order's rows are more compact).
  // NBKIT_PAIR_LIST_BUILD=group, row or cell picks one (tests, A/B runs): all write the same list.
  s.build = State::Build::group;
  if (const char* pick = std::getenv("NBKIT_PAIR_LIST_BUILD"); pick && *pick) {
    const std::string p = pick;
    if (p != "group" && p != "row" && p != "cell")
      throw Error("NBKIT_PAIR_LIST_BUILD is \"" + p +
                  "\": expected group, row or cell (or unset: by the atom count)");
    s.build = p == "group" ? State::Build::group : p == "row" ? State::Build::row : State::Build::cell;
  }
  // Both on unless switched off (A/B runs, tests). Measured on an H200 at 30,677 atoms (session
  // 34, docs/performance.md): the pairs 0.180 ms a step without either, 0.157 with the offsets
  // (the same bits), 0.146 with the fast law, 0.125 with both.
  s.offsets_wanted = env_switch("NBKIT_PAIR_LIST_OFFSETS", true);
  s.fast_law = env_switch("NBKIT_PAIR_FAST_LAW", true);
  s.lean_entries = env_switch("NBKIT_PAIR_LEAN_ENTRIES", true);
  s.round_sums = env_switch("NBKIT_PAIR_ROUND_SUMS", false);
  s.near_first = env_switch("NBKIT_PAIR_LIST_NEAR_FIRST", false);
  s.groups_wanted = env_switch("NBKIT_PAIR_LIST_GROUPS", true);
  s.group_queue = env_switch("NBKIT_PAIR_LIST_GROUP_QUEUE", true);
  if (const char* unit = std::getenv("NBKIT_PAIR_LIST_UNIT"); unit && *unit) {
    const std::string u = unit;
    if (u != "4" && u != "8") throw Error("NBKIT_PAIR_LIST_UNIT is \"" + u + "\": expected 4 or 8");
    s.group_unit = u == "8" ? 8 : 4;
  }
  s.corrections_apart = env_switch("NBKIT_CORRECTIONS_APART", true);
  s.device_check = env_switch("NBKIT_PAIR_LIST_DEVICE_CHECK", true);
  s.check_may_decide = env_switch("NBKIT_PAIR_LIST_CHECK_DECIDES", true);
  if (const char* sort = std::getenv("NBKIT_PAIR_LIST_SORT"); sort && *sort) {
    const std::string v = sort;
    if (v != "count" && v != "radix") throw Error("NBKIT_PAIR_LIST_SORT is \"" + v + "\": expected count or radix");
    s.counting_wanted = v == "count";
  }
  if (const char* fixed = std::getenv("NBKIT_PAIR_LIST_CAPACITY"); fixed && *fixed) {
    char* end = nullptr;
    const long k = std::strtol(fixed, &end, 10);
    if (*end || k < 1 || k > (1 << 20))
      throw Error(std::string("NBKIT_PAIR_LIST_CAPACITY is \"") + fixed + "\": expected a whole number of entries, 1 to 2^20");
    s.fixed_capacity = static_cast<int>(k);
  }
  if (const char* rows = std::getenv("NBKIT_PAIR_LIST_GROUP_ROWS"); rows && *rows) {
    const std::string r = rows;
    if (r != "4" && r != "8") throw Error("NBKIT_PAIR_LIST_GROUP_ROWS is \"" + r + "\": expected 4 or 8");
    s.group_rows = r == "8" ? 8 : 4;
  }
  const std::size_t n = t.size();
  s.key = DeviceBuffer<unsigned>(n), s.sorted_key = DeviceBuffer<unsigned>(n), s.moved = DeviceBuffer<unsigned>(2);
  s.index = DeviceBuffer<int>(n), s.order = DeviceBuffer<int>(n), s.attributes = DeviceBuffer<TypeCell>(n);
  s.row_length = DeviceBuffer<int>(n), s.longest = DeviceBuffer<int>(1), s.ticket = DeviceBuffer<unsigned>(1);
  NBKIT_CUDA_CHECK(cudaMemsetAsync(s.ticket.data(), 0, sizeof(unsigned), stream));
  s.built = DeviceBuffer<V3>(n);
  *s.control.data() = ListControl{};
  NBKIT_CUDA_CHECK(cudaMemsetAsync(s.moved.data(), 0, 2 * sizeof(unsigned), stream));  // before any check (its event)
  if (single) s.packed_f = DeviceBuffer<PositionCharge<float>>(n);
  else s.packed_d = DeviceBuffer<PositionCharge<double>>(n);
  std::size_t bytes = 0;
  NBKIT_CUDA_CHECK(cuda::sort_pairs(nullptr, bytes, s.key.data(), s.sorted_key.data(), s.index.data(), s.order.data(),
                                    s.n, 0, 32, stream));
  s.sort_scratch = DeviceBuffer<unsigned char>(std::max<std::size_t>(bytes, 1));
}

MolecularPairListGpu::~MolecularPairListGpu() = default;

bool MolecularPairListGpu::graph_ready(const PeriodicBox& box) {
  State& s = *state_;
  if (s.n == 0 || !s.device_check) return false;
  s.read_control();
  return !s.must_rebuild(box) && s.wanted_capacity <= s.capacity;
}

std::uint64_t MolecularPairListGpu::configuration() const { return state_->configuration; }

std::int64_t MolecularPairListGpu::builds() const {
  State& s = *state_;
  if (!s.device_check || s.n == 0) return s.builds;
  NBKIT_CUDA_CHECK(cudaStreamSynchronize(s.stream));
  return s.builds + static_cast<std::int64_t>(static_cast<volatile ListControl*>(s.control.data())->builds);
}
void MolecularPairListGpu::rebuild_next() { state_->rebuild_next = true; }
int MolecularPairListGpu::capacity() const { return state_->capacity; }

bool MolecularPairListGpu::State::must_rebuild(const PeriodicBox& box) const {
  const std::array<double, 3> now{box.length(0), box.length(1), box.length(2)};
  return builds == 0 || now != edges || skin == 0 || rebuild_next;
}

// The check on its own stream, after everything queued on the main stream so far (the positions'
// last writers); `built` was last written on the main stream before that too.
void MolecularPairListGpu::State::start_check(const V3* x) {
  positions_ready.record(stream);
  NBKIT_CUDA_CHECK(cudaStreamWaitEvent(check_stream, positions_ready, 0));
  if (device_check) {  // one word, read and zeroed by the decision
    // Inside a step's graph the check itself decides (the conditional's handle made here, its
    // node added by add_decision); elsewhere decide_rebuild does, in the decision's own graph.
    cudaStreamCaptureStatus status;
    cudaGraph_t capturing = nullptr;
    NBKIT_CUDA_CHECK(cudaStreamGetCaptureInfo(stream, &status, nullptr, &capturing, nullptr, nullptr, nullptr));
    check_decides = check_may_decide && status == cudaStreamCaptureStatusActive;
    if (check_decides)
      NBKIT_CUDA_CHECK(cudaGraphConditionalHandleCreate(&decided, capturing, 0, cudaGraphCondAssignDefault));
    largest_displacement<<<blocks(n), kThreads, 0, check_stream>>>(n, x, built.data(), cells, moved.data(),
                                                                   moved.data() + 1, check_decides, decide_with(decided));
    NBKIT_CUDA_CHECK_LAUNCH();
    check_done.record(check_stream);
    check_started = true;
    return;
  }
  unsigned* word = moved.data() + checks % 2;
  largest_displacement<<<blocks(n), kThreads, 0, check_stream>>>(n, x, built.data(), cells, word,
                                                                 moved.data() + (checks + 1) % 2, false, Decide{});
  ++checks;
  NBKIT_CUDA_CHECK_LAUNCH();
  NBKIT_CUDA_CHECK(
      cudaMemcpyAsync(moved_host.data(), word, sizeof(unsigned), cudaMemcpyDeviceToHost, check_stream));
  check_started = true;
}

bool MolecularPairListGpu::State::needs_rebuild(const V3* x, const PeriodicBox& box) {
  if (must_rebuild(box)) return check_started = false, true;
  if (!check_started) start_check(x);
  check_started = false;
  NBKIT_CUDA_CHECK(cudaStreamSynchronize(check_stream));
  const unsigned bits = moved_host.data()[0];
  float largest2 = 0;
  static_assert(sizeof(bits) == sizeof(largest2));
  std::memcpy(&largest2, &bits, sizeof(bits));
  return !(static_cast<double>(largest2) <= 0.25 * skin * skin);
}

template <class Real>
void MolecularPairListGpu::State::build_list(bool zero_longest) {
  if (zero_longest) NBKIT_CUDA_CHECK(cudaMemsetAsync(longest.data(), 0, sizeof(int), stream));
  const Real reach2 = Real(reach() * reach());
  const int total = cells.total();
  if (groups) {
    // The boxes' tests a millimetre wider than the reach: far beyond float32's rounding of the
    // boxes (rounded outward) and of the shifts (~1e-6 A), so they never drop an atom within reach.
    const float group_reach = static_cast<float>(reach() + 1e-3);
    // Warps for the mean cell's groups and half as many more (a fuller cell's warps take several).
    auto launch = [&](auto kernel, int parts) {
      const int per_cell = (n / total + kGroup - 1) / kGroup * parts;
      const dim3 grid(total, std::min(65535, (per_cell + per_cell / 2 + kGroupWarps) / kGroupWarps));
      kernel<<<grid, 32 * kGroupWarps, 0, stream>>>(n, packed<Real>(), order.data(), cell_start.data(), cells,
                                                    frame_of<Real>(cells), reach2, excluded_first.data(),
                                                    excluded.data(), capacity, list.data(), row_length.data(),
                                                    longest.data(), offsets, group_lo.data(), group_hi.data(),
                                                    group_reach * group_reach);
    };
    const bool four = unit() == 4;
    if (group_rows == 8) {
      if (!queued()) launch(build_rows_by_group<Real, 8>, 1);
      else if (four) launch(build_rows_by_group<Real, 8, true, 4>, 1);
      else launch(build_rows_by_group<Real, 8, true>, 1);
    } else {
      if (!queued()) launch(build_rows_by_group<Real, 4>, 2);
      else if (four) launch(build_rows_by_group<Real, 4, true, 4>, 2);
      else launch(build_rows_by_group<Real, 4, true>, 2);
    }
  } else if (build == Build::row || (build == Build::group && n < (1 << 18))) {
    // Where the groups cannot be used (fewer than 3 cells along an axis, or no sub-cells): a warp
    // a row below 2^18 atoms, a lane a row above (measured on an H100 at 1,074,325 atoms: by cell
    // faster than by row).
    build_rows_by_row<Real><<<(n + kRowWarps - 1) / kRowWarps, 32 * kRowWarps, 0, stream>>>(
        n, packed<Real>(), attributes.data(), order.data(), cell_start.data(), cells, frame_of<Real>(cells), reach2,
        excluded_first.data(), excluded.data(), capacity, list.data(), row_length.data(), longest.data(), offsets);
  } else {
    // Groups of 32 per cell: the mean cell's count, and one more for fuller cells (a fuller one's
    // warps take several groups each).
    const dim3 grid(total, std::min(65535, (n / total + kRowThreads - 1) / kRowThreads + 1));
    build_rows_by_cell<Real><<<grid, kRowThreads, 0, stream>>>(
        n, packed<Real>(), attributes.data(), order.data(), cell_start.data(), cells, frame_of<Real>(cells), reach2,
        excluded_first.data(), excluded.data(), capacity, list.data(), row_length.data(), longest.data(), offsets);
  }
  NBKIT_CUDA_CHECK_LAUNCH();
  if (near_first) {  // pair_list_order.cuh
    const double near = settings.cutoff + kNearMargin;
    near_entries_first<Real><<<(n + kOrderWarps - 1) / kOrderWarps, 32 * kOrderWarps, 0, stream>>>(
        n, packed<Real>(), attributes.data(), frame_of<Real>(cells), offsets, Real(near * near), capacity,
        row_length.data(), list.data());
    NBKIT_CUDA_CHECK_LAUNCH();
  }
}

void MolecularPairListGpu::State::rebuild(const V3* x, const PeriodicBox& box) {
  edges = {box.length(0), box.length(1), box.length(2)};
  const double r = reach();
  for (int a = 0; a < 3; ++a) {
    cells.length[a] = edges[static_cast<std::size_t>(a)], cells.inverse[a] = 1 / cells.length[a];
    cells.count[a] = std::clamp(static_cast<int>(std::floor(cells.length[a] / r)), 1, kMaxCellsPerAxis);
    cells.per_length[a] = cells.count[a] * cells.inverse[a];
  }
  const int total = cells.total();
  const bool stencil_everywhere = cells.count[0] >= 3 && cells.count[1] >= 3 && cells.count[2] >= 3;
  offsets = offsets_wanted && stencil_everywhere;
  int bits = 1;
  while ((std::int64_t{1} << bits) < total) ++bits;
  // The sub-cell order where the build is by group, and for every build below 2^18 atoms (so that
  // a forced build by row or cell writes the same list as the build by group); above, the build
  // by cell keeps session 34's order (the sub-cells were not measured there).
  const bool sub_order = groups_wanted && (build == Build::group || n < (1 << 18));
  sub_bits = sub_order && bits + kSubcellBits <= 32 ? kSubcellBits : 0;
  sort_bits = bits + sub_bits;
  const std::int64_t key_total = std::int64_t{total} << sub_bits;
  counting = counting_wanted && sub_bits > 0 && key_total <= std::max<std::int64_t>(4 * std::int64_t{n}, 1 << 16);
  if (counting) {
    keys = static_cast<int>(key_total);
    if (key_count.size() < static_cast<std::size_t>(keys) + 1)
      key_count = DeviceBuffer<int>(keys + 1), key_start = DeviceBuffer<int>(keys + 1);
    if (key_rank.size() < static_cast<std::size_t>(n)) key_rank = DeviceBuffer<int>(n);
    std::size_t bytes = 0;
    NBKIT_CUDA_CHECK(
        cuda::exclusive_sum(nullptr, bytes, key_count.data(), key_start.data(), keys + 1, stream));
    if (scan_scratch.size() < bytes) scan_scratch = DeviceBuffer<unsigned char>(bytes);
  }
  groups = sub_bits != 0 && build == Build::group && stencil_everywhere;
  if (groups && group_lo.size() < static_cast<std::size_t>(n))
    group_lo = DeviceBuffer<float4>(n), group_hi = DeviceBuffer<float4>(n);
  if (cell_start.size() < static_cast<std::size_t>(total) + 1) cell_start = DeviceBuffer<int>(total + 1);
  auto pack_and_build = [&](auto real) {
    using Real = decltype(real);
    queue_sort_and_pack<Real>(x);
    if (capacity == 0) {
      // First build: room for the pairs within reach at the box's mean density, with a quarter
      // more for denser regions (a protein's packing); a longer row grows the list below.
      const double density = n / (edges[0] * edges[1] * edges[2]);
      const double expected = density * 4.0 / 3.0 * 3.14159265358979323846 * r * r * r;
      capacity = fit(fixed_capacity ? fixed_capacity : static_cast<int>(std::ceil(1.25 * expected)) + 32);
      list = DeviceBuffer<int>(static_cast<std::size_t>(capacity) * n);
    }
    if (wanted_capacity > capacity) grow(wanted_capacity);  // found by the device
    build_list<Real>();
    int needed = 0;
    longest.download(&needed, 1, stream);
    NBKIT_CUDA_CHECK(cudaStreamSynchronize(stream));
    if (needed > capacity && !fixed_capacity) {  // a row did not fit: the list grows and is built again
      grow(needed);
      build_list<Real>();
    }
  };
  if (single) pack_and_build(float{});
  else pack_and_build(double{});
  ++builds;
  rebuild_next = false;
  wanted_capacity = 0;
  decision.reset();  // its cells, buffers and capacity are the last configuration's
  ++configuration;
}

int MolecularPairListGpu::State::fit(int entries) const { return (std::min(n, entries) + kChunk - 1) / kChunk * kChunk; }

void MolecularPairListGpu::State::grow(int needed) {
  capacity = fit(needed + needed / 10 + 32);
  list = DeviceBuffer<int>();  // freed first: the old and the new list need not fit together
  list = DeviceBuffer<int>(static_cast<std::size_t>(capacity) * n);
}

// The list grown for the longest row a build on the device found, and the rows written again from
// the positions of that build (`built`): binned and sorted again they give the same order, so the
// same rows, now whole; then this evaluation's positions packed again. The trajectory is the one
// a list that held every row would give (walk_row summed the rows' rest meanwhile).
void MolecularPairListGpu::State::regrow(const V3* x) {
  NBKIT_CUDA_CHECK(cudaStreamSynchronize(stream));  // the steps queued so far read the old list
  grow(wanted_capacity);
  wanted_capacity = 0;
  auto again = [&](auto real) {
    using Real = decltype(real);
    queue_sort_and_pack<Real>(built.data());
    for (;;) {
      build_list<Real>();
      int needed = 0;
      longest.download(&needed, 1, stream);
      NBKIT_CUDA_CHECK(cudaStreamSynchronize(stream));
      if (needed <= capacity) break;
      grow(needed);
    }
    pack<Real><<<blocks(n), kThreads, 0, stream>>>(n, x, charge.data(), order.data(), attributes.data(), cells,
                                                   packed<Real>());
    NBKIT_CUDA_CHECK_LAUNCH();
  };
  if (single) again(float{});
  else again(double{});
  decision.reset();
  ++configuration;
}

// The atoms binned and sorted, the cells' starts, each sorted atom's attributes, the build's copy
// of the positions (`built`) and the positions packed in the new order (and the groups' boxes).
template <class Real>
void MolecularPairListGpu::State::queue_sort_and_pack(const V3* x) {
  const int total = cells.total();
  const bool copy = x != built.data();
  if (counting) {
    NBKIT_CUDA_CHECK(cudaMemsetAsync(key_count.data(), 0, sizeof(int) * (static_cast<std::size_t>(keys) + 1), stream));
    bin_and_count<<<blocks(n), kThreads, 0, stream>>>(n, x, cells, sub_bits, key.data(), key_count.data(),
                                                      key_rank.data());
    NBKIT_CUDA_CHECK_LAUNCH();
    std::size_t bytes = scan_scratch.size();
    NBKIT_CUDA_CHECK(cuda::exclusive_sum(scan_scratch.data(), bytes, key_count.data(), key_start.data(), keys + 1,
                                         stream));
    place_by_key<<<blocks(n), kThreads, 0, stream>>>(n, key.data(), key_start.data(), key_rank.data(), order.data(),
                                                     sorted_key.data());
    NBKIT_CUDA_CHECK_LAUNCH();
    order_keys_and_pack<Real><<<blocks(std::int64_t{keys} + 1), kThreads, 0, stream>>>(
        keys, key_start.data(), sub_bits, order.data(), cell_start.data(), sorted_key.data(), type.data(), x,
        charge.data(), cells, attributes.data(), packed<Real>(), copy ? built.data() : nullptr);
    NBKIT_CUDA_CHECK_LAUNCH();
  } else {
    bin_atoms<<<blocks(n), kThreads, 0, stream>>>(n, x, cells, sub_bits, key.data(), index.data());
    NBKIT_CUDA_CHECK_LAUNCH();
    std::size_t bytes = sort_scratch.size();
    NBKIT_CUDA_CHECK(cuda::sort_pairs(sort_scratch.data(), bytes, key.data(), sorted_key.data(), index.data(),
                                      order.data(), n, 0, sort_bits, stream));
    cell_starts<<<blocks(total + 1), kThreads, 0, stream>>>(n, total, sorted_key.data(), cell_start.data(), sub_bits);
    NBKIT_CUDA_CHECK_LAUNCH();
    sorted_attributes<<<blocks(n), kThreads, 0, stream>>>(n, order.data(), type.data(), sorted_key.data(), sub_bits,
                                                          cells, attributes.data());
    NBKIT_CUDA_CHECK_LAUNCH();
    if (copy) NBKIT_CUDA_CHECK(cudaMemcpyAsync(built.data(), x, sizeof(V3) * n, cudaMemcpyDeviceToDevice, stream));
    pack<Real><<<blocks(n), kThreads, 0, stream>>>(n, x, charge.data(), order.data(), attributes.data(), cells,
                                                   packed<Real>());
    NBKIT_CUDA_CHECK_LAUNCH();
  }
  if (groups) {
    group_bounds<Real><<<blocks(n), kThreads, 0, stream>>>(n, packed<Real>(), sorted_key.data(), sub_bits,
                                                           cell_start.data(), unit(), group_lo.data(), group_hi.data());
    NBKIT_CUDA_CHECK_LAUNCH();
  }
}

// The device's record, if its copy has arrived (never waits): a row longer than the capacity
// grows the list at this evaluation (regrow, or the host's build).
void MolecularPairListGpu::State::read_control() {
  const int longest_found = static_cast<volatile ListControl*>(control.data())->longest;
  if (longest_found > capacity) wanted_capacity = std::max(wanted_capacity, longest_found);
}

// The decision as a graph of its own (the Lennard-Jones engine's step does the same:
// engine_cuda.cu), where the evaluation is not itself being captured into a step's graph.
void MolecularPairListGpu::State::capture_decision(const V3* x) {
  decision.reset();
  NBKIT_CUDA_CHECK(cudaGraphCreate(&decision.graph, 0));
  NBKIT_CUDA_CHECK(cudaStreamBeginCaptureToGraph(stream, decision.graph, nullptr, nullptr, 0,
                                                 cudaStreamCaptureModeThreadLocal));
  try {
    add_decision(x);
  } catch (...) {
    cudaGraph_t ended = nullptr;
    cudaStreamEndCapture(stream, &ended);
    decision.reset();
    throw;
  }
  cudaGraph_t ended = nullptr;
  NBKIT_CUDA_CHECK(cudaStreamEndCapture(stream, &ended));
  NBKIT_CUDA_CHECK(cudaGraphInstantiate(&decision.exec, decision.graph, 0));
  decision.x = x;
}

// decide_rebuild sets the condition of the node after it, whose body holds the rebuild's kernels
// as rebuild() queues them for the present cells, buffers and capacity, and note_build after
// them; added to the graph `stream` is being captured to (the decision's own, or a step's). The
// body is captured from body_stream (a stream captures to one graph at a time).
void MolecularPairListGpu::State::add_decision(const V3* x) {
  cudaStreamCaptureStatus status;
  cudaGraph_t capturing = nullptr;
  NBKIT_CUDA_CHECK(cudaStreamGetCaptureInfo(stream, &status, nullptr, &capturing, nullptr, nullptr, nullptr));
  if (status != cudaStreamCaptureStatusActive) throw Error("the pair list's decision is added to a capture only");
  cudaGraphConditionalHandle handle = decided;
  if (!check_decides) {  // the check decided already (inside a step's graph) or decide_rebuild does
    NBKIT_CUDA_CHECK(cudaGraphConditionalHandleCreate(&handle, capturing, 0, cudaGraphCondAssignDefault));
    decide_rebuild<<<1, 1, 0, stream>>>(moved.data(), decide_with(handle));
    NBKIT_CUDA_CHECK_LAUNCH();
  }
  check_decides = false;
  const cudaGraphNode_t* dependencies = nullptr;
  std::size_t dependency_count = 0;
  NBKIT_CUDA_CHECK(
      cudaStreamGetCaptureInfo(stream, &status, nullptr, &capturing, &dependencies, nullptr, &dependency_count));
  cudaGraphNodeParams parameters{};
  parameters.type = cudaGraphNodeTypeConditional;
  parameters.conditional.handle = handle;
  parameters.conditional.type = cudaGraphCondTypeIf;
  parameters.conditional.size = 1;
  cudaGraphNode_t conditional;
  NBKIT_CUDA_CHECK(cudaGraphAddNode(&conditional, capturing, dependencies, nullptr, dependency_count, &parameters));
  cudaGraph_t body = parameters.conditional.phGraph_out[0];
  NBKIT_CUDA_CHECK(
      cudaStreamUpdateCaptureDependencies(stream, &conditional, nullptr, 1, cudaStreamSetCaptureDependencies));
  const cudaStream_t outer = stream;
  stream = body_stream;  // the queueing functions below launch on `stream`
  NBKIT_CUDA_CHECK(cudaStreamBeginCaptureToGraph(stream, body, nullptr, nullptr, 0, cudaStreamCaptureModeThreadLocal));
  try {
    auto pack_and_build = [&](auto real) {
      using Real = decltype(real);
      queue_sort_and_pack<Real>(x);
      build_list<Real>(false);  // decide_rebuild zeroed `longest`
    };
    if (single) pack_and_build(float{});
    else pack_and_build(double{});
    note_build<<<1, 1, 0, stream>>>(longest.data(), control.data());
    NBKIT_CUDA_CHECK_LAUNCH();
  } catch (...) {
    cudaGraph_t ended = nullptr;
    cudaStreamEndCapture(stream, &ended);
    stream = outer;
    throw;
  }
  cudaGraph_t ended = nullptr;
  const cudaError_t e = cudaStreamEndCapture(stream, &ended);
  stream = outer;
  NBKIT_CUDA_CHECK(e);
}

// An evaluation's list where the device decides: the host's builds as before where the host must
// build, else the decision's graph after the check; the record of its builds copied back on the
// check's stream, off the pairs' way.
void MolecularPairListGpu::State::device_step(const V3* x, const PeriodicBox& box) {
  cudaStreamCaptureStatus status;
  NBKIT_CUDA_CHECK(cudaStreamIsCapturing(stream, &status));
  const bool in_step_graph = status == cudaStreamCaptureStatusActive;
  // Inside a step's capture the list is as graph_ready found it (it read the device's record
  // then): reading the record again here could ask for a growth, which cannot be captured.
  if (!in_step_graph) read_control();
  if (in_step_graph && (must_rebuild(box) || wanted_capacity > capacity))
    throw Error("the pair list: a step's graph captured where the list must be built or grown (a bug)");
  if (must_rebuild(box)) {
    if (check_started) {  // its word unread: zeroed for the next check
      NBKIT_CUDA_CHECK(cudaStreamWaitEvent(stream, check_done, 0));
      NBKIT_CUDA_CHECK(cudaMemsetAsync(moved.data(), 0, sizeof(unsigned), stream));
      check_started = false;
    }
    rebuild(x, box);
    return;
  }
  if (wanted_capacity > capacity) regrow(x);
  if (!check_started) start_check(x);
  check_started = false;
  if (!in_step_graph && (!decision.exec || decision.x != x)) capture_decision(x);
  NBKIT_CUDA_CHECK(cudaStreamWaitEvent(stream, check_done, 0));
  if (in_step_graph) add_decision(x);
  else NBKIT_CUDA_CHECK(cudaGraphLaunch(decision.exec, stream));
}

template <class Real, bool Energies>
void MolecularPairListGpu::State::sum_pairs(const V3* x, const PairSums& out, bool corrections) {
  PairSwitch switched;
  PairCoulomb coulomb;
  const MolecularPairConstants<double> k = molecular_pair_constants(settings, switched, coulomb);
  PairLaw<Real> law{};
  law.c12 = single ? reinterpret_cast<const Real*>(c12f.data()) : reinterpret_cast<const Real*>(c12d.data());
  law.c6 = single ? reinterpret_cast<const Real*>(c6f.data()) : reinterpret_cast<const Real*>(c6d.data());
  law.types = types;
  law.frame = frame_of<Real>(cells);
  law.cutoff2 = Real(settings.cutoff * settings.cutoff);
  law.coulomb_k = Real(settings.coulomb_k());
  law.offsets = offsets;
  law.capacity = capacity;
  law.reach2 = Real(reach() * reach());
  law.cell_start = cell_start.data(), law.excluded_first = excluded_first.data(), law.excluded = excluded.data();
  // The fast law where asked for and its erfc series reaches every pair (fast_pair_math.hpp).
  const bool fast = fast_law && single && coulomb == PairCoulomb::ewald &&
                    k.ewald_alpha * settings.cutoff <= kScaledErfcFloatTop;
  law.k = {Real(k.k_rf),          Real(k.c_rf),    Real(k.switch_distance), Real(k.switch_distance2),
           Real(k.inverse_switch_width), Real(k.cutoff2), Real(k.charmm_inverse_denominator),
           Real(k.ewald_alpha),   Real(k.ewald_gauss), Real(k.inverse_cutoff)};
  with_law(switched, coulomb, [&](auto sw, auto c) {
    auto launch = [&](auto kernel) {
      kernel<<<blocks(static_cast<std::int64_t>(n) * lanes), kThreads, 0, stream>>>(
          n, lanes, packed<Real>(), attributes.data(), order.data(), list.data(), row_length.data(), law, out);
      NBKIT_CUDA_CHECK_LAUNCH();
    };
    constexpr PairSwitch S = decltype(sw)::value;
    constexpr PairCoulomb C = decltype(c)::value;
    // Entries a lane loads at a time (listed_pairs' Ahead). Measured on an H200 at 30,677 atoms
    // (8 lanes an atom; session 33, docs/performance.md): the pairs 0.190 ms a step at 1, 0.177
    // at 2 and 4 (mixed kernel 40 -> 64 registers), 0.188 at 8 (91). A lane an atom (no longer
    // a default: NBKIT_PAIR_LANES=1) keeps 1; at a million atoms 2 lanes with 4 ahead beat it by
    // a fifth of the pairs' time (session 41, above).
    if constexpr (sizeof(Real) == 4 && C == PairCoulomb::ewald) {
      if (fast) {
        if (lanes == 1) launch(listed_pairs<Real, S, C, Energies, 1, true>);
        else if (lean_entries && round_sums) launch(listed_pairs<Real, S, C, Energies, 4, true, true, true>);
        else if (round_sums) launch(listed_pairs<Real, S, C, Energies, 4, true, false, true>);
        else if (lean_entries) launch(listed_pairs<Real, S, C, Energies, 4, true, true>);
        else launch(listed_pairs<Real, S, C, Energies, 4, true>);
        return;
      }
    }
    if (lanes == 1) launch(listed_pairs<Real, S, C, Energies, 1>);
    else launch(listed_pairs<Real, S, C, Energies, 4>);
  });
  if (!corrections) return;
  auto correct = [&](auto kernel) {
    kernel<<<blocks(n), kThreads, 0, stream>>>(n, x, charge.data(), settings.coulomb_k(), cells, excluded_first.data(),
                                               excluded.data(), k, out);
    NBKIT_CUDA_CHECK_LAUNCH();
  };
  if (coulomb == PairCoulomb::ewald) correct(excluded_corrections<PairCoulomb::ewald, Energies>);
  if (coulomb == PairCoulomb::msm) correct(excluded_corrections<PairCoulomb::msm, Energies>);
}

bool MolecularPairListGpu::corrects_apart() const {
  const State& s = *state_;
  // PME's alone: MSM's grids run on the host, its GPU step is not the one this serves.
  return s.corrections_apart && s.settings.method == NonbondedSettings::Method::pme;
}

void MolecularPairListGpu::correct(const V3* x, const PeriodicBox& box, const PairSums& out, bool energies,
                                   cudaStream_t stream) {
  State& s = *state_;
  if (s.n == 0 || !corrects_apart()) return;
  // The box as the list's cells take it at a build (length, 1 / length): the same minimum image,
  // whether or not this evaluation rebuilds the list (which it does after this is queued).
  Cells g{};
  for (int a = 0; a < 3; ++a) g.length[a] = box.length(a), g.inverse[a] = 1 / g.length[a];
  PairSwitch switched;
  PairCoulomb coulomb;
  const MolecularPairConstants<double> k = molecular_pair_constants(s.settings, switched, coulomb);
  // As sum_pairs: float64 always has its energies.
  const bool sums = energies || !s.single;
  auto launch = [&](auto kernel) {
    kernel<<<blocks(s.n), kThreads, 0, stream>>>(s.n, x, s.charge.data(), s.settings.coulomb_k(), g,
                                                 s.excluded_first.data(), s.excluded.data(), k, out);
    NBKIT_CUDA_CHECK_LAUNCH();
  };
  if (sums) launch(excluded_corrections<PairCoulomb::ewald, true, false>);
  else launch(excluded_corrections<PairCoulomb::ewald, false, false>);
}

void MolecularPairListGpu::start_check(const V3* x, const PeriodicBox& box) {
  State& s = *state_;
  if (s.n == 0 || s.must_rebuild(box)) return;
  s.start_check(x);
}

void MolecularPairListGpu::forget_check() {
  State& s = *state_;
  if (s.device_check && s.check_started)  // its word unread: zeroed for the next check
    NBKIT_CUDA_CHECK(cudaMemsetAsync(s.moved.data(), 0, sizeof(unsigned), s.check_stream));
  s.check_started = false, s.prepared = false, s.check_decides = false;
}

// The positions packed in the last build's order before the host waits for the check: the pairs
// then start as soon as the answer (most often "keep the list") is known. A rebuild packs again
// in its new order.
void MolecularPairListGpu::prepare(const V3* x, const PeriodicBox& box) {
  State& s = *state_;
  if (s.n == 0 || s.must_rebuild(box)) return;
  if (s.single) {
    pack<float><<<blocks(s.n), kThreads, 0, s.stream>>>(s.n, x, s.charge.data(), s.order.data(), s.attributes.data(),
                                                         s.cells, s.packed_f.data());
  } else {
    pack<double><<<blocks(s.n), kThreads, 0, s.stream>>>(s.n, x, s.charge.data(), s.order.data(),
                                                          s.attributes.data(), s.cells, s.packed_d.data());
  }
  NBKIT_CUDA_CHECK_LAUNCH();
  s.prepared = true;
}

void MolecularPairListGpu::evaluate(const V3* x, const PeriodicBox& box, const PairSums& out, bool energies,
                                    cudaEvent_t pairs_after) {
  State& s = *state_;
  if (s.n == 0) return;  // no atoms, no pairs (and no empty launches)
  s.mark(0);
  if (!s.prepared) prepare(x, box);
  s.prepared = false;
  if (s.device_check) s.device_step(x, box);
  else if (s.needs_rebuild(x, box)) s.rebuild(x, box);
  s.mark(1);
  if (pairs_after) NBKIT_CUDA_CHECK(cudaStreamWaitEvent(s.stream, pairs_after, 0));
  // float64 always sums its energies: its kernel without them gave forces that differed in the
  // last bits (nvcc fuses the float64 multiply-adds of the two variants differently; measured
  // on an H100 in session 24), and float64 runs are the checks, not the production runs. The
  // mixed kernels give the same bits either way (Constraints.GpuStepsWithoutEnergiesChangeNoBit).
  const bool corrections = !corrects_apart();
  if (s.single) energies ? s.sum_pairs<float, true>(x, out, corrections) : s.sum_pairs<float, false>(x, out, corrections);
  else s.sum_pairs<double, true>(x, out, corrections);
  s.mark(2);
}

MolecularPairListGpu::Seconds MolecularPairListGpu::phase_seconds() {
  State& s = *state_;
  if (!s.events) return {0, 0};
  auto& e = *s.events;
  e[2].synchronize();
  return {e[1].seconds_since(e[0]), e[2].seconds_since(e[1])};
}

}  // namespace nbkit::md
