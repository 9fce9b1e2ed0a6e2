#pragma once
// The readers that take a path (DCD, HDF5) get the fuzzer's bytes through a file in /dev/shm
// (memory, not the disk), rewritten for every input.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>

inline std::string fuzz_input_file(const std::uint8_t* data, std::size_t size, const char* suffix) {
  static const std::string path = "/dev/shm/nbkit-fuzz-" + std::to_string(::getpid()) + suffix;
  std::FILE* file = std::fopen(path.c_str(), "wb");
  if (!file) __builtin_trap();
  if (size > 0 && data && std::fwrite(data, 1, size, file) != size) __builtin_trap();
  std::fclose(file);
  return path;
}
