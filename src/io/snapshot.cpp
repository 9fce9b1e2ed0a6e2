// GADGET/SWIFT-layout HDF5 snapshots through the HDF5 C library (snapshot.hpp).
#include "nbkit/io/snapshot.hpp"

#include <hdf5.h>

#include <fmt/format.h>

#include <array>
#include <cmath>
#include <string>
#include <vector>

#include "nbkit/core/error.hpp"
#include "nbkit/core/memory.hpp"
#include "nbkit/io/atomic_file.hpp"

namespace nbkit::io {

namespace {

// An HDF5 identifier closed on scope exit.
class Handle {
 public:
  Handle(hid_t id, herr_t (*close)(hid_t), const std::string& what) : id_(id), close_(close) {
    if (id_ < 0) throw Error(what);
  }
  ~Handle() {
    if (id_ >= 0) close_(id_);
  }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  operator hid_t() const { return id_; }

 private:
  hid_t id_;
  herr_t (*close_)(hid_t);
};

void check(herr_t status, const std::string& what) {
  if (status < 0) throw Error(what);
}

void quiet_hdf5() { H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr); }  // errors become exceptions here

template <class T>
void attribute(hid_t object, const char* name, hid_t type, const std::vector<T>& values, const std::string& path) {
  const hsize_t count = values.size();
  Handle space(H5Screate_simple(1, &count, nullptr), H5Sclose, path + ": HDF5 dataspace");
  Handle a(H5Acreate2(object, name, type, space, H5P_DEFAULT, H5P_DEFAULT), H5Aclose, path + ": attribute " + name);
  check(H5Awrite(a, type, values.data()), path + ": writing attribute " + name);
}

void string_attribute(hid_t object, const char* name, const std::string& value, const std::string& path) {
  Handle type(H5Tcopy(H5T_C_S1), H5Tclose, path + ": HDF5 string type");
  check(H5Tset_size(type, value.size() + 1), path + ": HDF5 string size");
  Handle space(H5Screate(H5S_SCALAR), H5Sclose, path + ": HDF5 dataspace");
  Handle a(H5Acreate2(object, name, type, space, H5P_DEFAULT, H5P_DEFAULT), H5Aclose, path + ": attribute " + name);
  check(H5Awrite(a, type, value.c_str()), path + ": writing attribute " + name);
}

void dataset(hid_t group, const char* name, hid_t type, const void* data, std::vector<hsize_t> dims,
             const std::string& path) {
  Handle space(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr), H5Sclose, path + ": HDF5 dataspace");
  Handle d(H5Dcreate2(group, name, type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Dclose,
           path + ": dataset " + name);
  check(H5Dwrite(d, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data), path + ": writing dataset " + name);
}

template <class T>
std::vector<T> read_dataset(hid_t file, const std::string& name, hid_t type, std::size_t expected, const std::string& path) {
  if (H5Lexists(file, "/PartType1", H5P_DEFAULT) <= 0 || H5Lexists(file, name.c_str(), H5P_DEFAULT) <= 0)
    throw Error(path + ": " + name + ": missing (expected a GADGET/SWIFT-layout snapshot)");
  Handle d(H5Dopen2(file, name.c_str(), H5P_DEFAULT), H5Dclose, path + ": " + name + ": cannot open");
  Handle space(H5Dget_space(d), H5Sclose, path + ": " + name + ": no dataspace");
  const hssize_t points = H5Sget_simple_extent_npoints(space);
  if (points < 0 || static_cast<std::size_t>(points) != expected)
    throw Error(path + ": " + name + ": expected " + std::to_string(expected) + " values, found " + std::to_string(points));
  std::vector<T> out(expected);
  check(H5Dread(d, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, out.data()), path + ": " + name + ": read failed");
  return out;
}

template <class T>
T read_attribute(hid_t object, const char* name, hid_t type, int index, int count, const std::string& path,
                 const std::string& where) {
  if (H5Aexists(object, name) <= 0) throw Error(path + ": " + where + " attribute " + name + ": missing");
  Handle a(H5Aopen(object, name, H5P_DEFAULT), H5Aclose, path + ": " + where + " attribute " + name);
  std::vector<T> values(static_cast<std::size_t>(count));
  check(H5Aread(a, type, values.data()), path + ": " + where + " attribute " + name + ": read failed");
  return values[static_cast<std::size_t>(index)];
}

// A fixed-length string attribute (as string_attribute writes it), at most 64 characters.
std::string read_string_attribute(hid_t object, const char* name, const std::string& path, const std::string& where) {
  Handle a(H5Aopen(object, name, H5P_DEFAULT), H5Aclose, path + ": " + where + " attribute " + name);
  Handle stored(H5Aget_type(a), H5Tclose, path + ": " + where + " attribute " + name + ": no type");
  const std::size_t size = H5Tget_size(stored);
  if (H5Tget_class(stored) != H5T_STRING || H5Tis_variable_str(stored) > 0 || size == 0 || size > 64)
    throw Error(path + ": " + where + " attribute " + name + ": expected a short fixed-length string");
  Handle type(H5Tcopy(H5T_C_S1), H5Tclose, path + ": HDF5 string type");
  check(H5Tset_size(type, size + 1), path + ": HDF5 string size");
  std::string value(size + 1, '\0');
  check(H5Aread(a, type, value.data()), path + ": " + where + " attribute " + name + ": read failed");
  value.resize(value.find('\0'));
  return value;
}

}  // namespace

bool snapshots_available() { return true; }

void write_snapshot(const std::string& path, const nbody::Bodies& b, const SnapshotInfo& info) {
  quiet_hdf5();
  const std::size_t n = b.size();
  write_atomically(path, [&](const std::string& temporary) {
    Handle file(H5Fcreate(temporary.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT), H5Fclose,
                path + ": cannot create the HDF5 file");
    {
      Handle header(H5Gcreate2(file, "/Header", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Gclose, path + ": /Header");
      std::vector<std::uint32_t> this_file(6, 0), total(6, 0), high(6, 0);
      this_file[1] = static_cast<std::uint32_t>(n);
      total[1] = static_cast<std::uint32_t>(n & 0xffffffffu);
      high[1] = static_cast<std::uint32_t>(static_cast<std::uint64_t>(n) >> 32);
      attribute(header, "NumPart_ThisFile", H5T_NATIVE_UINT32, this_file, path);
      attribute(header, "NumPart_Total", H5T_NATIVE_UINT32, total, path);
      attribute(header, "NumPart_Total_HighWord", H5T_NATIVE_UINT32, high, path);
      attribute(header, "MassTable", H5T_NATIVE_DOUBLE, std::vector<double>(6, 0.0), path);  // masses per body
      attribute(header, "Time", H5T_NATIVE_DOUBLE, std::vector<double>{info.time}, path);
      attribute(header, "Redshift", H5T_NATIVE_DOUBLE, std::vector<double>{0.0}, path);
      attribute(header, "BoxSize", H5T_NATIVE_DOUBLE, std::vector<double>{0.0}, path);  // not periodic
      attribute(header, "NumFilesPerSnapshot", H5T_NATIVE_INT32, std::vector<std::int32_t>{1}, path);
      for (const char* flag : {"Flag_Sfr", "Flag_Cooling", "Flag_Feedback", "Flag_StellarAge", "Flag_Metals"})
        attribute(header, flag, H5T_NATIVE_INT32, std::vector<std::int32_t>{0}, path);
      string_attribute(header, "Units", "Henon N-body units: G = 1, total mass 1, E = -1/4", path);
    }
    {
      Handle group(H5Gcreate2(file, "/PartType1", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Gclose, path + ": /PartType1");
      std::vector<double> xyz(3 * n), vel(3 * n);
      std::vector<std::uint64_t> ids(n);
      for (std::size_t i = 0; i < n; ++i) {
        xyz[3 * i] = b.x[i], xyz[3 * i + 1] = b.y[i], xyz[3 * i + 2] = b.z[i];
        vel[3 * i] = b.vx[i], vel[3 * i + 1] = b.vy[i], vel[3 * i + 2] = b.vz[i];
        ids[i] = i + 1;
      }
      dataset(group, "Coordinates", H5T_NATIVE_DOUBLE, xyz.data(), {n, 3}, path);
      dataset(group, "Velocities", H5T_NATIVE_DOUBLE, vel.data(), {n, 3}, path);
      dataset(group, "Masses", H5T_NATIVE_DOUBLE, b.mass.data(), {n}, path);
      dataset(group, "ParticleIDs", H5T_NATIVE_UINT64, ids.data(), {n}, path);
    }
    {
      Handle group(H5Gcreate2(file, "/nbkit", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Gclose, path + ": /nbkit");
      attribute(group, "Step", H5T_NATIVE_INT64, std::vector<std::int64_t>{info.step}, path);
      attribute(group, "TimeStep", H5T_NATIVE_DOUBLE, std::vector<double>{info.dt}, path);
      attribute(group, "Softening", H5T_NATIVE_DOUBLE, std::vector<double>{info.softening}, path);
      attribute(group, "Seed", H5T_NATIVE_UINT64, std::vector<std::uint64_t>{info.seed}, path);
      attribute(group, "InitialEnergy", H5T_NATIVE_DOUBLE, std::vector<double>{info.initial_energy}, path);
      string_attribute(group, "Integrator", "leapfrog kick-drift-kick", path);
      string_attribute(group, "Method", info.method, path);
      if (info.method == "tree") {
        attribute(group, "Theta", H5T_NATIVE_DOUBLE, std::vector<double>{info.theta}, path);
        string_attribute(group, "Multipole", info.multipole, path);
      }
    }
    check(H5Fflush(file, H5F_SCOPE_GLOBAL), path + ": HDF5 flush failed (disk full?)");
  });
}

nbody::Bodies read_snapshot(const std::string& path, SnapshotInfo* info) {
  quiet_hdf5();
  if (H5Fis_hdf5(path.c_str()) <= 0) throw Error(path + ": not an HDF5 file (or missing)");
  Handle file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose, path + ": cannot open");
  if (H5Lexists(file, "/Header", H5P_DEFAULT) <= 0) throw Error(path + ": /Header: missing (not a GADGET/SWIFT snapshot)");
  Handle header(H5Gopen2(file, "/Header", H5P_DEFAULT), H5Gclose, path + ": /Header");
  const std::uint64_t low = read_attribute<std::uint32_t>(header, "NumPart_Total", H5T_NATIVE_UINT32, 1, 6, path, "/Header");
  std::uint64_t high = 0;
  if (H5Aexists(header, "NumPart_Total_HighWord") > 0)
    high = read_attribute<std::uint32_t>(header, "NumPart_Total_HighWord", H5T_NATIVE_UINT32, 1, 6, path, "/Header");
  const std::size_t n = static_cast<std::size_t>(low | (high << 32));
  if (n == 0) throw Error(path + ": /Header NumPart_Total: no bodies of type 1");
  check_memory(nbody::run_memory_bytes(n), fmt::format("{}: {} bodies", path, n));
  const auto xyz = read_dataset<double>(file, "/PartType1/Coordinates", H5T_NATIVE_DOUBLE, 3 * n, path);
  const auto vel = read_dataset<double>(file, "/PartType1/Velocities", H5T_NATIVE_DOUBLE, 3 * n, path);
  const auto mass = read_dataset<double>(file, "/PartType1/Masses", H5T_NATIVE_DOUBLE, n, path);
  // A corrupt snapshot must not start a run whose energies are NaN: every value checked.
  for (std::size_t k = 0; k < 3 * n; ++k) {
    if (!std::isfinite(xyz[k]))
      throw Error(fmt::format("{}: /PartType1/Coordinates: body {}: {} = {} is not finite", path, k / 3 + 1, "xyz"[k % 3],
                              xyz[k]));
    if (!std::isfinite(vel[k]))
      throw Error(fmt::format("{}: /PartType1/Velocities: body {}: v{} = {} is not finite", path, k / 3 + 1, "xyz"[k % 3],
                              vel[k]));
  }
  for (std::size_t i = 0; i < n; ++i)
    if (!(mass[i] > 0) || !std::isfinite(mass[i]))
      throw Error(fmt::format("{}: /PartType1/Masses: body {}: {} is not a positive finite mass", path, i + 1, mass[i]));
  nbody::Bodies b;
  b.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    b.x[i] = xyz[3 * i], b.y[i] = xyz[3 * i + 1], b.z[i] = xyz[3 * i + 2];
    b.vx[i] = vel[3 * i], b.vy[i] = vel[3 * i + 1], b.vz[i] = vel[3 * i + 2];
    b.mass[i] = mass[i];
  }
  if (info) {
    info->time = read_attribute<double>(header, "Time", H5T_NATIVE_DOUBLE, 0, 1, path, "/Header");
    if (H5Lexists(file, "/nbkit", H5P_DEFAULT) > 0) {
      Handle group(H5Gopen2(file, "/nbkit", H5P_DEFAULT), H5Gclose, path + ": /nbkit");
      info->step = read_attribute<std::int64_t>(group, "Step", H5T_NATIVE_INT64, 0, 1, path, "/nbkit");
      info->dt = read_attribute<double>(group, "TimeStep", H5T_NATIVE_DOUBLE, 0, 1, path, "/nbkit");
      info->softening = read_attribute<double>(group, "Softening", H5T_NATIVE_DOUBLE, 0, 1, path, "/nbkit");
      info->seed = read_attribute<std::uint64_t>(group, "Seed", H5T_NATIVE_UINT64, 0, 1, path, "/nbkit");
      info->initial_energy = read_attribute<double>(group, "InitialEnergy", H5T_NATIVE_DOUBLE, 0, 1, path, "/nbkit");
      if (H5Aexists(group, "Method") > 0) {
        info->method = read_string_attribute(group, "Method", path, "/nbkit");
        if (info->method != "all-pairs" && info->method != "tree")
          throw Error(fmt::format("{}: /nbkit Method '{}': expected all-pairs or tree", path, info->method));
        if (info->method == "tree") {
          info->theta = read_attribute<double>(group, "Theta", H5T_NATIVE_DOUBLE, 0, 1, path, "/nbkit");
          info->multipole = read_string_attribute(group, "Multipole", path, "/nbkit");
          if (!(info->theta >= 0 && info->theta <= 1))
            throw Error(fmt::format("{}: /nbkit Theta {} is not an opening angle in [0, 1]", path, info->theta));
          if (info->multipole != "quadrupole" && info->multipole != "monopole")
            throw Error(fmt::format("{}: /nbkit Multipole '{}': expected quadrupole or monopole", path, info->multipole));
        }
      }
      if (info->step < 0) throw Error(fmt::format("{}: /nbkit Step {} is negative", path, info->step));
      if (!(info->dt > 0) || !std::isfinite(info->dt))
        throw Error(fmt::format("{}: /nbkit TimeStep {} is not a positive finite number", path, info->dt));
      if (!(info->softening > 0) || !std::isfinite(info->softening))
        throw Error(fmt::format("{}: /nbkit Softening {} is not a positive finite number", path, info->softening));
      if (!std::isfinite(info->initial_energy) || info->initial_energy == 0)
        throw Error(fmt::format("{}: /nbkit InitialEnergy {} is not a finite, non-zero energy", path,
                                info->initial_energy));
    }
    if (!std::isfinite(info->time)) throw Error(fmt::format("{}: /Header Time {} is not finite", path, info->time));
  }
  return b;
}

}  // namespace nbkit::io
