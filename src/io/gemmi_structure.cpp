#include "io/gemmi_structure.hpp"

#include <fmt/format.h>
#include <gemmi/gz.hpp>
#include <gemmi/mmread.hpp>

#include <filesystem>

#include "nbkit/core/error.hpp"

namespace nbkit::io {

gemmi::Structure read_gemmi_structure(const std::string& path) {
  if (!std::filesystem::exists(path)) throw Error(path + ": no such file");
  try {
    return gemmi::read_structure(gemmi::MaybeGzipped(path));
  } catch (const std::exception& error) {
    throw Error(fmt::format("{}: {}", path, error.what()));
  }
}

}  // namespace nbkit::io
