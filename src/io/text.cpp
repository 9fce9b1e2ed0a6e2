#include "io/text.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "nbkit/core/error.hpp"

namespace nbkit::io {

std::string read_file_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path + ": cannot open: " + std::strerror(errno));
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) throw Error(path + ": read error");
  return buffer.str();
}

}  // namespace nbkit::io
