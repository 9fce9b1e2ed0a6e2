#pragma once
// The periodic box's one rule, for every backend: a coordinate moved into [lo, lo + length)
// by whole box lengths (the same bits on the host and the GPU). Internal to the library.
#include <cmath>

#include "core/host_device.hpp"

namespace nbkit::md {

NBKIT_HOST_DEVICE double wrap_coordinate(double value, double lo, double length) {
  value -= length * floor((value - lo) / length);
  if (value >= lo + length) value -= length;  // rounding at the upper edge
  return value;
}

}  // namespace nbkit::md
