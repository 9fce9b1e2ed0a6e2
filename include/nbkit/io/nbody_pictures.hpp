#pragma once
// Pictures of N-body runs: a projected density image of a snapshot and a plot of the
// relative energy error over time.
#include <string>
#include <vector>

#include "nbkit/nbody.hpp"

namespace nbkit::io {

// Bodies projected on the x-y plane within +-extent (N-body units) of the origin, mass per
// pixel on a logarithmic grey-to-black scale, with a legend giving the extent and time.
void write_density_png(const std::string& path, const nbody::Bodies& bodies, double extent, double time);

// |E(t)/E(0) - 1| against t on a logarithmic axis (points at zero error are drawn at the
// axis floor); the legend gives the largest error.
void write_energy_png(const std::string& path, const std::vector<double>& time, const std::vector<double>& relative_error);

}  // namespace nbkit::io
