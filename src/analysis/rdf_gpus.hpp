#pragma once
// The GPUs' side of g(r) (rdf_cuda.cu; rdf_no_cuda.cpp in builds without CUDA): group A split
// among the GPUs in contiguous parts, group B's cell list copied to each, integer histograms
// per block in shared memory added into each GPU's 64-bit histogram, summed on the host in GPU
// order. Internal to the library.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "analysis/rdf_pairs-inl.hpp"

namespace nbkit::analysis::detail {

// One frame in host arrays: the grid's (B sorted by cell) and group A's queries.
struct FrameArrays {
  PairGrid grid;  // its pointers unset; the arrays below hold the data
  std::vector<std::int32_t> start, b_atom, b_group;
  std::vector<double> bx, by, bz;
  std::vector<double> ax, ay, az;          // A, wrapped as B
  std::vector<std::int32_t> a_cell;        // 3 per A atom
  std::vector<std::int32_t> a_atom, a_group;
};

class RdfGpus {
 public:
  RdfGpus(const std::vector<int>& gpus, const std::vector<double>& edges);
  ~RdfGpus();
  // Adds the frame's counts to histogram (bins) and returns the distances computed.
  std::uint64_t count(const FrameArrays& frame, const BinRule& rule, std::uint64_t* histogram);
  std::string detail() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace nbkit::analysis::detail
