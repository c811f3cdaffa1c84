// CPU twins of src/backend/gpu/copy.cu: fill and strided copy, and the CPU's contiguous copy.
#include <algorithm>
#include <cstring>

#include "backend/cpu/cpu_kernels.h"

namespace redline::cpu {
namespace {

template <typename T>
void fill_typed(void* dst, int64_t n, uint64_t pattern) {
  T value;
  std::memcpy(&value, &pattern, sizeof(T));
  T* out = static_cast<T*>(dst);
#pragma omp parallel for if (n > (1 << 20))
  for (int64_t i = 0; i < n; ++i) out[i] = value;
}

// Chunks of the row-major index space across OpenMP threads; within a chunk the two offsets
// advance like an odometer, so the divisions happen once per chunk, not once per element.
template <typename T>
void strided_copy_typed(T* dst, const T* src, const gpu::StridedLayout& layout, int64_t numel) {
  constexpr int64_t kChunk = 1 << 14;
  const int ndim = layout.ndim;
  const int64_t chunks = (numel + kChunk - 1) / kChunk;
#pragma omp parallel for if (chunks > 1) schedule(static)
  for (int64_t chunk = 0; chunk < chunks; ++chunk) {
    const int64_t begin = chunk * kChunk;
    const int64_t end = std::min(numel, begin + kChunk);
    int64_t index[gpu::kMaxDims] = {};
    int64_t src_at = 0, dst_at = 0, rest = begin;
    for (int d = ndim - 1; d >= 0; --d) {
      index[d] = rest % layout.sizes[d];
      rest /= layout.sizes[d];
      src_at += index[d] * layout.src_strides[d];
      dst_at += index[d] * layout.dst_strides[d];
    }
    for (int64_t i = begin; i < end; ++i) {
      dst[dst_at] = src[src_at];
      for (int d = ndim - 1; d >= 0; --d) {  // odometer step
        src_at += layout.src_strides[d];
        dst_at += layout.dst_strides[d];
        if (++index[d] < layout.sizes[d]) break;
        src_at -= index[d] * layout.src_strides[d];
        dst_at -= index[d] * layout.dst_strides[d];
        index[d] = 0;
      }
    }
  }
}

}  // namespace

void copy_bytes(void* dst, const void* src, size_t bytes) {
  constexpr size_t kChunk = size_t{1} << 20;
  auto* d = static_cast<char*>(dst);
  const auto* s = static_cast<const char*>(src);
  const bool overlap = d < s + bytes && s < d + bytes;
  if (overlap || bytes <= 2 * kChunk) {  // views of one storage keep memmove's meaning
    std::memmove(dst, src, bytes);
    return;
  }
  const auto chunks = static_cast<int64_t>((bytes + kChunk - 1) / kChunk);
#pragma omp parallel for schedule(static)
  for (int64_t c = 0; c < chunks; ++c) {
    const size_t at = static_cast<size_t>(c) * kChunk;
    std::memcpy(d + at, s + at, std::min(kChunk, bytes - at));
  }
}

void fill(void* dst, int64_t n, int elem_size, uint64_t pattern) {
  switch (elem_size) {
    case 1:
      fill_typed<uint8_t>(dst, n, pattern);
      break;
    case 2:
      fill_typed<uint16_t>(dst, n, pattern);
      break;
    case 4:
      fill_typed<uint32_t>(dst, n, pattern);
      break;
    default:
      fill_typed<uint64_t>(dst, n, pattern);
      break;
  }
}

void strided_copy(void* dst, const void* src, int elem_size, const gpu::StridedLayout& layout,
                  int64_t numel) {
  switch (elem_size) {
    case 1:
      strided_copy_typed(static_cast<uint8_t*>(dst), static_cast<const uint8_t*>(src), layout,
                         numel);
      break;
    case 2:
      strided_copy_typed(static_cast<uint16_t*>(dst), static_cast<const uint16_t*>(src), layout,
                         numel);
      break;
    case 4:
      strided_copy_typed(static_cast<uint32_t*>(dst), static_cast<const uint32_t*>(src), layout,
                         numel);
      break;
    default:
      strided_copy_typed(static_cast<uint64_t*>(dst), static_cast<const uint64_t*>(src), layout,
                         numel);
      break;
  }
}

}  // namespace redline::cpu
