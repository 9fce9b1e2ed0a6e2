#pragma once
// The frames of a trajectory that a command reads (nbkit map --trajectory, nbkit rdf): a DCD,
// XTC or TRR (through libgromacs) streams frame by frame; the models of a multi-model PQR/PDB/mmCIF file are read whole (their
// CRYST1 cell, when there is one, is every frame's).
#include <condition_variable>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
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
  ~TrajectoryFrames();  // stops the read-ahead thread, if any
  TrajectoryFrames(const TrajectoryFrames&) = delete;
  TrajectoryFrames& operator=(const TrajectoryFrames&) = delete;
  // To the next frame in range; false at the end. Frames out of range (--stride) are passed
  // over without reading them where the format allows (DCD). With `load` false the frame in range
  // is passed over too (a frame another rank computes): frame() and load() then still hold the
  // frame before it.
  bool advance(bool load = true);
  // From now on a thread reads the frames after the current one (up to kReadAhead of them)
  // while the caller works on this one; advance() takes them in order, and rethrows a read error
  // once the frames before it are taken; advance(false) is then refused. For commands whose
  // per-frame work can overlap the disk's (nbkit rdf, nbkit map --trajectory in memory).
  void read_ahead();
  static constexpr std::size_t kReadAhead = 3;
  const io::DcdFrame& frame() const { return frame_; }  // with the cell where the file has one
  long long index() const { return index_; }             // 0-based, in the file
  // The positions into `target`: every atom's, or those of the atoms `only` lists (0-based).
  void load(Atoms& target, const std::vector<std::int32_t>& only = {}) const;
  long long expected() const;  // frames in range (for progress bars); -1: unknown (XTC, TRR)

 private:
  // The frame after `index` that the range takes, into `into` (index moved to it); false at the end.
  bool step(io::DcdFrame& into, long long& index, bool load);
  bool next(io::DcdFrame& into, long long index, bool load);
  void read_frames_ahead(long long index);  // the read-ahead thread's loop
  std::string path_;
  FrameRange range_;
  std::unique_ptr<io::DcdReader> dcd_;
  std::unique_ptr<io::GromacsTrajectoryReader> gromacs_;  // XTC, TRR
  std::vector<Atoms> models_;
  std::optional<std::array<double, 6>> model_cell_;  // the models' CRYST1 as a DCD cell record
  std::int64_t total_ = 0;
  io::DcdFrame frame_;
  long long index_ = -1;
  // Read-ahead: frames read by `reader_` (with their indices) waiting to be taken, buffers to
  // reuse, and how the reading ended.
  bool read_ahead_ = false;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::pair<long long, io::DcdFrame>> ready_;
  std::vector<io::DcdFrame> spare_;
  bool ended_ = false, stop_ = false;
  std::exception_ptr error_;
  std::thread reader_;
};

}  // namespace nbkit::cli
