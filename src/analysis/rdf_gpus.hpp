#pragma once
// The GPUs' side of g(r) (rdf_cuda.cu; rdf_no_cuda.cpp in builds without CUDA): each GPU takes
// the groups' float32 coordinates of a frame, sorts both groups into the cells the host laid
// out (the placement of rdf_pairs-inl.hpp, bit for bit the host's, and a stable sort, so the
// order is the host's too), and counts a contiguous part of group A (in cell order) against all
// of B: integer histograms per block in shared memory added into the GPU's 64-bit one, summed
// on the host in GPU order. A frame is sorted and counted while the caller reads the next
// (submit, then collect before the next submit). Internal to the library.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "analysis/rdf_pairs-inl.hpp"

namespace nbkit::analysis::detail {

class RdfGpus {
 public:
  // a, b: the groups' atom indices (increasing); group: every atom's residue or molecule, or
  // empty (no exclusions). When a equals b the GPUs sort one group and use it for both.
  RdfGpus(const std::vector<int>& gpus, const std::vector<double>& edges, const std::vector<std::int32_t>& a,
          const std::vector<std::int32_t>& b, const std::vector<std::int32_t>& group);
  ~RdfGpus();
  // Starts sorting and counting a frame: x, y, z are every atom's coordinates (the groups' are
  // copied before submit returns), `grid` the cells' layout (its array pointers unused). At most
  // one frame is in flight: collect() it before the next submit().
  void submit(const float* x, const float* y, const float* z, const PairGrid& grid, const BinRule& rule);
  // Waits for the frame in flight, adds its counts to histogram (bins) and its distances computed
  // to *distances; false (nothing added) when no frame is in flight.
  bool collect(std::uint64_t* histogram, std::uint64_t* distances);
  std::string detail() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace nbkit::analysis::detail
