// CPU twins of the GPU kernels in src/backend/gpu/ (same signatures, plain pointers).
#pragma once

#include <cstddef>
#include <cstdint>

#include "backend/gpu_api.h"

namespace redline::cpu {

// memcpy of large non-overlapping ranges in parallel chunks; memmove otherwise.
void copy_bytes(void* dst, const void* src, size_t bytes);
void fill(void* dst, int64_t n, int elem_size, uint64_t pattern);
void strided_copy(void* dst, const void* src, int elem_size, const gpu::StridedLayout& layout,
                  int64_t numel);
void random_fill(void* dst, int64_t n, gpu::RandomKind kind, uint32_t int_bound, uint64_t seed,
                 uint64_t stream_id, int64_t* offset);

}  // namespace redline::cpu
