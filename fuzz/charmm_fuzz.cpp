// libFuzzer target: any text given to the CHARMM readers either reads or raises nbkit::Error;
// what reads passes md::Topology::check. The text is tried as a psf (with a fixed parameter
// file), as a parameter file (with a fixed psf) and as a crd for 1 to 8 atoms.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "nbkit/core/error.hpp"
#include "nbkit/io/charmm.hpp"

namespace {

const char* kPsf =
    "PSF CMAP XPLOR\n\n       1 !NTITLE\n REMARKS\n\n       2 !NATOM\n"
    "       1 A    1    ALA  C1   CT3   -0.1 12.0 0\n       2 A    1    ALA  H1   HA3    0.1  1.0 0\n"
    "\n       1 !NBOND: bonds\n       1       2\n";
const char* kParameters = "* p\n*\nBONDS\nCT3 HA3 322.0 1.111\nNONBONDED\nCT3 0.0 -0.078 2.04 0.0 -0.01 1.9\n"
                          "HA3 0.0 -0.024 1.34\nNBFIX\nCT3 HA3 -0.05 3.0\nEND\n";

void check(const nbkit::md::Topology& t) {
  t.check();
  if (t.size() == 0) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    check(nbkit::io::parse_charmm(text, "fuzz.psf", {{kParameters, "fixed.prm"}}));
  } catch (const nbkit::Error&) {
  }
  try {
    check(nbkit::io::parse_charmm(kPsf, "fixed.psf", {{text, size > 0 && data[0] == 'r' ? "fuzz.str" : "fuzz.prm"}}));
  } catch (const nbkit::Error&) {
  }
  try {
    const std::size_t atoms = size > 0 ? 1 + data[0] % 8 : 1;
    const nbkit::md::Coordinates c = nbkit::io::parse_charmm_crd(text, "fuzz.crd", atoms);
    if (c.positions.size() != atoms) __builtin_trap();
    for (const nbkit::Vec3& p : c.positions)
      if (!std::isfinite(p.x) || !std::isfinite(p.y) || !std::isfinite(p.z)) __builtin_trap();
  } catch (const nbkit::Error&) {
  }
  return 0;
}
