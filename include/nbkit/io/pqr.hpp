#pragma once
// PQR files as pdb2pqr and APBS write them: ATOM/HETATM records with whitespace-separated
// fields "ATOM serial name resName [chainID] resSeq x y z charge radius"; the last five
// numbers are taken as x y z (Angstrom), charge (e) and radius (Angstrom). Other records
// (REMARK, TER, END, CRYST1, ...) are skipped.
#include <string>
#include <string_view>

#include "nbkit/core/atoms.hpp"

namespace nbkit::io {

// `source` names the text in error messages ("file:line: field: problem").
Atoms parse_pqr(std::string_view text, const std::string& source);
Atoms read_pqr(const std::string& path);

}  // namespace nbkit::io
