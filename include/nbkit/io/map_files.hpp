#pragma once
// Potential map files: OpenDX as APBS writes it, and CCP4/MRC through gemmi.
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "nbkit/maps.hpp"

namespace nbkit::io {

// OpenDX in APBS's layout (gridpositions, gridconnections, an array of doubles with x
// slowest and z fastest, three values a line, %.7e), readable by VMD, PyMOL, ChimeraX,
// APBS's tools and GridDataFormats. `comments` become '#' lines at the top.
// Written to a temporary file and renamed into place.
// `progress` (if given) hears the fraction written.
void write_dx(const std::string& path, const Map& map, const std::vector<std::string>& comments = {},
              const std::function<void(double)>& progress = {});
std::uint64_t dx_file_bytes(const Lattice& lattice);  // estimated size, for the disk check

// Reads OpenDX written by nbkit, APBS, VMD or GridDataFormats (rectilinear, equal spacing
// on the three axes). Errors name the line and what was expected.
Map parse_dx(std::string_view text, const std::string& source);
Map read_dx(const std::string& path);

// CCP4/MRC (mode 2, float32) through gemmi; origin in the header's ORIGIN words, the
// voxel size equal to the lattice spacing. Written atomically.
void write_ccp4(const std::string& path, const Map& map);

enum class MapFormat { dx, ccp4 };
MapFormat guess_map_format(const std::string& path);  // .dx; .mrc, .map, .ccp4
void write_map(const std::string& path, const Map& map, const std::vector<std::string>& comments = {},
               const std::function<void(double)>& progress = {});
// What writing a map in the format `path` names needs: the file's size, and the memory the
// writer holds besides the map (gemmi's float32 grid for CCP4/MRC; chunk buffers for DX).
std::uint64_t map_file_bytes(const std::string& path, const Lattice& lattice);
std::uint64_t map_write_memory_bytes(const std::string& path, const Lattice& lattice);

}  // namespace nbkit::io
