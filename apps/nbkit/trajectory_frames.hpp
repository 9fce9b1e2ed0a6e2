#pragma once
// The frames of a trajectory that a command reads (nbkit map --trajectory, nbkit rdf): a DCD,
// XTC or TRR (through libgromacs) streams frame by frame; the models of a multi-model PQR/PDB/mmCIF file are read whole (their
// CRYST1 cell, when there is one, is every frame's).
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "nbkit/core/atoms.hpp"
#include "nbkit/io/dcd.hpp"
#include "nbkit/io/gromacs_trajectory.hpp"

namespace nbkit::cli {

struct FrameRange {
  long long first = 0, last = -1, stride = 1;  // 0-based, last -1: to the end
};

class TrajectoryFrames {
 public:
  // Throws nbkit::Error for a bad range, a file of another atom count than `atoms` (of the
  // structure `structure`), or no frame at `first`; the first frame in range is then loaded.
  TrajectoryFrames(const std::string& path, const FrameRange& range, std::size_t atoms, const std::string& structure);
  // To the next frame in range; false at the end. Frames out of range (--stride) are passed
  // over without reading them where the format allows (DCD). With `load` false the frame in range
  // is passed over too (a frame another rank computes): frame() and load() then still hold the
  // frame before it.
  bool advance(bool load = true);
  // From now on the frame after the current one is read on a thread while the caller works on
  // this one (advance() then waits for it, and rethrows its read error); advance(false) is then
  // refused. For commands whose per-frame work overlaps the disk's (nbkit rdf on a GPU).
  void read_ahead();
  const io::DcdFrame& frame() const { return frame_; }  // with the cell where the file has one
  long long index() const { return index_; }             // 0-based, in the file
  // The positions into `target`: every atom's, or those of the atoms `only` lists (0-based).
  void load(Atoms& target, const std::vector<std::int32_t>& only = {}) const;
  long long expected() const;  // frames in range (for progress bars); -1: unknown (XTC, TRR)

 private:
  // The frame after `index` that the range takes, into `into` (index moved to it); false at the end.
  bool step(io::DcdFrame& into, long long& index, bool load);
  bool next(io::DcdFrame& into, long long index, bool load);
  void start_reading_ahead();
  std::string path_;
  FrameRange range_;
  std::unique_ptr<io::DcdReader> dcd_;
  std::unique_ptr<io::GromacsTrajectoryReader> gromacs_;  // XTC, TRR
  std::vector<Atoms> models_;
  std::optional<std::array<double, 6>> model_cell_;  // the models' CRYST1 as a DCD cell record
  std::int64_t total_ = 0;
  io::DcdFrame frame_;
  long long index_ = -1;
  // Read-ahead: the next frame and its index, being read into by `ahead_`'s thread. Declared last:
  // destroyed first, so the thread has finished before the readers above go.
  bool read_ahead_ = false;
  io::DcdFrame spare_;
  long long spare_index_ = -1;
  std::future<bool> ahead_;
};

}  // namespace nbkit::cli
