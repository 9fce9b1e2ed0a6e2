// libFuzzer target: any text given to nbkit md's TOML reader either describes a run (a
// positive time step and cutoff, a force field for every type) or raises nbkit::Error.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "nbkit/core/error.hpp"
#include "nbkit/io/md_config.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  // Lattices are checked against this before they are made (a TOML can ask for 10^15 atoms).
  setenv("NBKIT_MEMORY_LIMIT", "16777216", 0);
  try {
    const nbkit::io::MdConfig run = nbkit::io::parse_md_config(
        std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.toml", "/nonexistent-fuzz-base");
    if (!(run.timestep > 0) || !(run.field.cutoff > 0) || run.thermo_every < 1) __builtin_trap();
    if (run.field.types() != run.system.types()) __builtin_trap();
    for (double s : run.field.sigma)
      if (!(s > 0) || !std::isfinite(s)) __builtin_trap();
  } catch (const nbkit::Error&) {
  }
  return 0;
}
