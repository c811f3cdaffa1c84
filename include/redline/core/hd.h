// Host/device qualifiers for code compiled by g++, nvcc and hipcc alike, and the one arithmetic
// helper such code shares.
#pragma once

#include <cmath>

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

namespace redline {

// a * b + c rounded once (IEEE fused multiply-add): the same bits on the CPU and every GPU. The
// build's no-contraction flags forbid only implicit fusion, so an explicit one stays exact.
REDLINE_HD inline double fma_d(double a, double b, double c) {
#if REDLINE_DEVICE_PASS
  return fma(a, b, c);
#else
  return std::fma(a, b, c);
#endif
}
REDLINE_HD inline float fma_f(float a, float b, float c) {
#if REDLINE_DEVICE_PASS
  return __fmaf_rn(a, b, c);
#else
  return std::fma(a, b, c);
#endif
}

}  // namespace redline
