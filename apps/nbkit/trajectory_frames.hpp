#pragma once
// The frames of a trajectory that a command reads (nbkit map --trajectory, nbkit rdf): a DCD,
// XTC or TRR (through libgromacs) streams frame by frame; the models of a multi-model PQR/PDB/mmCIF file are read whole (their
// CRYST1 cell, when there is one, is every frame's).
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
  const io::DcdFrame& frame() const { return frame_; }  // with the cell where the file has one
  long long index() const { return index_; }             // 0-based, in the file
  // The positions into `target`: every atom's, or those of the atoms `only` lists (0-based).
  void load(Atoms& target, const std::vector<std::int32_t>& only = {}) const;
  long long expected() const;  // frames in range (for progress bars); -1: unknown (XTC, TRR)

 private:
  bool next(bool load);
  std::string path_;
  FrameRange range_;
  std::unique_ptr<io::DcdReader> dcd_;
  std::unique_ptr<io::GromacsTrajectoryReader> gromacs_;  // XTC, TRR
  std::vector<Atoms> models_;
  std::optional<std::array<double, 6>> model_cell_;  // the models' CRYST1 as a DCD cell record
  std::int64_t total_ = 0;
  io::DcdFrame frame_;
  long long index_ = -1;
};

}  // namespace nbkit::cli
