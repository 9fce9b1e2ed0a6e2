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

#include <fcntl.h>
#include <unistd.h>

#include <bit>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <limits>

#include "nbkit/core/atoms.hpp"
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
  file_bytes_ = size;
  frames_ = (size - first_frame_offset_) / frame_bytes_;
  // A partial frame at the end whose header counts exactly the whole frames before it is an
  // append a killed writer did not finish (DcdWriter writes a frame, then the count): those
  // frames are read and the tail ignored. A partial frame the count includes is a truncated
  // file, refused when it is reached.
  const bool partial_tail = (size - first_frame_offset_) % frame_bytes_ != 0;
  if (partial_tail && control[0] == frames_) {
    unfinished_tail_ = true;
    file_bytes_ = first_frame_offset_ + frames_ * frame_bytes_;
  }
  in_.seekg(first_frame_offset_);
  read_ = 0;
}

bool DcdReader::next(DcdFrame& frame) {
  if (unfinished_tail_ && read_ >= frames_) return false;
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
    // A record the rest of the file cannot hold is truncated: said before the array is sized
    // by the header's atom count (a corrupt count must not allocate gigabytes).
    if (static_cast<std::int64_t>(in_.tellg()) + 4 * atoms_ + 8 > file_bytes_)
      throw Error(fmt::format("{}: frame {}: {}: the file ends inside the frame (truncated)", path_, read_ + 1,
                              axis == &frame.x ? "X" : (axis == &frame.y ? "Y" : "Z")));
    axis->resize(static_cast<std::size_t>(atoms_));
    read_record(axis->data(), 4 * atoms_, axis == &frame.x ? "X" : (axis == &frame.y ? "Y" : "Z"));
    if (swap_) swap_words(axis->data(), 4 * atoms_, 4);
  }
  // Corrupt bytes read as coordinates give NaN, infinities or values like 3e34 that make
  // every map of the frame NaN: refused here, with the frame and the atom.
  for (const auto* axis : {&frame.x, &frame.y, &frame.z})
    for (std::size_t i = 0; i < axis->size(); ++i) {
      const float v = (*axis)[i];
      if (!(std::fabs(v) <= kMaxCoordinate))  // core/atoms.hpp: 0.1 mm
        throw Error(fmt::format("{}: frame {}: atom {}: {} = {} is no coordinate (finite, within {:g} A expected): "
                                "a corrupt frame?",
                                path_, read_ + 1, i + 1, axis == &frame.x ? "x" : (axis == &frame.y ? "y" : "z"), v,
                                kMaxCoordinate));
    }
  ++read_;
  return true;
}

bool DcdReader::skip() {
  if (unfinished_tail_ && read_ >= frames_) return false;
  if (in_.peek() == std::char_traits<char>::eof()) return false;
  if (static_cast<std::int64_t>(in_.tellg()) + frame_bytes_ > file_bytes_)
    throw Error(fmt::format("{}: frame {}: the file ends inside the frame (truncated)", path_, read_ + 1));
  in_.seekg(frame_bytes_, std::ios::cur);
  if (!in_) throw Error(fmt::format("{}: frame {}: cannot seek past it", path_, read_ + 1));
  ++read_;
  return true;
}

namespace {

constexpr std::int64_t kDcdHeaderBytes = 4 + 84 + 4 + 4 + 84 + 4 + 4 + 4 + 4;  // CORD, titles, atom count
constexpr std::int64_t kFrameCountOffset = 8;  // control word 0 (NSET) after the marker and "CORD"
constexpr std::int64_t kLastStepOffset = 8 + 12;  // control word 3 (NSTEP)

void append_record(std::vector<char>& out, const void* data, std::int32_t bytes) {
  const char* marker = reinterpret_cast<const char*>(&bytes);
  out.insert(out.end(), marker, marker + 4);
  out.insert(out.end(), static_cast<const char*>(data), static_cast<const char*>(data) + bytes);
  out.insert(out.end(), marker, marker + 4);
}

}  // namespace

std::uint64_t dcd_file_bytes(std::int64_t atoms, std::int64_t frames, bool with_cell) {
  const std::uint64_t frame = (with_cell ? 56 : 0) + 3 * (4 * static_cast<std::uint64_t>(atoms) + 8);
  return static_cast<std::uint64_t>(kDcdHeaderBytes) + static_cast<std::uint64_t>(frames) * frame;
}

DcdWriter::DcdWriter(const std::string& path, std::int64_t atoms, double timestep, bool with_cell)
    : path_(path), atoms_(atoms), with_cell_(with_cell) {
  static_assert(std::endian::native == std::endian::little, "DcdWriter writes little-endian files from a little-endian host");
  if (atoms < 1 || atoms > std::numeric_limits<std::int32_t>::max() / 4)
    throw Error(fmt::format("{}: {} atoms do not fit a DCD file (1 to {} atoms)", path, atoms,
                            std::numeric_limits<std::int32_t>::max() / 4));
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) throw Error(path + ": cannot write: " + std::strerror(errno));
  std::vector<char> header;
  char cord[84] = {};
  std::memcpy(cord, "CORD", 4);
  std::int32_t control[20] = {};
  control[1] = 0;  // first step
  control[2] = 1;  // steps between frames
  const float dt32 = static_cast<float>(timestep);
  std::memcpy(&control[9], &dt32, 4);
  control[10] = with_cell ? 1 : 0;
  control[19] = 24;  // CHARMM version 24: the CHARMM flavour
  std::memcpy(cord + 4, control, 80);
  append_record(header, cord, 84);
  char titles[4 + 80] = {};
  const std::int32_t count = 1;
  std::memcpy(titles, &count, 4);
  std::snprintf(titles + 4, 80, "%-79s", "REMARKS written by nbkit");
  append_record(header, titles, 84);
  const std::int32_t n = static_cast<std::int32_t>(atoms);
  append_record(header, &n, 4);
  if (::write(fd_, header.data(), header.size()) != static_cast<ssize_t>(header.size())) {
    const std::string reason = std::strerror(errno);
    ::close(fd_);
    fd_ = -1;
    throw Error(path + ": write failed: " + reason);
  }
}

DcdWriter::~DcdWriter() {
  if (fd_ >= 0) ::close(fd_);
}

void DcdWriter::append(const DcdFrame& frame) {
  if (fd_ < 0) throw Error(path_ + ": the trajectory is closed");
  const std::size_t n = static_cast<std::size_t>(atoms_);
  if (frame.x.size() != n || frame.y.size() != n || frame.z.size() != n)
    throw Error(fmt::format("{}: a frame of {} atoms in a trajectory of {}", path_, frame.x.size(), atoms_));
  if (with_cell_ && !frame.cell) throw Error(path_ + ": a frame without its unit cell in a trajectory with cells");
  // (a frame's cell is left out of a trajectory without cells)
  buffer_.clear();
  if (with_cell_) append_record(buffer_, frame.cell->data(), 48);
  for (const auto* axis : {&frame.x, &frame.y, &frame.z})
    append_record(buffer_, axis->data(), static_cast<std::int32_t>(4 * n));
  // The whole frame in one write (a regular file's write is not split by signals), then the
  // count: a reader never sees a count beyond the frames present.
  std::size_t written = 0;
  while (written < buffer_.size()) {
    const ssize_t w = ::write(fd_, buffer_.data() + written, buffer_.size() - written);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) throw Error(fmt::format("{}: write failed after {} frames: {}", path_, frames_, std::strerror(errno)));
    written += static_cast<std::size_t>(w);
  }
  ++frames_;
  const std::int32_t count = static_cast<std::int32_t>(frames_);
  if (::pwrite(fd_, &count, 4, kFrameCountOffset) != 4 || ::pwrite(fd_, &count, 4, kLastStepOffset) != 4)
    throw Error(fmt::format("{}: updating the frame count failed: {}", path_, std::strerror(errno)));
}

void DcdWriter::close() {
  if (fd_ < 0) return;
  const int fd = fd_;
  fd_ = -1;
  if (::fsync(fd) != 0 && errno != EINVAL && errno != EROFS) {
    const std::string reason = std::strerror(errno);
    ::close(fd);
    throw Error(path_ + ": write failed: " + reason);
  }
  if (::close(fd) != 0) throw Error(path_ + ": write failed: " + std::strerror(errno));
}

void write_dcd(const std::string& path, const std::vector<DcdFrame>& frames, double timestep) {
  if (frames.empty()) throw Error(path + ": no frames to write");
  bool cell = true;
  for (const DcdFrame& f : frames) cell = cell && f.cell.has_value();
  write_atomically(path, [&](const std::string& temporary) {
    DcdWriter writer(temporary, static_cast<std::int64_t>(frames[0].x.size()), timestep, cell);
    for (const DcdFrame& f : frames) writer.append(f);
    writer.close();
  });
}

}  // namespace nbkit::io
