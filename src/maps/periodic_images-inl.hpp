#pragma once
// The periodic images a cutoff map sums (periodic.cpp's periodic_images), atom by atom: one
// law for the host and for atoms from GPU arrays imaged on their GPU (device_input_cuda.cu),
// with no operation a compiler could fuse, so both list the same images with the same bits in
// the same order.
#include <cmath>

#include "core/host_device.hpp"
#include "nbkit/core/lattice.hpp"
#include "nbkit/core/vec3.hpp"

namespace nbkit::maps {

// What imaging needs, found once for a box, a lattice and a cutoff (periodic.cpp; throws for a
// box or cutoff periodic_images refuses).
struct ImageSpace {
  double box[3] = {0, 0, 0};
  double lower[3] = {0, 0, 0}, upper[3] = {0, 0, 0};  // the lattice's box
  double reach2 = 0;                                   // (cutoff and a hair)^2
  int first_shift[3] = {0, 0, 0}, last_shift[3] = {0, 0, 0};  // image cells meeting the lattice grown by the reach
};
ImageSpace image_space(Vec3 box, const Lattice& lattice, double cutoff);

// Calls add(image) (three coordinates) for each image of the atom at p within reach of the
// lattice: the atom wrapped into the cell [0, box), shifted by whole cells, x shift slowest.
template <class Add>
NBKIT_HOST_DEVICE void for_each_image(const ImageSpace& s, const double p[3], Add&& add) {
  double wrapped[3];
  for (int a = 0; a < 3; ++a) {
    wrapped[a] = p[a] - mul_rn(s.box[a], floor(p[a] / s.box[a]));
    if (wrapped[a] >= s.box[a]) wrapped[a] -= s.box[a];  // p just below a multiple of the edge
  }
  for (int sx = s.first_shift[0]; sx <= s.last_shift[0]; ++sx)
    for (int sy = s.first_shift[1]; sy <= s.last_shift[1]; ++sy)
      for (int sz = s.first_shift[2]; sz <= s.last_shift[2]; ++sz) {
        const int shift[3] = {sx, sy, sz};
        double image[3], gap2 = 0;
        for (int a = 0; a < 3; ++a) {
          image[a] = wrapped[a] + mul_rn(static_cast<double>(shift[a]), s.box[a]);
          const double g = image[a] < s.lower[a] ? s.lower[a] - image[a] : (image[a] > s.upper[a] ? image[a] - s.upper[a] : 0);
          gap2 += mul_rn(g, g);
        }
        if (gap2 < s.reach2) add(image);
      }
}

}  // namespace nbkit::maps
