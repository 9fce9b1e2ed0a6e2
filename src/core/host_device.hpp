#pragma once
// Marks functions that run on the host and on CUDA devices (the interaction laws).
#if defined(__CUDACC__)
#define NBKIT_HOST_DEVICE __host__ __device__ inline
#else
#define NBKIT_HOST_DEVICE inline
#endif
