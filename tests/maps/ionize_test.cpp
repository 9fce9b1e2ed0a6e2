// Ion placement: hand-checkable cases, the incremental map against a full recompute, the
// autoionize counts.
#include <gtest/gtest.h>

#include <cmath>

#include "maps/map_test_support.hpp"
#include "nbkit/core/error.hpp"
#include "nbkit/io/pqr.hpp"
#include "nbkit/ionize.hpp"
#include "test_support.hpp"

namespace nbkit {

namespace {

IonizeOptions cpu_options(int cations, int anions, double min_solute = 5, double min_ion = 5) {
  IonizeOptions o;
  o.map.backend = Backend::cpu;
  o.map.dielectric = 78.54;
  o.cations = cations;
  o.anions = anions;
  o.min_distance_solute = min_solute;
  o.min_distance_ion = min_ion;
  return o;
}

// The map an msm ion placement must end with: msm's map of the structure plus each placed
// ion's exact Coulomb term (computed with the same options but the direct method).
std::vector<double> msm_map_plus_exact_ion_terms(const Atoms& structure, const std::vector<PlacedIon>& placed,
                                                 const Lattice& lattice, const MapOptions& options) {
  Atoms ions;
  for (const PlacedIon& ion : placed) ions.push_back(ion.position, ion.species.charge, ion.species.radius);
  MapOptions direct = options;
  direct.method = MapMethod::direct;
  std::vector<double> expected = compute_map(structure, lattice, options).values;
  const std::vector<double> of_ions = compute_map(ions, lattice, direct).values;
  for (std::size_t p = 0; p < expected.size(); ++p) expected[p] += of_ions[p];
  return expected;
}

}  // namespace

TEST(Ionize, FirstCounterIonOfOneChargeSitsAtTheClosestAllowedPoint) {
  Atoms charge;
  charge.push_back({0.1, -0.2, 0.3}, 1.0, 1.5);
  Lattice lattice;
  lattice.origin = {-8, -8, -8};
  lattice.spacing = 0.5;
  lattice.dims = {33, 33, 33};
  const IonizeResult r = place_ions(charge, lattice, cpu_options(0, 1));
  ASSERT_EQ(r.ions.size(), 1u);
  // The closest lattice point at least 5 A away: -q/d is lowest there.
  double closest = 1e300;
  for (std::int64_t i = 0; i < 33; ++i)
    for (std::int64_t j = 0; j < 33; ++j)
      for (std::int64_t k = 0; k < 33; ++k) {
        const double d = norm(lattice.point(i, j, k) - charge.position(0));
        if (d >= 5) closest = std::min(closest, d);
      }
  EXPECT_NEAR(norm(r.ions[0].position - charge.position(0)), closest, 1e-9);
  EXPECT_EQ(r.ions[0].species.name, "Cl-");
  EXPECT_LT(r.ions[0].energy, 0);
}

TEST(Ionize, IonsGoToTheOppositelyChargedEndOfADipole) {
  Atoms dipole;
  dipole.push_back({3, 0, 0}, 1.0, 1.5);
  dipole.push_back({-3, 0, 0}, -1.0, 1.5);
  Lattice lattice;
  lattice.origin = {-12, -10, -10};
  lattice.spacing = 1.0;
  lattice.dims = {25, 21, 21};
  // Net charge 0: the species with more ions left goes first (here the one cation).
  const IonizeResult cation = place_ions(dipole, lattice, cpu_options(1, 0, 3));
  EXPECT_LT(cation.ions[0].position.x, -3);
  const IonizeResult anion = place_ions(dipole, lattice, cpu_options(0, 1, 3));
  EXPECT_GT(anion.ions[0].position.x, 3);
}

TEST(Ionize, IncrementalMapEqualsAFullRecompute) {
  const Atoms protein = io::read_pqr(test::data_file("1a63.pqr"));
  const Lattice lattice = lattice_around(protein, 1.5, 12.0);
  IonizeOptions options = cpu_options(4, 3);
  const IonizeResult r = place_ions(protein, lattice, options);
  ASSERT_EQ(r.ions.size(), 7u);
  Atoms all = protein;
  for (const PlacedIon& ion : r.ions) all.push_back(ion.position, ion.species.charge, ion.species.radius);
  const Map full = compute_map(all, lattice, options.map);
  // float32 maps: each carries ~1e-6 relative RMS error against float64 (the direct
  // method's promise is 1e-5).
  EXPECT_LT(test::relative_rms(r.map.values, full.values), 1e-5);
  // Every ion respects the distances.
  for (std::size_t a = 0; a < r.ions.size(); ++a) {
    for (std::size_t n = 0; n < protein.size(); ++n) EXPECT_GE(norm(r.ions[a].position - protein.position(n)), 5.0);
    for (std::size_t b = 0; b < a; ++b) EXPECT_GE(norm(r.ions[a].position - r.ions[b].position), 5.0);
  }
  // The protein is charged: the first ion is its counter-ion.
  EXPECT_EQ(r.ions[0].species.charge > 0, protein.net_charge() < 0);
}

TEST(Ionize, MsmMapsTakeEachIonsExactCoulombTerm) {
  // msm sums the protein; each ion adds its exact Coulomb potential (the sum msm
  // approximates, to ~1e-3): the final map is msm(protein) + direct(ions) to float32 rounding
  // of the ions' terms, and within msm's accuracy of a full msm recompute.
  const Atoms protein = io::read_pqr(test::data_file("1a63.pqr"));
  const Lattice lattice = lattice_around(protein, 1.5, 12.0);
  IonizeOptions options = cpu_options(3, 2);
  options.map.method = MapMethod::msm;
  const IonizeResult r = place_ions(protein, lattice, options);
  ASSERT_EQ(r.ions.size(), 5u);
  Atoms all = protein;
  for (const PlacedIon& ion : r.ions) all.push_back(ion.position, ion.species.charge, ion.species.radius);
  EXPECT_LT(test::relative_rms(r.map.values, msm_map_plus_exact_ion_terms(protein, r.ions, lattice, options.map)), 1e-6);
  EXPECT_LT(test::relative_rms(r.map.values, compute_map(all, lattice, options.map).values), 1e-2);
}

TEST(Ionize, CountsAsAutoionize) {
  int cations = 0, anions = 0;
  ion_counts(3.0, 0.15, 1e6, &cations, &anions);  // 0.15 M in a 100 A cube: 90 pairs
  EXPECT_EQ(cations, 90);
  EXPECT_EQ(anions, 93);
  ion_counts(-2.0, 0.0, 1e6, &cations, &anions);
  EXPECT_EQ(cations, 2);
  EXPECT_EQ(anions, 0);
}

TEST(Ionize, NoRoomIsAClearError) {
  Atoms charge;
  charge.push_back({0, 0, 0}, 1.0, 1.5);
  Lattice lattice;
  lattice.origin = {-2, -2, -2};
  lattice.dims = {5, 5, 5};
  try {
    place_ions(charge, lattice, cpu_options(0, 1));
    FAIL() << "an ion was placed inside the exclusion radius";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("no lattice point is left for ion 1 of 1 (Cl-)"), std::string::npos)
        << error.what();
  }
  EXPECT_THROW(ion_species("Xx3+"), Error);
  EXPECT_EQ(ion_species("mg2+").charge, 2);
}

}  // namespace nbkit

namespace nbkit {

// The GPU keeps the map while it places ions (any map without a box): the same ions as
// the CPU path, in float64 on both sides (only the summation orders of the initial maps
// differ, ~1e-15, so no energy comparison comes near a tie), the same energies and the same
// final map within 1e-9; the resident map against a full recompute of structure plus ions
// on the GPU within 1e-9 too. Skips without a GPU.
TEST(IonizeCuda, TheResidentMapPlacesTheSameIonsAsTheCpu) {
  std::string why;
  if (list_gpus(&why).empty()) GTEST_SKIP() << "no GPU: " << why;
  const Atoms protein = io::read_pqr(test::data_file("1a63.pqr"));
  const Lattice lattice = lattice_around(protein, 1.5, 12.0);
  for (const MapMethod method : {MapMethod::direct, MapMethod::mdh, MapMethod::cutoff, MapMethod::msm}) {
    IonizeOptions cpu = cpu_options(9, 8);
    cpu.map.method = method;
    cpu.map.precision = Precision::double_;
    IonizeOptions gpu = cpu;
    gpu.map.backend = Backend::cuda;
    const IonizeResult a = place_ions(protein, lattice, cpu), b = place_ions(protein, lattice, gpu);
    ASSERT_EQ(a.ions.size(), b.ions.size());
    for (std::size_t i = 0; i < a.ions.size(); ++i) {
      EXPECT_EQ(norm(a.ions[i].position - b.ions[i].position), 0.0) << to_string(method) << " ion " << i;
      EXPECT_NEAR(b.ions[i].energy, a.ions[i].energy, 1e-9 * std::fabs(a.ions[i].energy)) << to_string(method);
    }
    EXPECT_LT(test::relative_rms(b.map.values, a.map.values), 1e-9) << to_string(method);
    Atoms all = protein;
    for (const PlacedIon& ion : b.ions) all.push_back(ion.position, ion.species.charge, ion.species.radius);
    if (method == MapMethod::msm) {
      EXPECT_LT(test::relative_rms(b.map.values, msm_map_plus_exact_ion_terms(protein, b.ions, lattice, gpu.map)), 1e-9);
    } else {
      EXPECT_LT(test::relative_rms(b.map.values, compute_map(all, lattice, gpu.map).values), 1e-9) << to_string(method);
    }
  }
}

}  // namespace nbkit
