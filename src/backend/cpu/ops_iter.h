// The CPU's elementwise loop: walks a row-major index space with one running offset per operand,
// split into chunks across OpenMP threads.
#pragma once

#include <algorithm>
#include <cstdint>

#include "ops/kernel_args.h"

namespace redline::cpu {

// True when every operand is laid out like a contiguous output (offsets are the linear index).
inline bool layout_contiguous(const ops::ElementwiseLayout& l, int operands) {
  int64_t expected = 1;
  for (int d = l.ndim - 1; d >= 0; --d) {
    for (int k = 0; k < operands; ++k) {
      if (l.sizes[d] != 1 && l.strides[k][d] != expected) return false;
    }
    expected *= l.sizes[d];
  }
  return true;
}

// Calls fn(offsets) with offsets[k] (elements) of operand k, for every index of the layout.
template <int kOperands, typename Fn>
void for_each_element(const ops::ElementwiseLayout& l, Fn fn) {
  if (layout_contiguous(l, kOperands)) {  // the common case: a flat loop the compiler vectorizes
#pragma omp parallel for if (l.numel > (1 << 16)) schedule(static)
    for (int64_t i = 0; i < l.numel; ++i) {
      int64_t offsets[kOperands];
      for (int k = 0; k < kOperands; ++k) offsets[k] = i;
      fn(static_cast<const int64_t*>(offsets));
    }
    return;
  }
  constexpr int64_t kChunk = 1 << 14;
  const int64_t chunks = (l.numel + kChunk - 1) / kChunk;
#pragma omp parallel for if (chunks > 1) schedule(static)
  for (int64_t chunk = 0; chunk < chunks; ++chunk) {
    const int64_t begin = chunk * kChunk;
    const int64_t end = std::min(l.numel, begin + kChunk);
    int64_t index[gpu::kMaxDims] = {};
    int64_t offsets[kOperands] = {};
    int64_t rest = begin;
    for (int d = l.ndim - 1; d >= 0; --d) {
      index[d] = rest % l.sizes[d];
      rest /= l.sizes[d];
      for (int k = 0; k < kOperands; ++k) offsets[k] += index[d] * l.strides[k][d];
    }
    for (int64_t i = begin; i < end; ++i) {
      fn(static_cast<const int64_t*>(offsets));
      for (int d = l.ndim - 1; d >= 0; --d) {  // odometer step
        for (int k = 0; k < kOperands; ++k) offsets[k] += l.strides[k][d];
        if (++index[d] < l.sizes[d]) break;
        for (int k = 0; k < kOperands; ++k) offsets[k] -= index[d] * l.strides[k][d];
        index[d] = 0;
      }
    }
  }
}

}  // namespace redline::cpu
