// Plain-data arguments of the op kernels, shared by the CPU twins (src/backend/cpu/ops_*.cpp) and
// the GPU kernels (src/backend/gpu/ops_*.cu). Strides and offsets are in elements.
#pragma once

#include <cstdint>

#include "backend/gpu_api.h"
#include "ops/elementwise_math.h"
#include "redline/core/dtype.h"

namespace redline::ops {

constexpr int kMaxOperands = 4;

// An elementwise loop over `sizes` (row-major); operand k sits at sum(index[d] * strides[k][d]).
// Operand 0 is the output. A broadcast operand has stride 0 along the broadcast dimensions.
struct ElementwiseLayout {
  int ndim = 0;
  int64_t numel = 0;
  int64_t sizes[gpu::kMaxDims] = {};
  int64_t strides[kMaxOperands][gpu::kMaxDims] = {};
};

// A contiguous tensor seen as (outer, size, inner) around one dimension.
struct DimSplit {
  int64_t outer = 1;
  int64_t size = 1;
  int64_t inner = 1;
};

enum class ReduceOp : uint8_t { sum, max, argmax };

// Geometry of one conv2d / pooling problem (NCHW).
struct ConvGeometry {
  int64_t n, c, h, w;  // input
  int64_t o, kh, kw;   // output channels and kernel (pooling: o = c)
  int64_t oh, ow;      // output plane
  int stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w;
};

}  // namespace redline::ops
