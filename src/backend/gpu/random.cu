// Philox random fills. CPU twin: src/backend/cpu/random.cpp; element layout in
// include/redline/core/random.h. The base offset is read from device memory and advanced by a
// second one-thread kernel, so a captured graph draws new numbers at every replay.
#include "backend/gpu_api.h"
#include "redline/core/random.h"
#include "vendor/gpu.h"

namespace redline::gpu {
namespace {

constexpr int kThreads = 256;

template <typename T>
__global__ void random_kernel(T* dst, int64_t n, RandomKind kind, uint32_t bound, uint64_t seed,
                              uint64_t stream_id, const int64_t* offset) {  // dst: (n,)
  const uint64_t base = static_cast<uint64_t>(*offset);
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    if (kind == RandomKind::uniform_f32) {
      dst[i] = static_cast<T>(random_uniform_element(seed, stream_id, base, i));
    } else if (kind == RandomKind::normal_f32) {
      dst[i] = static_cast<T>(random_normal_element(seed, stream_id, base, i));
    } else {
      dst[i] = static_cast<T>(random_int_element(seed, stream_id, base, i, bound));
    }
  }
}

__global__ void advance_offset_kernel(int64_t* offset, int64_t blocks) { *offset += blocks; }

}  // namespace

void random_fill(void* dst, int64_t n, RandomKind kind, uint32_t int_bound, uint64_t seed,
                 uint64_t stream_id, int64_t* offset, StreamHandle stream) {
  if (n == 0) return;
  const cudaStream_t s = static_cast<cudaStream_t>(stream);
  int64_t blocks64 = (n + kThreads - 1) / kThreads;
  const int blocks = static_cast<int>(blocks64 < 65535 * 16 ? blocks64 : 65535 * 16);
  int64_t used = 0;
  switch (kind) {
    case RandomKind::uniform_f32:
    case RandomKind::normal_f32:
      random_kernel<float><<<blocks, kThreads, 0, s>>>(static_cast<float*>(dst), n, kind, int_bound,
                                                       seed, stream_id, offset);
      used = kind == RandomKind::uniform_f32 ? random_blocks_used_uniform(n)
                                             : random_blocks_used_normal(n);
      break;
    case RandomKind::uniform_int_i32:
      random_kernel<int32_t><<<blocks, kThreads, 0, s>>>(static_cast<int32_t*>(dst), n, kind,
                                                         int_bound, seed, stream_id, offset);
      used = random_blocks_used_int(n);
      break;
    case RandomKind::uniform_int_i64:
      random_kernel<int64_t><<<blocks, kThreads, 0, s>>>(static_cast<int64_t*>(dst), n, kind,
                                                         int_bound, seed, stream_id, offset);
      used = random_blocks_used_int(n);
      break;
  }
  GPU_CHECK_LAUNCH();
  advance_offset_kernel<<<1, 1, 0, s>>>(offset, used);
  GPU_CHECK_LAUNCH();
}

}  // namespace redline::gpu
