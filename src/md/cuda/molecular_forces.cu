// A biomolecular system's energy and forces on one GPU (md/molecular_gpu.hpp has the design):
// the bonded terms of bonded_law.hpp and the pair law of pair_terms-inl.hpp, the same functions
// the float64 reference and the CPU call, here in float64 kernels with fixed summation orders.
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "cuda/check.hpp"
#include "cuda/device_buffer.hpp"
#include "cuda/stream.hpp"
#include "md/bonded_law.hpp"
#include "md/cmap.hpp"
#include "md/cuda/molecular_pair_list.cuh"
#include "md/cuda/pme.cuh"
#include "md/dispersion_correction.hpp"
#include "md/molecular_gpu.hpp"
#include "md/molecular_pair_constants.hpp"
#include "md/msm.hpp"
#include "md/pme.hpp"
#include "md/pair_law.hpp"
#include "nbkit/core/backend.hpp"

namespace nbkit::md {

namespace {

using cuda::DeviceBuffer;
using V3 = Vector3<double>;
constexpr int kThreads = 128;
constexpr int kReduceThreads = 256;

int blocks(std::int64_t n) { return static_cast<int>((n + kThreads - 1) / kThreads); }

// Positions and the periodic image rule (molecular_forces.cpp's Images, on the device).
struct DeviceImages {
  const V3* x;
  int periodic;
  double length[3], inverse[3];
  __device__ V3 separation(V3 d) const {
    if (!periodic) return d;
    const ScalarPairMath<double> math;
    return {minimum_image(math, d.x, length[0], inverse[0]), minimum_image(math, d.y, length[1], inverse[1]),
            minimum_image(math, d.z, length[2], inverse[2])};
  }
  __device__ V3 near(V3 origin, int j) const { return origin + separation(x[j] - origin); }
};

// Each term writes its atoms' forces to its own slots, its energy and its virial to its index.
struct TermOut {
  V3* slot;
  double* energy;
  double* virial;
};

__global__ void bond_terms(int n, const HarmonicBond* term, DeviceImages im, TermOut out) {
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= n) return;
  const HarmonicBond b = term[t];
  const V3 xi = im.x[b.i], xj = im.near(xi, b.j);
  V3 fi;
  out.energy[t] = harmonic_bond(xi, xj, b.k, b.r0, fi);
  out.slot[2 * t] = fi, out.slot[2 * t + 1] = -1.0 * fi;
  out.virial[t] = dot(xi - xj, fi);
}

__global__ void angle_terms(int n, const HarmonicAngle* term, DeviceImages im, TermOut out) {
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= n) return;
  const HarmonicAngle a = term[t];
  const V3 xj = im.x[a.j], xi = im.near(xj, a.i), xk = im.near(xj, a.k);
  V3 fi, fk;
  out.energy[t] = harmonic_angle(xi, xj, xk, a.k_theta, a.theta0, fi, fk);
  out.slot[3 * t] = fi, out.slot[3 * t + 1] = -1.0 * (fi + fk), out.slot[3 * t + 2] = fk;
  out.virial[t] = dot(xi - xj, fi) + dot(xk - xj, fk);
}

__device__ DihedralGeometry<double> dihedral_of(const DeviceImages& im, int i, int j, int k, int l) {
  const V3 xj = im.x[j], xk = im.near(xj, k);
  return dihedral_geometry(im.near(xj, i), xj, xk, im.near(xk, l));
}

__device__ void write_dihedral(const DihedralGeometry<double>& g, double de, int t, const TermOut& out) {
  V3 f[4];
  dihedral_forces(g, de, f);
  for (int a = 0; a < 4; ++a) out.slot[4 * t + a] = f[a];
  out.virial[t] = dot(g.r_ij, f[0]) + dot(g.r_kj, f[2]) + dot(g.r_kj - g.r_kl, f[3]);
}

__global__ void periodic_torsion_terms(int n, const PeriodicTorsion* term, DeviceImages im, TermOut out) {
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= n) return;
  const PeriodicTorsion d = term[t];
  const auto g = dihedral_of(im, d.i, d.j, d.k, d.l);
  double de;
  out.energy[t] = periodic_torsion(g, d.periodicity, d.k_phi, d.phase, de);
  write_dihedral(g, de, t, out);
}

__global__ void harmonic_improper_terms(int n, const HarmonicImproper* term, DeviceImages im, TermOut out) {
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= n) return;
  const HarmonicImproper d = term[t];
  const auto g = dihedral_of(im, d.i, d.j, d.k, d.l);
  double de;
  out.energy[t] = harmonic_improper(g, d.k_psi, d.psi0, de);
  write_dihedral(g, de, t, out);
}

// The maps' cells (cmap.hpp) concatenated: map m's start at cells[first[m]], its side is size[m].
struct CmapCells {
  const double* cells;
  const std::int64_t* first;
  const int* size;
};

__global__ void cmap_terms(int n, const CmapTorsion* term, DeviceImages im, CmapCells maps, TermOut out) {
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= n) return;
  const CmapTorsion c = term[t];
  const auto phi = dihedral_of(im, c.phi[0], c.phi[1], c.phi[2], c.phi[3]);
  const auto psi = dihedral_of(im, c.psi[0], c.psi[1], c.psi[2], c.psi[3]);
  double de_dphi, de_dpsi;
  out.energy[t] = cmap_energy(maps.cells + maps.first[c.map], maps.size[c.map], phi.phi, psi.phi, de_dphi, de_dpsi);
  V3 f[4];
  dihedral_forces(phi, de_dphi, f);
  for (int a = 0; a < 4; ++a) out.slot[8 * t + a] = f[a];
  double virial = dot(phi.r_ij, f[0]) + dot(phi.r_kj, f[2]) + dot(phi.r_kj - phi.r_kl, f[3]);
  dihedral_forces(psi, de_dpsi, f);
  for (int a = 0; a < 4; ++a) out.slot[8 * t + 4 + a] = f[a];
  out.virial[t] = virial + dot(psi.r_ij, f[0]) + dot(psi.r_kj, f[2]) + dot(psi.r_kj - psi.r_kl, f[3]);
}

// 1-4 pairs: Lennard-Jones energies in out.energy, Coulomb's in coulomb_energy.
__global__ void pair14_terms(int n, const Pair14* term, DeviceImages im, const double* charge, double coulomb_k,
                             TermOut out, double* coulomb_energy) {
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= n) return;
  const Pair14 p = term[t];
  const V3 d = im.separation(im.x[p.i] - im.x[p.j]);
  const double r2 = dot(d, d);
  const MolecularPairConstants<double> plain{0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  double lj, lj_f, coulomb, coulomb_f;
  molecular_pair<PairSwitch::none>(ScalarPairMath<double>{}, r2, p.c12, p.c6,
                                   p.coulomb_scale * coulomb_k * charge[p.i] * charge[p.j], plain, lj, lj_f, coulomb,
                                   coulomb_f);
  out.energy[t] = lj, coulomb_energy[t] = coulomb;
  out.slot[2 * t] = (lj_f + coulomb_f) * d, out.slot[2 * t + 1] = -(lj_f + coulomb_f) * d;
  out.virial[t] = (lj_f + coulomb_f) * r2;
}

struct PairTable {
  const double* charge;
  const int* type;
  int types;
  const double *c12, *c6;
  double coulomb_k, cutoff2;
  MolecularPairConstants<double> k;
  const int *excluded_first, *excluded;  // each atom's excluded partners, sorted (both directions)
};

// Without a periodic box (no pair list there): a thread per atom i sums every other atom j's
// pair in increasing j (the excluded ones skipped by a moving pointer), so its force is one
// fixed-order sum; each pair's energy and virial are halved (every pair is met from both ends).
// With Ewald's real-space Coulomb (PME) or MSM's short range, an excluded pair is not skipped
// but gets the mesh's or the grids' correction (ewald_excluded_pair, msm_excluded_pair) into
// excluded_out.
template <PairSwitch Switch, PairCoulomb Coulomb, bool Cut>
__global__ void nonbonded_pairs(int n, DeviceImages im, PairTable p, V3* force, double* lj_out, double* coulomb_out,
                                double* virial_out, double* excluded_out) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const ScalarPairMath<double> math;
  const V3 xi = im.x[i];
  const double qi = p.coulomb_k * p.charge[i];
  const int row = p.type[i] * p.types;
  int skip = p.excluded_first[i];
  const int end = p.excluded_first[i + 1];
  V3 fi{0, 0, 0};
  double lj_sum = 0, coulomb_sum = 0, virial = 0, excluded_sum = 0;
  for (int j = 0; j < n; ++j) {
    if (j == i) continue;
    while (skip < end && p.excluded[skip] < j) ++skip;
    if (skip < end && p.excluded[skip] == j) {
      if constexpr (Coulomb == PairCoulomb::ewald || Coulomb == PairCoulomb::msm) {
        const V3 d = im.separation(xi - im.x[j]);
        const double r2 = dot(d, d);
        double energy, force_over_r;
        if constexpr (Coulomb == PairCoulomb::ewald)
          ewald_excluded_pair(math, r2, qi * p.charge[j], p.k.ewald_alpha, p.k.ewald_gauss, energy, force_over_r);
        else
          msm_excluded_pair(math, r2, qi * p.charge[j], p.k.inverse_cutoff, energy, force_over_r);
        fi = fi + force_over_r * d;
        excluded_sum += energy, virial += force_over_r * r2;
      }
      continue;
    }
    const V3 d = im.separation(xi - im.x[j]);
    const double r2 = dot(d, d);
    if (Cut && !(r2 < p.cutoff2)) continue;
    const int pair = row + p.type[j];
    double lj, lj_f, coulomb, coulomb_f;
    molecular_pair<Switch, Coulomb>(math, r2, p.c12[pair], p.c6[pair], qi * p.charge[j], p.k, lj, lj_f, coulomb,
                                    coulomb_f);
    fi = fi + (lj_f + coulomb_f) * d;
    lj_sum += lj, coulomb_sum += coulomb, virial += (lj_f + coulomb_f) * r2;
  }
  force[i] = fi;
  lj_out[i] = 0.5 * lj_sum, coulomb_out[i] = 0.5 * coulomb_sum, virial_out[i] = 0.5 * virial;
  excluded_out[i] = 0.5 * excluded_sum;
}

// Each atom's bonded terms' force: its slots summed in the order the host listed them (atoms
// without slots are not written: gather_forces adds nothing for them). On the bonded terms'
// stream right after them, beside the pairs and the mesh, so that only three arrays are left
// to add once those end: at 23,534 atoms on an H200 (session 38's timeline) gather_forces,
// slots included, took ~12 us after the mesh's gather, every step, on the way to the next
// step's kick. The slots are loaded kGatherAhead at a time before they are added (in order:
// the same sum); one at a time, a protein atom's ~30 slots were ~30 dependent round trips to L2
// (8% occupancy: the waters have none; session 34: 29.0 -> 15.7 us at 30,677 atoms).
constexpr int kGatherAhead = 8;
__global__ void sum_slots(int n, const V3* __restrict__ slot, const int* __restrict__ first,
                          const int* __restrict__ slots, V3* __restrict__ out) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const int begin = first[i], end = first[i + 1];
  if (begin == end) return;
  V3 f = slot[slots[begin]];
  for (int k = begin + 1; k < end; k += kGatherAhead) {
    int at[kGatherAhead];
    V3 term[kGatherAhead];
#pragma unroll
    for (int a = 0; a < kGatherAhead; ++a) at[a] = k + a < end ? slots[k + a] : -1;
#pragma unroll
    for (int a = 0; a < kGatherAhead; ++a)
      if (at[a] >= 0) term[a] = slot[at[a]];
#pragma unroll
    for (int a = 0; a < kGatherAhead; ++a)
      if (at[a] >= 0) f = f + term[a];
  }
  out[i] = f;
}

// Each atom's force: its nonbonded sum, the mesh's (PME; null otherwise), then its bonded
// terms' (sum_slots; atoms with slots only). The lowest atom whose force is not finite is kept
// in *nonfinite (left alone otherwise), for the device-resident step's checks.
// `correction` (null unless the excluded pairs' corrections ran apart from the pairs): added
// to the nonbonded sum first, as the pair list adds them when they run after the pairs (the same
// bits), and with `virial` their half virial to the pairs' (the evaluations with energies).
__global__ void gather_forces(int n, const V3* __restrict__ nonbonded, const V3* __restrict__ correction,
                              const double* __restrict__ correction_virial, double* __restrict__ virial,
                              const V3* __restrict__ mesh, const V3* __restrict__ bonded,
                              const int* __restrict__ first, V3* __restrict__ out, int* nonfinite) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  V3 f = nonbonded[i];
  if (correction) {
    f = f + correction[i];
    if (virial) virial[i] += correction_virial[i];
  }
  if (mesh) f = f + mesh[i];
  if (first[i + 1] > first[i]) f = f + bonded[i];
  out[i] = f;
  if (!isfinite(f.x + f.y + f.z)) atomicMin(nonfinite, i);
}

struct Range {
  const double* values;
  int count;
};

// A block's fixed tree over its threads' values.
__device__ double block_sum(double s) {
  __shared__ double partial[kReduceThreads];
  partial[threadIdx.x] = s;
  __syncthreads();
  for (int width = kReduceThreads / 2; width > 0; width /= 2) {
    if (threadIdx.x < width) partial[threadIdx.x] += partial[threadIdx.x + width];
    __syncthreads();
  }
  return partial[0];
}

// Each range's sum in two fixed passes, the same sum every time: kSlices blocks per range
// (blockIdx.y the range) each sum a fixed slice into partial[range * kSlices + slice], then a
// block per range sums its slices. (One block per range took 2.2 ms for a million atoms on an
// H100: 14 blocks on 132 SMs.)
constexpr int kSlices = 64;

__global__ void sum_slices(const Range* ranges, double* partial) {
  const Range r = ranges[blockIdx.y];
  const int slice = (r.count + kSlices - 1) / kSlices;
  const int begin = min(r.count, static_cast<int>(blockIdx.x) * slice), end = min(r.count, begin + slice);
  double s = 0;
  for (int k = begin + static_cast<int>(threadIdx.x); k < end; k += blockDim.x) s += r.values[k];
  s = block_sum(s);
  if (threadIdx.x == 0) partial[blockIdx.y * kSlices + blockIdx.x] = s;
}

__global__ void sum_partials(const double* partial, double* out) {
  const double s = threadIdx.x < kSlices ? partial[blockIdx.x * kSlices + threadIdx.x] : 0.0;
  const double total = block_sum(s);
  if (threadIdx.x == 0) out[blockIdx.x] = total;
}

template <class T>
DeviceBuffer<T> upload(const std::vector<T>& host) {
  DeviceBuffer<T> b(host.size());
  if (!host.empty()) b.upload(host.data(), host.size());
  return b;
}

// The sums read back, in this order.
// (The first kKinds are the bonded kinds' energies, in the order of their slots.)
enum Sum { bond, urey_bradley, angle, dihedral, improper_periodic, improper_harmonic, lj14, cmap, coulomb14, lj, coulomb,
           term_virial, pair_virial, excluded, kSums };
constexpr int kKinds = 8;

}  // namespace

struct MolecularGpuForces::State {
  int device = 0;
  std::string name;
  NonbondedSettings settings;
  std::int64_t n = 0;
  // Term counts and their offsets in the energy/virial arrays and the slots.
  std::array<std::int64_t, kKinds> count{}, term_offset{}, slot_offset{};
  DeviceBuffer<V3> x, slot, nonbonded_force, force, mesh_force;
  DeviceBuffer<double> charge, c12, c6, term_energy, coulomb14_energy, term_virial, atom_lj, atom_coulomb, atom_virial,
      atom_excluded, sums, partial_sums, mesh_sums;
  // The excluded pairs' corrections where the list computes them apart (corrects_apart): on the
  // bonded terms' stream (the main stream after the pairs when the phases are timed), added by
  // gather_forces; their energies are the `excluded` sum.
  bool corrections_apart = false;
  DeviceBuffer<V3> correction_force;
  DeviceBuffer<V3> bonded_force;  // each atom's bonded terms' slots summed (sum_slots)
  DeviceBuffer<double> correction_virial, correction_energy;
  // PME: the mesh (made at the first box, again when the box's edges change) and the charges
  // on the host (the fixed-point range, the self and background terms).
  std::unique_ptr<PmeGpu> pme;
  std::array<int, 3> pme_mesh{};  // the mesh `pme` was made for (kept while the box's changes keep it)
  std::uint64_t pme_meshes = 0;  // PmeGpu objects made so far (a step's graph holds the last)
  // MSM: the grids run on the host (md/msm.hpp, every core) beside the GPU's pairs, their
  // lattice-cutoff sums on this GPU; made at the first box, again when its edges change.
  std::unique_ptr<MsmCpu> msm;
  std::array<double, 3> msm_edges{};
  std::vector<double> host_charge;
  // Periodic systems: the pair list (cuda/molecular_pair_list.cuh); otherwise every pair is tested.
  std::unique_ptr<MolecularPairListGpu> list;
  bool single = false;
  // Benchmarks: events between the phases (time_phases()).
  std::unique_ptr<std::array<cuda::Event, 7>> events;
  void mark(int phase) {
    if (events) (*events)[static_cast<std::size_t>(phase)].record(stream);
  }
  DeviceBuffer<int> type, excluded_first, excluded, gather_first, gather_slots, nonfinite;
  std::optional<PeriodicBox> box;  // the last evaluation's (device_sums finishes with it)
  DeviceBuffer<HarmonicBond> bonds, urey_bradley;
  DeviceBuffer<HarmonicAngle> angles;
  DeviceBuffer<PeriodicTorsion> dihedrals, periodic_impropers;
  DeviceBuffer<HarmonicImproper> harmonic_impropers;
  DeviceBuffer<Pair14> pairs14;
  DeviceBuffer<CmapTorsion> cmaps;
  DeviceBuffer<double> cmap_cells;
  DeviceBuffer<std::int64_t> cmap_first;
  DeviceBuffer<int> cmap_size;
  DeviceBuffer<Range> ranges;
  int types = 0;
  DispersionCorrection dispersion;
  // The evaluation's stream, and a second one beside it for the bonded terms and PME's mesh
  // (forked after the positions, joined before the forces are gathered): at 30,000 atoms these
  // are chains of small kernels that fill a few SMs each, which the pairs' kernel leaves idle
  // when they wait their turn on one stream. High priority: their blocks go first as the pairs'
  // blocks retire, so the chain ends within the pairs rather than after them.
  // A third (bonded_side) takes the bonded terms and the excluded pairs' corrections, so that
  // PME's mesh, the longer chain, starts at once rather than behind them: at 30,671 atoms on an
  // H200 (session 36, a CUPTI timeline) the bonded terms ahead of it on one side stream held the
  // mesh back ~30 us, and the forces' gather waited ~22 us for it at every step.
  cuda::Stream stream;
  // One level below the highest: the pair list's check and rebuild (molecular_pair_list.cu) go
  // first, they are what the pairs wait for.
  cuda::Stream side = cuda::Stream::high_priority(1);
  cuda::Stream bonded_side = cuda::Stream::high_priority(1);
  cuda::Event forked, joined, bonded_joined;
  bool bonded_stream = true;  // NBKIT_BONDED_STREAM=0: the bonded terms on the mesh's stream, first
  // The pair sums wait for PME's phase k (NBKIT_PAIRS_AFTER_MESH=k; 1, the default: the spread
  // and its conversion from fixed point; 2 the forward FFT, 3 the convolution, 4 the inverse
  // FFT; 0 no wait), so that the mesh's chain has the SMs to itself that far rather than waiting
  // for the pairs' blocks. The pairs waited for the spread's blocks anyway (they start only as
  // its high-priority blocks clear), while the conversion then crawled beside the pairs (~30 us
  // for ~3 us of work). Measured on an H200 (session 38, nvt-4fs): k = 1 against 0, 1,411.8
  // against 1,367.4 ns/day at 23,534 atoms and 1,212.6 against 1,190.0 at 30,671 (call 1),
  // 1,507.9 / 1,487.2 and 1,282.0 / 1,254.0 (call 2, with the changes of 2e8133a); k = 2
  // slower (1,340.1, 1,118.4); a million atoms the same (39.2 / 39.5).
  int pairs_after_mesh = 1;
  cuda::Event mesh_ahead;
};

MolecularGpuForces::MolecularGpuForces(const Topology& t, const NonbondedSettings& settings, int device, bool single,
                                       double skin)
    : state_([device] {
        // The streams and events are made on the device they serve.
        NBKIT_CUDA_CHECK(cudaSetDevice(device));
        return std::make_unique<State>();
      }()) {
  t.check();
  if (!(skin >= 0) || !std::isfinite(skin)) throw Error("the neighbour skin must not be negative");
  if (single && !settings.periodic())
    throw Error("mixed precision on the GPU needs a periodic box (cutoff-periodic, PME or MSM): without one, every pair "
                "is summed in float64");
  State& s = *state_;
  s.device = device;
  s.single = single;
  NBKIT_CUDA_CHECK(cudaSetDevice(device));
  cudaDeviceProp properties{};
  NBKIT_CUDA_CHECK(cudaGetDeviceProperties(&properties, device));
  s.name = properties.name;
  s.settings = settings;
  s.dispersion = dispersion_correction(t, settings);
  s.n = static_cast<std::int64_t>(t.size());
  if (s.n >= (std::int64_t{1} << 30)) throw Error("the GPU's molecular forces handle fewer than 2^30 atoms");
  s.types = t.lj_types;
  s.charge = upload(t.charge), s.c12 = upload(t.c12), s.c6 = upload(t.c6);
  s.host_charge = t.charge;
  s.type = upload(std::vector<int>(t.lj_type.begin(), t.lj_type.end()));
  // Each atom's excluded partners, both directions, sorted.
  const ExcludedRows rows = excluded_rows(t);
  s.excluded_first = upload(rows.first), s.excluded = upload(rows.partner);
  s.bonds = upload(t.bonds), s.urey_bradley = upload(t.urey_bradley), s.angles = upload(t.angles);
  s.dihedrals = upload(t.dihedrals), s.periodic_impropers = upload(t.periodic_impropers);
  s.harmonic_impropers = upload(t.harmonic_impropers), s.pairs14 = upload(t.pairs14), s.cmaps = upload(t.cmaps);
  std::vector<double> cells;
  std::vector<std::int64_t> cell_first;
  std::vector<int> map_size;
  for (const CmapGrid& grid : t.cmap_grids) {
    cell_first.push_back(static_cast<std::int64_t>(cells.size()));
    map_size.push_back(grid.size);
    const std::vector<double> c = cmap_coefficients(grid.size, grid.energy);
    cells.insert(cells.end(), c.begin(), c.end());
  }
  s.cmap_cells = upload(cells), s.cmap_first = upload(cell_first), s.cmap_size = upload(map_size);
  // Kinds in order: bonds, Urey-Bradley, angles, dihedrals, periodic impropers, harmonic
  // impropers, 1-4 pairs, CMAP terms (phi's four atoms, then psi's); their atoms as their slots
  // are written.
  const std::array<int, kKinds> atoms_per{2, 2, 3, 4, 4, 4, 2, 8};
  s.count = {static_cast<std::int64_t>(t.bonds.size()), static_cast<std::int64_t>(t.urey_bradley.size()),
             static_cast<std::int64_t>(t.angles.size()), static_cast<std::int64_t>(t.dihedrals.size()),
             static_cast<std::int64_t>(t.periodic_impropers.size()),
             static_cast<std::int64_t>(t.harmonic_impropers.size()), static_cast<std::int64_t>(t.pairs14.size()),
             static_cast<std::int64_t>(t.cmaps.size())};
  std::vector<std::vector<int>> slots_of(t.size());
  std::int64_t terms = 0, slots = 0;
  auto add_slots = [&](int kind, auto&& atoms_of) {
    s.term_offset[kind] = terms, s.slot_offset[kind] = slots;
    for (std::int64_t k = 0; k < s.count[kind]; ++k) {
      const std::array<int, 8> a = atoms_of(k);
      for (int m = 0; m < atoms_per[kind]; ++m) slots_of[a[m]].push_back(static_cast<int>(slots + atoms_per[kind] * k + m));
    }
    terms += s.count[kind], slots += atoms_per[kind] * s.count[kind];
  };
  add_slots(0, [&](std::int64_t k) { return std::array<int, 8>{t.bonds[k].i, t.bonds[k].j, 0, 0}; });
  add_slots(1, [&](std::int64_t k) { return std::array<int, 8>{t.urey_bradley[k].i, t.urey_bradley[k].j, 0, 0}; });
  add_slots(2, [&](std::int64_t k) { return std::array<int, 8>{t.angles[k].i, t.angles[k].j, t.angles[k].k, 0}; });
  add_slots(3, [&](std::int64_t k) {
    const auto& d = t.dihedrals[k];
    return std::array<int, 8>{d.i, d.j, d.k, d.l};
  });
  add_slots(4, [&](std::int64_t k) {
    const auto& d = t.periodic_impropers[k];
    return std::array<int, 8>{d.i, d.j, d.k, d.l};
  });
  add_slots(5, [&](std::int64_t k) {
    const auto& d = t.harmonic_impropers[k];
    return std::array<int, 8>{d.i, d.j, d.k, d.l};
  });
  add_slots(6, [&](std::int64_t k) { return std::array<int, 8>{t.pairs14[k].i, t.pairs14[k].j, 0, 0}; });
  add_slots(7, [&](std::int64_t k) {
    const auto& c = t.cmaps[k];
    return std::array<int, 8>{c.phi[0], c.phi[1], c.phi[2], c.phi[3], c.psi[0], c.psi[1], c.psi[2], c.psi[3]};
  });
  if (slots >= (std::int64_t{1} << 31)) throw Error("too many bonded terms for the GPU's slot indices");
  std::vector<int> gather_first(t.size() + 1, 0), gather_slots;
  for (std::size_t i = 0; i < t.size(); ++i) {
    gather_slots.insert(gather_slots.end(), slots_of[i].begin(), slots_of[i].end());
    gather_first[i + 1] = static_cast<int>(gather_slots.size());
  }
  s.gather_first = upload(gather_first), s.gather_slots = upload(gather_slots);
  s.bonded_force = DeviceBuffer<V3>(t.size());
  s.x = DeviceBuffer<V3>(s.n), s.nonbonded_force = DeviceBuffer<V3>(s.n), s.force = DeviceBuffer<V3>(s.n);
  s.slot = DeviceBuffer<V3>(std::max<std::int64_t>(slots, 1));
  s.term_energy = DeviceBuffer<double>(std::max<std::int64_t>(terms, 1));
  s.term_virial = DeviceBuffer<double>(std::max<std::int64_t>(terms, 1));
  s.coulomb14_energy = DeviceBuffer<double>(std::max<std::int64_t>(s.count[6], 1));
  for (auto* b : {&s.atom_lj, &s.atom_coulomb, &s.atom_virial, &s.atom_excluded}) *b = DeviceBuffer<double>(s.n);
  s.sums = DeviceBuffer<double>(kSums), s.partial_sums = DeviceBuffer<double>(kSums * kSlices);
  s.nonfinite = DeviceBuffer<int>(1);
  NBKIT_CUDA_CHECK(cudaMemset(s.nonfinite.data(), 0x7f, sizeof(int)));
  if (settings.method == NonbondedSettings::Method::pme) s.mesh_force = DeviceBuffer<V3>(s.n), s.mesh_sums = DeviceBuffer<double>(2);
  std::vector<Range> ranges(kSums);
  for (int kind = 0; kind < kKinds; ++kind)
    ranges[kind] = {s.term_energy.data() + s.term_offset[kind], static_cast<int>(s.count[kind])};
  ranges[coulomb14] = {s.coulomb14_energy.data(), static_cast<int>(s.count[6])};
  ranges[lj] = {s.atom_lj.data(), static_cast<int>(s.n)};
  ranges[coulomb] = {s.atom_coulomb.data(), static_cast<int>(s.n)};
  ranges[term_virial] = {s.term_virial.data(), static_cast<int>(terms)};
  ranges[pair_virial] = {s.atom_virial.data(), static_cast<int>(s.n)};
  ranges[excluded] = {s.atom_excluded.data(), static_cast<int>(s.n)};
  if (settings.periodic()) s.list = std::make_unique<MolecularPairListGpu>(t, settings, single, skin, s.stream);
  s.bonded_stream = env_switch("NBKIT_BONDED_STREAM", true);
  if (const char* after = std::getenv("NBKIT_PAIRS_AFTER_MESH"); after && *after) {
    const std::string a = after;
    if (a.size() != 1 || a[0] < '0' || a[0] > '4')
      throw Error("NBKIT_PAIRS_AFTER_MESH is \"" + a + "\": expected 0 to 4 (a phase of PME's mesh)");
    s.pairs_after_mesh = a[0] - '0';
  }
  if (s.list && s.list->corrects_apart()) {
    s.corrections_apart = true;
    s.correction_force = DeviceBuffer<V3>(s.n);
    s.correction_virial = DeviceBuffer<double>(s.n), s.correction_energy = DeviceBuffer<double>(s.n);
    ranges[excluded] = {s.correction_energy.data(), static_cast<int>(s.n)};
  }
  s.ranges = upload(ranges);
  NBKIT_CUDA_CHECK(cudaDeviceSynchronize());
}

MolecularGpuForces::~MolecularGpuForces() = default;

std::string MolecularGpuForces::description() const {
  const State& s = *state_;
  return s.name + (s.single ? ", mixed precision (float32 pairs, float64 sums)" : ", float64") +
         (s.list ? ", pair list" : ", every pair");
}

std::int64_t MolecularGpuForces::list_builds() const { return state_->list ? state_->list->builds() : 0; }

void MolecularGpuForces::rebuild_next() {
  if (state_->list) state_->list->rebuild_next();
}

bool MolecularGpuForces::graph_ready(const std::optional<PeriodicBox>& box) {
  State& s = *state_;
  if (s.events || !s.list || !box || !s.list->graph_ready(*box)) return false;
  if (s.settings.method != NonbondedSettings::Method::pme) return true;
  return s.pme && pme_parameters(s.settings, *box).mesh == s.pme_mesh;  // as the last evaluation's
}

std::uint64_t MolecularGpuForces::graph_configuration() const {
  const State& s = *state_;
  return (s.list ? s.list->configuration() : 0) * 1024 + s.pme_meshes % 1024;
}

void MolecularGpuForces::time_phases() {
  state_->events = std::make_unique<std::array<cuda::Event, 7>>();
  if (state_->pme) state_->pme->time_phases();
}

MolecularGpuForces::Phases MolecularGpuForces::phase_seconds() const {
  State& s = *state_;
  if (!s.events) return {};
  auto& e = *s.events;
  e[6].synchronize();
  Phases p;
  p.upload = e[1].seconds_since(e[0]);
  p.bonded = e[2].seconds_since(e[1]);
  p.mesh = e[3].seconds_since(e[2]);
  const double nonbonded = e[4].seconds_since(e[3]);
  if (s.list) {
    const MolecularPairListGpu::Seconds list = s.list->phase_seconds();
    p.list = list.list, p.pairs = nonbonded - list.list;
  } else {
    p.pairs = nonbonded;
  }
  if (s.pme) {
    const std::array<double, 5> mesh = s.pme->phase_seconds();
    std::copy(mesh.begin(), mesh.end(), p.mesh_phases.begin());
  }
  p.finish = e[5].seconds_since(e[4]);
  p.download = e[6].seconds_since(e[5]);
  p.total = e[6].seconds_since(e[0]);
  return p;
}

MolecularForces MolecularGpuForces::evaluate(const std::vector<Vec3>& positions, const std::optional<PeriodicBox>& box) {
  State& s = *state_;
  NBKIT_CUDA_CHECK(cudaSetDevice(s.device));
  if (static_cast<std::int64_t>(positions.size()) != s.n) throw Error("positions for another system");
  static_assert(sizeof(Vec3) == sizeof(V3), "Vec3 and the device's vector share a layout");
  s.mark(0);
  s.x.upload(reinterpret_cast<const V3*>(positions.data()), positions.size(), s.stream);
  s.mark(1);
  launch(s, box, true);
  // MSM's grids on the host while the GPU sums the pairs.
  const NonbondedSettings& settings = s.settings;
  const bool msm = settings.method == NonbondedSettings::Method::msm;
  MsmLongRange grids;
  if (msm) {
    const std::array<double, 3> edges{box->length(0), box->length(1), box->length(2)};
    if (!s.msm || edges != s.msm_edges) {
      s.msm = std::make_unique<MsmCpu>(*box, settings.cutoff, settings.msm_spacing, settings.msm_quintic,
                                         resolve_threads(0), s.device);
      s.msm_edges = edges;
    }
    grids = s.msm->evaluate(positions, s.host_charge, *box, settings.coulomb_k());
  }
  MolecularForces result;
  result.force.resize(positions.size());
  s.force.download(reinterpret_cast<V3*>(result.force.data()), positions.size(), s.stream);
  finish_sums(s, result, true);
  if (msm) {
    result.energy.coulomb_reciprocal += grids.energy;
    result.virial += grids.virial;
    for (std::size_t i = 0; i < result.force.size(); ++i) result.force[i] = result.force[i] + grids.force[i];
  }
  return result;
}

bool MolecularGpuForces::resident() const { return state_->settings.method != NonbondedSettings::Method::msm; }

void MolecularGpuForces::evaluate_on_device(const std::optional<PeriodicBox>& box, bool energies) {
  State& s = *state_;
  if (!resident()) throw Error("MSM's grids run on the host: its evaluations take positions from the host");
  NBKIT_CUDA_CHECK(cudaSetDevice(s.device));
  s.mark(0);
  s.mark(1);
  launch(s, box, energies);
  s.mark(6);
}

MolecularForces MolecularGpuForces::device_sums() {
  State& s = *state_;
  NBKIT_CUDA_CHECK(cudaSetDevice(s.device));
  MolecularForces result;
  finish_sums(s, result, false);
  return result;
}

Vector3<double>* MolecularGpuForces::positions() { return state_->x.data(); }
Vector3<double>* MolecularGpuForces::forces() { return state_->force.data(); }
CUstream_st* MolecularGpuForces::stream() const { return state_->stream; }

int MolecularGpuForces::first_nonfinite_force() {
  State& s = *state_;
  int first = 0;
  s.nonfinite.download(&first, 1, s.stream);
  NBKIT_CUDA_CHECK(cudaMemsetAsync(s.nonfinite.data(), 0x7f, sizeof(int), s.stream));
  NBKIT_CUDA_CHECK(cudaStreamSynchronize(s.stream));
  return first < s.n ? first : -1;
}

// Everything an evaluation does on the device, from the positions in s.x to the forces in
// s.force and, with `energies`, the sums in s.sums (PME's in s.mesh_sums); MSM's grids excepted
// (the host's). The pair list's check goes first on its own stream, then the work that does not
// need the list's answer (the packing on the main stream, PME's mesh beside it) while the host
// waits for the check's one word; launch_after_check says why in that order.
void MolecularGpuForces::launch(State& s, const std::optional<PeriodicBox>& box, bool energies) {
  if (s.list) s.list->start_check(s.x.data(), *box);
  try {
    launch_after_check(s, box, energies);
  } catch (...) {
    if (s.list) s.list->forget_check();
    throw;
  }
}

void MolecularGpuForces::launch_after_check(State& s, const std::optional<PeriodicBox>& box, bool energies) {
  if (energies) s.box = box;
  const NonbondedSettings& settings = s.settings;
  const bool periodic = settings.periodic();
  DeviceImages im{s.x.data(), periodic ? 1 : 0, {0, 0, 0}, {0, 0, 0}};
  if (periodic)
    for (int a = 0; a < 3; ++a) im.length[a] = box->length(a), im.inverse[a] = 1 / im.length[a];
  auto out = [&](int kind) {
    return TermOut{s.slot.data() + s.slot_offset[kind], s.term_energy.data() + s.term_offset[kind],
                   s.term_virial.data() + s.term_offset[kind]};
  };
  cudaStream_t stream = s.stream;
  // The bonded terms and PME's mesh need the positions alone and write their own buffers (the
  // slots, the term energies, the mesh's forces and sums), which gather_forces and the sums read
  // after the join below: on side streams they run beside the list and the pairs (the mesh on
  // one, the bonded terms on another). With the phases timed, everything stays on one stream, in
  // the order bonded terms, mesh, list, pairs, so that its events bound each phase.
  const bool beside = !s.events;
  const cudaStream_t side = beside ? static_cast<cudaStream_t>(s.side) : stream;
  const cudaStream_t bonded_side = !beside ? stream : s.bonded_stream ? static_cast<cudaStream_t>(s.bonded_side) : side;
  auto launch = [&](int kind, auto kernel, auto* terms) {
    if (s.count[kind] == 0) return;
    kernel<<<blocks(s.count[kind]), kThreads, 0, bonded_side>>>(static_cast<int>(s.count[kind]), terms, im,
                                                                 out(kind));
    NBKIT_CUDA_CHECK_LAUNCH();
  };
  const double coulomb_k = settings.coulomb_k();
  auto bonded = [&] {
    launch(0, bond_terms, s.bonds.data());
    launch(1, bond_terms, s.urey_bradley.data());
    launch(2, angle_terms, s.angles.data());
    launch(3, periodic_torsion_terms, s.dihedrals.data());
    launch(4, periodic_torsion_terms, s.periodic_impropers.data());
    launch(5, harmonic_improper_terms, s.harmonic_impropers.data());
    if (s.count[6] > 0) {
      pair14_terms<<<blocks(s.count[6]), kThreads, 0, bonded_side>>>(static_cast<int>(s.count[6]), s.pairs14.data(),
                                                                         im, s.charge.data(), coulomb_k, out(6),
                                                                         s.coulomb14_energy.data());
      NBKIT_CUDA_CHECK_LAUNCH();
    }
    if (s.count[7] > 0) {
      cmap_terms<<<blocks(s.count[7]), kThreads, 0, bonded_side>>>(
          static_cast<int>(s.count[7]), s.cmaps.data(), im,
          CmapCells{s.cmap_cells.data(), s.cmap_first.data(), s.cmap_size.data()}, out(7));
      NBKIT_CUDA_CHECK_LAUNCH();
    }
    if (s.gather_slots.size() > 0) {
      sum_slots<<<blocks(s.n), kThreads, 0, bonded_side>>>(static_cast<int>(s.n), s.slot.data(), s.gather_first.data(),
                                                           s.gather_slots.data(), s.bonded_force.data());
      NBKIT_CUDA_CHECK_LAUNCH();
    }
  };
  const bool pme = settings.method == NonbondedSettings::Method::pme;
  const int n = static_cast<int>(s.n);
  const bool ahead = beside && pme && s.pairs_after_mesh > 0;
  auto mesh = [&] {
    if (!pme) return;
    const PmeParameters parameters = pme_parameters(settings, *box);
    if (!s.pme || parameters.mesh != s.pme_mesh) {
      s.pme.reset();
      s.pme = std::make_unique<PmeGpu>(parameters.mesh, settings.pme_order, parameters.alpha, s.host_charge, side);
      if (s.events) s.pme->time_phases();
      s.pme_mesh = parameters.mesh;
      ++s.pme_meshes;
    }
    // Without energies the mesh's energy and virial are not summed (its forces are the same
    // bits): s.mesh_sums keeps the last evaluation's that had them, as s.sums does.
    s.pme->evaluate(s.x.data(), s.charge.data(), n, *box, coulomb_k, s.mesh_force.data(),
                    energies ? s.mesh_sums.data() : nullptr, side, ahead ? static_cast<cudaEvent_t>(s.mesh_ahead) : nullptr,
                    s.pairs_after_mesh);
  };
  // The excluded pairs' corrections need the positions alone (16-18 us a step of float64 chains at
  // 30,671 atoms on an H200), into arrays of their own that gather_forces adds.
  auto corrections = [&](cudaStream_t on) {
    if (!s.corrections_apart) return;
    s.list->correct(s.x.data(), *box,
                    PairSums{s.correction_force.data(), nullptr, nullptr, s.correction_virial.data(),
                             s.correction_energy.data()},
                    energies, on);
  };
  // Where a step's time went at 30,671 atoms on an H200 (session 36, CUPTI timelines of the step
  // without a list build): the mesh's chain of ~12 small kernels, each slowed by the pairs beside
  // it, took ~125-177 us from the positions to its gather, the host's wait for the check ~15-30
  // us, the pairs ~117 us; so the host queues, in this order: the packing (main stream) and the
  // mesh (side stream) before it waits for the check, the pairs as soon as it has the answer,
  // then the excluded pairs' corrections and the bonded terms (a third stream, ~60 us of work
  // that ends within the pairs). NBKIT_BONDED_STREAM=0: the bonded terms (and the corrections)
  // ahead of the mesh on its stream, queued before the wait, as up to session 35.
  if (beside) {
    s.forked.record(stream);
    if (s.list) s.list->prepare(s.x.data(), *box);
    NBKIT_CUDA_CHECK(cudaStreamWaitEvent(side, s.forked, 0));
    if (!s.bonded_stream) corrections(side), bonded();
    mesh();
    s.joined.record(side);
  } else {
    bonded();
    s.mark(2);
    mesh();
  }
  s.mark(3);
  // The nonbonded law's constants, as molecular_forces.cpp sets them.
  PairTable table{s.charge.data(), s.type.data(), s.types, s.c12.data(), s.c6.data(), coulomb_k,
                  settings.cutoff * settings.cutoff, {0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, s.excluded_first.data(),
                  s.excluded.data()};
  const bool cut = settings.method != NonbondedSettings::Method::no_cutoff;
  PairSwitch switched;
  PairCoulomb coulomb_law;
  table.k = molecular_pair_constants(settings, switched, coulomb_law);
  auto pairs = [&](auto kernel) {
    kernel<<<blocks(n), kThreads, 0, stream>>>(n, im, table, s.nonbonded_force.data(), s.atom_lj.data(),
                                               s.atom_coulomb.data(), s.atom_virial.data(), s.atom_excluded.data());
    NBKIT_CUDA_CHECK_LAUNCH();
  };
  if (s.list) {
    s.list->evaluate(s.x.data(), *box,
                     PairSums{s.nonbonded_force.data(), s.atom_lj.data(), s.atom_coulomb.data(), s.atom_virial.data(),
                              s.atom_excluded.data()},
                     energies, ahead ? static_cast<cudaEvent_t>(s.mesh_ahead) : nullptr);
  } else if (!cut) {
    pairs(nonbonded_pairs<PairSwitch::none, PairCoulomb::reaction_field, false>);
  } else {
    with_law(switched, coulomb_law, [&](auto sw, auto c) {
      pairs(nonbonded_pairs<decltype(sw)::value, decltype(c)::value, true>);
    });
  }
  if (beside && s.bonded_stream) {
    NBKIT_CUDA_CHECK(cudaStreamWaitEvent(bonded_side, s.forked, 0));
    corrections(bonded_side);
    bonded();
    s.bonded_joined.record(bonded_side);
  }
  // Timed: the corrections after the pairs, in the pairs' phase (as before session 36).
  if (!beside) corrections(stream);
  s.mark(4);
  if (beside) {
    NBKIT_CUDA_CHECK(cudaStreamWaitEvent(stream, s.joined, 0));
    if (s.bonded_stream) NBKIT_CUDA_CHECK(cudaStreamWaitEvent(stream, s.bonded_joined, 0));
  }
  // The corrections' virial joins the pairs' where this evaluation sums energies (float64's pair
  // sums always write theirs; the corrections then too).
  const bool virials = s.corrections_apart && (energies || !s.single);
  gather_forces<<<blocks(n), kThreads, 0, stream>>>(
      n, s.nonbonded_force.data(), s.corrections_apart ? s.correction_force.data() : nullptr,
      virials ? s.correction_virial.data() : nullptr, virials ? s.atom_virial.data() : nullptr,
      pme ? s.mesh_force.data() : nullptr, s.bonded_force.data(), s.gather_first.data(), s.force.data(),
      s.nonfinite.data());
  NBKIT_CUDA_CHECK_LAUNCH();
  if (energies) {
    sum_slices<<<dim3(kSlices, kSums), kReduceThreads, 0, stream>>>(s.ranges.data(), s.partial_sums.data());
    NBKIT_CUDA_CHECK_LAUNCH();
    sum_partials<<<kSums, kReduceThreads, 0, stream>>>(s.partial_sums.data(), s.sums.data());
    NBKIT_CUDA_CHECK_LAUNCH();
  }
  s.mark(5);
}

// The sums of the last evaluation read back (waiting for it) into `result`'s energies and virial,
// PME's constant terms and the dispersion correction added; `mark`: the phases' last event after
// the read-backs (evaluate's, whose forces come back too).
void MolecularGpuForces::finish_sums(State& s, MolecularForces& result, bool mark) {
  const NonbondedSettings& settings = s.settings;
  const bool pme = settings.method == NonbondedSettings::Method::pme;
  std::array<double, kSums> sums{};
  std::array<double, 2> mesh_sums{};
  cudaStream_t stream = s.stream;
  s.sums.download(sums.data(), kSums, stream);
  if (pme) s.mesh_sums.download(mesh_sums.data(), 2, stream);
  if (mark) s.mark(6);
  NBKIT_CUDA_CHECK(cudaStreamSynchronize(stream));
  EnergyTerms& e = result.energy;
  e.bond = sums[bond], e.urey_bradley = sums[urey_bradley], e.angle = sums[angle], e.dihedral = sums[dihedral];
  e.improper = sums[improper_periodic] + sums[improper_harmonic];
  e.lennard_jones_14 = sums[lj14], e.coulomb_14 = sums[coulomb14], e.cmap = sums[cmap];
  e.lennard_jones = sums[lj], e.coulomb = sums[coulomb];
  result.virial = sums[term_virial] + sums[pair_virial];
  if (settings.method == NonbondedSettings::Method::msm) e.coulomb_reciprocal = sums[excluded];
  if (pme) {
    const PmeParameters mesh = pme_parameters(settings, *s.box);
    const PmeConstantTerms constant = pme_constant_terms(s.host_charge, settings.coulomb_k(), mesh.alpha, s.box->volume());
    e.coulomb_reciprocal = mesh_sums[0] + constant.energy + sums[excluded];
    result.virial += mesh_sums[1] + constant.virial;
  }
  if (settings.periodic()) s.dispersion.add_to(result, *s.box);
}

}  // namespace nbkit::md
