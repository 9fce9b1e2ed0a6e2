#include "nbkit/io/atomic_file.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <optional>
#include <utility>

#include "nbkit/core/error.hpp"

namespace nbkit::io {

namespace fs = std::filesystem;

namespace {

// ---- Paths removed when a signal stops the process -------------------------------------
// A fixed table the handler can walk without allocating: a slot is claimed (state 1), its path
// written, then published (2); the handler removes published paths only (async-signal-safe
// calls). A slot's path is rewritten by the next registration while the handler may be reading
// it on another thread, so each slot is a sequence lock: `version` is odd while its path is being
// written, and the handler copies the path, then removes the copy only if the version was even
// and unchanged around the copy. Without it a path read half old, half new was removed: a file
// the process never made (AtomicFile.RemovalOnSignalsNeverTakesAHalfWrittenPath: 4 of 30 such
// names removed in 1.5 s on two cores). The bytes are atomics (relaxed): reading them while they
// are written is then no data race. A signal that lands in the registering thread itself while
// its path is half written skips that slot: at worst that one temporary stays behind.
constexpr int kSlots = 64;
constexpr std::size_t kPathBytes = 4096;
struct Slot {
  std::atomic<int> state{0};
  std::atomic<unsigned> version{0};
  std::atomic<bool> directory{false};
  std::array<std::atomic<char>, kPathBytes> path{};
};
static_assert(std::atomic<char>::is_always_lock_free && std::atomic<unsigned>::is_always_lock_free &&
                  std::atomic<int>::is_always_lock_free && std::atomic<bool>::is_always_lock_free,
              "the handler reads the slots: only lock-free atomics are async-signal-safe");
std::array<Slot, kSlots> g_slots;
constexpr std::array<int, 4> kSignals = {SIGINT, SIGTERM, SIGHUP, SIGPIPE};

// Slot's path into `out` (kPathBytes), if it was published and whole throughout the copy.
bool copy_published(const Slot& slot, char* out, bool& directory) {
  if (slot.state.load(std::memory_order_acquire) != 2) return false;
  const unsigned before = slot.version.load(std::memory_order_acquire);
  if (before % 2 != 0) return false;
  std::size_t k = 0;
  for (; k + 1 < kPathBytes; ++k)
    if ((out[k] = slot.path[k].load(std::memory_order_relaxed)) == '\0') break;
  out[k] = '\0';
  directory = slot.directory.load(std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_acquire);
  return slot.version.load(std::memory_order_relaxed) == before;
}

void remove_registered() {
  char path[kPathBytes];
  for (int pass = 0; pass < 2; ++pass)  // files first, then their directories
    for (const Slot& slot : g_slots) {
      bool directory = false;
      if (!copy_published(slot, path, directory) || directory != (pass == 1)) continue;
      if (directory) ::rmdir(path);
      else ::unlink(path);
    }
}

extern "C" void remove_registered_and_reraise(int signal) {
  remove_registered();
  // The default action now: the process ends as the signal says (exit status, core...).
  struct sigaction action {};
  action.sa_handler = SIG_DFL;
  sigemptyset(&action.sa_mask);
  ::sigaction(signal, &action, nullptr);
  ::raise(signal);
}

void install_handlers() {
  static std::once_flag once;
  std::call_once(once, [] {
    for (int signal : kSignals) {
      struct sigaction previous {};
      if (::sigaction(signal, nullptr, &previous) != 0) continue;
      // A host program's own handler (or an ignored signal) is left alone.
      if ((previous.sa_flags & SA_SIGINFO) || previous.sa_handler != SIG_DFL) continue;
      struct sigaction action {};
      action.sa_handler = remove_registered_and_reraise;
      sigemptyset(&action.sa_mask);
      ::sigaction(signal, &action, nullptr);
    }
  });
}

int register_path(const std::string& path, bool directory) {
  if (path.size() >= kPathBytes) return -1;
  install_handlers();
  for (int i = 0; i < kSlots; ++i) {
    Slot& slot = g_slots[i];
    int expected = 0;
    if (!slot.state.compare_exchange_strong(expected, 1, std::memory_order_acq_rel)) continue;
    const unsigned version = slot.version.load(std::memory_order_relaxed);
    slot.version.store(version + 1, std::memory_order_relaxed);  // odd: being written
    std::atomic_thread_fence(std::memory_order_release);
    for (std::size_t k = 0; k <= path.size(); ++k) slot.path[k].store(path.c_str()[k], std::memory_order_relaxed);
    slot.directory.store(directory, std::memory_order_relaxed);
    slot.version.store(version + 2, std::memory_order_release);
    slot.state.store(2, std::memory_order_release);
    return i;
  }
  return -1;  // more temporaries at once than slots: this one is removed on errors only
}

void unregister_path(int slot) {
  if (slot >= 0) g_slots[slot].state.store(0, std::memory_order_release);
}

// target.tmp-HOST-PID: the process id alone can repeat on another machine, and the ranks of an
// mpirun job on several hosts may probe the same directory of a shared file system at once
// (O_EXCL would then fail one of them for nothing). The host name's characters outside
// [A-Za-z0-9.-] become '_'.
std::string temporary_name(const std::string& target) {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
  std::string name;
  for (const char* c = host; *c; ++c)
    name += (std::isalnum(static_cast<unsigned char>(*c)) || *c == '.' || *c == '-') ? *c : '_';
  return target + ".tmp-" + (name.empty() ? std::string() : name + "-") + std::to_string(::getpid());
}

// /dev/stdout, /dev/fd/N and /proc/self/fd/N are written where they point now, without
// following their links (a shell's redirection must keep receiving the output).
bool is_process_stream_name(const std::string& path) {
  return path.starts_with("/dev/") || path.starts_with("/proc/");
}

// (device, inode) of an existing file, else its absolute path with links resolved.
struct Identity {
  bool exists = false;
  dev_t device = 0;
  ino_t inode = 0;
  std::string path;
  bool operator==(const Identity& o) const {
    return exists == o.exists && (exists ? device == o.device && inode == o.inode : path == o.path);
  }
};

std::optional<Identity> identity(const std::string& path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) == 0) {
    if (S_ISCHR(info.st_mode) || S_ISFIFO(info.st_mode) || S_ISSOCK(info.st_mode)) return std::nullopt;  // streams
    return Identity{true, info.st_dev, info.st_ino, ""};
  }
  std::error_code error;
  const fs::path resolved = fs::weakly_canonical(fs::absolute(write_target(path), error), error);
  return Identity{false, 0, 0, error ? fs::absolute(path).lexically_normal().string() : resolved.string()};
}

}  // namespace

void remove_registered_paths() { remove_registered(); }

RemoveOnSignal::RemoveOnSignal(const std::string& path, bool directory) : slot_(register_path(path, directory)) {}
RemoveOnSignal::~RemoveOnSignal() { unregister_path(slot_); }

std::string write_target(const std::string& path) {
  if (is_process_stream_name(path)) return path;
  fs::path target(path);
  for (int hop = 0; hop < 40; ++hop) {
    std::error_code error;
    if (!fs::is_symlink(target, error)) return target.string();
    const fs::path link = fs::read_symlink(target, error);
    if (error) return target.string();
    target = link.is_absolute() ? link : (target.parent_path() / link).lexically_normal();
  }
  throw Error(path + ": too many levels of symbolic links");
}

bool is_stream_target(const std::string& path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) return false;
  return S_ISCHR(info.st_mode) || S_ISFIFO(info.st_mode) || S_ISSOCK(info.st_mode);
}

void check_writable(const std::string& path) {
  if (is_stream_target(path)) return;  // opened when written (a FIFO's open would wait for a reader)
  const std::string target = write_target(path);
  std::error_code ignored;
  if (fs::is_directory(target, ignored)) throw Error(path + ": is a directory, expected a file name");
  const std::string probe = temporary_name(target);
  const RemoveOnSignal remove(probe);
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0644);
  if (fd < 0) throw Error(path + ": cannot write here: " + std::strerror(errno));
  ::close(fd);
  ::unlink(probe.c_str());
}

namespace {

// 1 for /dev/stdout (and /dev/fd/1, /proc/self/fd/1), 2 for /dev/stderr; else -1.
int standard_stream(const std::string& path) {
  for (int fd : {1, 2})
    for (const std::string& name : {fd == 1 ? std::string("/dev/stdout") : std::string("/dev/stderr"),
                                    "/dev/fd/" + std::to_string(fd), "/proc/self/fd/" + std::to_string(fd)})
      if (path == name) return fd;
  return -1;
}

// Writes through the process's own descriptor: opening /dev/stdout anew would start a second
// file offset in a redirected file, and the summary line would then overwrite the output.
void write_to_descriptor(int fd, const std::function<void(const std::string&)>& write) {
  char pattern[] = "/tmp/nbkit-stream-XXXXXX";
  const int temporary_fd = ::mkstemp(pattern);
  if (temporary_fd < 0) throw Error(std::string("cannot create a temporary file: ") + std::strerror(errno));
  ::close(temporary_fd);
  const std::string temporary = pattern;
  const RemoveOnSignal remove(temporary);
  try {
    write(temporary);
    std::fflush(fd == 1 ? stdout : stderr);
    std::FILE* in = std::fopen(temporary.c_str(), "rb");
    if (!in) throw Error(temporary + ": cannot read back");
    char buffer[1 << 16];
    while (const std::size_t n = std::fread(buffer, 1, sizeof buffer, in))
      for (std::size_t done = 0; done < n;) {
        const ssize_t w = ::write(fd, buffer + done, n - done);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
          std::fclose(in);
          throw Error(std::string(fd == 1 ? "/dev/stdout" : "/dev/stderr") + ": write failed: " + std::strerror(errno));
        }
        done += static_cast<std::size_t>(w);
      }
    std::fclose(in);
  } catch (...) {
    std::remove(temporary.c_str());
    throw;
  }
  std::remove(temporary.c_str());
}

}  // namespace

void write_atomically(const std::string& path, const std::function<void(const std::string&)>& write) {
  if (const int fd = standard_stream(path); fd >= 0) {
    write_to_descriptor(fd, write);
    return;
  }
  if (is_stream_target(path) || (is_process_stream_name(path) && fs::exists(path))) {
    write(path);
    return;
  }
  check_writable(path);
  const std::string target = write_target(path);
  const std::string temporary = temporary_name(target);
  const RemoveOnSignal remove(temporary);
  try {
    write(temporary);
  } catch (...) {
    std::remove(temporary.c_str());
    throw;
  }
  if (std::rename(temporary.c_str(), target.c_str()) != 0) {
    const std::string reason = std::strerror(errno);
    std::remove(temporary.c_str());
    throw Error(path + ": cannot rename the finished output into place: " + reason);
  }
}

void check_distinct_files(const std::vector<NamedFile>& inputs, const std::vector<NamedFile>& outputs) {
  std::vector<std::pair<Identity, const NamedFile*>> inputs_seen, outputs_seen;
  for (const NamedFile& f : inputs)
    if (!f.path.empty())
      if (const auto id = identity(f.path)) inputs_seen.emplace_back(*id, &f);
  for (const NamedFile& f : outputs) {
    if (f.path.empty()) continue;
    const auto id = identity(f.path);
    if (!id) continue;  // a stream
    for (const auto& [other, input] : inputs_seen)
      if (other == *id)
        throw Error(fmt::format("{} {} is the input {} ({}): nbkit never writes over its inputs; choose another name",
                                f.option, f.path, input->path, input->option));
    for (const auto& [other, output] : outputs_seen)
      if (other == *id)
        throw Error(fmt::format("{} {} and {} {} name the same file: give each output its own name", output->option,
                                output->path, f.option, f.path));
    outputs_seen.emplace_back(*id, &f);
  }
}

}  // namespace nbkit::io
