// libFuzzer target: any bytes given to the DCD reader either read as frames of the header's
// atom count with plausible coordinates, or raise nbkit::Error.
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "file_input.hpp"
#include "nbkit/core/atoms.hpp"
#include "nbkit/core/error.hpp"
#include "nbkit/io/dcd.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = fuzz_input_file(data, size, ".dcd");
  try {
    nbkit::io::DcdReader reader(path);
    nbkit::io::DcdFrame frame;
    for (int f = 0; f < 64 && reader.next(frame); ++f) {
      if (static_cast<std::int64_t>(frame.x.size()) != reader.atoms()) __builtin_trap();
      for (float v : frame.z)
        if (!(std::fabs(v) <= nbkit::kMaxCoordinate)) __builtin_trap();  // refused, never returned
    }
  } catch (const nbkit::Error&) {
  }
  return 0;
}
