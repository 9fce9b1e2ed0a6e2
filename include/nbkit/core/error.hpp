#pragma once
// The one error type of the library. Library code throws; only the command-line tool
// catches, prints one line and exits non-zero (never exit() from library code).
#include <cstdint>
#include <stdexcept>
#include <string>

namespace nbkit {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Bad input file content: the message names file, line and field, and what was expected.
class InputError : public Error {
 public:
  InputError(const std::string& file, std::int64_t line, const std::string& field,
             const std::string& problem);
  const std::string& file() const { return file_; }
  std::int64_t line() const { return line_; }
  const std::string& field() const { return field_; }

 private:
  std::string file_;
  std::int64_t line_;
  std::string field_;
};

// A request that needs more memory than the machine has; thrown before allocating.
class MemoryError : public Error {
 public:
  using Error::Error;
};

// Outputs larger than the free space of their file system; thrown before writing.
class DiskError : public Error {
 public:
  using Error::Error;
};

}  // namespace nbkit
