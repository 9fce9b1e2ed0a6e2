#pragma once
// Outputs are never left half-written: write to a temporary file beside the target, then
// rename it over the target (atomic on POSIX file systems).
#include <functional>
#include <string>

namespace nbkit::io {

// Calls write(temporary_path); on success renames it to `path`, on failure (exception)
// removes the temporary and rethrows. Throws nbkit::Error when the directory is not
// writable, naming `path`.
void write_atomically(const std::string& path, const std::function<void(const std::string&)>& write);

// Throws nbkit::Error unless a file can be created at `path` (checked before a long run).
void check_writable(const std::string& path);

}  // namespace nbkit::io
