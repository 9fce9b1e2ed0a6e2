// libFuzzer target: any text given to the AMBER prmtop reader either reads as a topology that
// passes md::Topology::check (every index within the atoms, every parameter finite) or raises
// nbkit::Error; the same text given to the inpcrd reader (for 1 to 8 atoms) either gives that
// many finite positions or raises nbkit::Error.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "nbkit/core/error.hpp"
#include "nbkit/io/amber.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const nbkit::md::Topology t = nbkit::io::parse_prmtop(text, "fuzz");
    t.check();
    if (t.size() == 0) __builtin_trap();
  } catch (const nbkit::Error&) {
  }
  try {
    const std::size_t atoms = size > 0 ? 1 + data[0] % 8 : 1;
    const nbkit::md::Coordinates c = nbkit::io::parse_inpcrd(text, "fuzz", atoms);
    if (c.positions.size() != atoms) __builtin_trap();
    for (const nbkit::Vec3& p : c.positions)
      if (!std::isfinite(p.x) || !std::isfinite(p.y) || !std::isfinite(p.z)) __builtin_trap();
  } catch (const nbkit::Error&) {
  }
  return 0;
}
