// Reading CCP4/MRC maps through gemmi (the writer is map_writer.cpp), and reading either format
// by its name.
#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <gemmi/ccp4.hpp>

#include "nbkit/core/error.hpp"
#include "nbkit/io/map_files.hpp"

namespace nbkit::io {

Map read_ccp4(const std::string& path) {
  if (!std::filesystem::exists(path)) throw Error(path + ": no such file");
  gemmi::Ccp4<float> ccp4;
  try {
    ccp4.read_ccp4_file(path);
    ccp4.setup(NAN, gemmi::MapSetup::ReorderOnly);  // any axis order to x, y, z
  } catch (const std::exception& error) {
    throw Error(fmt::format("{}: not a readable CCP4/MRC map ({})", path, error.what()));
  }
  const auto& grid = ccp4.grid;
  Map map;
  map.lattice.dims = {grid.nu, grid.nv, grid.nw};
  map.lattice.spacing = grid.unit_cell.a / grid.nu;
  map.lattice.origin = {ccp4.header_float(50), ccp4.header_float(51), ccp4.header_float(52)};
  validate(map.lattice);
  map.values.resize(static_cast<std::size_t>(map.lattice.size()));
  for (int i = 0; i < grid.nu; ++i)
    for (int j = 0; j < grid.nv; ++j)
      for (int k = 0; k < grid.nw; ++k) {
        const float v = grid.get_value_q(i, j, k);
        if (!std::isfinite(v)) throw Error(fmt::format("{}: value ({}, {}, {}) is not a finite number", path, i, j, k));
        map.values[static_cast<std::size_t>(map.lattice.index(i, j, k))] = v;
      }
  return map;
}

Map read_map(const std::string& path) {
  return guess_map_format(path) == MapFormat::ccp4 ? read_ccp4(path) : read_dx(path);
}

}  // namespace nbkit::io
