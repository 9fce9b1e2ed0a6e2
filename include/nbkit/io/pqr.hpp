#pragma once
// PQR files as pdb2pqr and APBS write them: ATOM/HETATM records with whitespace-separated
// fields "ATOM serial name resName [chainID] resSeq x y z charge radius"; the last five
// numbers are taken as x y z (Angstrom), charge (e) and radius (Angstrom). Other records
// (REMARK, TER, END, CRYST1, ...) are skipped; ENDMDL ends a model.
#include <cstdint>
#include <optional>
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

// One ATOM/HETATM record with the fields before its numbers, for writers that keep them
// (nbkit ionize's PQR and PDB outputs). Fields a record lacks stay empty.
struct PqrRecord {
  bool hetatm = false;
  std::optional<std::int64_t> serial;  // empty when not a plain integer (hybrid-36, "*****")
  std::string name, residue_name, chain;
  std::optional<int> residue_number;
  char insertion_code = ' ';
  Vec3 position;
  double charge = 0, radius = 0;
  int model = 0;         // 0-based
  std::int64_t line = 0;  // 1-based line number in the text
};
// Every record of every model (call parse_pqr_models first for the file's checks).
std::vector<PqrRecord> parse_pqr_records(std::string_view text, const std::string& source);

}  // namespace nbkit::io
