// Periodic boxes for cutoff maps by image atoms (the ghost atoms of LAMMPS and NAMD's
// patches): every atom image within the cutoff of the lattice is added once, and the
// ordinary cutoff sum over them is the minimum-image sum. Every backend (reference, CPU,
// GPU) then handles periodic boxes with no change to its kernels.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "maps/periodic_images-inl.hpp"
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

namespace maps {

ImageSpace image_space(Vec3 box, const Lattice& lattice, double cutoff) {
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
  ImageSpace s;
  s.reach2 = reach * reach;
  for (int a = 0; a < 3; ++a) {  // image shifts whose cell [s L, (s+1) L) meets [lower - c, upper + c]
    s.box[a] = box[a], s.lower[a] = lower[a], s.upper[a] = upper[a];
    s.first_shift[a] = static_cast<int>(std::floor((lower[a] - reach) / box[a]));
    s.last_shift[a] = static_cast<int>(std::floor((upper[a] + reach) / box[a]));
    if (s.last_shift[a] - s.first_shift[a] > 1000)
      throw Error(fmt::format("periodic box: the lattice spans more than 1000 cells along axis {}", "xyz"[a]));
  }
  return s;
}

}  // namespace maps

Atoms periodic_images(const Atoms& atoms, Vec3 box, const Lattice& lattice, double cutoff) {
  const maps::ImageSpace space = maps::image_space(box, lattice, cutoff);
  Atoms images;
  images.reserve(atoms.size());
  for (std::size_t n = 0; n < atoms.size(); ++n) {
    const double p[3] = {atoms.x[n], atoms.y[n], atoms.z[n]};
    maps::for_each_image(space, p, [&](const double image[3]) {
      images.push_back({image[0], image[1], image[2]}, atoms.charge[n], atoms.radius[n]);
    });
  }
  return images;
}

}  // namespace nbkit
