// The single-point energy and forces of a biomolecular system (nbkit/md/molecular_forces.hpp):
// the bonded terms through bonded_law.hpp, the 1-4 pairs and the nonbonded pairs through
// pair_law.hpp's molecular_pair. The nonbonded pairs are found three ways: every pair on one
// thread (the reference), every pair on all threads (no cutoff), or a cell list (the cutoff
// methods, NeighborList with no skin). The bonded terms run on one thread for both backends:
// they are O(N) and a few percent of the nonbonded work at any size. With PME, the pairs get
// Ewald's real-space Coulomb and MolecularCpuForces::add_pme_terms adds the mesh (md/pme.hpp),
// the self energy, the excluded pairs' erf part and the background.
#include "nbkit/md/molecular_forces.hpp"

#include <fmt/format.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <type_traits>

#include "md/bonded_law.hpp"
#include "md/cmap.hpp"
#include "md/molecular_cpu.hpp"
#include "md/molecular_gpu.hpp"
#include "md/molecular_pair_constants.hpp"
#include "md/molecular_simd.hpp"
#include "md/ewald.hpp"
#include "md/msm.hpp"
#include "md/pme.hpp"
#include "md/pair_law.hpp"
#include "nbkit/core/error.hpp"
#include "nbkit/core/units.hpp"
#include "nbkit/md.hpp"

namespace nbkit::md {

namespace {

using V3 = Vector3<double>;
using Method = NonbondedSettings::Method;

// Positions and the periodic image rule (the minimum image in a periodic box, none otherwise).
struct Images {
  const std::vector<Vec3>& x;
  bool periodic = false;
  double length[3] = {0, 0, 0}, inverse[3] = {0, 0, 0};
  ScalarPairMath<double> math;

  V3 at(std::int32_t i) const { return {x[i].x, x[i].y, x[i].z}; }
  V3 separation(V3 d) const {
    if (!periodic) return d;
    return {minimum_image(math, d.x, length[0], inverse[0]), minimum_image(math, d.y, length[1], inverse[1]),
            minimum_image(math, d.z, length[2], inverse[2])};
  }
  // Atom j's image nearest to `origin` (bonded terms of molecules split by the box's faces).
  V3 near(V3 origin, std::int32_t j) const { return origin + separation(at(j) - origin); }
};

void add(std::vector<V3>& f, std::int32_t i, V3 v) { f[i] = f[i] + v; }

void add_bonded_terms(const Topology& t, const Images& im, std::vector<V3>& f, EnergyTerms& e, double& virial) {
  auto bonds = [&](const std::vector<HarmonicBond>& list, double& energy) {
    for (const HarmonicBond& b : list) {
      const V3 xi = im.at(b.i), xj = im.near(xi, b.j);
      V3 fi;
      energy += harmonic_bond(xi, xj, b.k, b.r0, fi);
      add(f, b.i, fi), add(f, b.j, -1.0 * fi);
      virial += dot(xi - xj, fi);
    }
  };
  bonds(t.bonds, e.bond);
  bonds(t.urey_bradley, e.urey_bradley);
  for (const HarmonicAngle& a : t.angles) {
    const V3 xj = im.at(a.j), xi = im.near(xj, a.i), xk = im.near(xj, a.k);
    V3 fi, fk;
    e.angle += harmonic_angle(xi, xj, xk, a.k_theta, a.theta0, fi, fk);
    add(f, a.i, fi), add(f, a.k, fk), add(f, a.j, -1.0 * (fi + fk));
    virial += dot(xi - xj, fi) + dot(xk - xj, fk);
  }
  auto dihedral = [&](std::int32_t i, std::int32_t j, std::int32_t k, std::int32_t l) {
    const V3 xj = im.at(j), xk = im.near(xj, k);
    return dihedral_geometry(im.near(xj, i), xj, xk, im.near(xk, l));
  };
  auto add4 = [&](std::int32_t i, std::int32_t j, std::int32_t k, std::int32_t l, const DihedralGeometry<double>& g,
                  double de) {
    V3 four[4];
    dihedral_forces(g, de, four);
    add(f, i, four[0]), add(f, j, four[1]), add(f, k, four[2]), add(f, l, four[3]);
    // x_a - x_j for a = i, k, l: r_ij, r_kj and r_kj - r_kl (Sum F = 0 leaves x_j out).
    virial += dot(g.r_ij, four[0]) + dot(g.r_kj, four[2]) + dot(g.r_kj - g.r_kl, four[3]);
  };
  auto torsions = [&](const std::vector<PeriodicTorsion>& list, double& energy) {
    for (const PeriodicTorsion& d : list) {
      const auto g = dihedral(d.i, d.j, d.k, d.l);
      double de;
      energy += periodic_torsion(g, d.periodicity, d.k_phi, d.phase, de);
      add4(d.i, d.j, d.k, d.l, g, de);
    }
  };
  torsions(t.dihedrals, e.dihedral);
  torsions(t.periodic_impropers, e.improper);
  for (const HarmonicImproper& d : t.harmonic_impropers) {
    const auto g = dihedral(d.i, d.j, d.k, d.l);
    double de;
    e.improper += harmonic_improper(g, d.k_psi, d.psi0, de);
    add4(d.i, d.j, d.k, d.l, g, de);
  }
  if (t.cmaps.empty()) return;
  std::vector<std::vector<double>> cells;
  for (const CmapGrid& grid : t.cmap_grids) cells.push_back(cmap_coefficients(grid.size, grid.energy));
  for (const CmapTorsion& c : t.cmaps) {
    const auto phi = dihedral(c.phi[0], c.phi[1], c.phi[2], c.phi[3]);
    const auto psi = dihedral(c.psi[0], c.psi[1], c.psi[2], c.psi[3]);
    double de_dphi, de_dpsi;
    e.cmap += cmap_energy(cells[c.map].data(), t.cmap_grids[c.map].size, phi.phi, psi.phi, de_dphi, de_dpsi);
    add4(c.phi[0], c.phi[1], c.phi[2], c.phi[3], phi, de_dphi);
    add4(c.psi[0], c.psi[1], c.psi[2], c.psi[3], psi, de_dpsi);
  }
}

// The 1-4 pairs: plain Coulomb scaled, their own Lennard-Jones, never cut off.
void add_pairs14(const Topology& t, const Images& im, double coulomb_k, std::vector<V3>& f, EnergyTerms& e,
                 double& virial) {
  const MolecularPairConstants<double> plain{0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  for (const Pair14& p : t.pairs14) {
    const V3 d = im.separation(im.at(p.i) - im.at(p.j));
    const double r2 = dot(d, d);
    double lj, lj_f, coulomb, coulomb_f;
    molecular_pair<PairSwitch::none>(im.math, r2, p.c12, p.c6, p.coulomb_scale * coulomb_k * t.charge[p.i] * t.charge[p.j],
                          plain, lj, lj_f, coulomb, coulomb_f);
    e.lennard_jones_14 += lj, e.coulomb_14 += coulomb;
    add(f, p.i, (lj_f + coulomb_f) * d), add(f, p.j, -(lj_f + coulomb_f) * d);
    virial += (lj_f + coulomb_f) * r2;
  }
}

// Each atom's excluded partners of higher index, sorted (rows of a CSR table), so that a loop
// over j > i in order skips them with one moving pointer.
struct ExcludedAbove {
  std::vector<std::int64_t> first;
  std::vector<std::int32_t> partner;
  explicit ExcludedAbove(const Topology& t) : first(t.size() + 1, 0) {
    for (const auto& [a, b] : t.exclusions) ++first[std::min(a, b) + 1];
    for (std::size_t i = 0; i < t.size(); ++i) first[i + 1] += first[i];
    partner.resize(t.exclusions.size());
    std::vector<std::int64_t> fill(first.begin(), first.end() - 1);
    for (const auto& [a, b] : t.exclusions) partner[fill[std::min(a, b)]++] = std::max(a, b);
    for (std::size_t i = 0; i < t.size(); ++i) std::sort(partner.begin() + first[i], partner.begin() + first[i + 1]);
  }
};

// The nonbonded pair law of one evaluation: the table, the method's constants, and the atoms'
// positions, charges (times k / eps) and types in the order the loop visits them (atom order for
// every pair; the cell list's order for the list, so that a row's neighbours lie close in memory).
struct PairSum {
  const Images& im;
  const V3* x;
  const double* scaled_charge;
  const std::int32_t* type;
  std::int32_t types;
  const double *c12, *c6;
  double cutoff2;
  bool cut;
  PairSwitch switched;
  PairCoulomb coulomb;
  MolecularPairConstants<double> k;

  // Adds pair (i, j) (i's force to fi, j's to fj) when within the cutoff.
  template <PairSwitch Switch, PairCoulomb Coulomb>
  void add(std::int64_t i, std::int64_t j, V3& fi, V3& fj, double& lj_sum, double& coulomb_sum, double& virial) const {
    const V3 d = im.separation(x[i] - x[j]);
    const double r2 = dot(d, d);
    if (cut && !(r2 < cutoff2)) return;
    const std::int64_t pair = static_cast<std::int64_t>(type[i]) * types + type[j];
    double lj, lj_f, coulomb, coulomb_f;
    molecular_pair<Switch, Coulomb>(im.math, r2, c12[pair], c6[pair], scaled_charge[i] * scaled_charge[j], k, lj,
                                    lj_f, coulomb, coulomb_f);
    lj_sum += lj, coulomb_sum += coulomb, virial += (lj_f + coulomb_f) * r2;
    const V3 force = (lj_f + coulomb_f) * d;
    fi = fi + force;
    fj = fj - force;
  }
};

// Per-thread force arrays (in the loop's order) and energies, added in thread order at the end
// (the same bits for the same thread count), scattered to atom order through `order` (or not).
struct ThreadSums {
  std::vector<std::vector<V3>> force;
  std::vector<double> lj, coulomb, virial;
  ThreadSums(int threads, std::size_t n)
      : force(threads, std::vector<V3>(n, V3{0, 0, 0})), lj(threads, 0.0), coulomb(threads, 0.0), virial(threads, 0.0) {}
  void add_to(std::vector<V3>& f, EnergyTerms& e, double& total_virial, const std::int64_t* order = nullptr) const {
    const std::int64_t n = static_cast<std::int64_t>(f.size());
    const int threads = static_cast<int>(force.size());
#pragma omp parallel for num_threads(threads) schedule(static, 4096)
    for (std::int64_t p = 0; p < n; ++p) {
      V3& out = f[order ? order[p] : p];
      for (int t = 0; t < threads; ++t) out = out + force[t][p];
    }
    for (int t = 0; t < threads; ++t) e.lennard_jones += lj[t], e.coulomb += coulomb[t], total_virial += virial[t];
  }
};

// Every pair i < j that is not excluded, rows dealt to `threads` threads.
void add_all_pairs(const Topology& t, const PairSum& pair, int threads, std::vector<V3>& f, EnergyTerms& e,
                   double& virial) {
  const ExcludedAbove excluded(t);
  const std::int64_t n = static_cast<std::int64_t>(t.size());
  ThreadSums sums(threads, t.size());
  with_law(pair.switched, pair.coulomb, [&](auto s, auto c) {
#pragma omp parallel num_threads(threads)
    {
      const int me = omp_get_thread_num();
      std::vector<V3>& force = sums.force[me];
      double lj = 0, coulomb = 0, pair_virial = 0;
#pragma omp for schedule(static, 16)  // static: the same rows per thread, the same bits every run
      for (std::int64_t i = 0; i < n; ++i) {
        std::int64_t skip = excluded.first[i];
        V3 fi{0, 0, 0};
        for (std::int64_t j = i + 1; j < n; ++j) {
          while (skip < excluded.first[i + 1] && excluded.partner[skip] < j) ++skip;  // (duplicates too)
          if (skip < excluded.first[i + 1] && excluded.partner[skip] == j) continue;
          pair.template add<decltype(s)::value, decltype(c)::value>(i, j, fi, force[j], lj, coulomb, pair_virial);
        }
        force[i] = force[i] + fi;
      }
      sums.lj[me] = lj, sums.coulomb[me] = coulomb, sums.virial[me] = pair_virial;
    }
  });
  sums.add_to(f, e, virial);
}

// The pairs of a cell list (its rows in parallel, each pair once, Newton's third law), with the
// atoms gathered in the list's order first.
void add_listed_pairs(const Topology& t, const NeighborList& list, PairSum pair, int threads, std::vector<V3>& f,
                      EnergyTerms& e, double& virial) {
  const std::int64_t n = static_cast<std::int64_t>(f.size());
  std::vector<V3> x(static_cast<std::size_t>(n));
  std::vector<double> q(static_cast<std::size_t>(n));
  std::vector<std::int32_t> type(static_cast<std::size_t>(n));
  const std::vector<std::int64_t>& order = list.order_;
#pragma omp parallel for num_threads(threads) schedule(static, 4096)
  for (std::int64_t p = 0; p < n; ++p)
    x[p] = pair.x[order[p]], q[p] = pair.scaled_charge[order[p]], type[p] = t.lj_type[order[p]];
  ThreadSums sums(threads, f.size());
  static_assert(sizeof(V3) == 3 * sizeof(double), "V3 is three packed doubles");
  MolecularRows job{reinterpret_cast<const double*>(x.data()), q.data(), type.data(), t.lj_types, t.c12.data(),
                    t.c6.data(), list.first_.data(), list.neighbors_.data(), pair.im.periodic,
                    {pair.im.length[0], pair.im.length[1], pair.im.length[2]}, pair.cutoff2, pair.switched,
                    pair.coulomb, pair.k, nullptr};
#pragma omp parallel num_threads(threads)
  {
    const int me = omp_get_thread_num();
    MolecularRows mine = job;
    mine.force = reinterpret_cast<double*>(sums.force[me].data());
    double lj = 0, coulomb = 0, pair_virial = 0;
#pragma omp for schedule(static, 256)
    for (std::int64_t p = 0; p < n; ++p) {
      const MolecularRowSums row = molecular_row(mine, p);
      sums.force[me][p] = sums.force[me][p] + V3{row.fx, row.fy, row.fz};
      lj += row.lennard_jones, coulomb += row.coulomb, pair_virial += row.virial;
    }
    sums.lj[me] = lj, sums.coulomb[me] = coulomb, sums.virial[me] = pair_virial;
  }
  sums.add_to(f, e, virial, order.data());
}

}  // namespace

void check_molecular_inputs(const Topology& t, const std::vector<Vec3>& x, const std::optional<PeriodicBox>& box,
                            const NonbondedSettings& s) {
  t.check();
  if (x.size() != t.size())
    throw Error(fmt::format("{} positions for the {} atoms of {}", x.size(), t.size(), t.source));
  for (std::size_t i = 0; i < x.size(); ++i)
    if (!std::isfinite(x[i].x) || !std::isfinite(x[i].y) || !std::isfinite(x[i].z))
      throw Error(fmt::format("atom {} has a position that is not a finite number", i + 1));
  if (!(s.dielectric > 0) || !std::isfinite(s.dielectric)) throw Error("the dielectric constant must be positive");
  if (!(s.coulomb_constant > 0) || !std::isfinite(s.coulomb_constant)) throw Error("Coulomb's constant must be positive");
  if (s.style != NonbondedSettings::CutoffStyle::openmm && s.method == Method::no_cutoff)
    throw Error("the " + to_string(s.style) + " cutoff style acts at a cutoff: give a cutoff method");
  if (s.style == NonbondedSettings::CutoffStyle::charmm && !s.switch_distance)
    throw Error("the charmm cutoff style needs a switch distance (LAMMPS's inner cutoff)");
  if (s.method == Method::no_cutoff) return;
  if (!(s.cutoff > 0) || !std::isfinite(s.cutoff)) throw Error("the nonbonded cutoff must be a positive length");
  if (!(s.reaction_field_dielectric >= 1) || !std::isfinite(s.reaction_field_dielectric))
    throw Error("the reaction field's dielectric must be at least 1");
  if (s.switch_distance && !(*s.switch_distance > 0 && *s.switch_distance < s.cutoff))
    throw Error(fmt::format("the switch distance {} A must lie between 0 and the cutoff ({} A)", *s.switch_distance,
                            s.cutoff));
  if (s.method == Method::pme) {
    if (s.style != NonbondedSettings::CutoffStyle::openmm)
      throw Error("pme: the " + to_string(s.style) +
                  " style changes plain Coulomb; with PME, switch Lennard-Jones in the openmm style");
    if (!(s.ewald_tolerance > 0 && s.ewald_tolerance < 0.5)) throw Error("the Ewald error tolerance must lie in (0, 0.5)");
    if (s.pme_order < 4 || s.pme_order > 6) throw Error(fmt::format("PME's B-spline order {}: 4, 5 or 6", s.pme_order));
    if (s.ewald_alpha && !(*s.ewald_alpha > 0 && std::isfinite(*s.ewald_alpha)))
      throw Error("PME's alpha must be a positive number (1/A)");
    if (s.pme_mesh)
      for (int m : *s.pme_mesh)
        if (m < s.pme_order || m > 4096)
          throw Error(fmt::format("PME's mesh: {} points along an edge (expected {}..4096)", m, s.pme_order));
    if (!s.coulomb) throw Error("pme sums Coulomb: it cannot go with electrostatics turned off");
  }
  if (s.method == Method::msm) {
    if (s.style != NonbondedSettings::CutoffStyle::openmm)
      throw Error("msm: the " + to_string(s.style) +
                  " style changes plain Coulomb; with MSM, switch Lennard-Jones in the openmm style");
    if (!s.coulomb) throw Error("msm sums Coulomb: it cannot go with electrostatics turned off");
    if (!(s.msm_spacing > 0) || !(2 * s.msm_spacing <= s.cutoff))
      throw Error(fmt::format("msm: the grid spacing {} A must be positive and at most half the cutoff ({} A)",
                              s.msm_spacing, s.cutoff));
  }
  if (!s.periodic()) return;
  if (!box)
    throw Error(to_string(s.method) + " needs a periodic box: neither the topology nor the coordinates have one");
  for (int a = 0; a < 3; ++a)
    if (!(box->length(a) >= 2 * s.cutoff))
      throw Error(fmt::format("the box ({:.4g} x {:.4g} x {:.4g} A) must be at least twice the cutoff ({} A) along "
                              "every edge",
                              box->length(0), box->length(1), box->length(2), s.cutoff));
}

namespace {

// Every result checked finite: an overlap of two atoms is an error, not a number.
void check_finite(const MolecularForces& out) {
  for (std::size_t i = 0; i < out.force.size(); ++i) {
    const Vec3& f = out.force[i];
    if (!std::isfinite(f.x) || !std::isfinite(f.y) || !std::isfinite(f.z))
      throw Error(fmt::format("the force on atom {} is not finite: do two atoms overlap?", i + 1));
  }
  for (const auto& [name, value] : out.energy.named())
    if (!std::isfinite(value)) throw Error(fmt::format("the {} energy is not finite: do two atoms overlap?", name));
}

}  // namespace

MolecularForces molecular_forces(const Topology& t, const std::vector<Vec3>& x, const std::optional<PeriodicBox>& box,
                                 const NonbondedSettings& s, Backend backend, int threads, const std::vector<int>& gpus,
                                 Precision precision) {
  check_molecular_inputs(t, x, box, s);
  if (precision == Precision::single && backend != Backend::cuda)
    throw Error("single (mixed) precision is the GPU's; the " + to_string(backend) + " backend computes in double");
  if (backend == Backend::cuda) {
    MolecularGpuForces gpu(t, s, resolve_gpu(gpus).index, precision == Precision::single);
    MolecularForces out = gpu.evaluate(x, box);
    check_finite(out);
    return out;
  }
  return MolecularCpuForces(t, s, backend == Backend::reference ? Backend::reference : Backend::cpu, threads, 0.0)
      .evaluate(x, box);
}

MolecularCpuForces::MolecularCpuForces(const Topology& t, const NonbondedSettings& s, Backend backend, int threads,
                                       double skin)
    : t_(t), s_(s), backend_(backend), threads_(backend == Backend::reference ? 1 : resolve_threads(threads)),
      skin_(skin), dispersion_(dispersion_correction(t, s)) {
  if (!(skin >= 0) || !std::isfinite(skin)) throw Error("the neighbour skin must not be negative");
  reach_.cutoff = s.cutoff;
  reach_.exclusions.assign(t.exclusions.begin(), t.exclusions.end());
  atoms_.resize(t.size());
}

MolecularCpuForces::~MolecularCpuForces() = default;

// The cell list for these positions: kept while no atom has moved half the skin (and the box is
// the same); else rebuilt. Without a periodic box the atoms sit in one whose faces are the
// cutoff plus the skin beyond them (1.5 cutoffs on the high side), so no image of one atom comes
// within reach of another; with one, the skin shrinks where the box is too short for every pair
// to be listed once (NeighborList::minimum_image).
double MolecularCpuForces::skin_for(const std::optional<PeriodicBox>& box) const {
  double skin = skin_;
  if (box)
    for (int a = 0; a < 3; ++a) skin = std::max(0.0, std::min(skin, 0.499 * (box->length(a) / 2 - s_.cutoff)));
  return skin;
}

bool MolecularCpuForces::needs_rebuild(const std::vector<Vec3>& x, const std::optional<PeriodicBox>& box) {
  if (backend_ == Backend::reference || s_.method == Method::no_cutoff) return false;
  for (std::size_t i = 0; i < x.size(); ++i) atoms_.x[i] = x[i].x, atoms_.y[i] = x[i].y, atoms_.z[i] = x[i].z;
  return !list_ || list_->needs_rebuild(atoms_) || list_->skin() != skin_for(box) ||
         (box && (atoms_.box.lo != box->lo || atoms_.box.hi != box->hi));
}

const NeighborList& MolecularCpuForces::list_for(const std::vector<Vec3>& x, const std::optional<PeriodicBox>& box) {
  if (!needs_rebuild(x, box)) return *list_;
  const double skin = skin_for(box);
  if (box) {
    atoms_.box = *box;
  } else {
    for (int a = 0; a < 3; ++a) {
      double lo = x.empty() ? 0 : x[0][a], hi = lo;
      for (const Vec3& p : x) lo = std::min(lo, p[a]), hi = std::max(hi, p[a]);
      atoms_.box.lo[a] = lo - s_.cutoff - skin, atoms_.box.hi[a] = hi + 1.5 * s_.cutoff + skin;
    }
  }
  // The same list object from build to build: its threads' buffers are kept (neighbor_list.cpp),
  // where a fresh object zeroed ~20 MB of them at every build (30,671 atoms: ~3.5% of a 2-thread
  // run's samples in memset).
  if (!list_ || list_->cutoff() != s_.cutoff || list_->skin() != skin)
    list_ = std::make_unique<NeighborList>(s_.cutoff, skin);
  list_->build(atoms_, reach_);
  ++builds_;
  return *list_;
}

MolecularForces MolecularCpuForces::evaluate(const std::vector<Vec3>& x, const std::optional<PeriodicBox>& box) {
  const Topology& t = t_;
  const NonbondedSettings& s = s_;
  Images im{x, false, {0, 0, 0}, {0, 0, 0}, {}};
  const bool periodic = s.periodic();
  if (periodic) {
    im.periodic = true;
    for (int a = 0; a < 3; ++a) im.length[a] = box->length(a), im.inverse[a] = 1 / im.length[a];
  }
  const double coulomb_k = s.coulomb_k();
  std::vector<V3> f(t.size(), V3{0, 0, 0});
  MolecularForces out;
  add_bonded_terms(t, im, f, out.energy, out.virial);
  add_pairs14(t, im, coulomb_k, f, out.energy, out.virial);

  // Charges times sqrt(k / eps), so that a pair's product is k q_i q_j / eps.
  std::vector<double> scaled(t.size());
  for (std::size_t i = 0; i < t.size(); ++i) scaled[i] = std::sqrt(coulomb_k) * t.charge[i];
  std::vector<V3> positions(t.size());
  for (std::size_t i = 0; i < t.size(); ++i) positions[i] = im.at(static_cast<std::int32_t>(i));
  PairSum pair{im,
               positions.data(),
               scaled.data(),
               t.lj_type.data(),
               t.lj_types,
               t.c12.data(),
               t.c6.data(),
               s.cutoff * s.cutoff,
               s.method != Method::no_cutoff,
               PairSwitch::none,
               PairCoulomb::reaction_field,
               {}};
  pair.k = molecular_pair_constants(s, pair.switched, pair.coulomb);
  if (backend_ == Backend::reference || !pair.cut)
    add_all_pairs(t, pair, threads_, f, out.energy, out.virial);
  else
    add_listed_pairs(t, list_for(x, periodic ? box : std::nullopt), pair, threads_, f, out.energy, out.virial);

  if (s.method == Method::pme) add_pme_terms(x, *box, f, out.energy, out.virial);
  if (s.method == Method::msm) add_msm_terms(x, *box, f, out.energy, out.virial);
  if (periodic) dispersion_.add_to(out, *box);

  out.force.resize(t.size());
  for (std::size_t i = 0; i < t.size(); ++i) out.force[i] = {f[i].x, f[i].y, f[i].z};
  check_finite(out);
  return out;
}

namespace {
// n without its factors 2, 3, 5 and 7 (1: an FFT-friendly size).
int beyond_seven(int n) {
  for (int factor : {2, 3, 5, 7})
    while (n % factor == 0) n /= factor;
  return n;
}
}  // namespace

int fft_friendly_size(int minimum) {
  for (int size = std::max(1, minimum);; ++size)
    if (beyond_seven(size) == 1) return size;
}

std::string pme_mesh_notice(const NonbondedSettings& s, const PeriodicBox& box) {
  if (s.method != Method::pme || s.pme_mesh || s.pme_fft_sizes) return {};
  const std::array<int, 3> mesh = pme_parameters(s, box).mesh;
  int largest = 1;  // the largest prime factor above 7 of any edge
  for (int edge : mesh) {
    int rest = beyond_seven(edge);
    for (int factor = 11; factor <= rest; factor += 2)
      while (rest % factor == 0) largest = std::max(largest, factor), rest /= factor;
  }
  if (largest == 1) return {};
  return fmt::format(
      "PME's mesh from the tolerance, {} x {} x {} (OpenMM's Reference platform's rule, the default), has a prime "
      "factor {} that sends the FFTs to their slow paths; pme_mesh_sizes = \"fft\" in [nonbonded] rounds it up to "
      "{} x {} x {} as OpenMM's CUDA, OpenCL and CPU platforms do (a finer mesh; PME 1.4 times as fast at a million "
      "atoms on an H200)",
      mesh[0], mesh[1], mesh[2], largest, fft_friendly_size(mesh[0]), fft_friendly_size(mesh[1]),
      fft_friendly_size(mesh[2]));
}

PmeParameters pme_parameters(const NonbondedSettings& s, const PeriodicBox& box) {
  const EwaldParameters p = ewald_parameters(box, s.cutoff, s.ewald_tolerance);
  std::array<int, 3> mesh = p.pme_grid;
  if (s.pme_fft_sizes)
    for (int& m : mesh) m = fft_friendly_size(m);
  return {s.ewald_alpha ? *s.ewald_alpha : p.alpha, s.pme_mesh ? *s.pme_mesh : mesh};
}

void MolecularCpuForces::add_pme_terms(const std::vector<Vec3>& x, const PeriodicBox& box, std::vector<V3>& f,
                                       EnergyTerms& e, double& virial) {
  const Topology& t = t_;
  const double k = s_.coulomb_k();
  const PmeParameters p = pme_parameters(s_, box);
  // The mesh is a function of the box (and alpha of the cutoff alone); a barostat's small box
  // changes keep it, and the same plan, until the tolerance asks for another mesh size.
  if (!pme_ || p.mesh != pme_mesh_) {
    pme_ = std::make_unique<PmeCpu>(p.mesh, s_.pme_order, p.alpha, threads_);
    pme_mesh_ = p.mesh;
  }
  const PmeReciprocal mesh = pme_->evaluate(x, t.charge, box, k);
  double energy = mesh.energy;
  virial += mesh.virial;
  for (std::size_t i = 0; i < t.size(); ++i) f[i] = f[i] + V3{mesh.force[i].x, mesh.force[i].y, mesh.force[i].z};
  const PmeConstantTerms constant = pme_constant_terms(t.charge, k, p.alpha, box.volume());
  energy += constant.energy;
  virial += constant.virial;
  const double pi = std::numbers::pi;
  // Every excluded pair (1-2, 1-3, 1-4) is in the mesh's sum: its nearest image's erf part out.
  Images im{x, true, {box.length(0), box.length(1), box.length(2)},
            {1 / box.length(0), 1 / box.length(1), 1 / box.length(2)}, {}};
  const double gauss = 2 * p.alpha / std::sqrt(pi);
  for (const auto& [i, j] : t.exclusions) {
    const V3 d = im.separation(im.at(i) - im.at(j));
    const double r2 = dot(d, d);
    double pair_energy, force_over_r;
    ewald_excluded_pair(im.math, r2, k * t.charge[i] * t.charge[j], p.alpha, gauss, pair_energy, force_over_r);
    energy += pair_energy;
    f[i] = f[i] + force_over_r * d, f[j] = f[j] - force_over_r * d;
    virial += force_over_r * r2;
  }
  e.coulomb_reciprocal += energy;
}

void MolecularCpuForces::add_msm_terms(const std::vector<Vec3>& x, const PeriodicBox& box, std::vector<V3>& f,
                                       EnergyTerms& e, double& virial) {
  const Topology& t = t_;
  const double k = s_.coulomb_k();
  if (!msm_ || box.edges() != msm_box_.edges()) {
    msm_ = std::make_unique<MsmCpu>(box, s_.cutoff, s_.msm_spacing, s_.msm_quintic, threads_);
    msm_box_ = box;
  }
  const MsmLongRange grids = msm_->evaluate(x, t.charge, box, k);
  double energy = grids.energy;
  virial += grids.virial;
  for (std::size_t i = 0; i < t.size(); ++i) f[i] = f[i] + V3{grids.force[i].x, grids.force[i].y, grids.force[i].z};
  // Every excluded pair (1-2, 1-3, 1-4) is in the grids' sum: its nearest image's g_a(r) out.
  Images im{x, true, {box.length(0), box.length(1), box.length(2)},
            {1 / box.length(0), 1 / box.length(1), 1 / box.length(2)}, {}};
  const double inverse_cutoff = 1 / s_.cutoff;
  for (const auto& [i, j] : t.exclusions) {
    const V3 d = im.separation(im.at(i) - im.at(j));
    const double r2 = dot(d, d);
    double pair_energy, force_over_r;
    msm_excluded_pair(im.math, r2, k * t.charge[i] * t.charge[j], inverse_cutoff, pair_energy, force_over_r);
    energy += pair_energy;
    f[i] = f[i] + force_over_r * d, f[j] = f[j] - force_over_r * d;
    virial += force_over_r * r2;
  }
  e.coulomb_reciprocal += energy;
}

}  // namespace nbkit::md
