#pragma once
// CHARMM's files: the protein structure file (psf), the parameter files (prm/par, and stream
// files, str, that embed parameters), and the coordinate file (crd). Hand-written: no Debian
// library reads them from C++. The formats are CHARMM's own (CHARMM documentation, io.doc and
// parmfile.doc), as CHARMM-GUI, VMD's psfgen and ParmEd write them.
//
// psf: the standard, EXT and XPLOR flavours (atom types as names, or as numbers that the
// parameter files' MASS lines name), with the sections !NATOM, !NBOND, !NTHETA, !NPHI,
// !NIMPHI, !NCRTERM (CMAP cross-terms) read; !NDON, !NACC, !NGRP, !MOLNT skipped (they change
// no energy); refused: a nonzero !NNB (explicit exclusions), lone pairs (!NUMLP), Drude
// particles, CHEQ charges are read past.
//
// Parameters, in the order given (a later entry replaces an earlier one's; a dihedral line adds
// a term to its quadruple's, or replaces the term of the same multiplicity): ATOMS
// (MASS), BONDS, ANGLES (with Urey-Bradley), DIHEDRALS (several terms per quadruple; X
// wildcards at the ends), IMPROPERS (X wildcards in the middle; multiplicity 0: harmonic,
// else periodic), CMAP, NONBONDED (epsilon, Rmin/2, and the special 1-4 columns; its
// options line's nbxmod and e14fac), NBFIX (with its optional 1-4 columns); HBOND is skipped.
// In a stream file only the "read para" blocks are parameters (and MASS lines of "read rtf"
// blocks name numbered types). Every parameter line is read or refused with file, line and field.
//
// The topology is built as CHARMM and OpenMM's CharmmPsfFile build it: exclusions of 1-2 and
// 1-3 neighbours of the bond graph, and its 1-4 pairs (those not also 1-2 or 1-3) with the
// special 1-4 Lennard-Jones parameters (NBFIX's 1-4 columns where a pair has them) and the
// Coulomb scaled by e14fac; Lennard-Jones combined by Lorentz-Berthelot unless NBFIX says.
// A missing parameter is an error naming the psf line and the atom types.
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "nbkit/md/topology.hpp"

namespace nbkit::io {

md::Topology read_charmm(const std::string& psf_path, const std::vector<std::string>& parameter_paths);

// The same from texts: the psf's, then each parameter file's with its name (for messages; a name
// ending in .str, or a text with "read para" lines, is read as a stream file).
md::Topology parse_charmm(std::string_view psf, const std::string& psf_source,
                          const std::vector<std::pair<std::string, std::string>>& parameters);

// A CHARMM coordinate file (crd, standard or EXT) for `atoms` atoms: title lines (*), the atom
// count, then one line per atom (number, residue number, residue, atom name, x, y, z, segment,
// residue id, weight). CHARMM's crd has no box.
md::Coordinates read_charmm_crd(const std::string& path, std::size_t atoms);
md::Coordinates parse_charmm_crd(std::string_view text, const std::string& source, std::size_t atoms);

}  // namespace nbkit::io
