#pragma once
// The leapfrog's halves over bodies [first, last): what leapfrog_step does to every body, and
// what a rank does to its own share under mpirun (Simulation), the same arithmetic either way.
// Internal to the library.
#include <cstddef>

#include "nbkit/nbody.hpp"

namespace nbkit::nbody {

// v += a dt/2, then x += v dt.
void kick_and_drift(Bodies& b, const Accelerations& acc, double dt, std::size_t first, std::size_t last);
// v += a dt/2.
void kick(Bodies& b, const Accelerations& acc, double dt, std::size_t first, std::size_t last);

}  // namespace nbkit::nbody
