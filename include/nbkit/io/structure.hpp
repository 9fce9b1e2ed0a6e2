#pragma once
// Reads atoms with charges and radii from a PQR file, or from a PDB/mmCIF file (through
// gemmi) by running pdb2pqr with a force field, since PDB and mmCIF carry no partial charges.
#include <string>
#include <vector>

#include "nbkit/core/atoms.hpp"

namespace nbkit::io {

enum class StructureFormat { pqr, pdb, mmcif };
StructureFormat guess_structure_format(const std::string& path);  // by extension (.gz allowed)

struct ChargeOptions {
  std::string force_field;  // empty: PDB/mmCIF input is an error; else pdb2pqr's --ff (amber, charmm, parse, ...)
  bool verbose = false;     // show pdb2pqr's output
  // Residues pdb2pqr leaves out (ligands, metals: what its force field cannot type) are an
  // error naming them, unless allowed; then `notice` (if given) says what was left out.
  bool allow_missing = false;
  std::string* notice = nullptr;
  std::string save_pqr;     // non-empty: keep pdb2pqr's PQR here
};

Atoms read_atoms(const std::string& path, const ChargeOptions& charges = {});

// The positions of every model of a PQR, PDB or mmCIF file, as a trajectory (charges and
// radii: from the PQR, zero for PDB/mmCIF). Every model must have the same atom count.
std::vector<Atoms> read_models(const std::string& path);

// An atom to append to a structure (an ion, say): its residue and atom name, charge, radius.
struct ExtraAtom {
  std::string name;
  Vec3 position;
  double charge = 0, radius = 0;
};

// The first model of a PQR file, then `extra` as HETATM records (one residue each, chain I,
// serials after the input's largest), as a PQR (`write_pqr_with_atoms`) or as a PDB file
// written by gemmi (`write_pqr_as_pdb`: charges and radii are not in PDB files; CRYST1 only
// when the input has a cell). Written atomically. Returns how many models the input had (the
// others are not written).
int write_pqr_with_atoms(const std::string& pqr_path, const std::vector<ExtraAtom>& extra, const std::string& out_path,
                         const std::string& remark);
int write_pqr_as_pdb(const std::string& pqr_path, const std::vector<ExtraAtom>& extra, const std::string& pdb_path);

// The pdb2pqr executable on PATH ("pdb2pqr" or "pdb2pqr30"), or empty.
std::string find_pdb2pqr();

}  // namespace nbkit::io
