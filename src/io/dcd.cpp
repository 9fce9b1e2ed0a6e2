// DCD trajectories (dcd.hpp). The layout, after the CHARMM documentation and the readers
// of VMD's molfile plugin and MDAnalysis (written here from the format, not their code):
//   record 1 (84 bytes): "CORD", 20 int32 control words: [0] frames, [1] first step,
//            [2] steps between frames, [8] fixed atoms, [9] time step (float32, or float64
//            over words 9-10 in X-PLOR files), [10] unit cell present, [11] 4-D, [19] CHARMM
//            version (non-zero: CHARMM flavour)
//   record 2: int32 title count, then 80-character titles
//   record 3: int32 atom count
//   per frame: [unit cell: 6 float64] X, Y, Z: atom count float32 each
// Every record is framed by its byte length as int32 before and after.
#include "nbkit/io/dcd.hpp"

#include <fmt/format.h>

#include <bit>
#include <cstring>

#include "nbkit/core/error.hpp"
#include "nbkit/io/atomic_file.hpp"

namespace nbkit::io {

namespace {

std::uint32_t byteswap32(std::uint32_t v) {
  return (v >> 24) | ((v >> 8) & 0xff00u) | ((v << 8) & 0xff0000u) | (v << 24);
}

void swap_words(void* data, std::int64_t bytes, int word) {
  auto* p = static_cast<unsigned char*>(data);
  for (std::int64_t i = 0; i + word <= bytes; i += word)
    for (int a = 0, b = word - 1; a < b; ++a, --b) std::swap(p[i + a], p[i + b]);
}

}  // namespace

std::int32_t DcdReader::read_int() {
  std::uint32_t v = 0;
  in_.read(reinterpret_cast<char*>(&v), 4);
  if (!in_) throw Error(path_ + ": unexpected end of file");
  if (swap_) v = byteswap32(v);
  return static_cast<std::int32_t>(v);
}

void DcdReader::read_record(void* data, std::int64_t bytes, const char* what) {
  const std::string where = read_ >= 0 && first_frame_offset_ > 0 ? fmt::format("frame {}: ", read_ + 1) : "";
  std::int32_t head = 0, tail = 0;
  in_.read(reinterpret_cast<char*>(&head), 4);
  if (!in_) throw Error(fmt::format("{}: {}{}: the file ends inside the frame (truncated)", path_, where, what));
  if (swap_) head = static_cast<std::int32_t>(byteswap32(static_cast<std::uint32_t>(head)));
  if (head != bytes)
    throw Error(fmt::format("{}: {}{}: record of {} bytes, expected {} (corrupt file or a different atom count)", path_,
                            where, what, head, bytes));
  in_.read(static_cast<char*>(data), bytes);
  in_.read(reinterpret_cast<char*>(&tail), 4);
  if (!in_) throw Error(fmt::format("{}: {}{}: the file ends inside the frame (truncated)", path_, where, what));
  if (swap_) tail = static_cast<std::int32_t>(byteswap32(static_cast<std::uint32_t>(tail)));
  if (tail != head) throw Error(fmt::format("{}: {}{}: record markers {} and {} differ (corrupt file)", path_, where, what, head, tail));
}

DcdReader::DcdReader(const std::string& path) : path_(path), in_(path, std::ios::binary) {
  if (!in_) throw Error(path + ": cannot open");
  std::uint32_t first = 0;
  in_.read(reinterpret_cast<char*>(&first), 4);
  if (!in_) throw Error(path + ": empty file, not a DCD trajectory");
  if (first == 84) swap_ = false;
  else if (byteswap32(first) == 84) swap_ = true;
  else throw Error(path + ": not a DCD file (the first record is not the 84-byte CORD header; 64-bit markers are not supported)");
  in_.seekg(0);
  char header[84];
  read_record(header, 84, "header");
  if (std::memcmp(header, "CORD", 4) != 0) throw Error(path + ": not a DCD file (no CORD signature)");
  std::int32_t control[20];
  std::memcpy(control, header + 4, 80);
  if (swap_) swap_words(control, 80, 4);
  const bool charmm = control[19] != 0;
  if (control[8] != 0) throw Error(fmt::format("{}: {} fixed atoms: DCD files with fixed atoms are not supported", path, control[8]));
  if (charmm && control[11] != 0) throw Error(path + ": 4-D coordinates are not supported");
  has_cell_ = charmm && control[10] != 0;
  float dt32 = 0;
  std::memcpy(&dt32, &control[9], 4);
  timestep_ = charmm ? dt32 : 0.0;
  // Titles.
  const std::int32_t title_bytes = read_int();
  if (title_bytes < 4 || title_bytes > (1 << 20)) throw Error(path + ": malformed title record");
  in_.seekg(title_bytes, std::ios::cur);
  if (read_int() != title_bytes) throw Error(path + ": title record markers differ (corrupt file)");
  std::int32_t natoms = 0;
  read_record(&natoms, 4, "atom count");
  if (swap_) natoms = static_cast<std::int32_t>(byteswap32(static_cast<std::uint32_t>(natoms)));
  if (natoms <= 0) throw Error(fmt::format("{}: atom count {} in the header", path, natoms));
  atoms_ = natoms;
  first_frame_offset_ = static_cast<std::int64_t>(in_.tellg());
  frame_bytes_ = (has_cell_ ? 48 + 8 : 0) + 3 * (4 * atoms_ + 8);
  in_.seekg(0, std::ios::end);
  const std::int64_t size = static_cast<std::int64_t>(in_.tellg());
  frames_ = (size - first_frame_offset_) / frame_bytes_;
  in_.seekg(first_frame_offset_);
  read_ = 0;
}

bool DcdReader::next(DcdFrame& frame) {
  if (in_.peek() == std::char_traits<char>::eof()) return false;
  if (has_cell_) {
    std::array<double, 6> cell{};
    read_record(cell.data(), 48, "unit cell");
    if (swap_) swap_words(cell.data(), 48, 8);
    frame.cell = cell;
  } else {
    frame.cell.reset();
  }
  for (auto* axis : {&frame.x, &frame.y, &frame.z}) {
    axis->resize(static_cast<std::size_t>(atoms_));
    read_record(axis->data(), 4 * atoms_, axis == &frame.x ? "X" : (axis == &frame.y ? "Y" : "Z"));
    if (swap_) swap_words(axis->data(), 4 * atoms_, 4);
  }
  ++read_;
  return true;
}

void write_dcd(const std::string& path, const std::vector<DcdFrame>& frames, double timestep) {
  if (frames.empty()) throw Error(path + ": no frames to write");
  const std::size_t natoms = frames[0].x.size();
  bool cell = true;
  for (const DcdFrame& f : frames) {
    if (f.x.size() != natoms || f.y.size() != natoms || f.z.size() != natoms)
      throw Error(path + ": frames with different atom counts");
    cell = cell && f.cell.has_value();
  }
  write_atomically(path, [&](const std::string& temporary) {
    std::ofstream out(temporary, std::ios::binary);
    auto record = [&](const void* data, std::int32_t bytes) {
      out.write(reinterpret_cast<const char*>(&bytes), 4);
      out.write(static_cast<const char*>(data), bytes);
      out.write(reinterpret_cast<const char*>(&bytes), 4);
    };
    static_assert(std::endian::native == std::endian::little, "write_dcd writes little-endian files from a little-endian host");
    char header[84] = {};
    std::memcpy(header, "CORD", 4);
    std::int32_t control[20] = {};
    control[0] = static_cast<std::int32_t>(frames.size());
    control[1] = 0;
    control[2] = 1;
    control[3] = static_cast<std::int32_t>(frames.size());
    const float dt32 = static_cast<float>(timestep);
    std::memcpy(&control[9], &dt32, 4);
    control[10] = cell ? 1 : 0;
    control[19] = 24;  // CHARMM version 24: the CHARMM flavour
    std::memcpy(header + 4, control, 80);
    record(header, 84);
    char titles[4 + 80] = {};
    const std::int32_t count = 1;
    std::memcpy(titles, &count, 4);
    std::snprintf(titles + 4, 80, "%-79s", "REMARKS written by nbkit");
    record(titles, 84);
    const std::int32_t n = static_cast<std::int32_t>(natoms);
    record(&n, 4);
    for (const DcdFrame& f : frames) {
      if (cell) record(f.cell->data(), 48);
      record(f.x.data(), static_cast<std::int32_t>(4 * natoms));
      record(f.y.data(), static_cast<std::int32_t>(4 * natoms));
      record(f.z.data(), static_cast<std::int32_t>(4 * natoms));
    }
    if (!out) throw Error(path + ": write failed (disk full?)");
  });
}

}  // namespace nbkit::io
