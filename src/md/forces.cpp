// The nonbonded forces on the host: the all-images float64 reference and the neighbour-list
// CPU loop (SIMD rows in forces_simd.cpp), with the force field's pair table.
#include <omp.h>

#include <algorithm>
#include <cmath>

#include "md/exclusions.hpp"
#include "md/force_field.hpp"
#include "md/forces_simd.hpp"
#include "md/pair_law.hpp"
#include "nbkit/core/error.hpp"
#include "nbkit/md.hpp"

namespace nbkit::md {

void Forces::resize(std::size_t n) {
  fx.assign(n, 0.0), fy.assign(n, 0.0), fz.assign(n, 0.0);
  potential = virial = 0;
}

PairTable pair_table(const ForceField& f) {
  PairTable t;
  t.coefficients.resize(f.epsilon.size());
  const ScalarPairMath<double> math;
  for (std::size_t p = 0; p < f.epsilon.size(); ++p) {
    const double sigma6 = std::pow(f.sigma[p], 6);
    LennardJonesCoefficients<double>& c = t.coefficients[p];
    c = {4 * f.epsilon[p] * sigma6 * sigma6, 4 * f.epsilon[p] * sigma6, 0.0};
    if (f.shift) {
      double force_over_r;
      lennard_jones(math, 1 / (f.cutoff * f.cutoff), c.c12, c.c6, c.offset, force_over_r);
    }
  }
  return t;
}

namespace {

// The force field's pair law for one system, set up once per force evaluation: the type
// pairs' coefficients, the cutoffs, and whether the atoms carry charges (shifted-force Coulomb
// within the Coulomb cutoff); the reference and the list loop both call it.
struct PairEvaluator {
  PairEvaluator(const System& s, const ForceField& f)
      : table(pair_table(f)),
        types(f.types()),
        reach2(f.reach() * f.reach()),
        coulomb(f.coulomb_cutoff > 0 && s.has_charges),
        cutoffs{f.cutoff * f.cutoff, f.coulomb_cutoff * f.coulomb_cutoff, coulomb ? 1 / f.coulomb_cutoff : 0},
        qqr2e(unit_constants(s.units).coulomb / f.dielectric) {}

  // Energy and force / r of a pair at squared distance 0 < r2 < reach2.
  void operator()(double r2, int type_i, int type_j, double charge_i, double charge_j, double& energy,
                  double& force_over_r) const {
    const LennardJonesCoefficients<double>& lj = table.coefficients[type_i * types + type_j];
    if (coulomb)
      nonbonded_pair<true, false>(math, r2, lj, qqr2e * charge_i * charge_j, cutoffs, energy, force_over_r);
    else
      nonbonded_pair<false, false>(math, r2, lj, 0.0, cutoffs, energy, force_over_r);
  }

  PairTable table;
  int types;
  double reach2;
  bool coulomb;
  PairCutoffs<double> cutoffs;
  double qqr2e;
  ScalarPairMath<double> math;
};

}  // namespace

double coulomb_self_energy(const System& s, const ForceField& f) {
  if (!(f.coulomb_cutoff > 0) || !s.has_charges) return 0;
  double sum = 0;
  for (double q : s.charge) sum += q * q;
  return -unit_constants(s.units).coulomb / f.dielectric * sum / f.coulomb_cutoff;
}


void forces_reference(const System& s, const ForceField& f, Forces& out) {
  check_force_field(s, f);
  const std::size_t n = s.size();
  out.resize(n);
  const auto excluded = exclusion_set(static_cast<std::int64_t>(s.size()), f);
  const PairEvaluator pair_law(s, f);
  const double length[3] = {s.box.length(0), s.box.length(1), s.box.length(2)};
  const double inverse[3] = {1 / length[0], 1 / length[1], 1 / length[2]};
  int reach[3];
  for (int a = 0; a < 3; ++a) reach[a] = static_cast<int>(std::ceil(f.reach() / length[a]));
  for (std::size_t i = 0; i < n; ++i) {
    double fx = 0, fy = 0, fz = 0;
    for (std::size_t j = 0; j < n; ++j) {
      if (j != i && excluded.count(exclusion_key(static_cast<std::int64_t>(i), static_cast<std::int64_t>(j)))) continue;
      double dx0 = s.x[j] - s.x[i], dy0 = s.y[j] - s.y[i], dz0 = s.z[j] - s.z[i];
      dx0 = minimum_image(pair_law.math, dx0, length[0], inverse[0]);  // the nearest image first, then the others
      dy0 = minimum_image(pair_law.math, dy0, length[1], inverse[1]);
      dz0 = minimum_image(pair_law.math, dz0, length[2], inverse[2]);
      for (int ix = -reach[0]; ix <= reach[0]; ++ix)
        for (int iy = -reach[1]; iy <= reach[1]; ++iy)
          for (int iz = -reach[2]; iz <= reach[2]; ++iz) {
            if (j == i && ix == 0 && iy == 0 && iz == 0) continue;
            const double dx = dx0 + ix * length[0], dy = dy0 + iy * length[1], dz = dz0 + iz * length[2];
            const double r2 = dx * dx + dy * dy + dz * dz;
            if (r2 >= pair_law.reach2) continue;
            double energy, force_over_r;
            pair_law(r2, s.type[i], s.type[j], s.charge[i], s.charge[j], energy, force_over_r);
            fx -= force_over_r * dx, fy -= force_over_r * dy, fz -= force_over_r * dz;
            out.potential += 0.5 * energy;  // each pair is visited from both ends
            out.virial += 0.5 * force_over_r * r2;
          }
    }
    out.fx[i] = fx, out.fy[i] = fy, out.fz[i] = fz;
  }
  out.potential += coulomb_self_energy(s, f);
}

void forces_cpu(const System& s, const ForceField& f, const NeighborList& list, Forces& out, int threads) {
  check_force_field(s, f);
  const std::int64_t n = static_cast<std::int64_t>(s.size());
  if (static_cast<std::int64_t>(list.first_.size()) != n + 1 || static_cast<std::int64_t>(list.order_.size()) != n)
    throw Error("the neighbour list was built for another system: rebuild it");
  out.resize(static_cast<std::size_t>(n));
  if (list.cutoff() < f.reach()) throw Error("the neighbour list is shorter than the force field's longest cutoff");
  const PairEvaluator pair_law(s, f);
  const bool coulomb = pair_law.coulomb;
  const double length[3] = {s.box.length(0), s.box.length(1), s.box.length(2)};
  const double inverse[3] = {1 / length[0], 1 / length[1], 1 / length[2]};
  const int team = resolve_threads(threads);
  // The atoms gathered in the list's cell order (positions, types, charges), so that a row's
  // neighbours lie close in memory; forces scattered back to atom order at the end.
  const std::vector<std::int64_t>& order = list.order_;
  // Positions interleaved (one cache line serves x, y, z of a neighbour).
  std::vector<double> positions(3 * static_cast<std::size_t>(n)), qs(coulomb ? n : 0);
  std::vector<int> types_s(n);
#pragma omp parallel for num_threads(team) if (n > 16384)
  for (std::int64_t p = 0; p < n; ++p) {
    const std::int64_t i = order[p];
    positions[3 * p] = s.x[i], positions[3 * p + 1] = s.y[i], positions[3 * p + 2] = s.z[i], types_s[p] = s.type[i];
    if (coulomb) qs[p] = s.charge[i];
  }
  // A half list (each pair once, Newton's third law): every thread adds into its own force
  // arrays, summed afterwards in thread order, and the rows are dealt to threads in fixed
  // blocks, so a run is the same bits whenever the thread count is the same.
  // Per-thread force arrays kept from call to call (a fresh 3n array per thread and step costs
  // page faults at a million atoms).
  static thread_local std::vector<std::vector<double>> workspace;
  std::vector<std::vector<double>>& partial = workspace;
  partial.resize(static_cast<std::size_t>(std::max<int>(team, static_cast<int>(partial.size()))));
  std::vector<double> energy_of(static_cast<std::size_t>(team)), virial_of(static_cast<std::size_t>(team));
  // Lennard-Jones alone in a box longer than twice the list's reach plus its skin along every
  // axis (atoms move at most half the skin between builds, so a listed pair's image is the
  // minimum image): the SIMD rows (forces_simd.cpp).
  const bool minimum_image_holds = list.minimum_image(s.box);
  if (!minimum_image_holds && list.shifts_.size() != list.neighbors_.size())
    throw Error("the neighbour list was built for another box: rebuild it");
  const bool simd = !coulomb && minimum_image_holds;
#pragma omp parallel num_threads(team)
  {
    const int me = omp_get_thread_num();
    std::vector<double>& force = partial[me];
    force.assign(3 * static_cast<std::size_t>(n), 0.0);
    double energy = 0, virial = 0;
    const LennardJonesRows rows{positions.data(), types_s.data(), pair_law.types, pair_law.table.coefficients.data(),
                                list.first_.data(), list.neighbors_.data(), {length[0], length[1], length[2]},
                                pair_law.cutoffs.lennard_jones2, force.data()};
#pragma omp for schedule(static, 256)
    for (std::int64_t p = 0; p < n; ++p) {
      if (simd) {
        const RowSums sums = lennard_jones_row(rows, p);
        force[3 * p] += sums.fx, force[3 * p + 1] += sums.fy, force[3 * p + 2] += sums.fz;
        energy += sums.energy, virial += sums.virial;
        continue;
      }
      double fx = 0, fy = 0, fz = 0;
      const double xi = positions[3 * p], yi = positions[3 * p + 1], zi = positions[3 * p + 2];
      const double qi = coulomb ? qs[p] : 0;
      for (std::int64_t k = list.first_[p]; k < list.first_[p + 1]; ++k) {
        const std::int32_t q = list.neighbors_[k];
        const double* pq = &positions[3 * static_cast<std::size_t>(q)];
        double dx = pq[0] - xi, dy = pq[1] - yi, dz = pq[2] - zi;
        if (minimum_image_holds) {
          dx = md::minimum_image(pair_law.math, dx, length[0], inverse[0]);
          dy = md::minimum_image(pair_law.math, dy, length[1], inverse[1]);
          dz = md::minimum_image(pair_law.math, dz, length[2], inverse[2]);
        } else {
          const auto& shift = list.shifts_[k];
          dx += shift[0] * length[0], dy += shift[1] * length[1], dz += shift[2] * length[2];
        }
        const double r2 = dx * dx + dy * dy + dz * dz;
        if (r2 >= pair_law.reach2) continue;  // in the skin
        double e, force_over_r;
        pair_law(r2, types_s[p], types_s[q], qi, coulomb ? qs[q] : 0, e, force_over_r);
        fx -= force_over_r * dx, fy -= force_over_r * dy, fz -= force_over_r * dz;
        force[3 * q] += force_over_r * dx, force[3 * q + 1] += force_over_r * dy, force[3 * q + 2] += force_over_r * dz;
        energy += e, virial += force_over_r * r2;
      }
      force[3 * p] += fx, force[3 * p + 1] += fy, force[3 * p + 2] += fz;
    }
    energy_of[me] = energy, virial_of[me] = virial;
  }
  // The threads' arrays added in thread order, atom by atom (in parallel: the same bits).
#pragma omp parallel for num_threads(team) schedule(static, 4096)
  for (std::int64_t p = 0; p < n; ++p) {
    const std::int64_t i = order[p];
    for (int t = 0; t < team; ++t) {
      const double* force = partial[t].data() + 3 * p;
      out.fx[i] += force[0], out.fy[i] += force[1], out.fz[i] += force[2];
    }
  }
  for (int t = 0; t < team; ++t) out.potential += energy_of[t], out.virial += virial_of[t];
  out.potential += coulomb_self_energy(s, f);
}

}  // namespace nbkit::md
