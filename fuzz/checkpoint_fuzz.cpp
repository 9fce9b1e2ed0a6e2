// libFuzzer target: any bytes given to the checkpoint reader either read as a checkpoint whose
// arrays all hold the header's atom count (finite or not: Simulation::restore checks the values),
// or raise nbkit::Error.
#include <cstddef>
#include <cstdint>

#include "file_input.hpp"
#include "nbkit/core/error.hpp"
#include "nbkit/io/checkpoint.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = fuzz_input_file(data, size, ".chk");
  try {
    const nbkit::md::Checkpoint c = nbkit::io::read_checkpoint(path);
    const std::size_t n = c.x.size();
    for (const auto* v : {&c.y, &c.z, &c.vx, &c.vy, &c.vz, &c.forces.fx, &c.forces.fy, &c.forces.fz})
      if (v->size() != n) __builtin_trap();
  } catch (const nbkit::Error&) {
  }
  return 0;
}
