// Compiled only into builds without libgromacs: XTC and TRR files are refused with the reason.
#include "nbkit/core/error.hpp"
#include "nbkit/io/gromacs_trajectory.hpp"

namespace nbkit::io {

bool gromacs_trajectories_available() { return false; }

struct GromacsTrajectoryReader::State {};

GromacsTrajectoryReader::GromacsTrajectoryReader(const std::string& path) {
  throw Error(path + ": this build of nbkit reads no XTC or TRR files (it was built without GROMACS's library: "
              "apt-get install libgromacs-dev and rebuild); convert to DCD, e.g. with 'gmx trjconv' or MDAnalysis");
}
GromacsTrajectoryReader::~GromacsTrajectoryReader() = default;
std::int64_t GromacsTrajectoryReader::atoms() const { return 0; }
bool GromacsTrajectoryReader::next(DcdFrame&) { return false; }

}  // namespace nbkit::io
