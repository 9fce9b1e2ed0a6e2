#pragma once
// PNG pictures of maps: a slice through the lattice in a diverging red-white-blue scale
// symmetric about zero (red negative, blue positive, as APBS users see in PyMOL and VMD),
// with a legend bar giving the range and the unit.
#include <optional>
#include <string>
#include <vector>

#include "nbkit/maps.hpp"

namespace nbkit::io {

struct SliceSpec {
  int axis = 2;                       // 0 x, 1 y, 2 z: the axis normal to the slice
  std::optional<double> coordinate;   // Angstrom; the lattice's centre when empty
};
SliceSpec parse_slice(const std::string& text);  // "z=12.5", "x=0", "y" (centre)

struct SliceInfo {
  int axis = 2;
  std::int64_t index = 0;   // lattice plane drawn (nearest to the requested coordinate)
  double coordinate = 0;    // its coordinate, Angstrom
  double range = 0;         // colours saturate at -range and +range
};

// The colour scale spans +-(99th percentile of |V| on the slice), so the few points next
// to atoms do not wash out the rest; the legend states the range.
// `markers` (e.g. placed ions) within `marker_depth` Angstrom of the slice plane are drawn
// as rings.
SliceInfo write_slice_png(const std::string& path, const Map& map, const SliceSpec& slice,
                          const std::vector<Vec3>& markers = {}, double marker_depth = 0);

}  // namespace nbkit::io
