// The atoms of a topology as selections see them (nbkit/analysis.hpp): names, residues,
// elements and molecules from CHARMM psf, AMBER prmtop, PQR, PDB and mmCIF files.
#include <fmt/format.h>

#include <cctype>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <numeric>

#include "io/charmm_files.hpp"
#include "io/gemmi_structure.hpp"
#include "io/text.hpp"
#include "nbkit/analysis.hpp"
#include "nbkit/core/error.hpp"
#include "nbkit/io/amber.hpp"
#include "nbkit/io/molecular_files.hpp"
#include "nbkit/io/pqr.hpp"
#include "nbkit/io/structure.hpp"

namespace nbkit::analysis {

namespace {

// The element whose standard atomic weight is nearest `mass` (g/mol); below 4.5 a hydrogen,
// whatever repartitioning made of its mass (md::Topology's rule).
std::string element_of_mass(double mass) {
  if (!(mass > 0)) return "";
  if (mass < 4.5) return "H";
  gemmi::El best = gemmi::El::X;
  double best_gap = 1e300;
  for (int z = 1; z <= 92; ++z) {
    const gemmi::Element e(z);
    const double gap = std::fabs(e.weight() - mass);
    if (gap < best_gap) best_gap = gap, best = e.elem;
  }
  return best_gap < 1.0 ? gemmi::Element(best).name() : "";
}

// A PQR name's element: ions are named by theirs (NA, CL, MG, ZN, ...), others start with it.
std::string element_of_name(const std::string& name, const std::string& residue_name) {
  if (name == residue_name) {  // a one-atom residue: an ion named by its element
    const gemmi::Element whole(name);
    if (whole.elem != gemmi::El::X) return whole.name();
  }
  for (char c : name)
    if (std::isalpha(static_cast<unsigned char>(c))) {
      const gemmi::Element e(std::string(1, c));
      return e.elem == gemmi::El::X ? "" : e.name();
    }
  return "";
}

// Residue ordinals: a new residue wherever `key` changes from the atom before.
template <class Key>
void number_residues(AtomTable& t, const std::vector<Key>& keys) {
  t.residue.resize(keys.size());
  std::int32_t r = -1;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    if (i == 0 || keys[i] != keys[i - 1]) ++r;
    t.residue[i] = r;
  }
}

// Molecules: the connected components of the bond graph, numbered by their first atom.
void number_molecules(AtomTable& t, const std::vector<std::pair<std::int32_t, std::int32_t>>& bonds) {
  std::vector<std::int32_t> parent(t.size());
  std::iota(parent.begin(), parent.end(), 0);
  const auto root = [&](std::int32_t i) {
    while (parent[i] != i) i = parent[i] = parent[parent[i]];
    return i;
  };
  for (auto [i, j] : bonds) {
    const std::int32_t ri = root(i), rj = root(j);
    if (ri != rj) parent[std::max(ri, rj)] = std::min(ri, rj);
  }
  t.molecule.assign(t.size(), -1);
  std::vector<std::int32_t> number(t.size(), -1);
  std::int32_t next = 0;
  for (std::size_t i = 0; i < t.size(); ++i) {
    const std::int32_t r = root(static_cast<std::int32_t>(i));
    if (number[r] < 0) number[r] = next++;
    t.molecule[i] = number[r];
  }
}

std::int32_t leading_integer(const std::string& s) {
  std::int32_t v = 0;
  const auto [end, error] = std::from_chars(s.data(), s.data() + s.size(), v);
  return error == std::errc() ? v : 0;
}

AtomTable from_psf(const std::string& path) {
  const io::charmm::PsfFile psf = io::charmm::parse_psf(io::read_file_text(path, "a CHARMM psf file"), path);
  AtomTable t;
  t.source = "CHARMM psf " + path;
  std::vector<std::tuple<std::string, std::string, std::string>> keys;
  for (const auto& a : psf.atoms) {
    t.name.push_back(a.name);
    t.residue_name.push_back(a.residue_name);
    t.residue_number.push_back(leading_integer(a.residue_id));
    t.element.push_back(element_of_mass(a.mass));
    keys.emplace_back(a.segment, a.residue_id, a.residue_name);
  }
  number_residues(t, keys);
  std::vector<std::pair<std::int32_t, std::int32_t>> bonds;
  for (const auto& b : psf.bonds.atoms) bonds.emplace_back(b[0], b[1]);
  number_molecules(t, bonds);
  return t;
}

AtomTable from_prmtop(const std::string& path) {
  const md::Topology top = io::read_prmtop(path);
  AtomTable t;
  t.source = "AMBER prmtop " + path;
  t.name = top.atom_name;
  t.residue_name = top.residue_name;
  t.residue_number = top.residue_number;
  for (double m : top.mass) t.element.push_back(element_of_mass(m));
  std::vector<std::pair<std::int32_t, std::string>> keys;
  for (std::size_t i = 0; i < t.size(); ++i) keys.emplace_back(t.residue_number[i], t.residue_name[i]);
  number_residues(t, keys);
  // Bonds, and the exclusions (1-2 and 1-3 pairs) that join rigid waters whose bonds are constraints.
  std::vector<std::pair<std::int32_t, std::int32_t>> bonds(top.exclusions.begin(), top.exclusions.end());
  for (const auto& b : top.bonds) bonds.emplace_back(b.i, b.j);
  number_molecules(t, bonds);
  return t;
}

AtomTable from_pqr(const std::string& path) {
  const std::string text = io::read_file_text(path, "a PQR file");
  io::parse_pqr_models(text, path);  // the file's checks
  AtomTable t;
  t.source = "PQR " + path;
  std::vector<std::tuple<std::string, std::int32_t, char, std::string>> keys;
  for (const io::PqrRecord& r : io::parse_pqr_records(text, path)) {
    if (r.model != 0) break;
    t.name.push_back(r.name);
    t.residue_name.push_back(r.residue_name);
    t.residue_number.push_back(r.residue_number.value_or(0));
    t.element.push_back(element_of_name(r.name, r.residue_name));
    keys.emplace_back(r.chain, r.residue_number.value_or(0), r.insertion_code, r.residue_name);
  }
  number_residues(t, keys);
  return t;
}

AtomTable from_gemmi(const std::string& path) {
  const gemmi::Structure st = io::read_gemmi_structure(path);
  if (st.models.empty()) throw Error(path + ": no models");
  AtomTable t;
  t.source = "structure " + path;
  std::vector<std::int32_t> keys;  // gemmi groups atoms into residues already
  std::int32_t r = 0;
  for (const auto& chain : st.models[0].chains)
    for (const auto& residue : chain.residues) {
      for (const auto& atom : residue.atoms) {
        t.name.push_back(atom.name);
        t.residue_name.push_back(residue.name);
        t.residue_number.push_back(residue.seqid.num.has_value() ? static_cast<std::int32_t>(residue.seqid.num.value) : 0);
        t.element.push_back(atom.element.elem == gemmi::El::X ? "" : atom.element.name());
        keys.push_back(r);
      }
      ++r;
    }
  number_residues(t, keys);
  return t;
}

}  // namespace

AtomTable read_atom_table(const std::string& path) {
  const std::string e = io::lower_extension(path);
  AtomTable t;
  if (e == ".psf")
    t = from_psf(path);
  else if (e == ".prmtop" || e == ".parm7")
    t = from_prmtop(path);
  else if (e == ".pqr")
    t = from_pqr(path);
  else if (e == ".pdb" || e == ".ent" || e == ".cif" || e == ".mmcif")
    t = from_gemmi(path);
  else
    throw Error(path + ": unknown topology format (expected .psf, .prmtop, .parm7, .pqr, .pdb or .cif)");
  if (t.size() == 0) throw Error(path + ": no atoms");
  return t;
}

}  // namespace nbkit::analysis
