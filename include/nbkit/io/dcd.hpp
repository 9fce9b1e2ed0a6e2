#pragma once
// DCD trajectories (CHARMM/NAMD/LAMMPS/OpenMM): the CHARMM flavour with or without the
// unit-cell block, little- or big-endian (detected from the first record marker), 32-bit
// record markers. Fixed atoms and 4-D coordinates are refused with a clear error.
#include <array>
#include <cstdint>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

namespace nbkit::io {

struct DcdFrame {
  std::vector<float> x, y, z;                 // Angstrom
  std::optional<std::array<double, 6>> cell;  // as stored: A, gamma, B, beta, alpha, C
};

class DcdReader {
 public:
  explicit DcdReader(const std::string& path);  // reads and checks the header
  std::int64_t atoms() const { return atoms_; }
  std::int64_t frames() const { return frames_; }  // from the file size (the header's count may be stale)
  bool has_cell() const { return has_cell_; }
  double timestep() const { return timestep_; }  // as stored (AKMA units for CHARMM/NAMD)
  // The next frame; false at the end of the file. Throws nbkit::Error naming the file and
  // the frame (1-based) when a frame is truncated or its records are malformed.
  bool next(DcdFrame& frame);
  // Passes over the next frame without reading it (DCD frames have a fixed size: a seek), for a
  // reader that needs only some frames (--stride, a rank's share under mpirun); false at the end
  // of the file. Throws as next() does when the file ends inside the frame; the skipped frame's
  // contents are not checked.
  bool skip();
  std::int64_t frames_read() const { return read_; }  // read or skipped

 private:
  std::int32_t read_int();
  void read_record(void* data, std::int64_t bytes, const char* what);
  std::string path_;
  std::ifstream in_;
  bool swap_ = false, has_cell_ = false;
  std::int64_t atoms_ = 0, frames_ = 0, read_ = 0, first_frame_offset_ = 0, frame_bytes_ = 0, file_bytes_ = 0;
  bool unfinished_tail_ = false;  // a partial last frame the header does not count: ignored
  double timestep_ = 0;
};

// Writes a trajectory frame by frame as a run makes it, so a crash or Ctrl-C keeps every
// frame written so far: the header first (0 frames), then each frame in one write(2) and the
// header's frame count updated after it (as VMD's dcdplugin does), so the file is a valid DCD
// at every moment. The CHARMM flavour, little-endian, with the unit-cell block when
// `with_cell`. Writes the file in place (a stream, not a rename: see io/atomic_file.hpp).
class DcdWriter {
 public:
  DcdWriter(const std::string& path, std::int64_t atoms, double timestep, bool with_cell);
  ~DcdWriter();
  DcdWriter(const DcdWriter&) = delete;
  DcdWriter& operator=(const DcdWriter&) = delete;
  void append(const DcdFrame& frame);  // throws nbkit::Error naming the file (disk full, wrong atom count)
  std::int64_t frames() const { return frames_; }
  void close();  // flushes to the disk; the destructor closes too (without throwing)

 private:
  std::string path_;
  int fd_ = -1;
  std::int64_t atoms_ = 0, frames_ = 0;
  bool with_cell_ = false;
  std::vector<char> buffer_;
};

// Bytes of a DCD of `frames` frames of `atoms` atoms (for the disk check before a run).
std::uint64_t dcd_file_bytes(std::int64_t atoms, std::int64_t frames, bool with_cell);

// Writes frames in the CHARMM flavour (little-endian, with the unit-cell block when every
// frame has a cell), atomically.
void write_dcd(const std::string& path, const std::vector<DcdFrame>& frames, double timestep = 1.0);

}  // namespace nbkit::io
