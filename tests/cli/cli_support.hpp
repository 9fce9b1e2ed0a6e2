#pragma once
// The nbkit binary, run as a user runs it (tests/cli/*_test.cpp).
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "test_support.hpp"

namespace nbkit::test {

struct Result {
  int status;
  std::string output;  // stdout and stderr together
};

// Runs the nbkit binary with `arguments` through the shell; stdout is a pipe, so no
// progress bar may appear.
inline Result run_nbkit(const std::string& arguments, const std::string& environment = "") {
  const std::string command = environment + " " + NBKIT_BINARY + " " + arguments + " 2>&1";
  FILE* pipe = ::popen(command.c_str(), "r");
  EXPECT_NE(pipe, nullptr);
  std::string output;
  std::array<char, 4096> buffer;
  while (std::size_t n = std::fread(buffer.data(), 1, buffer.size(), pipe)) output.append(buffer.data(), n);
  const int status = ::pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, output};
}

inline std::string data(const std::string& name) { return data_file(name); }

inline void write_text(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

// A file's bytes (empty when it cannot be read).
inline std::string bytes_of(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

}  // namespace nbkit::test
