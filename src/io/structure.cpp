#include "nbkit/io/structure.hpp"

#define GEMMI_WRITE_IMPLEMENTATION  // the one translation unit that compiles gemmi's PDB writer
#include <fmt/format.h>
#include <gemmi/to_pdb.hpp>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <set>
#include <tuple>
#include <cctype>
#include <filesystem>
#include <iterator>
#include <fstream>
#include <sstream>

#include "io/gemmi_structure.hpp"
#include "io/text.hpp"
#include "nbkit/core/error.hpp"
#include "nbkit/io/atomic_file.hpp"
#include "nbkit/io/cell.hpp"
#include "nbkit/io/pqr.hpp"

namespace nbkit::io {

namespace fs = std::filesystem;

StructureFormat guess_structure_format(const std::string& path) {
  std::string name = path;
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
  if (name.ends_with(".gz")) name.resize(name.size() - 3);
  if (name.ends_with(".pdb") || name.ends_with(".ent")) return StructureFormat::pdb;
  if (name.ends_with(".cif") || name.ends_with(".mmcif")) return StructureFormat::mmcif;
  return StructureFormat::pqr;
}

std::string find_pdb2pqr() {
  const char* path_env = std::getenv("PATH");
  if (!path_env) return "";
  std::stringstream dirs(path_env);
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    for (const char* name : {"pdb2pqr", "pdb2pqr30"}) {
      const fs::path candidate = fs::path(dir.empty() ? "." : dir) / name;
      if (::access(candidate.c_str(), X_OK) == 0) return candidate.string();
    }
  }
  return "";
}

namespace {

struct MissingResidues {
  std::vector<std::string> names;  // "ZN A102"
  std::int64_t atoms = 0;
};

// The input's residues (chain, number, insertion code) that pdb2pqr's PQR lacks (pdb2pqr is
// run with --keep-chain; it may rename residues, HIS -> HID, but keeps their numbers).
MissingResidues residues_left_out(const gemmi::Structure& structure, std::string_view pqr, const std::string& source) {
  std::set<std::tuple<std::string, int, char>> present;
  for (const PqrRecord& r : parse_pqr_records(pqr, source))
    present.emplace(r.chain, r.residue_number.value_or(0), r.insertion_code);
  MissingResidues missing;
  if (structure.models.empty()) return missing;
  for (const auto& chain : structure.models[0].chains)
    for (const auto& residue : chain.residues) {
      const int number = residue.seqid.num.has_value() ? *residue.seqid.num : 0;
      const char icode = residue.seqid.icode == ' ' || residue.seqid.icode == 0 ? ' ' : residue.seqid.icode;
      if (present.count({chain.name, number, icode})) continue;
      missing.names.push_back(fmt::format("{} {}{}{}", residue.name, chain.name, number, icode == ' ' ? "" : std::string(1, icode)));
      missing.atoms += static_cast<std::int64_t>(residue.atoms.size());
    }
  return missing;
}

std::string shell_quote(const std::string& text) {
  std::string quoted = "'";
  for (char c : text) quoted += (c == '\'') ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

Atoms charges_from_pdb2pqr(const std::string& path, const gemmi::Structure& structure,
                           const ChargeOptions& charges) {
  const std::string pdb2pqr = find_pdb2pqr();
  if (pdb2pqr.empty())
    throw Error(fmt::format("{}: --charges {} needs pdb2pqr, which is not installed (Debian: apt-get install "
                            "pdb2pqr)",
                            path, charges.force_field));
  char pattern[] = "/tmp/nbkit-pdb2pqr-XXXXXX";
  if (!::mkdtemp(pattern)) throw Error("cannot create a temporary directory for pdb2pqr");
  const fs::path work(pattern);
  const fs::path input = work / "input.pdb", output = work / "output.pqr", log = work / "pdb2pqr.log";
  const RemoveOnSignal remove_work(work.string(), true), remove_input(input.string()), remove_output(output.string()),
      remove_log(log.string());
  try {
    {
      std::ofstream pdb(input);
      gemmi::write_pdb(structure, pdb);  // gemmi normalises PDB or mmCIF input for pdb2pqr
      if (!pdb) throw Error("cannot write a temporary PDB file for pdb2pqr");
    }
    std::string force_field = charges.force_field;
    std::transform(force_field.begin(), force_field.end(), force_field.begin(),
                   [](unsigned char c) { return std::toupper(c); });
    // --keep-chain: the chain IDs let the output's residues be matched with the input's.
    const std::string command = fmt::format("{} --ff={} --keep-chain {} {} > {} 2>&1", shell_quote(pdb2pqr),
                                            shell_quote(force_field), shell_quote(input.string()),
                                            shell_quote(output.string()), shell_quote(log.string()));
    const int status = std::system(command.c_str());
    std::ifstream log_stream(log);
    std::stringstream log_text;
    log_text << log_stream.rdbuf();
    if (charges.verbose) fmt::print(stderr, "{}", log_text.str());
    if (status != 0 || !fs::exists(output)) {
      std::string last_line, line;
      while (std::getline(log_text, line))
        if (!line.empty()) last_line = line;
      throw Error(fmt::format("{}: pdb2pqr --ff={} failed: {}", path, force_field, last_line));
    }
    const std::string pqr_text = read_file_text(output.string(), "pdb2pqr's PQR output");
    Atoms atoms = parse_pqr(pqr_text, "pdb2pqr's output for " + path);
    if (!charges.save_pqr.empty())
      write_atomically(charges.save_pqr, [&](const std::string& temporary) {
        std::ofstream out(temporary, std::ios::binary);
        out << pqr_text;
        if (!out.flush()) throw Error(charges.save_pqr + ": write failed");
      });
    // pdb2pqr leaves out what its force field cannot type (ligands, metals, unusual
    // residues) and says so only in its log: a map without them has the wrong net charge.
    const MissingResidues missing = residues_left_out(structure, pqr_text, "pdb2pqr's output for " + path);
    if (!missing.names.empty()) {
      std::string listed;
      for (std::size_t r = 0; r < missing.names.size() && r < 8; ++r) listed += (r ? ", " : "") + missing.names[r];
      if (missing.names.size() > 8) listed += fmt::format(", and {} more", missing.names.size() - 8);
      const std::string what = fmt::format(
          "pdb2pqr --ff={} left out {} residue{} ({} atom{}) it has no parameters for: {}", force_field,
          missing.names.size(), missing.names.size() == 1 ? "" : "s", missing.atoms, missing.atoms == 1 ? "" : "s",
          listed);
      if (!charges.allow_missing)
        throw Error(fmt::format("{}: {}; the map would lack their charges. Pass --allow-missing to map without them, "
                                "or make a PQR that has them (pdb2pqr --ligand, or another force field){}",
                                path, what,
                                charges.save_pqr.empty() ? "; --save-pqr FILE keeps pdb2pqr's PQR" : ""));
      if (charges.notice) *charges.notice = what + " (--allow-missing: mapped without them)";
    }
    fs::remove_all(work);
    return atoms;
  } catch (...) {
    std::error_code ignored;
    fs::remove_all(work, ignored);
    throw;
  }
}

}  // namespace

Atoms read_atoms(const std::string& path, const ChargeOptions& charges) {
  std::string extension = fs::path(path).extension().string();
  std::transform(extension.begin(), extension.end(), extension.begin(), [](unsigned char c) { return std::tolower(c); });
  if (extension == ".dcd" || extension == ".xtc" || extension == ".trr" || extension == ".nc" || extension == ".mdcrd")
    throw Error(fmt::format("{}: a trajectory, not a structure: give the structure with its charges (PQR) as the input "
                            "and a DCD trajectory with --trajectory{}",
                            path, extension == ".dcd" ? "" : " (convert other formats to DCD, e.g. with mdconvert or VMD)"));
  const StructureFormat format = guess_structure_format(path);
  if (format == StructureFormat::pqr) {
    if (!charges.force_field.empty())
      throw Error(fmt::format("{}: --charges applies to PDB or mmCIF input; a PQR file has its charges already", path));
    return read_pqr(path);
  }
  const gemmi::Structure structure = read_gemmi_structure(path);
  if (charges.force_field.empty()) {
    std::size_t count = 0;
    if (!structure.models.empty())
      for (const auto& chain : structure.models[0].chains)
        for (const auto& residue : chain.residues) count += residue.atoms.size();
    const std::string stem = fs::path(path).stem().string();
    throw Error(fmt::format(
        "{}: a {} file ({} atoms) carries no partial charges or radii; make a PQR with "
        "'pdb2pqr --ff=AMBER {} {}.pqr' and map that, or pass --charges amber (or another pdb2pqr force field) "
        "to run pdb2pqr for you{}",
        path, format == StructureFormat::pdb ? "PDB" : "mmCIF", count, path, stem,
        find_pdb2pqr().empty() ? " (pdb2pqr is not installed: apt-get install pdb2pqr)" : ""));
  }
  return charges_from_pdb2pqr(path, structure, charges);
}

std::vector<Atoms> read_models(const std::string& path) {
  if (guess_structure_format(path) == StructureFormat::pqr) return read_pqr_models(path);
  const gemmi::Structure structure = read_gemmi_structure(path);
  std::vector<Atoms> models;
  for (const auto& model : structure.models) {
    Atoms atoms;
    for (const auto& chain : model.chains)
      for (const auto& residue : chain.residues)
        for (const auto& atom : residue.atoms) atoms.push_back({atom.pos.x, atom.pos.y, atom.pos.z}, 0.0, 0.0);
    if (!models.empty() && atoms.size() != models.front().size())
      throw Error(fmt::format("{}: model {} has {} atoms, model 1 has {}", path, models.size() + 1, atoms.size(),
                              models.front().size()));
    models.push_back(std::move(atoms));
  }
  if (models.empty()) throw Error(path + ": no models");
  return models;
}

namespace {

// Element from a PDB/PQR atom name: its first letter ("1HB" -> H, "CA" -> C); ions name
// their element (NA, CL, MG...) and are looked up whole.
gemmi::Element element_of(const std::string& name, bool whole) {
  if (whole) return gemmi::Element(name);
  for (char c : name)
    if (std::isalpha(static_cast<unsigned char>(c))) return gemmi::Element(std::string(1, c));
  return gemmi::El::X;
}

// The records of the first model, and the number of models (the file's checks first).
std::vector<PqrRecord> first_model(const std::string& text, const std::string& path, int* models) {
  *models = static_cast<int>(parse_pqr_models(text, path).size());
  std::vector<PqrRecord> records = parse_pqr_records(text, path);
  records.erase(std::remove_if(records.begin(), records.end(), [](const PqrRecord& r) { return r.model != 0; }),
                records.end());
  return records;
}

}  // namespace

int write_pqr_with_atoms(const std::string& pqr_path, const std::vector<ExtraAtom>& extra, const std::string& out_path,
                         const std::string& remark) {
  const std::string text = read_file_text(pqr_path, "a PQR file");
  int models = 0;
  const std::vector<PqrRecord> records = first_model(text, pqr_path, &models);
  std::int64_t serial = static_cast<std::int64_t>(records.size());
  for (const PqrRecord& r : records)
    if (r.serial) serial = std::max(serial, *r.serial);
  std::string out;
  // The input's lines up to the end of its first model, without MODEL/ENDMDL/END records.
  const std::int64_t last_line = records.empty() ? 0 : records.back().line;
  Lines lines(text);
  std::string_view line;
  while (lines.next(line) && lines.number() <= last_line) {
    if (line.starts_with("MODEL") || line.starts_with("ENDMDL") || line.starts_with("END")) continue;
    out.append(line).push_back('\n');
  }
  out += "REMARK   " + remark + "\n";
  int residue = 0;
  for (const ExtraAtom& e : extra)  // pdb2pqr's columns, chain I
    out += fmt::format("HETATM{:5d} {:<4s} {:<3s} I{:4d}    {:8.3f}{:8.3f}{:8.3f} {:7.4f} {:6.4f}\n", ++serial, e.name,
                       e.name, ++residue % 10000, e.position.x, e.position.y, e.position.z, e.charge, e.radius);
  out += "END\n";
  write_atomically(out_path, [&](const std::string& temporary) {
    std::ofstream file(temporary, std::ios::binary);
    file << out;
    if (!file.flush()) throw Error(out_path + ": write failed");
  });
  return models;
}

int write_pqr_as_pdb(const std::string& pqr_path, const std::vector<ExtraAtom>& extra, const std::string& pdb_path) {
  const std::string text = read_file_text(pqr_path, "a PQR file");
  int models = 0;
  const std::vector<PqrRecord> records = first_model(text, pqr_path, &models);
  gemmi::Structure st;
  st.models.emplace_back("1");
  gemmi::Model& model = st.models.back();
  for (const PqrRecord& r : records) {
    const std::string chain = r.chain.empty() ? "A" : r.chain;
    if (model.chains.empty() || model.chains.back().name != chain) model.chains.emplace_back(chain);
    gemmi::Chain& c = model.chains.back();
    const int number = r.residue_number.value_or(0);
    if (c.residues.empty() || c.residues.back().name != r.residue_name || *c.residues.back().seqid.num != number ||
        c.residues.back().seqid.icode != r.insertion_code) {
      gemmi::Residue residue;
      residue.name = r.residue_name;
      residue.seqid = gemmi::SeqId(number, r.insertion_code);
      residue.het_flag = r.hetatm ? 'H' : 'A';
      c.residues.push_back(residue);
    }
    gemmi::Atom a;
    a.name = r.name;
    a.element = element_of(a.name, false);
    a.pos = gemmi::Position(r.position.x, r.position.y, r.position.z);
    a.b_iso = 0;
    c.residues.back().atoms.push_back(a);
  }
  if (!extra.empty()) {
    gemmi::Chain ions("I");
    int number = 0;
    for (const ExtraAtom& e : extra) {
      gemmi::Residue r;
      r.name = e.name;
      r.seqid = gemmi::SeqId(++number, ' ');
      r.het_flag = 'H';
      gemmi::Atom a;
      a.name = e.name;
      a.element = element_of(e.name, true);
      a.pos = gemmi::Position(e.position.x, e.position.y, e.position.z);
      a.b_iso = 0;
      r.atoms.push_back(a);
      ions.residues.push_back(r);
    }
    model.chains.push_back(ions);
  }
  // A CRYST1 record only for a real cell: gemmi would write a 1 A placeholder box, which
  // viewers take as a crystal of that size.
  gemmi::PdbWriteOptions options;
  const std::optional<PeriodicBox> cell = parse_cryst1(text, pqr_path);
  if (cell) st.cell.set(cell->length(0), cell->length(1), cell->length(2), 90, 90, 90);
  else options.cryst1_record = false;
  write_atomically(pdb_path, [&](const std::string& temporary) {
    std::ofstream out(temporary);
    gemmi::write_pdb(st, out, options);
    if (!out.flush()) throw Error(pdb_path + ": write failed");
  });
  return models;
}

}  // namespace nbkit::io
