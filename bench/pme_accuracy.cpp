// PME's accuracy against the tolerance it is given (issue 18's table, docs/methods.md): a box of
// 1,000 TIP3P waters (3,000 atoms, 31.04 A, TIP3P's charges, each molecule's three pairs
// excluded as a force field excludes them), nbkit's PME Coulomb (pairs, mesh, self, excluded
// pairs) at OpenMM's alpha and mesh for each tolerance and B-spline order, against the Ewald sum
// converged far past them (md::ewald_coulomb at tolerance 1e-14 with the 15.5 A real-space
// cutoff half the box allows: erfc(alpha rc) ~ 1e-15, every reciprocal vector to that
// tolerance). Printed: the energy's relative error (of a total small beside its parts: the
// waters' Coulomb nearly cancels) and its error per atom (kcal/mol), the forces' relative RMS
// error, and the
// ratio of the force error to the tolerance (OpenMM calls the tolerance "roughly the relative
// error of the forces").
//   bench_pme_accuracy [--json FILE] [--quick]     (--quick: the three middle tolerances)
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <vector>

#include "bench_args.hpp"
#include "md/ewald.hpp"
#include "md/molecular_test_support.hpp"
#include "nbkit/core/units.hpp"
#include "nbkit/md/molecular_forces.hpp"

int main(int argc, char** argv) {
  using namespace nbkit;
  const auto args = bench::parse_bench_args(argc, argv, "bench_pme_accuracy");
  if (!args) return 2;
  const int side = 10;
  const double cell = 3.104, bond = 0.9572, half_angle = 0.5 * 104.52 * 3.14159265358979323846 / 180;
  md::Topology t = test::bare(static_cast<std::size_t>(3 * side * side * side));
  std::vector<Vec3> x;
  std::mt19937_64 rng(5);
  std::normal_distribution<double> normal;
  for (int i = 0; i < side; ++i)
    for (int j = 0; j < side; ++j)
      for (int k = 0; k < side; ++k) {
        Vec3 a{normal(rng), normal(rng), normal(rng)}, b{normal(rng), normal(rng), normal(rng)};
        a = (1 / norm(a)) * a;
        b = b - (a.x * b.x + a.y * b.y + a.z * b.z) * a;
        b = (1 / norm(b)) * b;
        const Vec3 o{(i + 0.5) * cell, (j + 0.5) * cell, (k + 0.5) * cell};
        const auto first = static_cast<std::int32_t>(x.size());
        x.push_back(o);
        x.push_back(o + bond * (std::cos(half_angle) * a + std::sin(half_angle) * b));
        x.push_back(o + bond * (std::cos(half_angle) * a - std::sin(half_angle) * b));
        t.charge[first] = -0.834, t.charge[first + 1] = t.charge[first + 2] = 0.417;
        t.exclusions.push_back({first, first + 1});
        t.exclusions.push_back({first, first + 2});
        t.exclusions.push_back({first + 1, first + 2});
      }
  const PeriodicBox box = PeriodicBox::from_edges({side * cell, side * cell, side * cell});
  const double k = units::coulomb_constant_kcal;
  const auto start = std::chrono::steady_clock::now();
  const md::EwaldParameters exact = md::ewald_parameters(box, 15.5, 1e-14);
  const md::EwaldEnergy ewald = md::ewald_coulomb(x, t.charge, box, k, 15.5, exact, t.exclusions);
  const double reference_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  double force_norm = 0;
  for (const Vec3& f : ewald.force) force_norm += f.x * f.x + f.y * f.y + f.z * f.z;
  std::printf("PME against the converged Ewald sum: 1,000 TIP3P waters (3,000 atoms) in a %.2f A box, cutoff 9 A\n"
              "(reference: alpha %.4f/A, cutoff 15.5 A, kmax %d, %.1f s; E = %.6f kcal/mol)\n",
              side * cell, exact.alpha, exact.kmax[0], reference_seconds, ewald.total());
  std::printf("%10s %6s %8s %12s | %12s %12s %12s %14s\n", "tolerance", "order", "alpha", "mesh", "energy rel",
              "dE/atom", "forces rms", "forces / tol");
  std::vector<double> tolerances{1e-3, 5e-4, 1e-4, 1e-5, 1e-6};
  if (args->quick) tolerances = {5e-4, 1e-4, 1e-5};
  nlohmann::json rows = nlohmann::json::array();
  for (double tolerance : tolerances)
    for (int order : {4, 5, 6}) {
      md::NonbondedSettings s;
      s.method = md::NonbondedSettings::Method::pme, s.cutoff = 9, s.ewald_tolerance = tolerance, s.pme_order = order;
      s.dispersion_correction = false;
      const md::MolecularForces pme = md::molecular_forces(t, x, box, s, Backend::cpu, 0);
      const md::PmeParameters p = md::pme_parameters(s, box);
      const double energy = pme.energy.coulomb + pme.energy.coulomb_reciprocal;
      double error = 0;
      for (std::size_t i = 0; i < x.size(); ++i) {
        const Vec3 d = pme.force[i] - ewald.force[i];
        error += d.x * d.x + d.y * d.y + d.z * d.z;
      }
      const double energy_error = std::abs(energy - ewald.total()) / std::abs(ewald.total());
      const double force_error = std::sqrt(error / force_norm);
      std::printf("%10.0e %6d %8.4f %4dx%3dx%3d | %12.2e %12.2e %12.2e %14.2f\n", tolerance, order, p.alpha, p.mesh[0],
                  p.mesh[1], p.mesh[2], energy_error, std::abs(energy - ewald.total()) / static_cast<double>(x.size()),
                  force_error, force_error / tolerance);
      rows.push_back({{"tolerance", tolerance}, {"order", order}, {"alpha", p.alpha}, {"mesh", p.mesh},
                      {"energy_relative_error", energy_error}, {"force_relative_rms_error", force_error}});
    }
  if (!args->json_path.empty()) std::ofstream(args->json_path) << nlohmann::json{{"rows", rows}}.dump(2) << "\n";
  return 0;
}
