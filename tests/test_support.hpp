#pragma once
// Helpers shared by the tests: inputs, random atoms, error norms, scratch directories, GPU arrays.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#if NBKIT_TEST_CUDA
#include <cuda_runtime.h>
#endif

#include "nbkit/core/atoms.hpp"
#include "nbkit/core/error.hpp"
#include "nbkit/io/pqr.hpp"

namespace nbkit::test {

// Sets an environment variable for one scope (NBKIT_CUDA_SLAB_ROWS: many GPU slabs).
class ScopedEnvironment {
 public:
  ScopedEnvironment(const char* name, const char* value) : name_(name) { ::setenv(name, value, 1); }
  ~ScopedEnvironment() { ::unsetenv(name_); }
  ScopedEnvironment(const ScopedEnvironment&) = delete;
  ScopedEnvironment& operator=(const ScopedEnvironment&) = delete;

 private:
  const char* name_;
};

// The AddressSanitizer build (CI's `scripts/test --sanitize`), ~10x slower: long statistical runs
// skip there (GTEST_SKIP), the release run keeping them.
#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kSanitized = true;
#else
inline constexpr bool kSanitized = false;
#endif

inline std::string data_file(const std::string& name) { return std::string(NBKIT_DATA_DIR) + "/" + name; }
inline std::string test_data_file(const std::string& name) { return std::string(NBKIT_TEST_DATA_DIR) + "/" + name; }

// APBS's example proteins from Debian's apbs-data, when installed.
inline std::string apbs_example(const std::string& relative) {
  const std::string path = "/usr/share/apbs/examples/" + relative;
  return std::filesystem::exists(path) ? path : "";
}

// Random point charges in a box, charges in [-1, 1] e, radii in [1, 2] A.
inline Atoms random_atoms(std::size_t n, Vec3 lower, Vec3 upper, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  Atoms atoms;
  for (std::size_t i = 0; i < n; ++i) {
    const Vec3 p{lower.x + unit(rng) * (upper.x - lower.x), lower.y + unit(rng) * (upper.y - lower.y),
                 lower.z + unit(rng) * (upper.z - lower.z)};
    atoms.push_back(p, 2 * unit(rng) - 1, 1 + unit(rng));
  }
  return atoms;
}

// ||a - b|| / ||b|| over all lattice points: the relative RMS error.
inline double relative_rms(const std::vector<double>& a, const std::vector<double>& b) {
  double diff = 0, ref = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    diff += (a[i] - b[i]) * (a[i] - b[i]);
    ref += b[i] * b[i];
  }
  return std::sqrt(diff / ref);
}

// A fresh empty directory under the system's temporary directory, removed at scope exit.
class ScratchDir {
 public:
  ScratchDir() {
    static std::mt19937_64 rng(std::random_device{}());
    path_ = std::filesystem::temp_directory_path() / ("nbkit-test-" + std::to_string(rng()));
    std::filesystem::create_directories(path_);
  }
  ~ScratchDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

#if NBKIT_TEST_CUDA
// Host values copied into a GPU's memory for one test, freed after it.
template <class T>
class OnGpu {
 public:
  explicit OnGpu(const std::vector<T>& values) : size_(values.size()) {
    if (cudaMalloc(&data_, std::max<std::size_t>(1, size_) * sizeof(T)) != cudaSuccess) throw Error("cudaMalloc");
    cudaMemcpy(data_, values.data(), size_ * sizeof(T), cudaMemcpyHostToDevice);
  }
  ~OnGpu() { cudaFree(data_); }
  OnGpu(const OnGpu&) = delete;
  OnGpu& operator=(const OnGpu&) = delete;
  T* data() const { return static_cast<T*>(data_); }
  std::vector<T> to_host() const {
    std::vector<T> out(size_);
    cudaMemcpy(out.data(), data_, size_ * sizeof(T), cudaMemcpyDeviceToHost);
    return out;
  }

 private:
  void* data_ = nullptr;
  std::size_t size_ = 0;
};
#endif

}  // namespace nbkit::test
