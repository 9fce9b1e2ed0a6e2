#pragma once
// N-body snapshots in the GADGET/SWIFT HDF5 layout, which yt ("gadget_hdf5"), pynbody and
// the GADGET and SWIFT tools read: a /Header group with the GADGET attributes (NumPart_*,
// MassTable, Time, Redshift, BoxSize, NumFilesPerSnapshot) and the bodies as particle type 1
// (/PartType1/Coordinates and Velocities, N x 3 float64; Masses, N float64; ParticleIDs,
// N uint64). Units are Henon's N-body units (G = M = 1), stated in /Header's Units
// attribute. An /nbkit group holds what a restart needs (step, dt, softening, seed, initial energy).
#include <cstdint>
#include <string>

#include "nbkit/nbody.hpp"

namespace nbkit::io {

struct SnapshotInfo {
  double time = 0;          // N-body units
  std::int64_t step = 0;    // steps taken since the initial conditions
  double dt = 0, softening = 0;
  std::uint64_t seed = 0;
  double initial_energy = 0;  // E at step 0, for the relative energy error of a continued run
  // The forces of the run ("all-pairs" or "tree" with its opening angle and "quadrupole" or
  // "monopole"), so that a restart continues with the same ones. Snapshots without them
  // (older ones, other codes') read as all pairs.
  std::string method = "all-pairs";
  double theta = 0;
  std::string multipole;
};

// Bytes of a snapshot of n bodies (coordinates, velocities, masses, IDs; ~8 KiB of
// metadata), for the disk check before a run.
inline std::uint64_t snapshot_file_bytes(std::size_t n) { return 64 * static_cast<std::uint64_t>(n) + 8192; }

// False in builds without the HDF5 library, where the two functions below throw.
bool snapshots_available();

// Written to a temporary file and renamed over `path`.
void write_snapshot(const std::string& path, const nbody::Bodies& bodies, const SnapshotInfo& info);

// Throws nbkit::Error naming the file and the dataset or attribute that is missing or
// malformed.
nbody::Bodies read_snapshot(const std::string& path, SnapshotInfo* info = nullptr);

}  // namespace nbkit::io
