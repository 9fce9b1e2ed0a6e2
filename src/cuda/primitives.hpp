#pragma once
// CUB's device-wide radix sort, exclusive scan and reductions, compiled once (primitives.cu) for
// the types nbkit's kernels use. Each has CUB's contract (scratch == nullptr: `bytes` set to the
// scratch the call needs, nothing run) and calls it with the same types, so the results are CUB's
// bits. Why not CUB in each file: its device headers take ~12 s of every CUDA file's compile
// (nvcc's host and device passes both parse them; measured on CI's kind of 2-core machine, where
// the release build compiles 20 CUDA files), and the uses are a few calls each. A combination
// of types that primitives.cu does not instantiate fails at link time. Only .cu files include
// this header.
#include <cuda_runtime.h>

#include <cstddef>

namespace nbkit::cuda {

// cub::DeviceRadixSort::SortPairs (stable; keys' bits [begin_bit, end_bit)).
template <class Key, class Value, class Count>
cudaError_t sort_pairs(void* scratch, std::size_t& bytes, const Key* keys_in, Key* keys_out, const Value* values_in,
                       Value* values_out, Count count, int begin_bit, int end_bit, cudaStream_t stream = nullptr);

// cub::DeviceScan::ExclusiveSum.
template <class T, class Count>
cudaError_t exclusive_sum(void* scratch, std::size_t& bytes, const T* in, T* out, Count count,
                          cudaStream_t stream = nullptr);

// cub::DeviceReduce::Sum, Min and Max, into *out.
template <class T, class Count>
cudaError_t reduce_sum(void* scratch, std::size_t& bytes, const T* in, T* out, Count count,
                       cudaStream_t stream = nullptr);
template <class T, class Count>
cudaError_t reduce_min(void* scratch, std::size_t& bytes, const T* in, T* out, Count count,
                       cudaStream_t stream = nullptr);
template <class T, class Count>
cudaError_t reduce_max(void* scratch, std::size_t& bytes, const T* in, T* out, Count count,
                       cudaStream_t stream = nullptr);

}  // namespace nbkit::cuda
