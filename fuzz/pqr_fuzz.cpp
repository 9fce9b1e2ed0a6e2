// libFuzzer target: any bytes given to the PQR reader either parse or raise nbkit::Error.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "nbkit/core/error.hpp"
#include "nbkit/io/pqr.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    const nbkit::Atoms atoms = nbkit::io::parse_pqr(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz");
    if (atoms.empty()) __builtin_trap();  // the reader promises atoms or an error
  } catch (const nbkit::Error&) {
  }
  return 0;
}
