// libFuzzer target: any bytes given to the OpenDX reader either parse into a consistent
// map or raise nbkit::Error.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "nbkit/core/error.hpp"
#include "nbkit/io/map_files.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  // Keep the reader's memory check from letting a header ask for gigabytes.
  setenv("NBKIT_MEMORY_LIMIT", "67108864", 0);
  try {
    const nbkit::Map map = nbkit::io::parse_dx(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz");
    if (static_cast<std::int64_t>(map.values.size()) != map.lattice.size()) __builtin_trap();
  } catch (const nbkit::Error&) {
  }
  return 0;
}
