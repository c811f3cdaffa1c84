// CPU twin of src/backend/gpu/random.cu: the same element layout (include/redline/core/random.h).
#include "redline/core/random.h"

#include "backend/cpu/cpu_kernels.h"

namespace redline::cpu {

void random_fill(void* dst, int64_t n, gpu::RandomKind kind, uint32_t int_bound, uint64_t seed,
                 uint64_t stream_id, int64_t* offset) {
  const uint64_t base = static_cast<uint64_t>(*offset);
  switch (kind) {
    case gpu::RandomKind::uniform_f32: {
      float* out = static_cast<float*>(dst);
#pragma omp parallel for if (n > (1 << 16))
      for (int64_t i = 0; i < n; ++i) out[i] = random_uniform_element(seed, stream_id, base, i);
      *offset += random_blocks_used_uniform(n);
      break;
    }
    case gpu::RandomKind::normal_f32: {
      float* out = static_cast<float*>(dst);
#pragma omp parallel for if (n > (1 << 16))
      for (int64_t i = 0; i < n; ++i) out[i] = random_normal_element(seed, stream_id, base, i);
      *offset += random_blocks_used_normal(n);
      break;
    }
    case gpu::RandomKind::uniform_int_i32: {
      int32_t* out = static_cast<int32_t*>(dst);
#pragma omp parallel for if (n > (1 << 16))
      for (int64_t i = 0; i < n; ++i) {
        out[i] = static_cast<int32_t>(random_int_element(seed, stream_id, base, i, int_bound));
      }
      *offset += random_blocks_used_int(n);
      break;
    }
    case gpu::RandomKind::uniform_int_i64: {
      int64_t* out = static_cast<int64_t*>(dst);
#pragma omp parallel for if (n > (1 << 16))
      for (int64_t i = 0; i < n; ++i) {
        out[i] = static_cast<int64_t>(random_int_element(seed, stream_id, base, i, int_bound));
      }
      *offset += random_blocks_used_int(n);
      break;
    }
  }
}

}  // namespace redline::cpu
