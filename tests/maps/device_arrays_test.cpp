// Maps of atoms already in GPU memory (compute_map_on_device of DeviceAtomArrays, what Python's
// CuPy and PyTorch inputs use): read, checked, imaged, prepared, split and binned on the GPU,
// they must give the host-atoms path's bits (host atoms are uploaded and take the same path:
// the reading of strided and float32 arrays is what differs), and the reference's values. Cases
// that take each branch of the preparation: atoms exactly on lattice points (the checked
// pass), atoms beyond the cutoff of every point (left out of the bins), periodic images,
// float32 and strided inputs, one GPU listed twice (the split atoms copied to a second worker).
// Skips without a GPU; without a CUDA build the calls must say so.
#include <gtest/gtest.h>

#include <limits>
#include <random>
#include <vector>

#include "maps/map_test_support.hpp"
#include "nbkit/core/error.hpp"
#include "nbkit/io/pqr.hpp"
#include "nbkit/maps.hpp"
#include "test_support.hpp"

namespace nbkit {

namespace {

#if NBKIT_TEST_CUDA
using test::OnGpu;

// Atoms as GPU arrays of T: positions interleaved (n, 3) with `row` elements a row (3, or more:
// a strided view), charges and radii columns.
template <class T>
struct GpuAtoms {
  GpuAtoms(const Atoms& atoms, int row) : positions(interleave(atoms, row)), charges(cast(atoms.charge)), radii(cast(atoms.radius)) {
    arrays.device = 0;
    arrays.n = static_cast<std::int64_t>(atoms.size());
    arrays.positions = positions.data(), arrays.positions_float64 = sizeof(T) == 8;
    arrays.position_strides[0] = row, arrays.position_strides[1] = 1;
    arrays.charges = charges.data(), arrays.charges_float64 = sizeof(T) == 8;
    arrays.radii = radii.data(), arrays.radii_float64 = sizeof(T) == 8;
  }
  static std::vector<T> interleave(const Atoms& atoms, int row) {
    std::vector<T> out(atoms.size() * static_cast<std::size_t>(row), T(-7));  // filler a stride skips
    for (std::size_t n = 0; n < atoms.size(); ++n)
      for (int a = 0; a < 3; ++a) out[n * static_cast<std::size_t>(row) + static_cast<std::size_t>(a)] = static_cast<T>(atoms.position(n)[a]);
    return out;
  }
  static std::vector<T> cast(const std::vector<double>& v) { return std::vector<T>(v.begin(), v.end()); }
  OnGpu<T> positions, charges, radii;
  DeviceAtomArrays arrays;
};

// The map of GPU-array atoms, brought to the host.
std::vector<double> map_of_device_atoms(const DeviceAtomArrays& atoms, const Lattice& lattice, const MapOptions& options) {
  OnGpu<double> values(std::vector<double>(static_cast<std::size_t>(lattice.size()), -1.0));
  compute_map_on_device(atoms, lattice, options, 0, values.data());
  return values.to_host();
}

bool have_gpu(std::string* why) { return !list_gpus(why).empty(); }

// The atoms as the host path reads float32 arrays: each value widened exactly.
Atoms as_float32(Atoms atoms) {
  for (auto* column : {&atoms.x, &atoms.y, &atoms.z, &atoms.charge, &atoms.radius})
    for (double& v : *column) v = static_cast<double>(static_cast<float>(v));
  return atoms;
}
#endif

}  // namespace

#if NBKIT_TEST_CUDA

TEST(DeviceArrayMaps, EqualTheHostAtomsMapsBitForBit) {
  std::string why;
  if (!have_gpu(&why)) GTEST_SKIP() << "no GPU: " << why;
  Atoms atoms = io::read_pqr(test::data_file("1a63.pqr"));
  Lattice lattice = lattice_around(atoms, 0.9, 3.0);
  lattice.dims[2] = 23;  // awkward: a partial chunk along z
  // Atoms exactly on lattice points (the checked pass) and atoms far outside (beyond the
  // cutoff of every point: left out of the cutoff sum's bins).
  atoms.push_back(lattice.point(3, 4, 5), 0.7, 1.5);
  atoms.push_back(lattice.point(0, 0, 0), -0.4, 1.1);
  atoms.push_back(lattice.point(10, 2, 22), 0.3, 0.0);
  atoms.push_back(lattice.origin + Vec3{-80, 3, 2}, 1.0, 1.0);
  atoms.push_back(lattice.origin + Vec3{5, 200, -90}, -1.0, 1.0);
  for (const MapMethod method : {MapMethod::direct, MapMethod::cutoff, MapMethod::mdh}) {
    const std::vector<double> reference = compute_map(atoms, lattice, test::with(method, Backend::reference)).values;
    for (const Precision precision : {Precision::single, Precision::double_}) {
      MapOptions options = test::with(method, Backend::cuda, precision);
      const std::string what = to_string(method) + " " + to_string(precision);
      const std::vector<double> host = compute_map(atoms, lattice, options).values;
      const GpuAtoms<double> gpu(atoms, 3);
      const std::vector<double> device = map_of_device_atoms(gpu.arrays, lattice, options);
      EXPECT_EQ(device, host) << what;
      // And against the float64 reference: the GPU's preparation (its exp for mdh's factors
      // included) leaves the map within the precision's tolerance.
      EXPECT_LT(test::relative_rms(device, reference),
                precision == Precision::double_ ? test::kDoubleTolerance : test::kSingleTolerance)
          << what;
      // Two GPUs, or the same GPU listed twice: two workers, the atoms split once on the
      // arrays' GPU and copied to the other (a peer copy between GPUs).
      std::string unused;
      options.gpus = list_gpus(&unused).size() >= 2 ? std::vector<int>{0, 1} : std::vector<int>{0, 0};
      EXPECT_EQ(map_of_device_atoms(gpu.arrays, lattice, options), host) << what << ", two workers";
      options.gpus = {};
      // float32 arrays in a strided view: the host path's map of the same float32 values.
      const GpuAtoms<float> narrow(atoms, 5);
      EXPECT_EQ(map_of_device_atoms(narrow.arrays, lattice, options), compute_map(as_float32(atoms), lattice, options).values)
          << what << ", float32 strided";
    }
  }
}

TEST(DeviceArrayMaps, PeriodicCutoffMapsImageOnTheGpuAsTheCpuDoes) {
  std::string why;
  if (!have_gpu(&why)) GTEST_SKIP() << "no GPU: " << why;
  // Water-box-like atoms in a 30 A cell, some outside it (wrapped), some on lattice points.
  const Vec3 box{30, 31, 29};
  Atoms atoms = test::random_atoms(4000, {-5, -5, -5}, {35, 36, 34}, 77);
  MapOptions options = test::with(MapMethod::cutoff, Backend::cuda, Precision::double_);
  options.cutoff = 9;
  options.periodic_box = PeriodicBox::from_edges(box);
  const Lattice lattice = lattice_spanning_cell(box, 0.75);
  atoms.push_back(lattice.point(2, 3, 4), 0.5, 1.0);
  atoms.push_back(lattice.point(2, 3, 4) + Vec3{30, 0, 0}, -0.5, 1.0);  // an image of a lattice point
  MapOptions cpu = options;
  cpu.backend = Backend::cpu;
  const std::vector<double> on_cpu = compute_map(atoms, lattice, cpu).values;  // imaged on the host
  for (const Precision precision : {Precision::single, Precision::double_}) {
    options.precision = precision;
    const GpuAtoms<double> gpu(atoms, 3);
    const std::vector<double> device = map_of_device_atoms(gpu.arrays, lattice, options);
    EXPECT_EQ(device, compute_map(atoms, lattice, options).values) << to_string(precision);
    // The GPU's images are the host's: any image lost or doubled would move the map by a
    // charge's potential, ~1e-3 of its scale; float64 sums in other orders agree to ~1e-15.
    EXPECT_LT(test::relative_rms(device, on_cpu), precision == Precision::double_ ? 1e-12 : test::kSingleTolerance)
        << to_string(precision);
  }
}

TEST(DeviceArrayMaps, CheckedOnTheGpuWithTheHostsMessages) {
  std::string why;
  if (!have_gpu(&why)) GTEST_SKIP() << "no GPU: " << why;
  Atoms atoms = test::random_atoms(1000, {-10, -20, -30}, {40, 50, 60}, 3);
  {
    const GpuAtoms<double> gpu(atoms, 3);
    const DeviceAtomSummary summary = check_device_atoms(gpu.arrays);
    const BoundingBox box = bounding_box(atoms);
    for (int a = 0; a < 3; ++a) {  // minima and maxima are exact in any order
      EXPECT_EQ(summary.box.lower[a], box.lower[a]);
      EXPECT_EQ(summary.box.upper[a], box.upper[a]);
    }
    EXPECT_NEAR(summary.net_charge, atoms.net_charge(), 1e-12 * atoms.size());
  }
  auto message_of = [](const Atoms& bad) {
    const GpuAtoms<double> gpu(bad, 3);
    try {
      check_device_atoms(gpu.arrays);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  auto host_message_of = [](const Atoms& bad) {
    try {
      validate_atoms(bad);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  Atoms nan_atoms = atoms, far_atoms = atoms, negative = atoms;
  nan_atoms.z[700] = std::numeric_limits<double>::quiet_NaN();
  nan_atoms.charge[900] = std::numeric_limits<double>::infinity();
  far_atoms.y[412] = 3e7;
  negative.radius[5] = -1;
  for (const Atoms* bad : {&nan_atoms, &far_atoms, &negative}) {
    const std::string message = message_of(*bad);
    EXPECT_EQ(message, host_message_of(*bad));  // the first refused atom, in the host's words
    EXPECT_NE(message, "no error");
  }
  EXPECT_NE(message_of(nan_atoms).find("atom 701 "), std::string::npos) << message_of(nan_atoms);
  // And a map of them is refused the same way, before anything is computed.
  const GpuAtoms<double> gpu(nan_atoms, 3);
  try {
    map_of_device_atoms(gpu.arrays, lattice_around(atoms, 2.0, 1.0), test::with(MapMethod::direct, Backend::cuda));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("atom 701 "), std::string::npos) << e.what();
  }
}

#else

TEST(DeviceArrayMaps, NeedACudaBuild) {
  DeviceAtomArrays arrays;
  arrays.n = 1;
  EXPECT_THROW(check_device_atoms(arrays), Error);
  Lattice lattice;
  EXPECT_THROW(compute_map_on_device(arrays, lattice, MapOptions{}, 0, nullptr), Error);
}

#endif

}  // namespace nbkit
