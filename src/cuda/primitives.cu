// CUB's sort, scan and reductions for the types nbkit uses (primitives.hpp says why here).
#include "cuda/primitives.hpp"

#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_reduce.cuh>
#include <cub/device/device_scan.cuh>

#include <cstdint>

namespace nbkit::cuda {

template <class Key, class Value, class Count>
cudaError_t sort_pairs(void* scratch, std::size_t& bytes, const Key* keys_in, Key* keys_out, const Value* values_in,
                       Value* values_out, Count count, int begin_bit, int end_bit, cudaStream_t stream) {
  return cub::DeviceRadixSort::SortPairs(scratch, bytes, keys_in, keys_out, values_in, values_out, count, begin_bit,
                                         end_bit, stream);
}

template <class T, class Count>
cudaError_t exclusive_sum(void* scratch, std::size_t& bytes, const T* in, T* out, Count count, cudaStream_t stream) {
  return cub::DeviceScan::ExclusiveSum(scratch, bytes, in, out, count, stream);
}

template <class T, class Count>
cudaError_t reduce_sum(void* scratch, std::size_t& bytes, const T* in, T* out, Count count, cudaStream_t stream) {
  return cub::DeviceReduce::Sum(scratch, bytes, in, out, count, stream);
}

template <class T, class Count>
cudaError_t reduce_min(void* scratch, std::size_t& bytes, const T* in, T* out, Count count, cudaStream_t stream) {
  return cub::DeviceReduce::Min(scratch, bytes, in, out, count, stream);
}

template <class T, class Count>
cudaError_t reduce_max(void* scratch, std::size_t& bytes, const T* in, T* out, Count count, cudaStream_t stream) {
  return cub::DeviceReduce::Max(scratch, bytes, in, out, count, stream);
}

// What the callers use (key, value, count), each file's combination.
#define NBKIT_SORT_PAIRS(Key, Value, Count)                                                                 \
  template cudaError_t sort_pairs<Key, Value, Count>(void*, std::size_t&, const Key*, Key*, const Value*, \
                                                     Value*, Count, int, int, cudaStream_t);
NBKIT_SORT_PAIRS(unsigned, int, int)                  // the MD cell lists, cutoff maps' bins
NBKIT_SORT_PAIRS(unsigned long long, unsigned, int)   // the Barnes-Hut tree's Morton keys
NBKIT_SORT_PAIRS(unsigned long long, int, int)        // multilevel summation's atom cells
NBKIT_SORT_PAIRS(std::int32_t, std::int32_t, std::int64_t)  // g(r)'s cells
#undef NBKIT_SORT_PAIRS

#define NBKIT_REDUCTIONS(T, Count)                                                                     \
  template cudaError_t reduce_sum<T, Count>(void*, std::size_t&, const T*, T*, Count, cudaStream_t); \
  template cudaError_t reduce_min<T, Count>(void*, std::size_t&, const T*, T*, Count, cudaStream_t); \
  template cudaError_t reduce_max<T, Count>(void*, std::size_t&, const T*, T*, Count, cudaStream_t);
NBKIT_REDUCTIONS(double, int)
#undef NBKIT_REDUCTIONS

#define NBKIT_EXCLUSIVE_SUM(T, Count) \
  template cudaError_t exclusive_sum<T, Count>(void*, std::size_t&, const T*, T*, Count, cudaStream_t);
NBKIT_EXCLUSIVE_SUM(int, int)
NBKIT_EXCLUSIVE_SUM(int, std::int64_t)
NBKIT_EXCLUSIVE_SUM(long long, std::int64_t)
#undef NBKIT_EXCLUSIVE_SUM

}  // namespace nbkit::cuda
