// Compiled only into builds without the HDF5 library (see cmake/NbkitDependencies.cmake).
#include "nbkit/core/error.hpp"
#include "nbkit/io/snapshot.hpp"

namespace nbkit::io {

bool snapshots_available() { return false; }

void write_snapshot(const std::string& path, const nbody::Bodies&, const SnapshotInfo&) {
  throw Error(path + ": this build of nbkit has no HDF5 (apt-get install libhdf5-dev, then rebuild): no snapshots");
}

nbody::Bodies read_snapshot(const std::string& path, SnapshotInfo*) {
  throw Error(path + ": this build of nbkit has no HDF5 (apt-get install libhdf5-dev, then rebuild): no snapshots");
}

}  // namespace nbkit::io
