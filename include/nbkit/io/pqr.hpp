#pragma once
// PQR files as pdb2pqr and APBS write them: ATOM/HETATM records with whitespace-separated
// fields "ATOM serial name resName [chainID] resSeq x y z charge radius"; the last five
// numbers are taken as x y z (Angstrom), charge (e) and radius (Angstrom). Other records
// (REMARK, TER, END, CRYST1, ...) are skipped; ENDMDL ends a model.
#include <string>
#include <string_view>
#include <vector>

#include "nbkit/core/atoms.hpp"

namespace nbkit::io {

// `source` names the text in error messages ("file:line: field: problem"). A file of
// several models (MODEL ... ENDMDL) gives its first model.
Atoms parse_pqr(std::string_view text, const std::string& source);
Atoms read_pqr(const std::string& path);

// Every model (MODEL ... ENDMDL blocks; a file without them is one model), each with the
// same number of atoms (else an error naming the model): a multi-model trajectory.
std::vector<Atoms> parse_pqr_models(std::string_view text, const std::string& source);
std::vector<Atoms> read_pqr_models(const std::string& path);

}  // namespace nbkit::io
