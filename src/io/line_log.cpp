#include "nbkit/io/line_log.hpp"

#include <cerrno>
#include <cstring>

#include "nbkit/core/error.hpp"

namespace nbkit::io {

LineLog::LineLog(const std::string& path) : path_(path), file_(std::fopen(path.c_str(), "w"), &std::fclose) {
  if (!file_) throw Error(path + ": cannot write: " + std::strerror(errno));
}

void LineLog::write(const std::string& text) {
  if (std::fputs(text.c_str(), file_.get()) < 0 || std::fflush(file_.get()) != 0)
    throw Error(path_ + ": write failed: " + std::strerror(errno));
}

}  // namespace nbkit::io
