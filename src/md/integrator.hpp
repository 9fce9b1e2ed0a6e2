#pragma once
// The velocity-Verlet halves the host engines compose (integrator.cpp). Internal.
#include "nbkit/md.hpp"

namespace nbkit::md {

// v += f/m dt/2 (the units' force-to-acceleration factor), atom by atom.
void half_kick(System& system, const Forces& forces, double dt, int threads);
// x += v dt.
void drift(System& system, double dt, int threads);

}  // namespace nbkit::md
