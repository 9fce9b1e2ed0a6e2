#pragma once
// What a run will hold in memory and write to disk, counted before it starts, so that a
// request the machine cannot serve fails in the first second with one sentence instead of
// being killed an hour in, or filling the disk.
#include <cstdint>
#include <string>
#include <vector>

namespace nbkit {

class ResourcePlan {
 public:
  explicit ResourcePlan(std::string run) : run_(std::move(run)) {}
  // Host memory the run holds at its peak: each part with what it is ("the map").
  void memory(std::uint64_t bytes, std::string what);
  // A file the run writes (its size estimated from the format), checked against the free
  // space of the file system that will hold it.
  void disk(const std::string& path, std::uint64_t bytes, std::string what);
  // Throws MemoryError ("nbkit map needs 23.4 GiB of memory (the map 15.6 GiB, the MRC copy
  // 7.8 GiB) but only 20.1 GiB are available") or DiskError (the same for a file system).
  void check() const;
  std::uint64_t memory_bytes() const;

 private:
  struct Part {
    std::uint64_t bytes;
    std::string what, path;
  };
  std::string run_;
  std::vector<Part> memory_, disk_;
};

// Bytes free for this user on the file system that holds `path` (a file that may not exist
// yet: its directory is asked); 0 when unknown. NBKIT_DISK_LIMIT (bytes) overrides it, for
// tests.
std::uint64_t available_disk_bytes(const std::string& path);

}  // namespace nbkit
