#include "core/parallel_copy.hpp"

#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace nbkit {

void parallel_copy(double* dst, const double* src, std::size_t count) {
  constexpr std::size_t kChunk = std::size_t{1} << 19;  // 4 MB: a chunk's start-up is noise
  const auto chunks = static_cast<std::int64_t>((count + kChunk - 1) / kChunk);
  // Memory bandwidth, not cores, bounds a copy: 8 threads reach it on the machines we know.
  const int threads = static_cast<int>(std::min<std::int64_t>({chunks, 8, omp_get_max_threads()}));
#pragma omp parallel for schedule(static) num_threads(std::max(threads, 1)) if (threads > 1)
  for (std::int64_t c = 0; c < chunks; ++c) {
    const std::size_t first = static_cast<std::size_t>(c) * kChunk, n = std::min(kChunk, count - first);
    std::memcpy(dst + first, src + first, n * sizeof(double));
  }
}

}  // namespace nbkit
