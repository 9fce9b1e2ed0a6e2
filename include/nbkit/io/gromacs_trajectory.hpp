#pragma once
// GROMACS trajectories (XTC, TRR) through Debian's libgromacs (GROMACS 2022's installed
// trajectory API, gromacs/fileio/trxio.h), in builds that found it (NBKIT_HAVE_GROMACS);
// elsewhere the reader says that the build has no GROMACS. Frames come as DcdFrame: positions in
// Angstrom (GROMACS's nm x 10, in float32 as MDAnalysis converts them), the box as a DCD
// unit-cell record (A, gamma, B, beta, alpha, C; degrees).
#include <cstdint>
#include <memory>
#include <string>

#include "nbkit/io/dcd.hpp"

namespace nbkit::io {

// Whether this build reads XTC and TRR files.
bool gromacs_trajectories_available();

class GromacsTrajectoryReader {
 public:
  // Checks the file's magic number (XTC 1995, TRR 1993) and reads the first frame; throws
  // nbkit::Error naming the file when it is not one, or when the build has no GROMACS. GROMACS's
  // own fatal errors on a corrupt frame become nbkit::Error too.
  explicit GromacsTrajectoryReader(const std::string& path);
  ~GromacsTrajectoryReader();
  GromacsTrajectoryReader(const GromacsTrajectoryReader&) = delete;
  GromacsTrajectoryReader& operator=(const GromacsTrajectoryReader&) = delete;
  std::int64_t atoms() const;
  // The next frame (the first on the first call); false at the end. A truncated last frame ends
  // the file, with GROMACS's warning on stderr.
  bool next(DcdFrame& frame);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace nbkit::io
