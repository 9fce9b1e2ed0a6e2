// Periodic boxes for cutoff maps by image atoms (the ghost atoms of LAMMPS and NAMD's
// patches): every atom image within the cutoff of the lattice is added once, and the
// ordinary cutoff sum over them is the minimum-image sum. Every backend (reference, CPU,
// GPU) then handles periodic boxes with no change to its kernels.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "nbkit/core/error.hpp"
#include "nbkit/maps.hpp"

namespace nbkit {

namespace {

void validate_box(Vec3 box) {
  for (int a = 0; a < 3; ++a)
    if (!(box[a] > 0) || !std::isfinite(box[a]))
      throw Error(fmt::format("periodic box: edge lengths must be positive numbers of Angstrom, got {},{},{}", box.x,
                              box.y, box.z));
}

}  // namespace

Lattice lattice_spanning_cell(Vec3 box, double spacing) {
  validate_box(box);
  if (!(spacing > 0) || !std::isfinite(spacing)) throw Error(fmt::format("spacing must be positive, got {}", spacing));
  Lattice lattice;
  lattice.spacing = spacing;
  for (int a = 0; a < 3; ++a)  // points 0 .. n-1 with (n-1) h < edge; 1e-9 absorbs rounding of edge/h
    lattice.dims[a] = std::max<std::int64_t>(1, static_cast<std::int64_t>(std::ceil(box[a] / spacing - 1e-9)));
  validate(lattice);
  return lattice;
}

Atoms periodic_images(const Atoms& atoms, Vec3 box, const Lattice& lattice, double cutoff) {
  validate_box(box);
  const double shortest = std::min({box.x, box.y, box.z});
  if (!(cutoff < 0.5 * shortest))
    throw Error(fmt::format("periodic box: the cutoff ({} A) must be less than half the shortest box edge ({} A), "
                            "so that each atom has one image within the cutoff of a point",
                            cutoff, shortest));
  // The lattice's box grown by the cutoff (and a hair, so no image the sum needs is lost to
  // rounding; images just beyond the cutoff add zero).
  const double reach = cutoff * (1 + 1e-9);
  const Vec3 lower = lattice.origin, upper = lattice.origin + lattice.extent();
  int first_shift[3], last_shift[3];
  for (int a = 0; a < 3; ++a) {  // image shifts whose cell [s L, (s+1) L) meets [lower - c, upper + c]
    first_shift[a] = static_cast<int>(std::floor((lower[a] - reach) / box[a]));
    last_shift[a] = static_cast<int>(std::floor((upper[a] + reach) / box[a]));
    if (last_shift[a] - first_shift[a] > 1000)
      throw Error(fmt::format("periodic box: the lattice spans more than 1000 cells along axis {}", "xyz"[a]));
  }
  Atoms images;
  images.reserve(atoms.size());
  for (std::size_t n = 0; n < atoms.size(); ++n) {
    Vec3 wrapped;
    for (int a = 0; a < 3; ++a) {
      const Vec3 p = atoms.position(n);
      wrapped[a] = p[a] - box[a] * std::floor(p[a] / box[a]);
      if (wrapped[a] >= box[a]) wrapped[a] -= box[a];  // p just below a multiple of the edge
    }
    for (int sx = first_shift[0]; sx <= last_shift[0]; ++sx)
      for (int sy = first_shift[1]; sy <= last_shift[1]; ++sy)
        for (int sz = first_shift[2]; sz <= last_shift[2]; ++sz) {
          const Vec3 image{wrapped.x + sx * box.x, wrapped.y + sy * box.y, wrapped.z + sz * box.z};
          double gap2 = 0;
          for (int a = 0; a < 3; ++a) {
            const double g = image[a] < lower[a] ? lower[a] - image[a] : (image[a] > upper[a] ? image[a] - upper[a] : 0);
            gap2 += g * g;
          }
          if (gap2 < reach * reach) images.push_back(image, atoms.charge[n], atoms.radius[n]);
        }
  }
  return images;
}

}  // namespace nbkit
