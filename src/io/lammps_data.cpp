// LAMMPS data files: reader and writer (the format of read_data / write_data in the LAMMPS
// manual). Hand-written: no library reads them, and the subset is small.
#include "nbkit/io/lammps_data.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <numeric>
#include <optional>

#include "io/text.hpp"
#include "nbkit/core/error.hpp"
#include "nbkit/io/atomic_file.hpp"

namespace nbkit::io {

namespace {

std::string_view strip_comment(std::string_view line, std::string_view* comment = nullptr) {
  const std::size_t hash = line.find('#');
  if (hash == std::string_view::npos) return line;
  if (comment) *comment = line.substr(hash + 1);
  return line.substr(0, hash);
}

std::string trimmed(std::string_view s) {
  const auto fields = split_whitespace(s);
  std::string out;
  for (const auto& f : fields) {
    if (!out.empty()) out += ' ';
    out.append(f);
  }
  return out;
}

}  // namespace

LammpsData read_lammps_data(const std::string& path, md::Units units) {
  return parse_lammps_data(read_file_text(path, "a LAMMPS data file"), path, units);
}

// `path` names the text in messages.
LammpsData parse_lammps_data(std::string_view text, const std::string& path, md::Units units) {
  if (text.empty()) throw Error(path + ": empty file, expected a LAMMPS data file");
  LammpsData data;
  md::System& s = data.system;
  s.units = units;
  std::int64_t atoms = -1, types = -1;
  // Bonds, angles, dihedrals, impropers: their counts and type counts.
  std::array<std::int64_t, 4> terms{0, 0, 0, 0}, term_types{0, 0, 0, 0};
  const std::array<std::string, 4> term_names{"bonds", "angles", "dihedrals", "impropers"};
  const std::array<std::string, 4> term_type_names{"bond", "angle", "dihedral", "improper"};
  bool box[3] = {false, false, false};
  LammpsMolecular& mol = data.molecular;
  // Header: counts and box until the first section keyword.
  Lines raw(text);
  std::string_view raw_line;
  raw.next(raw_line);  // title
  std::int64_t line_number = 1;
  auto fail_at = [&](std::int64_t number, const std::string& what) -> void {
    throw Error(fmt::format("{}:{}: {}", path, number, what));
  };
  auto number_at = [&](std::int64_t number, std::string_view token, const char* field) {
    const auto value = parse_number(token);
    if (!value || !std::isfinite(*value)) fail_at(number, fmt::format("{}: expected a number, got {}", field, quoted(token)));
    return *value;
  };
  auto integer_at = [&](std::int64_t number, std::string_view token, const char* field) {
    std::int64_t value = 0;
    const auto [end, error] = std::from_chars(token.data(), token.data() + token.size(), value);
    if (error != std::errc() || end != token.data() + token.size())
      fail_at(number, fmt::format("{}: expected an integer, got {}", field, quoted(token)));
    return value;
  };
  // The next line with content: its text without the comment, the comment, its fields.
  std::string_view content, c;
  std::vector<std::string_view> f;
  auto next_content = [&] {
    while (raw.next(raw_line)) {
      line_number = raw.number();
      c = {};
      content = strip_comment(raw_line, &c);
      f = split_whitespace(content);
      if (!f.empty()) return true;
    }
    return false;
  };
  // The molecular sections: "Bonds" (term 0) .. "Impropers" (3), "Bond Coeffs" .. "Improper Coeffs".
  const std::array<std::string, 4> term_sections{"Bonds", "Angles", "Dihedrals", "Impropers"};
  const std::array<std::string, 4> coeff_sections{"Bond Coeffs", "Angle Coeffs", "Dihedral Coeffs", "Improper Coeffs"};
  auto term_of = [&](const std::string& name, const std::array<std::string, 4>& names) {
    for (int k = 0; k < 4; ++k)
      if (name == names[k]) return k;
    return -1;
  };
  auto is_section = [&](const std::string& name) {
    return name == "Masses" || name == "Atoms" || name == "Velocities" || name == "Pair Coeffs" ||
           name == "PairIJ Coeffs" || term_of(name, term_sections) >= 0 || term_of(name, coeff_sections) >= 0;
  };
  std::string section;
  std::string section_style;
  // Each molecular section's atom IDs with their lines, resolved once the Atoms are read.
  std::array<std::vector<std::pair<std::int64_t, std::array<std::int64_t, 4>>>, 4> pending_ids;
  while (next_content()) {
    const std::string joined = trimmed(content);
    if (is_section(joined)) {
      section = joined;
      section_style = trimmed(c);
      break;
    }
    if (f.size() == 2 && f[1] == "atoms") {
      atoms = integer_at(line_number, f[0], "atom count");
    } else if (f.size() == 3 && f[1] == "atom" && f[2] == "types") {
      types = integer_at(line_number, f[0], "atom type count");
    } else if (f.size() == 4 && (f[2] == "xlo" || f[2] == "ylo" || f[2] == "zlo")) {
      const int a = f[2] == "xlo" ? 0 : f[2] == "ylo" ? 1 : 2;
      s.box.lo[a] = number_at(line_number, f[0], "box low bound");
      s.box.hi[a] = number_at(line_number, f[1], "box high bound");
      if (!(s.box.hi[a] > s.box.lo[a])) fail_at(line_number, "the box's high bound must exceed its low bound");
      box[a] = true;
    } else if (f.size() == 6 && f[3] == "xy") {
      fail_at(line_number, "a triclinic box (xy xz yz): this version takes orthorhombic boxes only");
    } else if (f.size() == 2 && term_of(std::string(f[1]), term_names) >= 0) {
      terms[term_of(std::string(f[1]), term_names)] = integer_at(line_number, f[0], "count");
    } else if (f.size() == 3 && f[2] == "types" && term_of(std::string(f[1]), term_type_names) >= 0) {
      term_types[term_of(std::string(f[1]), term_type_names)] = integer_at(line_number, f[0], "type count");
    } else {
      fail_at(line_number, "unknown header line '" + joined + "' (expected counts, box bounds or a section)");
    }
  }
  if (atoms < 0) throw Error(path + ": no 'N atoms' line in the header");
  if (types < 1) throw Error(path + ": no 'N atom types' line in the header (at least one type)");
  // Every atom and every type takes a line of its own (Atoms, Masses): counts beyond the
  // file's lines are a corrupt header, refused before anything is sized by them.
  const std::int64_t file_lines = static_cast<std::int64_t>(std::count(text.begin(), text.end(), '\n')) + 1;
  if (atoms > file_lines || types > file_lines)
    throw Error(fmt::format("{}: the header gives {} atoms and {} atom types, but the file has only {} lines (one a "
                            "line is needed)",
                            path, atoms, types, file_lines));
  for (int k = 0; k < 4; ++k)
    if (terms[k] < 0 || terms[k] > file_lines || term_types[k] < 0 || term_types[k] > file_lines)
      throw Error(fmt::format("{}: the header gives {} {} of {} types: negative, or more than the file's {} lines", path,
                              terms[k], term_names[k], term_types[k], file_lines));
  for (int a = 0; a < 3; ++a)
    if (!box[a]) throw Error(fmt::format("{}: the header lacks the box bounds '{}lo {}hi'", path, "xyz"[a], "xyz"[a]));
  s.resize(static_cast<std::size_t>(atoms));
  s.type_mass.assign(static_cast<std::size_t>(types), 0.0);
  std::vector<bool> mass_set(static_cast<std::size_t>(types), false);
  bool have_atoms = false;
  // Sections: each holds a known number of data lines.
  while (!section.empty()) {
    const std::int64_t header_line = line_number;
    const int term = term_of(section, term_sections), coeffs = term_of(section, coeff_sections);
    const std::int64_t rows = section == "Masses" || section == "Pair Coeffs" ? types
                              : section == "PairIJ Coeffs"                   ? types * (types + 1) / 2
                              : term >= 0                                    ? terms[term]
                              : coeffs >= 0                                  ? term_types[coeffs]
                                                                             : atoms;
    std::vector<std::pair<std::int64_t, std::vector<std::string_view>>> lines;
    std::string next_section, next_style;
    while (next_content()) {
      if (static_cast<std::int64_t>(lines.size()) == rows) {
        next_section = trimmed(content);
        next_style = trimmed(c);
        if (!is_section(next_section))
          fail_at(line_number, "'" + next_section + "': expected a section (Masses, Pair Coeffs, PairIJ Coeffs, Atoms, "
                                   "Velocities, Bonds, Angles, Dihedrals, Impropers or their Coeffs) after " +
                                   std::to_string(rows) + " lines of " + section);
        break;
      }
      lines.emplace_back(line_number, f);
    }
    if (static_cast<std::int64_t>(lines.size()) < rows)
      fail_at(line_number, fmt::format("section {} (line {}) ends after {} lines, expected {}", section, header_line,
                                       lines.size(), rows));
    if (section == "Masses") {
      for (const auto& [number, f] : lines) {
        if (f.size() != 2) fail_at(number, "Masses: expected 'type mass'");
        const std::int64_t t = integer_at(number, f[0], "atom type");
        if (t < 1 || t > types) fail_at(number, fmt::format("atom type {} outside 1..{}", t, types));
        const double m = number_at(number, f[1], "mass");
        if (!(m > 0)) fail_at(number, "mass: expected a positive number");
        s.type_mass[t - 1] = m;
        mass_set[t - 1] = true;
      }
    } else if (section == "Pair Coeffs") {
      if (!data.pair_ij.empty()) fail_at(header_line, "Pair Coeffs after PairIJ Coeffs: give one of the two");
      // lj/cut: type epsilon sigma; lj/charmm/...: type epsilon sigma epsilon14 sigma14.
      const bool charmm_style = section_style.rfind("lj/charmm/", 0) == 0;
      if (!section_style.empty() && section_style != "lj/cut" && section_style != "lj/cut/coul/dsf" && !charmm_style)
        fail_at(header_line, "Pair Coeffs # " + section_style +
                                 ": only lj/cut, lj/cut/coul/dsf and lj/charmm/* coefficients are read");
      const std::size_t columns = lines.empty() ? 3 : lines.front().second.size();
      const bool charmm = charmm_style || (section_style.empty() && columns == 5);
      data.pair_epsilon.assign(types, 0.0);
      data.pair_sigma.assign(types, 0.0);
      if (charmm) mol.pair_epsilon14.assign(types, 0.0), mol.pair_sigma14.assign(types, 0.0);
      for (const auto& [number, f] : lines) {
        if (!charmm && f.size() != 3) fail_at(number, "Pair Coeffs: expected 'type epsilon sigma'");
        if (charmm && f.size() != 5 && f.size() != 3)
          fail_at(number, "Pair Coeffs (lj/charmm): expected 'type epsilon sigma [epsilon14 sigma14]'");
        const std::int64_t t = integer_at(number, f[0], "atom type");
        if (t < 1 || t > types) fail_at(number, fmt::format("atom type {} outside 1..{}", t, types));
        data.pair_epsilon[t - 1] = number_at(number, f[1], "epsilon");
        data.pair_sigma[t - 1] = number_at(number, f[2], "sigma");
        if (charmm) {  // the 1-4 pair's own, or the ordinary ones when not given (LAMMPS's rule)
          mol.pair_epsilon14[t - 1] = f.size() == 5 ? number_at(number, f[3], "epsilon14") : data.pair_epsilon[t - 1];
          mol.pair_sigma14[t - 1] = f.size() == 5 ? number_at(number, f[4], "sigma14") : data.pair_sigma[t - 1];
        }
      }
    } else if (section == "PairIJ Coeffs") {
      if (!section_style.empty() && section_style != "lj/cut" && section_style != "lj/cut/coul/dsf")
        fail_at(header_line, "PairIJ Coeffs # " + section_style +
                                 ": only lj/cut and lj/cut/coul/dsf coefficients (epsilon sigma) are read");
      if (!data.pair_epsilon.empty()) fail_at(header_line, "PairIJ Coeffs after Pair Coeffs: give one of the two");
      data.pair_epsilon.assign(types, 0.0);
      data.pair_sigma.assign(types, 0.0);
      std::vector<bool> seen(static_cast<std::size_t>(types * types), false);
      for (const auto& [number, f] : lines) {
        if (f.size() != 4 && f.size() != 5) fail_at(number, "PairIJ Coeffs: expected 'i j epsilon sigma [cutoff]'");
        const std::int64_t i = integer_at(number, f[0], "atom type i"), j = integer_at(number, f[1], "atom type j");
        if (i < 1 || i > types || j < 1 || j > types)
          fail_at(number, fmt::format("atom types {} {} outside 1..{}", i, j, types));
        if (i > j) fail_at(number, fmt::format("PairIJ Coeffs: expected i <= j, got {} {}", i, j));
        if (seen[static_cast<std::size_t>((i - 1) * types + (j - 1))])
          fail_at(number, fmt::format("PairIJ Coeffs: pair {} {} appears twice", i, j));
        seen[static_cast<std::size_t>((i - 1) * types + (j - 1))] = true;
        PairCoefficient c{static_cast<int>(i), static_cast<int>(j), number_at(number, f[2], "epsilon"),
                          number_at(number, f[3], "sigma"), f.size() == 5 ? number_at(number, f[4], "cutoff") : 0.0};
        if (f.size() == 5 && !(c.cutoff > 0)) fail_at(number, "cutoff: expected a positive number");
        if (!(c.epsilon >= 0)) fail_at(number, "epsilon: expected zero or a positive number");
        if (!(c.sigma > 0)) fail_at(number, "sigma: expected a positive number");
        if (i == j) data.pair_epsilon[i - 1] = c.epsilon, data.pair_sigma[i - 1] = c.sigma;
        data.pair_ij.push_back(c);
      }
    } else if (section == "Atoms") {
      const std::size_t columns = lines.empty() ? 0 : lines.front().second.size();
      // The style from the section's comment, else from the columns: with bonded terms in the
      // header, full (7 or 10) or molecular (6 or 9); without, charge (6 or 9) or atomic.
      std::string style = section_style;
      if (style.empty()) {
        const bool bonded = terms[0] + terms[1] + terms[2] + terms[3] > 0;
        style = bonded ? (columns == 7 || columns == 10 ? "full" : "molecular")
                       : (columns == 6 || columns == 9 ? "charge" : "atomic");
      } else if (style != "atomic" && style != "charge" && style != "molecular" && style != "full") {
        fail_at(header_line, "Atoms # " + style + ": only the atomic, charge, molecular and full styles are read");
      }
      const bool charged = style == "charge" || style == "full";
      const bool molecular = style == "molecular" || style == "full";
      s.has_charges = charged;
      if (molecular) mol.atom_style = style, mol.molecule.assign(static_cast<std::size_t>(atoms), 0);
      const std::size_t base = 5 + (charged ? 1 : 0) + (molecular ? 1 : 0);
      const char* layout = style == "full" ? "id mol type q x y z" : style == "molecular" ? "id mol type x y z"
                           : charged         ? "id type q x y z"
                                             : "id type x y z";
      std::vector<std::int64_t> ids(lines.size());
      std::vector<std::size_t> index(lines.size());
      std::iota(index.begin(), index.end(), 0);
      for (std::size_t k = 0; k < lines.size(); ++k) {
        const auto& [number, f] = lines[k];
        if (f.size() != base && f.size() != base + 3)
          fail_at(number, fmt::format("Atoms ({}): expected {} or {} columns ({} [ix iy iz]), got {}", style, base,
                                      base + 3, layout, f.size()));
        ids[k] = integer_at(number, f[0], "atom ID");
        if (ids[k] < 1) fail_at(number, "atom ID: expected a positive integer");
      }
      std::sort(index.begin(), index.end(), [&](std::size_t a, std::size_t b) { return ids[a] < ids[b]; });
      for (std::size_t k = 0; k < index.size(); ++k) {
        const auto& [number, f] = lines[index[k]];
        if (k > 0 && ids[index[k]] == ids[index[k - 1]]) fail_at(number, fmt::format("atom ID {} appears twice", ids[index[k]]));
        const std::size_t shift = molecular ? 1 : 0;  // the molecule ID's column
        if (molecular) mol.molecule[k] = integer_at(number, f[1], "molecule ID");
        const std::int64_t t = integer_at(number, f[1 + shift], "atom type");
        if (t < 1 || t > types) fail_at(number, fmt::format("atom type {} outside 1..{}", t, types));
        s.id[k] = ids[index[k]];
        s.type[k] = static_cast<int>(t - 1);
        const std::size_t c = (charged ? 3 : 2) + shift;
        s.charge[k] = charged ? number_at(number, f[2 + shift], "charge") : 0.0;
        s.x[k] = number_at(number, f[c], "x");
        s.y[k] = number_at(number, f[c + 1], "y");
        s.z[k] = number_at(number, f[c + 2], "z");
      }
      have_atoms = true;
    } else if (term >= 0) {
      // "id type atom1 atom2 [atom3 [atom4]]": atom IDs resolved to indices after every section.
      const std::size_t count = term == 0 ? 2 : term == 1 ? 3 : 4;
      std::vector<LammpsTerm>& list = term == 0 ? mol.bonds : term == 1 ? mol.angles : term == 2 ? mol.dihedrals : mol.impropers;
      std::vector<std::pair<std::int64_t, std::array<std::int64_t, 4>>>& pending = pending_ids[term];
      for (const auto& [number, f] : lines) {
        if (f.size() != count + 2)
          fail_at(number, fmt::format("{}: expected 'id type' and {} atom IDs, got {} fields", section, count, f.size()));
        const std::int64_t t = integer_at(number, f[1], "type");
        if (t < 1 || t > term_types[term])
          fail_at(number, fmt::format("{} type {} outside 1..{}", term_type_names[term], t, term_types[term]));
        std::array<std::int64_t, 4> id{0, 0, 0, 0};
        for (std::size_t a = 0; a < count; ++a) id[a] = integer_at(number, f[2 + a], "atom ID");
        list.push_back({static_cast<int>(t - 1), {}});
        pending.emplace_back(number, id);
      }
    } else if (coeffs >= 0) {
      std::vector<std::vector<double>>& table = coeffs == 0 ? mol.bond_coeffs : coeffs == 1 ? mol.angle_coeffs
                                                : coeffs == 2                ? mol.dihedral_coeffs
                                                                             : mol.improper_coeffs;
      (coeffs == 0 ? mol.bond_style : coeffs == 1 ? mol.angle_style : coeffs == 2 ? mol.dihedral_style
                                                                                  : mol.improper_style) = section_style;
      table.assign(static_cast<std::size_t>(term_types[coeffs]), {});
      for (const auto& [number, f] : lines) {
        const std::int64_t t = integer_at(number, f[0], "type");
        if (t < 1 || t > term_types[coeffs])
          fail_at(number, fmt::format("{} type {} outside 1..{}", term_type_names[coeffs], t, term_types[coeffs]));
        if (!table[t - 1].empty()) fail_at(number, fmt::format("{}: type {} appears twice", section, t));
        if (f.size() < 2) fail_at(number, section + ": expected a type and its coefficients");
        for (std::size_t k = 1; k < f.size(); ++k) table[t - 1].push_back(number_at(number, f[k], "coefficient"));
      }
    } else if (section == "Velocities") {
      if (!have_atoms) fail_at(header_line, "Velocities before Atoms: this reader needs the Atoms section first");
      for (const auto& [number, f] : lines) {
        if (f.size() != 4) fail_at(number, "Velocities: expected 'id vx vy vz'");
        const std::int64_t id = integer_at(number, f[0], "atom ID");
        const auto it = std::lower_bound(s.id.begin(), s.id.end(), id);
        if (it == s.id.end() || *it != id) fail_at(number, fmt::format("Velocities: atom ID {} is not in Atoms", id));
        const std::size_t k = static_cast<std::size_t>(it - s.id.begin());
        s.vx[k] = number_at(number, f[1], "vx");
        s.vy[k] = number_at(number, f[2], "vy");
        s.vz[k] = number_at(number, f[3], "vz");
      }
    }
    section = next_section;
    section_style = next_style;
  }
  if (!have_atoms && atoms > 0) throw Error(path + ": no Atoms section");
  for (int k = 0; k < 4; ++k) {
    std::vector<LammpsTerm>& list = k == 0 ? mol.bonds : k == 1 ? mol.angles : k == 2 ? mol.dihedrals : mol.impropers;
    if (terms[k] > 0 && list.empty())
      throw Error(fmt::format("{}: the header gives {} {} but the file has no {} section", path, terms[k], term_names[k],
                              term_sections[k]));
    if (!list.empty() && mol.atom_style.empty())
      throw Error(fmt::format("{}: {} need the molecular or full atom style (id mol type ...)", path, term_sections[k]));
    const std::vector<std::vector<double>>& table = k == 0 ? mol.bond_coeffs : k == 1 ? mol.angle_coeffs
                                                    : k == 2                ? mol.dihedral_coeffs
                                                                            : mol.improper_coeffs;
    if (!list.empty() && static_cast<std::int64_t>(table.size()) != term_types[k])
      throw Error(fmt::format("{}: no {} section for the {}", path, coeff_sections[k], term_names[k]));
    const std::size_t count = k == 0 ? 2 : k == 1 ? 3 : 4;
    for (std::size_t n = 0; n < list.size(); ++n) {
      const auto& [number, id] = pending_ids[k][n];
      for (std::size_t a = 0; a < count; ++a) {
        const auto it = std::lower_bound(s.id.begin(), s.id.end(), id[a]);
        if (it == s.id.end() || *it != id[a])
          fail_at(number, fmt::format("{}: atom ID {} is not in Atoms", term_sections[k], id[a]));
        list[n].atoms[a] = static_cast<std::int32_t>(it - s.id.begin());
        for (std::size_t b = 0; b < a; ++b)
          if (list[n].atoms[b] == list[n].atoms[a])
            fail_at(number, fmt::format("{}: atom ID {} appears twice in one term", term_sections[k], id[a]));
      }
    }
  }
  for (std::int64_t t = 0; t < types; ++t)
    if (!mass_set[t]) throw Error(fmt::format("{}: no mass for atom type {} (a Masses section sets it)", path, t + 1));
  return data;
}

std::vector<PairCoefficient> pairs_beyond_geometric_mixing(const md::ForceField& field) {
  const int n = field.types();
  std::vector<PairCoefficient> all;
  bool mixed = true;
  for (int i = 0; i < n; ++i)
    for (int j = i; j < n; ++j) {
      const double eps = field.epsilon[static_cast<std::size_t>(i * n + j)];
      const double sig = field.sigma[static_cast<std::size_t>(i * n + j)];
      const double ei = field.epsilon[static_cast<std::size_t>(i * n + i)], ej = field.epsilon[static_cast<std::size_t>(j * n + j)];
      const double si = field.sigma[static_cast<std::size_t>(i * n + i)], sj = field.sigma[static_cast<std::size_t>(j * n + j)];
      mixed = mixed && eps == std::sqrt(ei * ej) && sig == std::sqrt(si * sj);
      all.push_back({i + 1, j + 1, eps, sig});
    }
  return mixed ? std::vector<PairCoefficient>{} : all;
}

std::uint64_t lammps_data_file_bytes(std::size_t atoms) {
  return 4096 + 200 * static_cast<std::uint64_t>(atoms);  // an Atoms and a Velocities line, %.17g
}

void write_lammps_data(const std::string& path, const md::System& s, const std::vector<double>& pair_epsilon,
                       const std::vector<double>& pair_sigma, const std::string& title, const std::string& pair_style,
                       const std::vector<PairCoefficient>& pair_ij) {
  write_atomically(path, [&](const std::string& temporary) {
    std::ofstream out(temporary);
    out << "LAMMPS data file, " << title << "\n\n";
    out << s.size() << " atoms\n" << s.types() << " atom types\n\n";
    const char* axes[3] = {"x", "y", "z"};
    for (int a = 0; a < 3; ++a)
      out << fmt::format("{:.17g} {:.17g} {}lo {}hi\n", s.box.lo[a], s.box.hi[a], axes[a], axes[a]);
    out << "\nMasses\n\n";
    for (int t = 0; t < s.types(); ++t) out << fmt::format("{} {:.17g}\n", t + 1, s.type_mass[t]);
    if (!pair_ij.empty()) {
      out << "\nPairIJ Coeffs # " << pair_style << "\n\n";
      for (const PairCoefficient& c : pair_ij) out << fmt::format("{} {} {:.17g} {:.17g}\n", c.i, c.j, c.epsilon, c.sigma);
    } else if (!pair_epsilon.empty()) {
      out << "\nPair Coeffs # " << pair_style << "\n\n";
      for (int t = 0; t < s.types(); ++t) out << fmt::format("{} {:.17g} {:.17g}\n", t + 1, pair_epsilon[t], pair_sigma[t]);
    }
    out << (s.has_charges ? "\nAtoms # charge\n\n" : "\nAtoms # atomic\n\n");
    for (std::size_t i = 0; i < s.size(); ++i) {
      if (s.has_charges)
        out << fmt::format("{} {} {:.17g} {:.17g} {:.17g} {:.17g} 0 0 0\n", s.id[i], s.type[i] + 1, s.charge[i], s.x[i], s.y[i], s.z[i]);
      else
        out << fmt::format("{} {} {:.17g} {:.17g} {:.17g} 0 0 0\n", s.id[i], s.type[i] + 1, s.x[i], s.y[i], s.z[i]);
    }
    out << "\nVelocities\n\n";
    for (std::size_t i = 0; i < s.size(); ++i)
      out << fmt::format("{} {:.17g} {:.17g} {:.17g}\n", s.id[i], s.vx[i], s.vy[i], s.vz[i]);
    if (!out) throw Error(path + ": write failed");
  });
}

}  // namespace nbkit::io
