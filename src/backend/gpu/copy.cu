// Fill and strided copy kernels. CPU twins: src/backend/cpu/copy.cpp.
#include "backend/gpu_api.h"
#include "vendor/gpu.h"

namespace redline::gpu {
namespace {

constexpr int kThreads = 256;

int blocks_for(int64_t n) {
  const int64_t blocks = (n + kThreads - 1) / kThreads;
  return static_cast<int>(blocks < 65535 * 16 ? blocks : 65535 * 16);  // grid-stride beyond this
}

template <typename T>
__global__ void fill_kernel(T* dst, int64_t n, T value) {  // dst: (n,)
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    dst[i] = value;
  }
}

template <typename T>
__global__ void strided_copy_kernel(T* dst, const T* src, StridedLayout layout, int64_t numel) {
  for (int64_t linear = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; linear < numel;
       linear += int64_t{gridDim.x} * blockDim.x) {
    int64_t rest = linear, src_at = 0, dst_at = 0;
    for (int d = layout.ndim - 1; d >= 0; --d) {
      const int64_t i = rest % layout.sizes[d];
      rest /= layout.sizes[d];
      src_at += i * layout.src_strides[d];
      dst_at += i * layout.dst_strides[d];
    }
    dst[dst_at] = src[src_at];
  }
}

template <typename T>
void launch_fill(void* dst, int64_t n, uint64_t pattern, cudaStream_t stream) {
  T value;
  memcpy(&value, &pattern, sizeof(T));
  fill_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(static_cast<T*>(dst), n, value);
  GPU_CHECK_LAUNCH();
}

template <typename T>
void launch_strided(void* dst, const void* src, const StridedLayout& layout, int64_t numel,
                    cudaStream_t stream) {
  strided_copy_kernel<T><<<blocks_for(numel), kThreads, 0, stream>>>(
      static_cast<T*>(dst), static_cast<const T*>(src), layout, numel);
  GPU_CHECK_LAUNCH();
}

}  // namespace

void fill(void* dst, int64_t n, int elem_size, uint64_t pattern, StreamHandle stream) {
  if (n == 0) return;
  const cudaStream_t s = static_cast<cudaStream_t>(stream);
  switch (elem_size) {
    case 1:
      launch_fill<uint8_t>(dst, n, pattern, s);
      break;
    case 2:
      launch_fill<uint16_t>(dst, n, pattern, s);
      break;
    case 4:
      launch_fill<uint32_t>(dst, n, pattern, s);
      break;
    default:
      launch_fill<uint64_t>(dst, n, pattern, s);
      break;
  }
}

void strided_copy(void* dst, const void* src, int elem_size, const StridedLayout& layout,
                  int64_t numel, StreamHandle stream) {
  if (numel == 0) return;
  const cudaStream_t s = static_cast<cudaStream_t>(stream);
  switch (elem_size) {
    case 1:
      launch_strided<uint8_t>(dst, src, layout, numel, s);
      break;
    case 2:
      launch_strided<uint16_t>(dst, src, layout, numel, s);
      break;
    case 4:
      launch_strided<uint32_t>(dst, src, layout, numel, s);
      break;
    default:
      launch_strided<uint64_t>(dst, src, layout, numel, s);
      break;
  }
}

}  // namespace redline::gpu
