// g(r) against a float64 all-pairs minimum-image count (27 images, any cell shape), the
// selection language, cells from DCD records, and the refusals.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <random>

#include "nbkit/analysis.hpp"
#include "nbkit/core/error.hpp"

namespace nbkit::analysis {
namespace {

AtomTable water_table(int molecules) {
  AtomTable t;
  t.source = "test waters";
  for (int m = 0; m < molecules; ++m)
    for (const char* name : {"OW", "HW1", "HW2"}) {
      t.name.push_back(name);
      t.residue_name.push_back(m % 5 == 4 ? "NA" : "WAT");
      t.element.push_back(name[0] == 'O' ? "O" : "H");
      t.residue_number.push_back(m + 1);
      t.residue.push_back(m);
      t.molecule.push_back(m);
    }
  return t;
}

// Every pair's minimum-image distance by trying all 27 images of the wrapped difference.
std::vector<std::uint64_t> brute_counts(const std::vector<double>& x, const std::vector<double>& y,
                                        const std::vector<double>& z, const std::vector<std::int32_t>& a,
                                        const std::vector<std::int32_t>& b, const std::vector<std::int32_t>& group,
                                        const std::optional<Cell>& cell, double rmin, double rmax, int bins) {
  std::vector<std::uint64_t> counts(bins, 0);
  for (std::int32_t i : a)
    for (std::int32_t j : b) {
      if (i == j || (!group.empty() && group[i] == group[j])) continue;
      const Vec3 d0{x[j] - x[i], y[j] - y[i], z[j] - z[i]};
      double best = norm(d0);
      if (cell)
        for (int p = -2; p <= 2; ++p)
          for (int q = -2; q <= 2; ++q)
            for (int s = -2; s <= 2; ++s)
              best = std::min(best, norm(d0 + static_cast<double>(p) * cell->a + static_cast<double>(q) * cell->b +
                                         static_cast<double>(s) * cell->c));
      if (best < rmin || best > rmax) continue;
      const int k = std::min(bins - 1, static_cast<int>((best - rmin) / (rmax - rmin) * bins));
      ++counts[k];
    }
  return counts;
}

struct Frame {
  std::vector<float> x, y, z;
  std::vector<double> xd, yd, zd;
};

// Random atoms anywhere (outside the cell too: the engine wraps them).
Frame random_frame(std::size_t n, const Cell& cell, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-0.7, 1.6);
  Frame f;
  for (std::size_t i = 0; i < n; ++i) {
    const Vec3 p = u(rng) * cell.a + u(rng) * cell.b + u(rng) * cell.c;
    f.x.push_back(static_cast<float>(p.x)), f.y.push_back(static_cast<float>(p.y)), f.z.push_back(static_cast<float>(p.z));
    f.xd.push_back(f.x.back()), f.yd.push_back(f.y.back()), f.zd.push_back(f.z.back());
  }
  return f;
}

// Counts equal the brute force's except for a pair within rounding of a bin edge (none is expected
// at these random coordinates; the allowance keeps the test honest about float64 rounding).
void expect_counts_match(const std::vector<std::uint64_t>& got, const std::vector<std::uint64_t>& want) {
  ASSERT_EQ(got.size(), want.size());
  std::int64_t off = 0, total = 0;
  for (std::size_t k = 0; k < got.size(); ++k) {
    off += std::llabs(static_cast<std::int64_t>(got[k]) - static_cast<std::int64_t>(want[k]));
    total += static_cast<std::int64_t>(want[k]);
  }
  EXPECT_GT(total, 100);
  EXPECT_LE(off, 2) << "bins disagree beyond one edge pair";
}

TEST(Rdf, CountsMatchAllPairsInOrthorhombicAndTriclinicCells) {
  const AtomTable t = water_table(400);
  std::vector<std::int32_t> o = select_atoms(t, "name OW"), h = select_atoms(t, "element H");
  for (const Cell& cell : {cell_from_lengths_angles(23.1, 25.7, 24.3, 90, 90, 90),
                           cell_from_lengths_angles(26.0, 27.5, 29.0, 70, 80, 65),
                           cell_from_lengths_angles(31.0, 31.0, 31.0, 60, 60, 90)}) {  // rhombic dodecahedron-like
    const double rmax = 0.5 * std::min({cell.widths()[0], cell.widths()[1], cell.widths()[2]}) * 0.999;
    for (RdfExclusion exclude : {RdfExclusion::none, RdfExclusion::molecule}) {
      RdfOptions options;
      options.rmin = 0.5, options.rmax = rmax, options.bins = 37, options.exclude = exclude;
      Rdf rdf(t, o, h, options);
      std::vector<std::uint64_t> want(options.bins, 0);
      for (unsigned seed = 1; seed <= 3; ++seed) {
        const Frame f = random_frame(t.size(), cell, seed);
        rdf.add_frame(f.x.data(), f.y.data(), f.z.data(), cell);
        const auto c = brute_counts(f.xd, f.yd, f.zd, o, h, exclude == RdfExclusion::none ? std::vector<std::int32_t>{} : t.molecule,
                                    cell, options.rmin, options.rmax, options.bins);
        for (int k = 0; k < options.bins; ++k) want[k] += c[k];
      }
      expect_counts_match(rdf.result().counts, want);
    }
  }
}

TEST(Rdf, SmallCellsOfOneOrTwoCellListCellsCountEachImageOnce) {
  // rmax near half the width: one or two cell-list cells per axis, where wrapped neighbours
  // could repeat an image.
  const AtomTable t = water_table(30);
  const std::vector<std::int32_t> all = select_atoms(t, "all");
  for (double edge : {10.0, 16.0, 23.0}) {
    const Cell cell = cell_from_lengths_angles(edge, edge * 1.1, edge * 0.9, 90, 90, 90);
    RdfOptions options;
    options.rmax = 0.45 * edge * 0.9, options.bins = 10;
    Rdf rdf(t, all, all, options);
    const Frame f = random_frame(t.size(), cell, 7);
    rdf.add_frame(f.x.data(), f.y.data(), f.z.data(), cell);
    expect_counts_match(rdf.result().counts,
                        brute_counts(f.xd, f.yd, f.zd, all, all, {}, cell, options.rmin, options.rmax, options.bins));
  }
}

TEST(Rdf, NonPeriodicFramesUseTheGivenVolume) {
  const AtomTable t = water_table(200);
  const std::vector<std::int32_t> o = select_atoms(t, "name OW");
  const Cell region = cell_from_lengths_angles(30, 30, 30, 90, 90, 90);
  RdfOptions options;
  options.rmax = 40, options.bins = 20, options.volume = 27000;
  Rdf rdf(t, o, o, options);
  const Frame f = random_frame(t.size(), region, 3);
  rdf.add_frame(f.x.data(), f.y.data(), f.z.data(), std::nullopt);
  const RdfResult r = rdf.result();
  expect_counts_match(r.counts, brute_counts(f.xd, f.yd, f.zd, o, o, {}, std::nullopt, 0, 40, 20));
  // Ordered pairs, less the self pairs: 200 * 199.
  EXPECT_EQ(r.pairs, 200.0 * 199.0);
  std::uint64_t total = 0;
  for (auto c : r.counts) total += c;
  EXPECT_DOUBLE_EQ(r.coordination.back(), static_cast<double>(total) / 200.0);
  // g(r) as InterRDF: count / (frames * shell volume * pairs / volume).
  const double shell = 4.0 / 3.0 * M_PI * (std::pow(r.edges[4], 3) - std::pow(r.edges[3], 3));
  EXPECT_DOUBLE_EQ(r.g[3], static_cast<double>(r.counts[3]) / (shell * r.pairs / 27000.0));
}

// VMD's measure gofr (Measure.C): each frame's counts times its own volume over the pairs and
// the shell's volume, averaged over the frames. Two frames of different cells (an NPT run's):
// the per-frame sum, from the same engine's counts frame by frame; it differs from InterRDF's
// mean-volume normalisation then and equals it for frames of one volume.
TEST(Rdf, VmdNormAveragesEachFrameOverItsOwnVolume) {
  const AtomTable t = water_table(250);
  const std::vector<std::int32_t> o = select_atoms(t, "name OW"), all = select_atoms(t, "all");
  const Cell small = cell_from_lengths_angles(24, 25, 26, 90, 90, 90), large = cell_from_lengths_angles(27, 28, 29, 90, 90, 90);
  const Frame f1 = random_frame(t.size(), small, 21), f2 = random_frame(t.size(), large, 22);
  RdfOptions options;
  options.rmax = 11, options.bins = 44;
  auto run = [&](RdfNorm norm, const std::vector<std::pair<const Frame*, Cell>>& frames) {
    options.norm = norm;
    Rdf rdf(t, o, all, options);
    for (const auto& [f, cell] : frames) rdf.add_frame(f->x.data(), f->y.data(), f->z.data(), cell);
    return rdf.result();
  };
  const RdfResult vmd = run(RdfNorm::vmd, {{&f1, small}, {&f2, large}});
  const RdfResult interrdf = run(RdfNorm::rdf, {{&f1, small}, {&f2, large}});
  const RdfResult c1 = run(RdfNorm::none, {{&f1, small}}), c2 = run(RdfNorm::none, {{&f2, large}});
  EXPECT_EQ(vmd.pairs, 250.0 * 750.0 - 250.0);  // the oxygens are in both groups: VMD's "duplicates"
  double largest_difference = 0;
  for (int k = 0; k < options.bins; ++k) {
    const double shell = 4.0 / 3.0 * M_PI * (std::pow(vmd.edges[k + 1], 3) - std::pow(vmd.edges[k], 3));
    const double want = 0.5 * (small.volume() / vmd.pairs * static_cast<double>(c1.counts[k]) / shell +
                               large.volume() / vmd.pairs * static_cast<double>(c2.counts[k]) / shell);
    EXPECT_NEAR(vmd.g[k], want, 1e-13 * std::max(1.0, want)) << k;
    EXPECT_EQ(vmd.counts[k], c1.counts[k] + c2.counts[k]);
    EXPECT_EQ(vmd.coordination[k], interrdf.coordination[k]);
    largest_difference = std::max(largest_difference, std::abs(vmd.g[k] - interrdf.g[k]));
  }
  EXPECT_GT(largest_difference, 1e-3);  // the volumes differ by 28%: so do the normalisations
  // One volume: the two normalisations agree to rounding.
  const RdfResult vmd_one = run(RdfNorm::vmd, {{&f1, small}, {&f2, small}});
  const RdfResult interrdf_one = run(RdfNorm::rdf, {{&f1, small}, {&f2, small}});
  for (int k = 0; k < options.bins; ++k) EXPECT_NEAR(vmd_one.g[k], interrdf_one.g[k], 1e-12 * std::max(1.0, interrdf_one.g[k]));
  // Without a cell: VMD's 30 A^3 a group-A atom, unless a volume is given.
  options.norm = RdfNorm::vmd;
  Rdf open(t, o, o, options);
  open.add_frame(f1.x.data(), f1.y.data(), f1.z.data(), std::nullopt);
  const RdfResult r = open.result();
  const double shell = 4.0 / 3.0 * M_PI * (std::pow(r.edges[41], 3) - std::pow(r.edges[40], 3));
  EXPECT_NEAR(r.g[40], 30.0 * 250.0 / r.pairs * static_cast<double>(r.counts[40]) / shell, 1e-13 * std::max(1.0, r.g[40]));
  EXPECT_GT(r.counts[40], 0u);
  EXPECT_EQ(parse_rdf_norm("vmd"), RdfNorm::vmd);
  EXPECT_THROW(parse_rdf_norm("gofr"), Error);
}

TEST(Rdf, CountsDoNotDependOnTheThreadCount) {
  const AtomTable t = water_table(300);
  const std::vector<std::int32_t> all = select_atoms(t, "all");
  const Cell cell = cell_from_lengths_angles(21, 22, 23, 85, 95, 100);
  const Frame f = random_frame(t.size(), cell, 11);
  std::vector<std::uint64_t> first;
  for (int threads : {1, 2, 5}) {
    RdfOptions options;
    options.rmax = 9, options.bins = 90, options.threads = threads;
    Rdf rdf(t, all, all, options);
    rdf.add_frame(f.x.data(), f.y.data(), f.z.data(), cell);
    if (first.empty()) first = rdf.result().counts;
    EXPECT_EQ(rdf.result().counts, first) << threads << " threads";
  }
}

// The GPUs count every pair in the bin the CPU does (the same float64 loop without fused
// multiply-adds on either side; the GPUs' float32 screen passes over no pair in range):
// histograms equal, for A split among "GPUs" (one device listed twice takes two parts), with
// and without exclusions, with bins in shared memory and past it.
TEST(RdfCuda, CountsEqualTheCpusExactly) {
  if (list_gpus().empty()) GTEST_SKIP() << "no GPU";
  const AtomTable t = water_table(2000);
  const std::vector<std::int32_t> o = select_atoms(t, "name OW"), all = select_atoms(t, "all");
  const Cell cell = cell_from_lengths_angles(39.0, 40.5, 41.0, 80, 95, 70);
  std::vector<Frame> frames;
  for (unsigned seed = 1; seed <= 3; ++seed) frames.push_back(random_frame(t.size(), cell, seed));
  for (int bins : {100, 11000, 20000})  // shared-memory histograms to their largest, and past
    for (RdfExclusion exclude : {RdfExclusion::none, RdfExclusion::residue})
      for (const std::vector<int>& gpus : {std::vector<int>{}, std::vector<int>{0, 0, 0}}) {
        RdfOptions options;
        options.rmin = 0.3, options.rmax = 16, options.bins = bins, options.exclude = exclude;
        options.norm = exclude == RdfExclusion::none ? RdfNorm::vmd : RdfNorm::rdf;  // VMD's weighting too
        options.backend = Backend::cpu;
        Rdf cpu(t, o, all, options);
        options.backend = Backend::cuda, options.gpus = gpus;
        Rdf gpu(t, o, all, options);
        for (const Frame& f : frames) {
          cpu.add_frame(f.x.data(), f.y.data(), f.z.data(), cell);
          gpu.add_frame(f.x.data(), f.y.data(), f.z.data(), cell);
        }
        const RdfResult a = cpu.result(), b = gpu.result();
        EXPECT_EQ(b.backend, Backend::cuda);
        EXPECT_EQ(a.counts, b.counts) << bins << " bins, " << gpus.size() << " parts";
        EXPECT_EQ(a.distances, b.distances);
        EXPECT_EQ(a.g, b.g);
      }
  // One group for both (the GPUs sort it once), in cells of a few atoms (rmax 3: thousands of
  // cells), A split in three parts of its cell order; then without a cell, one group and two
  // (group A's atoms reach outside B's boxes: clamped into the edge cells).
  struct Case {
    std::vector<std::int32_t> a, b;
    double rmax;
    bool periodic;
  };
  const std::vector<std::int32_t> h = select_atoms(t, "name HW1");
  for (const Case& c : {Case{all, all, 3.0, true}, Case{o, o, 12.0, false}, Case{o, h, 9.0, false}})
    for (const std::vector<int>& gpus : {std::vector<int>{}, std::vector<int>{0, 0, 0}}) {
      RdfOptions options;
      options.rmax = c.rmax, options.bins = 60, options.norm = RdfNorm::density, options.backend = Backend::cpu;
      Rdf cpu(t, c.a, c.b, options);
      options.backend = Backend::cuda, options.gpus = gpus;
      Rdf gpu(t, c.a, c.b, options);
      for (const Frame& f : frames) {
        const std::optional<Cell> frame_cell = c.periodic ? std::optional<Cell>(cell) : std::nullopt;
        cpu.add_frame(f.x.data(), f.y.data(), f.z.data(), frame_cell);
        gpu.add_frame(f.x.data(), f.y.data(), f.z.data(), frame_cell);
      }
      const RdfResult a = cpu.result(), b = gpu.result();
      EXPECT_EQ(a.counts, b.counts) << c.rmax << " A, " << gpus.size() << " parts";
      EXPECT_EQ(a.distances, b.distances) << c.rmax << " A, " << gpus.size() << " parts";
      EXPECT_GT(a.distances, 0u);
    }
}

// The GPUs screen candidates in float32 before the float64 test: pairs a float32 rounding away
// from rmax, at coordinates near 1,000 A (float32's step there is 6e-5 A), in a cell and
// without one, are counted as the CPU counts them (each pair is rmax apart before rounding to
// float32, so about half end up inside).
TEST(RdfCuda, Float32ScreenPassesOverNoPairInRange) {
  if (list_gpus().empty()) GTEST_SKIP() << "no GPU";
  const AtomTable t = water_table(2000);
  const std::vector<std::int32_t> all = select_atoms(t, "all");
  const double rmax = 15;
  std::mt19937 rng(5);
  std::uniform_real_distribution<double> u(900, 1100), angle(0, 2 * std::numbers::pi), height(-1, 1);
  Frame f;
  for (std::size_t i = 0; i < t.size(); i += 2) {
    const double p[3] = {u(rng), u(rng), u(rng)}, phi = angle(rng), h = height(rng);
    const double d[3] = {std::sqrt(1 - h * h) * std::cos(phi), std::sqrt(1 - h * h) * std::sin(phi), h};
    for (int k = 0; k < 2 && i + k < t.size(); ++k) {
      f.x.push_back(static_cast<float>(p[0] + k * rmax * d[0]));
      f.y.push_back(static_cast<float>(p[1] + k * rmax * d[1]));
      f.z.push_back(static_cast<float>(p[2] + k * rmax * d[2]));
    }
  }
  const Cell cell = cell_from_lengths_angles(1200, 1250, 1300, 90, 90, 90);
  for (const std::optional<Cell>& c : {std::optional<Cell>(cell), std::optional<Cell>()}) {
    RdfOptions options;
    options.rmin = 14, options.rmax = rmax, options.bins = 8, options.norm = RdfNorm::none, options.backend = Backend::cpu;
    Rdf cpu(t, all, all, options);
    options.backend = Backend::cuda;
    Rdf gpu(t, all, all, options);
    cpu.add_frame(f.x.data(), f.y.data(), f.z.data(), c);
    gpu.add_frame(f.x.data(), f.y.data(), f.z.data(), c);
    const RdfResult a = cpu.result(), b = gpu.result();
    EXPECT_EQ(a.counts, b.counts) << (c ? "cell" : "no cell");
    EXPECT_GT(a.counts.back(), 500u) << (c ? "cell" : "no cell");  // 3,000 pairs at rmax: about half inside
  }
}

TEST(Rdf, ExclusionsReduceTheNormalisingPairs) {
  const AtomTable t = water_table(10);
  const std::vector<std::int32_t> o = select_atoms(t, "name OW"), h = select_atoms(t, "name HW1 HW2");
  RdfOptions options;
  options.exclude = RdfExclusion::residue;
  EXPECT_EQ(Rdf(t, o, h, options).result().pairs, 10.0 * 20.0 - 10.0 * 2.0);  // InterRDF's (1, 2) blocks
  options.exclude = RdfExclusion::none;
  EXPECT_EQ(Rdf(t, o, o, options).result().pairs, 10.0 * 9.0);  // InterRDF's (1, 1) blocks
}

TEST(Rdf, RefusesWhatWouldBeWrong) {
  const AtomTable t = water_table(10);
  const std::vector<std::int32_t> o = select_atoms(t, "name OW");
  RdfOptions options;
  options.rmax = 8;
  Rdf rdf(t, o, o, options);
  const Frame f = random_frame(t.size(), cell_from_lengths_angles(15, 15, 15, 90, 90, 90), 1);
  // rmax over half the width: minimum images are not unique
  EXPECT_THROW(rdf.add_frame(f.x.data(), f.y.data(), f.z.data(), cell_from_lengths_angles(15, 15, 15, 90, 90, 90)), Error);
  // no cell and no volume for g(r)
  EXPECT_THROW(rdf.add_frame(f.x.data(), f.y.data(), f.z.data(), std::nullopt), Error);
  Frame bad = f;
  bad.x[0] = std::nanf("");
  EXPECT_THROW(rdf.add_frame(bad.x.data(), bad.y.data(), bad.z.data(), cell_from_lengths_angles(30, 30, 30, 90, 90, 90)), Error);
  EXPECT_THROW(Rdf(t, {}, o, options), Error);
  EXPECT_THROW(Rdf(t, {3, 1}, o, options), Error);
  options.rmin = 9;
  EXPECT_THROW(Rdf(t, o, o, options), Error);
  AtomTable no_bonds = t;
  no_bonds.molecule.clear();
  RdfOptions by_molecule;
  by_molecule.exclude = RdfExclusion::molecule;
  EXPECT_THROW(Rdf(no_bonds, o, o, by_molecule), Error);
}

TEST(Selection, KeywordsRangesWildcardsAndPrecedence) {
  const AtomTable t = water_table(10);  // residues 5 and 10 are "NA"
  EXPECT_EQ(select_atoms(t, "name OW").size(), 10u);
  EXPECT_EQ(select_atoms(t, "name H*").size(), 20u);
  EXPECT_EQ(select_atoms(t, "name HW?").size(), 20u);
  EXPECT_EQ(select_atoms(t, "resname NA").size(), 6u);
  EXPECT_EQ(select_atoms(t, "resid 2:3"), (std::vector<std::int32_t>{3, 4, 5, 6, 7, 8}));
  EXPECT_EQ(select_atoms(t, "resid 2-3 and name OW"), (std::vector<std::int32_t>{3, 6}));
  EXPECT_EQ(select_atoms(t, "index 0 29"), (std::vector<std::int32_t>{0, 29}));
  // not > and > or: "name OW or name HW1 and resid 1" is OW plus resid 1's HW1
  EXPECT_EQ(select_atoms(t, "name OW or name HW1 and resid 1").size(), 11u);
  EXPECT_EQ(select_atoms(t, "(name OW or name HW1) and resid 1").size(), 2u);
  EXPECT_EQ(select_atoms(t, "not element H and not resname NA").size(), 8u);
  EXPECT_EQ(select_atoms(t, "all").size(), 30u);
  EXPECT_TRUE(select_atoms(t, "none").empty());
  for (const char* bad : {"", "name", "name OW and", "(name OW", "name OW)", "resid x", "resid 3:1", "mass 16", "or"})
    EXPECT_THROW(select_atoms(t, bad), Error) << bad;
  try {
    select_atoms(t, "name OW and bogus 3");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("character 13"), std::string::npos) << e.what();
  }
}

TEST(Cell, FromDcdRecordsInDegreesOrCosines) {
  const auto degrees = cell_from_dcd({20, 90, 30, 90, 90, 40});
  ASSERT_TRUE(degrees);
  EXPECT_DOUBLE_EQ(degrees->volume(), 24000);
  const auto cosines = cell_from_dcd({20, 0, 30, 0, 0, 40});  // CHARMM's cosines
  ASSERT_TRUE(cosines);
  EXPECT_EQ(cosines->b.x, 0.0);
  EXPECT_DOUBLE_EQ(cosines->volume(), 24000);
  EXPECT_FALSE(cell_from_dcd({0, 0, 0, 0, 0, 0}));
  const auto tri = cell_from_dcd({20, 60, 20, 60, 90, 20});
  ASSERT_TRUE(tri);
  EXPECT_NEAR(tri->b.x, 10, 1e-12);
  EXPECT_THROW(cell_from_dcd({20, 90, -3, 90, 90, 40}), Error);
  EXPECT_THROW(cell_from_lengths_angles(10, 10, 10, 130, 130, 130), Error);  // spans no volume
}

}  // namespace
}  // namespace nbkit::analysis
