#pragma once
// Memory the machine can give us, checked before large allocations.
#include <cstdint>
#include <string>

namespace nbkit {

// Bytes available now: MemAvailable from /proc/meminfo, capped by a cgroup limit if any.
// 0 when it cannot be read (then no check is made).
std::uint64_t available_memory_bytes();

// Throws MemoryError "<what> needs X GiB but only Y GiB are available" when `bytes` exceeds
// what is available. The environment variable NBKIT_MEMORY_LIMIT (bytes) overrides the
// machine's figure, for tests and for sharing a node.
void check_memory(std::uint64_t bytes, const std::string& what);

std::string format_bytes(std::uint64_t bytes);

// "2G", "1.5GiB", "500M", "64k" or a plain number of bytes (K, M, G, T: powers of 1024, with
// or without a trailing "B" or "iB", as GNU sort -S and the Slurm options take them). Throws
// nbkit::Error naming `option` for anything else.
std::uint64_t parse_bytes(const std::string& text, const std::string& option);

}  // namespace nbkit
