// libFuzzer target for the HDF5 snapshot reader, structure-aware: the fuzzer's bytes choose
// what a GADGET/SWIFT-layout file holds (body counts that agree or not with the datasets,
// datasets and attributes present or missing, of the right length or not, values that are NaN,
// infinite, zero or negative), the file is written through the HDF5 library, and the reader
// must either return bodies with finite positions and velocities and positive masses, or
// raise nbkit::Error. (Mutating the bytes of HDF5 files would fuzz the HDF5 library's own
// parser, which allocates gigabytes on some malformed files; HDF5 is fuzzed by its project.)
#include <fuzzer/FuzzedDataProvider.h>
#include <hdf5.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "file_input.hpp"
#include "nbkit/core/error.hpp"
#include "nbkit/io/snapshot.hpp"

namespace {

double fuzzed_value(FuzzedDataProvider& in) {
  switch (in.ConsumeIntegralInRange<int>(0, 7)) {
    case 0: return std::numeric_limits<double>::quiet_NaN();
    case 1: return std::numeric_limits<double>::infinity();
    case 2: return 0.0;
    case 3: return -1.0;
    default: return in.ConsumeFloatingPointInRange<double>(-10.0, 10.0);
  }
}

void attribute(hid_t object, const char* name, hid_t type, const void* values, hsize_t count) {
  const hid_t space = H5Screate_simple(1, &count, nullptr);
  const hid_t a = H5Acreate2(object, name, type, space, H5P_DEFAULT, H5P_DEFAULT);
  H5Awrite(a, type, values);
  H5Aclose(a);
  H5Sclose(space);
}

void dataset(hid_t group, const char* name, const std::vector<double>& values, hsize_t rows, hsize_t columns) {
  hsize_t dims[2] = {rows, columns};
  const hid_t space = H5Screate_simple(columns > 1 ? 2 : 1, dims, nullptr);
  const hid_t d = H5Dcreate2(group, name, H5T_NATIVE_DOUBLE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  if (!values.empty()) H5Dwrite(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data());
  H5Dclose(d);
  H5Sclose(space);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  FuzzedDataProvider in(data, size);
  const std::string path = fuzz_input_file(nullptr, 0, ".hdf5");
  const hid_t file = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  const std::uint32_t bodies = in.ConsumeIntegralInRange<std::uint32_t>(0, 40);
  if (in.ConsumeBool()) {
    const hid_t header = H5Gcreate2(file, "/Header", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    std::uint32_t total[6] = {0, in.ConsumeBool() ? bodies : in.ConsumeIntegral<std::uint32_t>(), 0, 0, 0, 0};
    if (in.ConsumeBool()) attribute(header, "NumPart_Total", H5T_NATIVE_UINT32, total, 6);
    std::uint32_t high[6] = {0, in.ConsumeBool() ? 0u : in.ConsumeIntegral<std::uint32_t>(), 0, 0, 0, 0};
    if (in.ConsumeBool()) attribute(header, "NumPart_Total_HighWord", H5T_NATIVE_UINT32, high, 6);
    const double time = fuzzed_value(in);
    if (in.ConsumeBool()) attribute(header, "Time", H5T_NATIVE_DOUBLE, &time, 1);
    H5Gclose(header);
  }
  if (in.ConsumeBool()) {
    const hid_t group = H5Gcreate2(file, "/PartType1", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    for (const char* name : {"Coordinates", "Velocities", "Masses"}) {
      if (!in.ConsumeBool()) continue;
      const hsize_t rows = in.ConsumeBool() ? bodies : in.ConsumeIntegralInRange<hsize_t>(0, 40);
      const hsize_t columns = std::string(name) == "Masses" ? 1 : 3;
      std::vector<double> values(rows * columns);
      for (double& v : values) v = in.ConsumeBool() ? 1.0 / (1 + bodies) : fuzzed_value(in);
      dataset(group, name, values, rows, columns);
    }
    H5Gclose(group);
  }
  if (in.ConsumeBool()) {
    const hid_t group = H5Gcreate2(file, "/nbkit", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    const std::int64_t step = in.ConsumeIntegralInRange<std::int64_t>(-2, 100);
    if (in.ConsumeBool()) attribute(group, "Step", H5T_NATIVE_INT64, &step, 1);
    for (const char* name : {"TimeStep", "Softening", "InitialEnergy"}) {
      const double v = fuzzed_value(in);
      if (in.ConsumeBool()) attribute(group, name, H5T_NATIVE_DOUBLE, &v, 1);
    }
    const std::uint64_t seed = in.ConsumeIntegral<std::uint64_t>();
    if (in.ConsumeBool()) attribute(group, "Seed", H5T_NATIVE_UINT64, &seed, 1);
    H5Gclose(group);
  }
  H5Fclose(file);
  try {
    nbkit::io::SnapshotInfo info;
    const nbkit::nbody::Bodies b = nbkit::io::read_snapshot(path, &info);
    if (b.size() == 0) __builtin_trap();
    for (std::size_t i = 0; i < b.size(); ++i)
      if (!std::isfinite(b.x[i]) || !std::isfinite(b.vz[i]) || !(b.mass[i] > 0) || !std::isfinite(b.mass[i]))
        __builtin_trap();
    if (!std::isfinite(info.time)) __builtin_trap();
  } catch (const nbkit::Error&) {
  }
  return 0;
}
