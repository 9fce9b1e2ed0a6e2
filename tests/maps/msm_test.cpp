// The multilevel summation method: its basis functions, one charge against q/r, and maps
// against the exact direct sum at the documented accuracy (docs/methods.md's table).
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "maps/map_test_support.hpp"
#include "maps/msm/msm.hpp"
#include "nbkit/core/error.hpp"
#include "nbkit/io/pqr.hpp"
#include "nbkit/maps.hpp"
#include "test_support.hpp"

namespace nbkit {

namespace {

MapOptions msm_options(Backend backend, MsmInterpolation interpolation = MsmInterpolation::cubic, double spacing = 0,
                       Smoothing splitting = Smoothing::taylor2) {
  MapOptions o = test::with(MapMethod::msm, backend);
  o.msm_interpolation = interpolation;
  o.msm_spacing = spacing;
  o.msm_splitting = splitting;
  return o;
}

// The accuracy the docs promise (relative RMS against the exact sum on protein maps,
// measured 1.0e-3 to 1.2e-3 and 6e-5 to 8e-5 by bench_map_msm): the default setting and the
// high-accuracy one.
constexpr double kDefaultAccuracy = 5e-3;
constexpr double kHighAccuracy = 1e-4;

class MsmMaps : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    std::string why;
    if (GetParam() == Backend::cuda && list_gpus(&why).empty()) GTEST_SKIP() << "no GPU: " << why;
  }
};

}  // namespace

TEST(MsmBasis, InterpolatesAndReproducesPolynomials) {
  for (const MsmInterpolation ip : {MsmInterpolation::cubic, MsmInterpolation::quintic}) {
    const int support = maps::msm::basis_support(ip);
    EXPECT_EQ(maps::msm::basis(ip, 0.0), 1.0);
    for (int k = 1; k <= support; ++k) {
      EXPECT_NEAR(maps::msm::basis(ip, k), 0.0, 1e-15);
      EXPECT_NEAR(maps::msm::basis(ip, -k), 0.0, 1e-15);
    }
    EXPECT_EQ(maps::msm::basis(ip, support + 0.01), 0.0);
    // sum_k k^p Phi(t - k) = t^p for the degrees the interpolation reproduces (cubic: up
    // to 2, quintic: up to 4).
    const int degree = ip == MsmInterpolation::cubic ? 2 : 4;
    for (double t = -1.7; t < 2.0; t += 0.173)
      for (int p = 0; p <= degree; ++p) {
        double sum = 0;
        for (int k = -10; k <= 10; ++k) sum += std::pow(k, p) * maps::msm::basis(ip, t - k);
        EXPECT_NEAR(sum, std::pow(t, p), 1e-12) << to_string(ip) << " degree " << p << " at " << t;
      }
  }
}

TEST(MsmBasis, SplittingKernelIsSmoothAndExactBeyondTheCutoff) {
  for (const Smoothing s : {Smoothing::taylor1, Smoothing::taylor2, Smoothing::taylor3}) {
    EXPECT_DOUBLE_EQ(maps::msm::smoothed_kernel(s, 10, 12), 1.0 / 12);
    EXPECT_NEAR(maps::msm::smoothed_kernel(s, 10, 10 - 1e-9), 0.1, 1e-9);
    EXPECT_LT(maps::msm::smoothed_kernel(s, 10, 0), 0.25);  // bounded at r = 0
  }
}

TEST_P(MsmMaps, OneChargeIsCoulombsLawWithinTheAccuracy) {
  // A unit charge off the grid, lattice points from 0.7 A to 40 A away.
  Atoms atoms;
  atoms.push_back({0.37, -0.21, 0.55}, 1.0, 1.5);
  Lattice lattice;
  lattice.origin = {-20, -14.5, -31};
  lattice.spacing = 1.3;
  lattice.dims = {31, 23, 48};
  const auto msm = test::run(atoms, lattice, msm_options(GetParam()));
  const double prefactor = units::potential_prefactor(units::PotentialUnit::kT_per_e, 1.0, units::default_temperature);
  double worst = 0;
  for (std::int64_t i = 0; i < lattice.dims[0]; ++i)
    for (std::int64_t j = 0; j < lattice.dims[1]; ++j)
      for (std::int64_t k = 0; k < lattice.dims[2]; ++k) {
        const double r = norm(lattice.point(i, j, k) - atoms.position(0));
        const double exact = prefactor / r;
        worst = std::max(worst, std::fabs(msm[static_cast<std::size_t>(lattice.index(i, j, k))] - exact) / exact);
      }
  // The smooth part's error is at most ~1% of 1/r (at r ~ 2 cutoffs, where 1/r is small);
  // cubic on a 2 A grid with a 12 A cutoff gives 0.3% here.
  EXPECT_LT(worst, 1e-2);
  std::printf("[ accuracy ] msm one charge: largest pointwise relative error %.2e\n", worst);
}

TEST_P(MsmMaps, RealProteinsAtTheDocumentedAccuracy) {
  for (const char* name : {"1a63.pqr", "hca.pqr"}) {
    const Atoms atoms = io::read_pqr(test::data_file(name));
    const Lattice lattice = lattice_around(atoms, 1.7, 6.0);
    MapOptions exact = test::with(MapMethod::direct, Backend::cpu, Precision::double_);
    const auto reference = test::run(atoms, lattice, exact);
    const double default_error = test::relative_rms(test::run(atoms, lattice, msm_options(GetParam())), reference);
    const double high_error = test::relative_rms(
        test::run(atoms, lattice, msm_options(GetParam(), MsmInterpolation::quintic, 1.5, Smoothing::taylor3)),
        reference);
    EXPECT_LT(default_error, kDefaultAccuracy) << name;
    EXPECT_LT(high_error, kHighAccuracy) << name;
    std::printf("[ accuracy ] msm %s %s: relative RMS default (cubic, 2 A) %.2e, quintic 1.5 A %.2e\n",
                to_string(GetParam()).c_str(), name, default_error, high_error);
  }
}

TEST_P(MsmMaps, AwkwardLatticesAndMoleculesOffCentre) {
  // Near-neutral random charges in a 14 A blob; lattices that cut through it, sit beside it,
  // or are much larger than it, with sizes far from powers of two.
  Atoms atoms = test::random_atoms(300, {3, -2, 5}, {17, 12, 19}, 61);
  struct Case {
    Vec3 origin;
    double spacing;
    std::array<std::int64_t, 3> dims;
  };
  for (const Case& c : {Case{{8, 2, 9}, 0.9, {13, 7, 29}}, Case{{-30, 20, -3}, 1.1, {17, 5, 3}},
                        Case{{-40, -45, -38}, 3.1, {31, 33, 29}}, Case{{10, 5, 12}, 0.6, {1, 1, 1}}}) {
    Lattice lattice;
    lattice.origin = c.origin;
    lattice.spacing = c.spacing;
    lattice.dims = c.dims;
    const auto reference = test::run(atoms, lattice, test::with(MapMethod::direct, Backend::cpu, Precision::double_));
    const auto magnitude =
        test::run(test::with_absolute_charges(atoms), lattice, test::with(MapMethod::direct, Backend::cpu, Precision::double_));
    const auto msm = test::run(atoms, lattice, msm_options(GetParam()));
    EXPECT_LT(test::error_relative_to(msm, reference, magnitude), kDefaultAccuracy)
        << c.dims[0] << "x" << c.dims[1] << "x" << c.dims[2];
  }
}

TEST_P(MsmMaps, RowsAloneGiveTheWholeMapsValues) {
  const Atoms atoms = io::read_pqr(test::data_file("1a63.pqr"));
  const Lattice lattice = lattice_around(atoms, 2.1, 3.0);
  const auto whole = test::run(atoms, lattice, msm_options(GetParam()));
  const std::int64_t first = lattice.rows() / 3, last = first + 17;
  const auto part = test::run_rows(atoms, lattice, msm_options(GetParam()), first, last);
  for (std::size_t p = 0; p < part.size(); ++p)
    EXPECT_NEAR(part[p], whole[static_cast<std::size_t>(first * lattice.dims[2]) + p], 1e-9 * std::fabs(part[p]) + 1e-12);
}

INSTANTIATE_TEST_SUITE_P(Backends, MsmMaps, ::testing::Values(Backend::reference, Backend::cpu, Backend::cuda),
                         [](const auto& info) {
                           return info.param == Backend::cuda ? std::string("Cuda") : to_string(info.param);
                         });

// The lattice-cutoff sums on the GPU against the CPU's: both float64, the same terms in the
// same order per grid point, so only the short range (GPU vs CPU float64, other summation
// orders) and FMA contraction differ: 1e-11 relative RMS with room.
TEST(MsmCuda, LongRangeOnTheGpuMatchesTheCpu) {
  std::string why;
  if (list_gpus(&why).empty()) GTEST_SKIP() << "no GPU: " << why;
  const Atoms atoms = io::read_pqr(test::data_file("hca.pqr"));
  const Lattice lattice = lattice_around(atoms, 1.3, 9.0);
  for (const MsmInterpolation ip : {MsmInterpolation::cubic, MsmInterpolation::quintic}) {
    MapOptions cpu = msm_options(Backend::cpu, ip, 1.5);
    cpu.precision = Precision::double_;
    MapOptions gpu = cpu;
    gpu.backend = Backend::cuda;
    const auto on_cpu = test::run(atoms, lattice, cpu), on_gpu = test::run(atoms, lattice, gpu);
    EXPECT_LT(test::relative_rms(on_gpu, on_cpu), 1e-11) << to_string(ip);
  }
  // A periodic box: the wrapped lattice cutoff on the GPU.
  const Vec3 box{23.1, 26.7, 29.3};
  Atoms random = test::random_atoms(150, {0, 0, 0}, {23.1, 26.7, 29.3}, 72);
  const Lattice cell = lattice_spanning_cell(box, 1.7);
  MapOptions cpu = msm_options(Backend::cpu, MsmInterpolation::cubic, 1.5);
  cpu.precision = Precision::double_;
  cpu.cutoff = 10;
  cpu.periodic_box = PeriodicBox::from_edges(box);
  MapOptions gpu = cpu;
  gpu.backend = Backend::cuda;
  EXPECT_LT(test::relative_rms(test::run(random, cell, gpu), test::run(random, cell, cpu)), 1e-11) << "periodic";
}

// Every stage on the GPU (the grids, then the interpolation added to the short range's slabs):
// the same bits on every run and with the device listed twice (two host threads adding the
// interpolation to their slabs at once); and against the CPU where the grids are degenerate:
// one level only (the top), one atom, many atoms in one cell of the finest grid, atoms far from
// a small lattice (a large, nearly empty finest grid). Both float64: 1e-11 as above.
TEST(MsmCuda, LongRangeOnTheGpuIsDeterministicAndHandlesDegenerateGrids) {
  std::string why;
  if (list_gpus(&why).empty()) GTEST_SKIP() << "no GPU: " << why;
  const Atoms protein = io::read_pqr(test::data_file("hca.pqr"));
  const Lattice around = lattice_around(protein, 1.1, 7.0);
  for (const MsmInterpolation ip : {MsmInterpolation::cubic, MsmInterpolation::quintic}) {
    MapOptions gpu = msm_options(Backend::cuda, ip);
    gpu.gpus = {0};
    const auto first = test::run(protein, around, gpu);
    EXPECT_EQ(test::run(protein, around, gpu), first) << to_string(ip) << ": a second run";
    MapOptions twice = gpu;
    twice.gpus = {0, 0};
    EXPECT_EQ(test::run(protein, around, twice), first) << to_string(ip) << ": GPU 0 listed twice";
    // Slabs of 3 rows (hundreds of them, each lattice region summed in several): every slab
    // gets its interpolation once, and the short range's bits do not depend on the slabs.
    const test::ScopedEnvironment small_slabs("NBKIT_CUDA_SLAB_ROWS", "3");
    EXPECT_EQ(test::run(protein, around, gpu), first) << to_string(ip) << ": slabs of 3 rows";
    EXPECT_EQ(test::run(protein, around, twice), first) << to_string(ip) << ": slabs of 3 rows, GPU 0 listed twice";
  }

  Atoms one;
  one.push_back({1.3, 2.2, 1.7}, 0.8, 1.5);
  Lattice small;
  small.dims = {5, 5, 5};  // a 6^3 finest grid: under the top level's 4,096 points, so one level
  Atoms clump;             // 200 atoms within 0.1 A, one cell of the finest grid
  for (int n = 0; n < 200; ++n)
    clump.push_back({10.01 + 0.0005 * n, 9.53 - 0.0003 * n, 11.27 + 0.0002 * n}, 0.1 + 0.001 * n, 1.5);
  Lattice box;
  box.spacing = 0.7;
  box.dims = {31, 27, 33};
  Atoms far = test::random_atoms(50, {0, 0, 0}, {20, 20, 20}, 17);
  far.push_back({150, -90, 60}, 1.0, 1.5);
  far.push_back({-120, 40, 200}, -1.0, 1.5);
  struct Case {
    const char* name;
    const Atoms& atoms;
    const Lattice& lattice;
  };
  for (const Case& c : {Case{"one atom, one level", one, small}, Case{"a clump", clump, box}, Case{"far atoms", far, box}})
    for (const MsmInterpolation ip : {MsmInterpolation::cubic, MsmInterpolation::quintic}) {
      MapOptions cpu = msm_options(Backend::cpu, ip);
      cpu.precision = Precision::double_;
      MapOptions gpu = cpu;
      gpu.backend = Backend::cuda;
      gpu.gpus = {0};
      EXPECT_LT(test::relative_rms(test::run(c.atoms, c.lattice, gpu), test::run(c.atoms, c.lattice, cpu)), 1e-11)
          << c.name << ", " << to_string(ip);
    }
}

TEST(MsmDeterminism, SameBitsForOneAndTwoThreads) {
  const Atoms atoms = io::read_pqr(test::data_file("hca.pqr"));
  const Lattice lattice = lattice_around(atoms, 1.9, 5.0);
  MapOptions one = msm_options(Backend::cpu, MsmInterpolation::quintic);
  one.threads = 1;
  MapOptions two = one;
  two.threads = 2;
  EXPECT_EQ(test::run(atoms, lattice, one), test::run(atoms, lattice, two));
}

TEST(MsmRequests, BadValuesAreRefused) {
  Atoms atoms;
  atoms.push_back({0, 0, 0}, 1, 1);
  Lattice lattice;
  lattice.dims = {3, 3, 3};
  MapOptions periodic = msm_options(Backend::cpu);
  periodic.periodic_box = PeriodicBox::from_edges({20, 20, 20});  // the 12 A cutoff is more than half the box
  EXPECT_THROW(test::run(atoms, lattice, periodic), Error);
  EXPECT_THROW(test::run(atoms, lattice, msm_options(Backend::cpu, MsmInterpolation::cubic, 0, Smoothing::cutcp)), Error);
  EXPECT_THROW(test::run(atoms, lattice, msm_options(Backend::cpu, MsmInterpolation::cubic, 7.0)), Error);  // cutoff < 2h
  EXPECT_THROW(test::run(atoms, lattice, msm_options(Backend::cpu, MsmInterpolation::cubic, -1)), Error);
  EXPECT_EQ(parse_msm_interpolation("quintic"), MsmInterpolation::quintic);
  EXPECT_THROW(parse_msm_interpolation("linear"), Error);
  EXPECT_EQ(parse_map_method("msm"), MapMethod::msm);
}

}  // namespace nbkit

namespace nbkit {

namespace {

// Ewald's potential of point charges in an orthorhombic periodic box with tin-foil
// boundaries and zero mean (the convention of Ewald and PME codes), float64, in e/A: the
// oracle for periodic MSM. Real space: erfc(beta r)/r over the images within 6.5/beta;
// reciprocal space: (4 pi / V) exp(-k^2 / 4 beta^2) / k^2 Re(S(k) e^{i k.r}) through the
// structure factor S(k) = sum_j q_j e^{-i k.r_j}; minus pi Q / (beta^2 V) for a net charge Q
// (the neutralizing background). A charge on the point itself leaves out its own 1/r
// (-2 beta q / sqrt(pi) instead), keeping its images: the Madelung convention.
class Ewald {
 public:
  Ewald(const Atoms& atoms, Vec3 box) : atoms_(atoms), box_(box) {
    volume_ = box.x * box.y * box.z;
    beta_ = 5.0 / std::min({box.x, box.y, box.z});
    const int harmonics[3] = {static_cast<int>(std::ceil(2 * beta_ * 6.5 * box.x / (2 * M_PI))),
                              static_cast<int>(std::ceil(2 * beta_ * 6.5 * box.y / (2 * M_PI))),
                              static_cast<int>(std::ceil(2 * beta_ * 6.5 * box.z / (2 * M_PI)))};
    for (int nx = -harmonics[0]; nx <= harmonics[0]; ++nx)
      for (int ny = -harmonics[1]; ny <= harmonics[1]; ++ny)
        for (int nz = -harmonics[2]; nz <= harmonics[2]; ++nz) {
          if (nx == 0 && ny == 0 && nz == 0) continue;
          const Vec3 k{2 * M_PI * nx / box.x, 2 * M_PI * ny / box.y, 2 * M_PI * nz / box.z};
          const double k2 = k.x * k.x + k.y * k.y + k.z * k.z;
          double re = 0, im = 0;
          for (std::size_t j = 0; j < atoms.size(); ++j) {
            const double phase = k.x * atoms.x[j] + k.y * atoms.y[j] + k.z * atoms.z[j];
            re += atoms.charge[j] * std::cos(phase), im -= atoms.charge[j] * std::sin(phase);
          }
          waves_.push_back({k, 4 * M_PI / volume_ * std::exp(-k2 / (4 * beta_ * beta_)) / k2, re, im});
        }
    for (std::size_t j = 0; j < atoms.size(); ++j) net_ += atoms.charge[j];
  }
  double operator()(Vec3 p) const {
    double value = -M_PI * net_ / (beta_ * beta_ * volume_);
    for (const Wave& w : waves_) {
      const double phase = w.k.x * p.x + w.k.y * p.y + w.k.z * p.z;
      value += w.coefficient * (w.re * std::cos(phase) - w.im * std::sin(phase));
    }
    const double reach = 6.5 / beta_;
    for (std::size_t j = 0; j < atoms_.size(); ++j)
      for (int ix = -1; ix <= 1; ++ix)
        for (int iy = -1; iy <= 1; ++iy)
          for (int iz = -1; iz <= 1; ++iz) {
            double d[3] = {p.x - atoms_.x[j], p.y - atoms_.y[j], p.z - atoms_.z[j]};
            for (int a = 0; a < 3; ++a) d[a] -= box_[a] * std::round(d[a] / box_[a]);  // nearest image, then +-1
            d[0] += ix * box_.x, d[1] += iy * box_.y, d[2] += iz * box_.z;
            const double r = std::sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
            if (r < 1e-12) value -= 2 * beta_ * atoms_.charge[j] / std::sqrt(M_PI);
            else if (r < reach) value += atoms_.charge[j] * std::erfc(beta_ * r) / r;
          }
    return value;
  }

 private:
  struct Wave {
    Vec3 k;
    double coefficient, re, im;
  };
  const Atoms& atoms_;
  Vec3 box_;
  double volume_ = 0, beta_ = 0, net_ = 0;
  std::vector<Wave> waves_;
};

}  // namespace

TEST(MsmPeriodic, TheEwaldOracleGivesTheMadelungConstantOfRockSalt) {
  // Rock salt's conventional cell (edge 1, nearest neighbours 0.5 apart): the potential at an
  // ion from all the others is -M q / 0.5 with M = 1.747564594633 (Madelung).
  Atoms salt;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j)
      for (int k = 0; k < 2; ++k) salt.push_back(Vec3{0.5 * i, 0.5 * j, 0.5 * k}, (i + j + k) % 2 ? -1.0 : 1.0, 1.0);
  const Ewald ewald(salt, Vec3{1, 1, 1});
  EXPECT_NEAR(ewald(Vec3{0, 0, 0}) * 0.5, -1.747564594633, 1e-10);
  EXPECT_NEAR(ewald(Vec3{0.5, 0, 0}) * 0.5, 1.747564594633, 1e-10);
}

TEST_P(MsmMaps, PeriodicBoxMatchesEwald) {
  if (GetParam() == Backend::reference) GTEST_SKIP() << "the reference backend's short range is the same sum as the CPU's";
  if (test::kSanitized)  // the periodic grids run under the sanitizers in StreamedMap's periodic_msm case
    GTEST_SKIP() << "an Ewald sum for the accuracy (30 s under the sanitizers): the release run has it";
  // A neutral random system in a non-cubic box, atoms also outside it (their images count);
  // the lattice spans the cell. MSM's periodic grids (the box's own spacing, at most h) keep
  // the non-periodic method's accuracy: the same bounds.
  const Vec3 box{23.1, 26.7, 29.3};
  Atoms atoms = test::random_atoms(150, {-3, 0, 0}, {26, 26.7, 29.3}, 71);
  double net = 0;
  for (double q : atoms.charge) net += q;
  for (double& q : atoms.charge) q -= net / static_cast<double>(atoms.size());
  const Lattice lattice = lattice_spanning_cell(box, 1.7);
  const Ewald ewald(atoms, box);
  MapOptions options = msm_options(GetParam());
  options.cutoff = 10;
  options.periodic_box = PeriodicBox::from_edges(box);
  const double prefactor = units::potential_prefactor(options.unit, options.dielectric, options.temperature);
  std::vector<double> reference;
  for (std::int64_t i = 0; i < lattice.dims[0]; ++i)
    for (std::int64_t j = 0; j < lattice.dims[1]; ++j)
      for (std::int64_t k = 0; k < lattice.dims[2]; ++k)
        reference.push_back(prefactor * ewald(lattice.origin + Vec3{i * lattice.spacing, j * lattice.spacing, k * lattice.spacing}));
  const double default_error = test::relative_rms(test::run(atoms, lattice, options), reference);
  options.msm_interpolation = MsmInterpolation::quintic;
  options.msm_spacing = 1.0;
  options.msm_splitting = Smoothing::taylor3;
  const double high_error = test::relative_rms(test::run(atoms, lattice, options), reference);
  std::printf("[ accuracy ] periodic msm %s vs Ewald: relative RMS default (cubic, 2 A) %.2e, quintic 1 A %.2e\n",
              to_string(GetParam()).c_str(), default_error, high_error);
  EXPECT_LT(default_error, kDefaultAccuracy);
  EXPECT_LT(high_error, kHighAccuracy);
}

}  // namespace nbkit
