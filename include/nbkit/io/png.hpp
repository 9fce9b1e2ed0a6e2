#pragma once
// PNG pictures of maps: a slice through the lattice with labelled axes and a legend bar
// giving the colour range and the unit.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "nbkit/maps.hpp"

namespace nbkit {
class Ranks;
}

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
  double range = 0;         // colours saturate at -range and +range (sequential: 0 and range)
  double low = 0, high = 0;  // the slice's values span low..high
  bool saturated = false;   // some value lies beyond the colour range (the legend says so)
  // Where the lattice is drawn: pixel (left + u * scale, top + (nv - 1 - v) * scale) is point (u, v).
  int image_left = 0, image_top = 0, pixel_scale = 1;
};

// diverging: red-white-blue symmetric about zero (potentials, red negative, blue positive, as
// APBS users see them in PyMOL and VMD); sequential: a perceptual scale from zero (maps that
// are never negative: a standard deviation).
enum class ColorScale { diverging, sequential };

// Points drawn on a slice (ions), each set in its colour with a legend entry.
struct SliceMarkers {
  std::string label;                  // "Na+ (cation)"
  std::array<std::uint8_t, 3> color;  // centre colour of the ring
  std::vector<Vec3> positions;
};

// The colour scale spans the 99th percentile of |V| on the slice, so the few points next to
// atoms do not wash out the rest; the legend states the range, and where values lie beyond
// it ("saturated"), their true span. Axes carry tick labels in Angstrom. `markers` within
// `marker_depth` Angstrom of the slice plane are drawn as rings, with a legend.
SliceInfo write_slice_png(const std::string& path, const Map& map, const SliceSpec& slice,
                          const std::vector<SliceMarkers>& markers = {}, double marker_depth = 0,
                          ColorScale scale = ColorScale::diverging);

// The lattice plane a slice draws (nearest to the requested coordinate); throws for a
// coordinate outside the lattice or a plane too wide to draw.
SliceInfo slice_plane(const Lattice& lattice, const SliceSpec& spec);

// The plane of a --png slice collected from a map's slabs as they pass (stream_map: the map is
// never whole in memory), then drawn as write_slice_png draws it from the whole map.
class SlicePlane {
 public:
  SlicePlane(const Lattice& lattice, const SliceSpec& spec, units::PotentialUnit unit);
  void add(const MapSlab& slab);
  // A job of several ranks, each having added its own rows (bounds[r], bounds[r+1]): rank 0's
  // plane becomes the whole one, each point taken from the rank that computed it. Collective.
  void gather(const Ranks& ranks, const std::vector<std::int64_t>& bounds);
  SliceInfo write_png(const std::string& path, ColorScale scale) const;
  std::uint64_t bytes() const { return map_.values.size() * sizeof(double); }

 private:
  Lattice lattice_;
  SliceInfo plane_;
  Map map_;  // the plane alone: one point thick along the slice's axis
};

}  // namespace nbkit::io
