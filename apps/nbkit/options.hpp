#pragma once
// Option parsing shared by subcommands.
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "nbkit/core/vec3.hpp"

namespace nbkit::cli {

// "x,y,z" (three numbers) -> Vec3; with allow_single, "a" means (a, a, a).
Vec3 parse_triple(const std::string& text, const std::string& option, bool allow_single = false);
std::array<std::int64_t, 3> parse_dims(const std::string& text, const std::string& option);

// --gpus: "all" -> {} (every GPU), "N" -> {0..N-1}, "i,j,..." (or "i,") -> those devices.
std::vector<int> parse_gpus(const std::string& text);

// "12345678" -> "12,345,678"
std::string with_commas(std::int64_t n);

}  // namespace nbkit::cli
