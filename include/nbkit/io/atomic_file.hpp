#pragma once
// Outputs are never left half-written: write to a temporary file beside the target, then
// rename it over the target (atomic on POSIX file systems).
//   - A target that is a symbolic link is followed: the file it names is replaced, the link
//     stays (as `cp` and editors do).
//   - A target that is a character device, FIFO or socket (/dev/null, a named pipe) is written
//     directly: there is nothing to rename over. /dev/stdout and /dev/stderr go through the
//     process's own descriptors (a redirected file keeps one offset for everything printed).
//   - Temporaries are removed on every error path and when the process is stopped by
//     SIGINT, SIGTERM, SIGHUP or SIGPIPE (a handler installed with the first temporary, only
//     where the signal had its default action).
#include <functional>
#include <string>
#include <vector>

namespace nbkit::io {

// Calls write(temporary_path); on success renames it to `path`, on failure (exception)
// removes the temporary and rethrows. Throws nbkit::Error when the directory is not
// writable, naming `path`.
void write_atomically(const std::string& path, const std::function<void(const std::string&)>& write);

// Throws nbkit::Error unless a file can be created at `path` (checked before a long run).
void check_writable(const std::string& path);

// The file a write to `path` lands in: symbolic links followed to their target (which may
// not exist yet).
std::string write_target(const std::string& path);

// True for an existing character device, FIFO or socket (written directly, never renamed over).
bool is_stream_target(const std::string& path);

// A file a command reads or writes, with the option that named it ("-o", "--png", "INPUT").
struct NamedFile {
  std::string path, option;
};

// Refuses, before anything runs, an output that would replace one of the inputs or another
// output (the same file by any name: links and relative paths resolved). Streams
// (/dev/stdout, FIFOs) may repeat. Throws nbkit::Error naming both options.
void check_distinct_files(const std::vector<NamedFile>& inputs, const std::vector<NamedFile>& outputs);

// A path removed if the process is stopped by a signal while it is registered (the DCD and
// CSV streams of long runs register nothing: they are valid at every moment; pdb2pqr's work
// files do). Registration ends with the object.
// Removes every path registered now, as a signal would (a job of several ranks ending by
// MPI_Abort, which no handler sees: main's error path calls this first).
void remove_registered_paths();

class RemoveOnSignal {
 public:
  explicit RemoveOnSignal(const std::string& path, bool directory = false);
  ~RemoveOnSignal();
  RemoveOnSignal(const RemoveOnSignal&) = delete;
  RemoveOnSignal& operator=(const RemoveOnSignal&) = delete;

 private:
  int slot_;
};

}  // namespace nbkit::io
