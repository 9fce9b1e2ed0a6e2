#pragma once
// The force loops behind nbody::accelerations, one per backend. Internal to the library.
#include "nbkit/nbody.hpp"

namespace nbkit::nbody {

// float64 plain loops over all pairs j != i: the oracle.
void accelerations_reference(const Bodies& bodies, double softening, Accelerations& out);

// All cores, SIMD over j (Google Highway, run-time dispatch), float32 (float64 sums of
// chunks) or float64.
void accelerations_cpu(const Bodies& bodies, double softening, bool double_precision, int threads,
                       Accelerations& out);
const char* nbody_cpu_target();

}  // namespace nbkit::nbody
