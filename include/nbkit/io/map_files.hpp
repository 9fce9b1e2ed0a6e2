#pragma once
// Potential map files: OpenDX as APBS writes it, and CCP4/MRC through gemmi.
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "nbkit/maps.hpp"

namespace nbkit {
class Ranks;
}

namespace nbkit::io {

// The formats, chosen by the output's name:
//   .dx      OpenDX in APBS's layout (gridpositions, gridconnections, an array of doubles with x
//            slowest and z fastest, three values a line, %.7e), readable by VMD, PyMOL, ChimeraX,
//            APBS's tools and GridDataFormats; comments become '#' lines at the top
//   .dx.gz   the same text, gzip-compressed (a gzip member per chunk, compressed on every core)
//   .dxbin   APBS's binary OpenDX (Vgrid_writeDXBIN: "binary data follows", little-endian doubles)
//   .mrc .map .ccp4  CCP4/MRC mode 2 (float32), header through gemmi, ORIGIN words in Angstrom,
//            voxel size = spacing, axis order z, y, x (MAPC/MAPR/MAPS 3, 2, 1: the map's own order)
enum class MapFormat { dx, dx_gzip, dx_binary, ccp4 };
MapFormat guess_map_format(const std::string& path);
std::string to_string(MapFormat format);

// A map file being written: the values in file order (x slowest, z fastest), a slab of whole
// lattice rows at a time. Only write_map_file makes one.
class MapFileWriter {
 public:
  virtual ~MapFileWriter() = default;
  virtual void write(const double* values, std::int64_t count) = 0;
  virtual std::uint64_t bytes_written() const = 0;
};

// Writes `path` a slab at a time: `produce` is handed the writer and gives it all
// lattice.size() values in order; only then does the file appear (written to a temporary and
// renamed into place: an exception, or too few values, leaves no file and the old one intact).
// Text is formatted (and compressed) on `threads` threads (0: every core, at most 64).
void write_map_file(const std::string& path, const Lattice& lattice, const std::vector<std::string>& comments,
                    const std::function<void(MapFileWriter&)>& produce, int threads = 0);
void write_map_file(const std::string& path, MapFormat format, const Lattice& lattice,
                    const std::vector<std::string>& comments, const std::function<void(MapFileWriter&)>& produce,
                    int threads = 0);

// The map file written by the ranks of a job (mpirun; issue 22), each giving the values of its
// own rows [row_begin, row_end) to its writer: consecutive ranks hold consecutive rows, together
// the lattice (a rank may hold none). Collective. CCP4/MRC and binary OpenDX go from every rank
// straight to their place in the file (MPI-IO); OpenDX text, plain or compressed, is formatted
// (and compressed) by each rank and written by rank 0 in rank order, as is every format written
// into a pipe. The file's bytes are one process's (a .dx.gz's gzip members also end where a
// rank's rows do: the same text), and it appears only when every rank has written its part.
// One rank: write_map_file above.
void write_map_file(const Ranks& ranks, const std::string& path, const Lattice& lattice,
                    const std::vector<std::string>& comments, std::int64_t row_begin, std::int64_t row_end,
                    const std::function<void(MapFileWriter&)>& produce, int threads = 0);

// A whole map in memory, through the same writers (`progress` hears the fraction written).
void write_map(const std::string& path, const Map& map, const std::vector<std::string>& comments = {},
               const std::function<void(double)>& progress = {});
void write_dx(const std::string& path, const Map& map, const std::vector<std::string>& comments = {},
              const std::function<void(double)>& progress = {});  // OpenDX text whatever the name
void write_ccp4(const std::string& path, const Map& map);           // CCP4/MRC whatever the name

// What writing a map in the format `path` names needs: the file's size (estimated for text),
// and the memory the writer holds besides the values it is given (formatted text, MRC's float32
// pieces of at most 4 MiB).
std::uint64_t dx_file_bytes(const Lattice& lattice);
std::uint64_t map_file_bytes(const std::string& path, const Lattice& lattice);
std::uint64_t map_write_memory_bytes(const std::string& path, const Lattice& lattice, int threads = 0);

// Reads OpenDX written by nbkit, APBS, VMD or GridDataFormats (rectilinear, equal spacing
// on the three axes), gzip-compressed or not, text or APBS's binary. Errors name the line and
// what was expected.
Map parse_dx(std::string_view text, const std::string& source);
Map read_dx(const std::string& path);
// CCP4/MRC through gemmi (any axis order; origin from the ORIGIN words, spacing from the cell).
Map read_ccp4(const std::string& path);
// Either, by the name (guess_map_format).
Map read_map(const std::string& path);

}  // namespace nbkit::io
