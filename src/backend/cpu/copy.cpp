// CPU twins of src/backend/gpu/copy.cu: fill and strided copy.
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

template <typename T>
void strided_copy_typed(T* dst, const T* src, const gpu::StridedLayout& layout, int64_t numel) {
  const int ndim = layout.ndim;
#pragma omp parallel for if (numel > (1 << 20))
  for (int64_t linear = 0; linear < numel; ++linear) {
    int64_t rest = linear, src_at = 0, dst_at = 0;
    for (int d = ndim - 1; d >= 0; --d) {
      const int64_t i = rest % layout.sizes[d];
      rest /= layout.sizes[d];
      src_at += i * layout.src_strides[d];
      dst_at += i * layout.dst_strides[d];
    }
    dst[dst_at] = src[src_at];
  }
}

}  // namespace

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
