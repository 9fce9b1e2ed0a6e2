#pragma once
// The parsed contents of CHARMM's psf and parameter files (io/charmm.hpp), before they are
// joined into an md::Topology (charmm_topology.cpp). Types are kept by name, as the files
// spell them.
#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace nbkit::io::charmm {

struct PsfAtom {
  std::string segment, residue_id, residue_name, name, type;  // type: a name, or a number's digits
  bool numbered_type = false;
  double charge = 0, mass = 0;
  std::int64_t line = 0;
};

// A list of terms of `Width` atoms (0-based), each with the psf line it is on.
template <int Width>
struct PsfTerms {
  std::vector<std::array<std::int32_t, Width>> atoms;
  std::vector<std::int64_t> line;
};

struct PsfFile {
  std::string source;
  std::vector<PsfAtom> atoms;
  PsfTerms<2> bonds;
  PsfTerms<3> angles;
  PsfTerms<4> dihedrals, impropers;
  PsfTerms<8> cmaps;
};

PsfFile parse_psf(std::string_view text, const std::string& source);

// Where a parameter came from, for messages.
struct Origin {
  std::string file;
  std::int64_t line = 0;
};

struct BondParameter {
  double k, r0;  // kcal/mol/A^2 (E = k (r - r0)^2), A
  Origin from;
};
struct AngleParameter {
  double k, theta0, k_ub, s0;  // kcal/mol/rad^2, degrees; Urey-Bradley kcal/mol/A^2, A (k_ub 0: none)
  Origin from;
};
struct DihedralTerm {
  double k;
  int n;
  double phase;  // degrees
};
struct ImproperParameter {
  double k;
  int n;
  double psi0;  // degrees
  Origin from;
};
struct CmapParameter {
  std::int32_t size;
  std::vector<double> energy;  // kcal/mol, phi major, from -180 degrees
};
struct LennardJones {
  double epsilon, rmin_half;  // |epsilon| kcal/mol, Rmin/2 A
  double epsilon14, rmin_half14;  // the special 1-4 columns, or the same
};
struct Nbfix {
  double epsilon, rmin, epsilon14, rmin14;  // |Emin|, Rmin (the pair's, not a half)
};

using Key2 = std::array<std::string, 2>;
using Key3 = std::array<std::string, 3>;
using Key4 = std::array<std::string, 4>;
using Key8 = std::array<std::string, 8>;

// A bond's, an angle's, a dihedral's or an improper's key in one reading direction (the smaller
// of the forward and reversed spellings), so that a lookup finds either.
Key2 canonical(Key2 k);
Key3 canonical(Key3 k);
Key4 canonical(Key4 k);

struct Parameters {
  std::map<std::int64_t, std::string> numbered_type;  // MASS number -> type name
  std::map<Key2, BondParameter> bonds;
  std::map<Key3, AngleParameter> angles;
  std::map<Key4, std::vector<DihedralTerm>> dihedrals;
  std::map<Key4, ImproperParameter> impropers;
  std::map<Key8, CmapParameter> cmaps;
  std::map<std::string, LennardJones> lennard_jones;
  std::map<Key2, Nbfix> nbfix;
  double e14fac = 1.0;
  int nbxmod = 5;
  std::vector<std::string> files;  // as given, for "not in ..." messages
};

// Adds one parameter or stream file's entries to `into`.
void parse_parameters(std::string_view text, const std::string& source, Parameters& into);

}  // namespace nbkit::io::charmm
