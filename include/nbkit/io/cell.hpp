#pragma once
// The periodic box of a structure file: the CRYST1 record of PQR and PDB files, the cell of
// mmCIF files (through gemmi). Only orthorhombic boxes (all angles 90 degrees).
#include <optional>
#include <string>
#include <string_view>

#include "nbkit/core/box.hpp"

namespace nbkit::io {

// The cell [0, a) x [0, b) x [0, c) of the first CRYST1 record in `text` (Angstrom); empty
// when there is none or it is PDB's 1 x 1 x 1 placeholder for structures without a crystal
// cell. Throws InputError ("source:line: field: problem") for a malformed or
// non-orthorhombic record.
std::optional<PeriodicBox> parse_cryst1(std::string_view text, const std::string& source);

// The same for a file: PQR or PDB (CRYST1), mmCIF (_cell), by extension as read_atoms.
std::optional<PeriodicBox> read_periodic_box(const std::string& path);

}  // namespace nbkit::io
