// Launch helpers shared by the op kernels: grid sizes for grid-stride loops and the stream cast.
#pragma once

#include <cstdint>

#include "backend/gpu_api.h"
#include "vendor/gpu.h"

namespace redline::gpu {

constexpr int kOpThreads = 256;

// Enough blocks to fill the device; kernels loop with a grid stride beyond that.
inline int op_blocks(int64_t n) {
  const int64_t blocks = (n + kOpThreads - 1) / kOpThreads;
  return static_cast<int>(blocks < 1 ? 1 : (blocks < 65535 * 8 ? blocks : 65535 * 8));
}

inline cudaStream_t as_stream(StreamHandle s) { return static_cast<cudaStream_t>(s); }

#define REDLINE_GRID_STRIDE(i, n)                                           \
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < (n); \
       i += int64_t{gridDim.x} * blockDim.x)

}  // namespace redline::gpu
