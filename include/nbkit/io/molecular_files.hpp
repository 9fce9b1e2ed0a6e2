#pragma once
// A biomolecular system's files chosen by their names (and a first line): what `nbkit energy`
// and `nbkit md`'s [system] read, so that both accept the same files.
#include <string>
#include <vector>

#include "nbkit/md/topology.hpp"

namespace nbkit::io {

// An AMBER prmtop (.prmtop, .parm7) or a CHARMM psf (.psf, with its parameter and stream files
// in CHARMM's order); a trailing .gz is allowed. Throws nbkit::Error for another name, for
// parameter files without a psf, and for a psf without them.
md::Topology read_molecular_topology(const std::string& path, const std::vector<std::string>& parameters);

// The coordinates of `atoms` atoms from a CHARMM crd (.crd or .cor whose first line is a '*'
// title: AMBER users name inpcrd files .crd too) or an AMBER inpcrd/rst7 (any other name).
md::Coordinates read_molecular_coordinates(const std::string& path, std::size_t atoms);

// The extension of a path in lower case, a trailing .gz left out (".prmtop" for a.PRMTOP.gz).
std::string lower_extension(const std::string& path);

}  // namespace nbkit::io
