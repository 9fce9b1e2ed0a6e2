#pragma once
// AMBER's files: the parameter-topology file (prmtop / parm7, the %FLAG format of AMBER 7 and
// later, as LEaP, ParmEd and OpenMM write it; Amber Reference Manual, "The parm/prmtop file")
// and the coordinate/restart file (inpcrd / rst7, ASCII). Hand-written: no Debian library
// reads them from C++.
//
// Read from a prmtop: atoms (names, residues, masses, charges / 18.2223, Lennard-Jones types with
// the ACOEF/BCOEF pair table), bonds, angles, dihedrals (the fourth index negative: an improper;
// the third negative: no 1-4 pair), SCEE_SCALE_FACTOR and SCNB_SCALE_FACTOR per dihedral type
// (1.2 and 2.0 when absent, as AMBER's older files mean), the excluded-atoms list, an
// orthorhombic box, and ff19SB's CMAP sections (CMAP_COUNT, CMAP_RESOLUTION,
// CMAP_PARAMETER_nn, CMAP_INDEX). Refused with file, line and field: anything malformed;
// perturbation (IFPERT), caps (IFCAP), extra points (NUMEXTRA: TIP4P/TIP5P virtual sites),
// polarisability, 10-12 hydrogen-bond terms with nonzero coefficients, non-orthorhombic boxes
// and CHAMBER files (CHARMM force fields converted by chamber: read their psf and parameters).
#include <string>
#include <string_view>

#include "nbkit/md.hpp"
#include "nbkit/md/topology.hpp"

namespace nbkit::io {

md::Topology read_prmtop(const std::string& path);
md::Topology parse_prmtop(std::string_view text, const std::string& source);

// An inpcrd / rst7 for `atoms` atoms: the title line, the atom count (and time), the
// coordinates (6 per line, 12 characters each), then optionally as many velocities (AMBER's
// Angstrom per 1/20.455 ps, returned in Angstrom/fs) and a box line (a b c alpha beta gamma; only
// right angles are accepted). NetCDF restarts are refused by name.
md::Coordinates read_inpcrd(const std::string& path, std::size_t atoms);
md::Coordinates parse_inpcrd(std::string_view text, const std::string& source, std::size_t atoms);

// An ASCII rst7 restart of `system` (positions, velocities in AMBER's unit, the box; %12.7f as
// LEaP and sander write it), atomically. Throws nbkit::Error for a coordinate the format's 12
// columns cannot hold (|x| >= 10^4 A).
void write_rst7(const std::string& path, const md::System& system, const std::string& title, double time_ps = 0);

}  // namespace nbkit::io
