#pragma once
// Wall-clock seconds for the library's phase timings (msm's phases, g(r)'s preparing and waiting).
#include <chrono>

namespace nbkit {

inline double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace nbkit
