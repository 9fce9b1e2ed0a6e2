// Density and occupancy maps (VMD's volmap density and occupancy) against float64 loops over
// every atom and point, their integrals, and the GPUs against the CPU.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <random>

#include "nbkit/core/error.hpp"
#include "nbkit/maps.hpp"

namespace nbkit {
namespace {

Atoms random_atoms(int n, double extent, unsigned seed, double rmin = 0.8, double rmax = 2.2) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(0, extent), radius(rmin, rmax), charge(-1, 1);
  Atoms atoms;
  for (int i = 0; i < n; ++i) atoms.push_back({u(rng), u(rng), u(rng)}, charge(rng), radius(rng));
  return atoms;
}

Lattice lattice_over(double lo, double hi, double spacing) {
  Lattice l;
  l.origin = {lo, lo - 0.3, lo + 0.2};
  l.spacing = spacing;
  const auto n = static_cast<std::int64_t>((hi - lo) / spacing) + 1;
  l.dims = {n, n - 3, n + 2};  // awkward, unequal sizes
  return l;
}

// The formula, every atom at every point, float64.
std::vector<double> brute(const Atoms& atoms, const Lattice& l, const MapOptions& o) {
  std::vector<double> v(static_cast<std::size_t>(l.size()), 0.0);
  for (std::int64_t i = 0; i < l.dims[0]; ++i)
    for (std::int64_t j = 0; j < l.dims[1]; ++j)
      for (std::int64_t k = 0; k < l.dims[2]; ++k) {
        const double p[3] = {l.origin.x + l.spacing * i, l.origin.y + l.spacing * j, l.origin.z + l.spacing * k};
        double sum = 0;
        for (std::size_t a = 0; a < atoms.size(); ++a) {
          const double dx = atoms.x[a] - p[0], dy = atoms.y[a] - p[1], dz = atoms.z[a] - p[2];
          const double r2 = dx * dx + dy * dy + dz * dz;
          const double s = o.density_sigma > 0 ? o.density_sigma : atoms.radius[a] * o.radius_scale;
          if (o.method == MapMethod::occupancy) {
            if (o.occupancy_points) {
              const double f[3] = {(atoms.x[a] - l.origin.x) / l.spacing, (atoms.y[a] - l.origin.y) / l.spacing,
                                   (atoms.z[a] - l.origin.z) / l.spacing};
              if (std::floor(f[0] + 0.5) == i && std::floor(f[1] + 0.5) == j && std::floor(f[2] + 0.5) == k) sum = 1;
            } else if (r2 <= s * s) {
              sum = 1;
            }
          } else if (r2 <= kDensityReachSigmas * kDensityReachSigmas * s * s) {
            const double w = o.density_weight == DensityWeight::charge ? atoms.charge[a] : 1.0;
            sum += w / std::pow(2 * std::numbers::pi * s * s, 1.5) * std::exp(-r2 / (2 * s * s));
          }
        }
        v[static_cast<std::size_t>(l.index(i, j, k))] = sum;
      }
  return v;
}

double largest(const std::vector<double>& v) {
  double m = 0;
  for (double x : v) m = std::max(m, std::fabs(x));
  return m;
}

TEST(DensityMaps, GaussiansAndSpheresMatchTheFormulaAtEveryPoint) {
  const Atoms atoms = random_atoms(150, 20.0, 3);
  const Lattice l = lattice_over(-4.0, 24.0, 0.9);
  for (Backend backend : {Backend::reference, Backend::cpu})
    for (MapMethod method : {MapMethod::density, MapMethod::occupancy})
      for (int variant = 0; variant < 2; ++variant) {
        MapOptions o;
        o.method = method, o.backend = backend, o.threads = 3;
        if (method == MapMethod::density) {
          o.density_weight = variant ? DensityWeight::charge : DensityWeight::number;
          o.radius_scale = variant ? 0.7 : 1.0;
          if (variant) o.density_sigma = 1.3;
        } else {
          o.occupancy_points = variant == 1;
          o.radius_scale = 1.2;
        }
        MapStats stats;
        const Map m = compute_map(atoms, l, o, &stats);
        const std::vector<double> want = brute(atoms, l, o);
        if (method == MapMethod::occupancy) {
          EXPECT_EQ(m.values, want) << to_string(backend) << " points " << variant;
          EXPECT_EQ(m.unit, units::PotentialUnit::occupancy);
        } else {
          // The same terms in another order: float64 rounding, ~1e-16 of the largest value.
          const double scale = largest(want);
          for (std::size_t p = 0; p < want.size(); ++p) ASSERT_NEAR(m.values[p], want[p], 1e-13 * scale) << p;
          EXPECT_EQ(m.unit, variant ? units::PotentialUnit::charge_density : units::PotentialUnit::number_density);
        }
      }
}

TEST(DensityMaps, IntegrateToTheAtomsAndTheirCharge) {
  // Atoms well inside the lattice: the Riemann sum of a Gaussian sampled at h = sigma / 4 is
  // exact to ~1e-30 (its Fourier transform at 2 pi / h), so the integral is the count less the
  // mass beyond 5 sigma (1.6e-5 of each atom for a 3-D Gaussian).
  const Atoms atoms = random_atoms(40, 10.0, 9, 1.0, 1.0);
  Lattice l;
  l.origin = {-8, -8, -8}, l.spacing = 0.25, l.dims = {113, 113, 113};
  MapOptions o;
  o.method = MapMethod::density;
  const Map m = compute_map(atoms, l, o);
  double sum = 0;
  for (double v : m.values) sum += v;
  const double h3 = std::pow(l.spacing, 3);
  EXPECT_NEAR(sum * h3, 40.0, 40.0 * 2e-5);
  o.density_weight = DensityWeight::charge;
  const Map q = compute_map(atoms, l, o);
  double charge = 0;
  for (double v : q.values) charge += v;
  EXPECT_NEAR(charge * h3, atoms.net_charge(), 40.0 * 2e-5);
}

TEST(DensityMaps, RefuseWhatHasNoMeaning) {
  Atoms atoms = random_atoms(5, 5.0, 1);
  atoms.radius[2] = 0;
  const Lattice l = lattice_over(0, 5, 1.0);
  MapOptions o;
  o.method = MapMethod::density;
  try {
    compute_map(atoms, l, o);
    FAIL() << "a zero radius has no Gaussian";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("atom 3 has radius 0"), std::string::npos) << e.what();
  }
  o.density_sigma = 1.0;  // one sigma for all: fine
  EXPECT_NO_THROW(compute_map(atoms, l, o));
  o.method = MapMethod::occupancy;
  EXPECT_THROW(compute_map(atoms, l, o), Error);  // sigma is the density's
  o.density_sigma = 0;
  EXPECT_THROW(compute_map(atoms, l, o), Error);  // a sphere of radius 0
  o.occupancy_points = true;
  EXPECT_NO_THROW(compute_map(atoms, l, o));
  o.periodic_box = PeriodicBox::from_edges({5, 5, 5});
  EXPECT_THROW(compute_map(atoms, l, o), Error);
  MapOptions bad;
  bad.method = MapMethod::density;
  bad.radius_scale = -1;
  EXPECT_THROW(compute_map(random_atoms(5, 5.0, 1), l, bad), Error);
}

TEST(CudaDensity, GpusMatchTheCpu) {
  if (list_gpus().empty()) GTEST_SKIP() << "no GPU";
  const Atoms atoms = random_atoms(3000, 40.0, 5);
  const Lattice l = lattice_over(-5.0, 45.0, 0.7);
  for (MapMethod method : {MapMethod::density, MapMethod::occupancy})
    for (const std::vector<int>& gpus : {std::vector<int>{}, std::vector<int>{0, 0}}) {
      MapOptions o;
      o.method = method, o.backend = Backend::cpu;
      const Map cpu = compute_map(atoms, l, o);
      o.backend = Backend::cuda, o.gpus = gpus;
      MapStats stats;
      const Map gpu = compute_map(atoms, l, o, &stats);
      EXPECT_EQ(stats.backend, Backend::cuda);
      if (method == MapMethod::occupancy) {
        EXPECT_EQ(gpu.values, cpu.values);
      } else {
        // The same sums in the same order; the GPU's exp and the host's differ by an ulp.
        const double scale = largest(cpu.values);
        for (std::size_t p = 0; p < cpu.values.size(); ++p) ASSERT_NEAR(gpu.values[p], cpu.values[p], 1e-13 * scale) << p;
      }
    }
}

}  // namespace
}  // namespace nbkit
