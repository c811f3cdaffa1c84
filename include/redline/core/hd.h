// Host/device qualifiers for code compiled by g++, nvcc and hipcc alike.
#pragma once

#if defined(__CUDACC__) || defined(__HIPCC__)
#define REDLINE_HD __host__ __device__
#define REDLINE_DEVICE_COMPILER 1
#else
#define REDLINE_HD
#define REDLINE_DEVICE_COMPILER 0
#endif

// True only in the device pass of a GPU compiler.
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
#define REDLINE_DEVICE_PASS 1
#else
#define REDLINE_DEVICE_PASS 0
#endif
