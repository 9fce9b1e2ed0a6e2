#pragma once
// A PDB or mmCIF file (gzipped too) read by gemmi, with nbkit's messages: a missing file named,
// gemmi's parse errors as nbkit::Error "path: what". Internal to the library.
#include <fmt/format.h>
#include <gemmi/gz.hpp>
#include <gemmi/mmread.hpp>

#include <filesystem>
#include <string>

#include "nbkit/core/error.hpp"

namespace nbkit::io {

inline gemmi::Structure read_gemmi_structure(const std::string& path) {
  if (!std::filesystem::exists(path)) throw Error(path + ": no such file");
  try {
    return gemmi::read_structure(gemmi::MaybeGzipped(path));
  } catch (const std::exception& error) {
    throw Error(fmt::format("{}: {}", path, error.what()));
  }
}

}  // namespace nbkit::io
