#include "nbkit/io/atomic_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "nbkit/core/error.hpp"

namespace nbkit::io {

namespace {
std::string temporary_name(const std::string& path) {
  return path + ".tmp-" + std::to_string(::getpid());
}
}  // namespace

void check_writable(const std::string& path) {
  const std::string probe = temporary_name(path);
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0644);
  if (fd < 0) throw Error(path + ": cannot write here: " + std::strerror(errno));
  ::close(fd);
  ::unlink(probe.c_str());
  if (std::filesystem::is_directory(path)) throw Error(path + ": is a directory, expected a file name");
}

void write_atomically(const std::string& path, const std::function<void(const std::string&)>& write) {
  check_writable(path);
  const std::string temporary = temporary_name(path);
  try {
    write(temporary);
  } catch (...) {
    std::remove(temporary.c_str());
    throw;
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    const std::string reason = std::strerror(errno);
    std::remove(temporary.c_str());
    throw Error(path + ": cannot rename the finished output into place: " + reason);
  }
}

}  // namespace nbkit::io
