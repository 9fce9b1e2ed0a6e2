#pragma once
// A large host-to-host copy on several cores (GPU slabs from page-locked staging into the
// caller's pageable array: one core copies 5-10 GB/s, the bus delivers more).
#include <cstddef>

namespace nbkit {

// dst[0, count) = src[0, count), in chunks of a few megabytes on up to 8 threads.
void parallel_copy(double* dst, const double* src, std::size_t count);

}  // namespace nbkit
