// Reductions over the middle of (outer, size, inner) and softmax. CPU twins:
// src/backend/cpu/ops_reduce.cpp. Sums of floats accumulate in float per thread then across the
// block (the CPU twin accumulates in double: the parity tests allow for that).
#include "backend/gpu/ops_kernels.h"
#include "backend/gpu/ops_launch.h"

namespace redline::gpu {
namespace {

using ops::DimSplit;
using ops::ReduceOp;

template <typename T>
__device__ inline bool better(T v, T best) {
  return v > best || (v != v && best == best);  // NaN wins, as on the CPU
}

// One thread per (outer, inner) output, looping over size: for inner > 1 (coalesced along inner).
template <typename T, typename Acc>
__global__ void reduce_strided_kernel(ReduceOp op, void* out, const T* x, DimSplit s) {
  REDLINE_GRID_STRIDE(id, s.outer * s.inner) {
    const int64_t o = id / s.inner, i = id % s.inner;
    const T* row = x + o * s.size * s.inner + i;
    if (op == ReduceOp::sum) {
      Acc acc = 0;
      for (int64_t j = 0; j < s.size; ++j) acc += static_cast<Acc>(row[j * s.inner]);
      static_cast<T*>(out)[id] = static_cast<T>(acc);
      continue;
    }
    int64_t best = 0;
    for (int64_t j = 1; j < s.size; ++j) {
      if (better(row[j * s.inner], row[best * s.inner])) best = j;
    }
    if (op == ReduceOp::max) {
      static_cast<T*>(out)[id] = row[best * s.inner];
    } else {
      static_cast<int64_t*>(out)[id] = best;
    }
  }
}

// One block per row for inner == 1 (whole-tensor and last-dimension reductions).
template <typename T, typename Acc>
__global__ void reduce_rows_kernel(ReduceOp op, void* out, const T* x, int64_t size) {
  __shared__ Acc sums[kOpThreads];
  __shared__ int64_t where[kOpThreads];
  const T* row = x + blockIdx.x * size;
  Acc acc = 0;
  int64_t best = -1;
  for (int64_t j = threadIdx.x; j < size; j += blockDim.x) {
    if (op == ReduceOp::sum) {
      acc += static_cast<Acc>(row[j]);
    } else if (best < 0 || better(row[j], row[best])) {
      best = j;
    }
  }
  sums[threadIdx.x] = acc;
  where[threadIdx.x] = best;
  __syncthreads();
  for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) {
      if (op == ReduceOp::sum) {
        sums[threadIdx.x] += sums[threadIdx.x + stride];
      } else {
        const int64_t a = where[threadIdx.x], b = where[threadIdx.x + stride];
        // Keep the first maximum: b wins only when strictly better, or equal and earlier.
        if (b >= 0 && (a < 0 || better(row[b], row[a]) || (row[b] == row[a] && b < a))) {
          where[threadIdx.x] = b;
        }
      }
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    if (op == ReduceOp::sum) {
      static_cast<T*>(out)[blockIdx.x] = static_cast<T>(sums[0]);
    } else if (op == ReduceOp::max) {
      static_cast<T*>(out)[blockIdx.x] = row[where[0]];
    } else {
      static_cast<int64_t*>(out)[blockIdx.x] = where[0];
    }
  }
}

template <typename T, typename Acc>
void launch_reduce(ReduceOp op, void* out, const void* x, const DimSplit& s, cudaStream_t stream) {
  const T* in = static_cast<const T*>(x);
  if (s.inner == 1 && s.size >= 64 && s.outer <= 65535 * 16) {
    reduce_rows_kernel<T, Acc>
        <<<static_cast<unsigned>(s.outer), kOpThreads, 0, stream>>>(op, out, in, s.size);
  } else {
    reduce_strided_kernel<T, Acc>
        <<<op_blocks(s.outer * s.inner), kOpThreads, 0, stream>>>(op, out, in, s);
  }
  GPU_CHECK_LAUNCH();
}

// One thread per (outer, inner) row: RL softmaxes are over a few actions or classes.
__global__ void softmax_kernel(bool log, float* y, const float* x, DimSplit s) {
  REDLINE_GRID_STRIDE(id, s.outer * s.inner) {
    const int64_t base = (id / s.inner) * s.size * s.inner + id % s.inner;
    float m = -INFINITY;
    for (int64_t j = 0; j < s.size; ++j) m = fmaxf(m, x[base + j * s.inner]);
    double total = 0;
    for (int64_t j = 0; j < s.size; ++j)
      total += exp(static_cast<double>(x[base + j * s.inner] - m));
    const float log_total = static_cast<float>(::log(total));
    for (int64_t j = 0; j < s.size; ++j) {
      const float shifted = x[base + j * s.inner] - m - log_total;
      y[base + j * s.inner] = log ? shifted : expf(shifted);
    }
  }
}

__global__ void softmax_backward_kernel(bool log, float* dx, const float* y, const float* dy,
                                        DimSplit s) {
  REDLINE_GRID_STRIDE(id, s.outer * s.inner) {
    const int64_t base = (id / s.inner) * s.size * s.inner + id % s.inner;
    double dot = 0;
    for (int64_t j = 0; j < s.size; ++j) {
      const int64_t at = base + j * s.inner;
      dot += log ? dy[at] : static_cast<double>(dy[at]) * y[at];
    }
    const float d = static_cast<float>(dot);
    for (int64_t j = 0; j < s.size; ++j) {
      const int64_t at = base + j * s.inner;
      dx[at] = log ? dy[at] - expf(y[at]) * d : y[at] * (dy[at] - d);
    }
  }
}

}  // namespace

void reduce(ReduceOp op, DType dtype, void* out, const void* x, const DimSplit& s,
            StreamHandle stream) {
  REDLINE_CHECK(s.size > 0 || op == ReduceOp::sum,
                "max/argmax over an empty dimension has no result");
  if (s.outer * s.inner == 0) return;
  const cudaStream_t st = as_stream(stream);
  switch (dtype) {
    case DType::f32:
      return launch_reduce<float, float>(op, out, x, s, st);
    case DType::i32:
      return launch_reduce<int32_t, int64_t>(op, out, x, s, st);
    case DType::i64:
      return launch_reduce<int64_t, int64_t>(op, out, x, s, st);
    default:
      REDLINE_FAIL("GPU reduction got {}; expected f32, i32 or i64", dtype_name(dtype));
  }
}

void softmax(bool log, float* y, const float* x, const DimSplit& s, StreamHandle stream) {
  if (s.outer * s.inner * s.size == 0) return;
  softmax_kernel<<<op_blocks(s.outer * s.inner), kOpThreads, 0, as_stream(stream)>>>(log, y, x, s);
  GPU_CHECK_LAUNCH();
}

void softmax_backward(bool log, float* dx, const float* y, const float* dy, const DimSplit& s,
                      StreamHandle stream) {
  if (s.outer * s.inner * s.size == 0) return;
  softmax_backward_kernel<<<op_blocks(s.outer * s.inner), kOpThreads, 0, as_stream(stream)>>>(
      log, dx, y, dy, s);
  GPU_CHECK_LAUNCH();
}

}  // namespace redline::gpu
