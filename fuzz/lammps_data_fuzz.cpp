// libFuzzer target: any text given to the LAMMPS data reader either reads as a consistent
// system (every atom's type within the types, IDs sorted and distinct) or raises nbkit::Error.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "nbkit/core/error.hpp"
#include "nbkit/io/lammps_data.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  setenv("NBKIT_MEMORY_LIMIT", "67108864", 0);
  try {
    const nbkit::io::LammpsData d = nbkit::io::parse_lammps_data(
        std::string_view(reinterpret_cast<const char*>(data), size), "fuzz", nbkit::md::Units::lj);
    const nbkit::md::System& s = d.system;
    for (std::size_t i = 0; i < s.size(); ++i) {
      if (s.type[i] < 0 || s.type[i] >= s.types()) __builtin_trap();
      if (i > 0 && s.id[i] <= s.id[i - 1]) __builtin_trap();
      if (!std::isfinite(s.x[i]) || !std::isfinite(s.vx[i])) __builtin_trap();
    }
    for (double m : s.type_mass)
      if (!(m > 0)) __builtin_trap();
  } catch (const nbkit::Error&) {
  }
  return 0;
}
