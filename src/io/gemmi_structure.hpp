#pragma once
// A PDB or mmCIF file (gzipped too) read by gemmi, with nbkit's messages: a missing file named,
// gemmi's parse errors as nbkit::Error "path: what". Internal to the library.
//
// gemmi's readers are header-only and heavy (mmread.hpp pulls in the PDB, mmCIF and mmJSON
// parsers): they are compiled in gemmi_structure.cpp alone, and callers see only the model.
#include <gemmi/model.hpp>

#include <string>

namespace nbkit::io {

gemmi::Structure read_gemmi_structure(const std::string& path);

}  // namespace nbkit::io
