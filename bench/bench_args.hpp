#pragma once
// The command line every nbkit benchmark takes: [--json FILE] [--quick] [--only PART] (the
// parts a benchmark has are in its usage comment; the others ignore --only).
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>

namespace nbkit::bench {

struct BenchArgs {
  std::string json_path;  // where to write the results as JSON; empty: nowhere
  bool quick = false;     // fewer sizes and repeats
  std::string only;       // one part of the benchmark; empty: all of it
};

// Empty (after printing the usage line) when the arguments are not understood.
inline std::optional<BenchArgs> parse_bench_args(int argc, char** argv, const char* name) {
  BenchArgs args;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--json") && i + 1 < argc) {
      args.json_path = argv[++i];
    } else if (!std::strcmp(argv[i], "--quick")) {
      args.quick = true;
    } else if (!std::strcmp(argv[i], "--only") && i + 1 < argc) {
      args.only = argv[++i];
    } else {
      std::fprintf(stderr, "usage: %s [--json FILE] [--quick] [--only PART]\n", name);
      return std::nullopt;
    }
  }
  return args;
}

}  // namespace nbkit::bench
