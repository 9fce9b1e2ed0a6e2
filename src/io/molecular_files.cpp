// Biomolecular files by their names (nbkit/io/molecular_files.hpp).
#include "nbkit/io/molecular_files.hpp"

#include <filesystem>

#include "io/text.hpp"
#include "nbkit/core/error.hpp"
#include "nbkit/io/amber.hpp"
#include "nbkit/io/charmm.hpp"

namespace nbkit::io {

std::string lower_extension(const std::string& path) {
  std::filesystem::path p(path);
  if (p.extension() == ".gz") p = p.stem();
  std::string e = p.extension().string();
  for (char& c : e) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return e;
}

md::Topology read_molecular_topology(const std::string& path, const std::vector<std::string>& parameters) {
  const std::string e = lower_extension(path);
  if (e == ".psf") return read_charmm(path, parameters);
  if (!parameters.empty()) throw Error("CHARMM parameter files go with a psf, not with " + path);
  if (e == ".prmtop" || e == ".parm7") return read_prmtop(path);
  throw Error(path + ": unknown topology format (expected an AMBER .prmtop or .parm7, or a CHARMM .psf)");
}

md::Coordinates read_molecular_coordinates(const std::string& path, std::size_t atoms) {
  const std::string e = lower_extension(path);
  if (e == ".crd" || e == ".cor") {
    const std::string text = read_file_text(path, "a coordinate file");
    const auto start = text.find_first_not_of(" \t\r\n");
    if (start != std::string::npos && text[start] == '*') return parse_charmm_crd(text, path, atoms);
    return parse_inpcrd(text, path, atoms);
  }
  return read_inpcrd(path, atoms);
}

}  // namespace nbkit::io
