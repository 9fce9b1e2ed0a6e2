// CCP4/MRC maps through gemmi (mode 2, float32), for ChimeraX, PyMOL, Coot and the
// crystallographic tools.
#include <gemmi/ccp4.hpp>
#include <gemmi/symmetry.hpp>

#include <algorithm>
#include <cctype>

#include "nbkit/core/backend.hpp"
#include "nbkit/core/error.hpp"
#include "nbkit/io/atomic_file.hpp"
#include "nbkit/io/map_files.hpp"

namespace nbkit::io {

void write_ccp4(const std::string& path, const Map& map) {
  const Lattice& lattice = map.lattice;
  for (auto n : lattice.dims)
    if (n > (std::int64_t{1} << 30)) throw Error(path + ": lattice too large for a CCP4/MRC file");
  gemmi::Ccp4<float> ccp4;
  auto& grid = ccp4.grid;
  const int nx = static_cast<int>(lattice.dims[0]), ny = static_cast<int>(lattice.dims[1]),
            nz = static_cast<int>(lattice.dims[2]);
  grid.set_size_without_checking(nx, ny, nz);
  // A vertex-centred lattice of n points spans (n-1)*h; a cell of n*h makes the voxel
  // size equal to the spacing, as ChimeraX and VMD expect for non-periodic maps.
  grid.set_unit_cell(nx * lattice.spacing, ny * lattice.spacing, nz * lattice.spacing, 90, 90, 90);
  grid.spacegroup = &gemmi::get_spacegroup_p1();
  grid.axis_order = gemmi::AxisOrder::XYZ;
  // gemmi's grid is x fastest; the map is z fastest.
  for (int i = 0; i < nx; ++i)
    for (int j = 0; j < ny; ++j)
      for (int k = 0; k < nz; ++k)
        grid.data[static_cast<std::size_t>(i) + static_cast<std::size_t>(nx) * (j + static_cast<std::size_t>(ny) * k)] =
            static_cast<float>(map.at(i, j, k));
  ccp4.update_ccp4_header(2, true);
  ccp4.set_header_float(50, static_cast<float>(lattice.origin.x));  // ORIGIN (MRC-2014), Angstrom
  ccp4.set_header_float(51, static_cast<float>(lattice.origin.y));
  ccp4.set_header_float(52, static_cast<float>(lattice.origin.z));
  write_atomically(path, [&](const std::string& temporary) {
    try {
      ccp4.write_ccp4_map(temporary);
    } catch (const std::exception& error) {
      throw Error(path + ": " + error.what());
    }
  });
}

MapFormat guess_map_format(const std::string& path) {
  std::string name = path;
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
  if (name.ends_with(".mrc") || name.ends_with(".map") || name.ends_with(".ccp4")) return MapFormat::ccp4;
  if (name.ends_with(".dx")) return MapFormat::dx;
  throw Error(path + ": unknown map format: expected a name ending in .dx, .mrc, .map or .ccp4");
}

void write_map(const std::string& path, const Map& map, const std::vector<std::string>& comments,
               const std::function<void(double)>& progress) {
  if (guess_map_format(path) == MapFormat::ccp4) {
    write_ccp4(path, map);
    if (progress) progress(1.0);
  } else {
    write_dx(path, map, comments, progress);
  }
}

std::uint64_t map_file_bytes(const std::string& path, const Lattice& lattice) {
  if (guess_map_format(path) == MapFormat::ccp4) return 1024 + 4 * static_cast<std::uint64_t>(lattice.size());
  return dx_file_bytes(lattice);
}

std::uint64_t map_write_memory_bytes(const std::string& path, const Lattice& lattice) {
  if (guess_map_format(path) == MapFormat::ccp4) return 4 * static_cast<std::uint64_t>(lattice.size());
  // One chunk of formatted lines per thread (dx.cpp: up to 64).
  return static_cast<std::uint64_t>(std::min(64, hardware_threads())) * 15 * (3u << 16);
}

}  // namespace nbkit::io
