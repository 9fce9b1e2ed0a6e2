#pragma once
// nbkit md's checkpoint files (md::Checkpoint): everything a biomolecular run needs to go on bit
// for bit. Binary, this machine's byte order (the header says which, and a reader on another
// refuses the file): the magic "NBKITCHK", a format version, the atom count, the step, the time
// step, the box, the thermostat's call count, the last evaluation's potential, virial and
// energy terms, the barostat's state (format 2), then x, y, z, vx, vy, vz, fx, fy, fz (float64, n each), and an FNV-1a 64-bit
// checksum of all that. Written atomically (io/atomic_file.hpp); a file that is short, long,
// of another format or version, or whose checksum fails is refused with the reason.
#include <cstdint>
#include <string>

#include "nbkit/md/simulation.hpp"

namespace nbkit::io {

void write_checkpoint(const std::string& path, const md::Checkpoint& checkpoint);
md::Checkpoint read_checkpoint(const std::string& path);
// The size of a checkpoint of `atoms` atoms (the disk check before a run).
std::uint64_t checkpoint_file_bytes(std::uint64_t atoms);

}  // namespace nbkit::io
