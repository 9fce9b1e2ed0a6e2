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

}  // namespace nbkit
