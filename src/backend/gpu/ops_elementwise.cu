// Elementwise kernels: unary, unary backward, binary (broadcasting), where, cast.
// CPU twins: src/backend/cpu/ops_elementwise.cpp; the maths: src/ops/elementwise_math.h.
#include "backend/gpu/ops_kernels.h"
#include "backend/gpu/ops_launch.h"
#include "redline/core/dtype.h"

namespace redline::gpu {
namespace {

using ops::BinaryOp;
using ops::ElementwiseLayout;
using ops::UnaryOp;

// Offsets of operands 0..K-1 of element `linear` (row-major over layout.sizes).
template <int K>
__device__ inline void element_offsets(const ElementwiseLayout& l, int64_t linear,
                                       int64_t* offsets) {
  for (int k = 0; k < K; ++k) offsets[k] = 0;
  for (int d = l.ndim - 1; d >= 0; --d) {
    const int64_t i = linear % l.sizes[d];
    linear /= l.sizes[d];
    for (int k = 0; k < K; ++k) offsets[k] += i * l.strides[k][d];
  }
}

// True when every operand is laid out like a contiguous output (then offsets are `linear`).
bool all_contiguous(const ElementwiseLayout& l, int operands) {
  int64_t expected = 1;
  for (int d = l.ndim - 1; d >= 0; --d) {
    for (int k = 0; k < operands; ++k) {
      if (l.sizes[d] != 1 && l.strides[k][d] != expected) return false;
    }
    expected *= l.sizes[d];
  }
  return true;
}

// Elements per thread per pass of the contiguous kernels: all loads of a pass are issued before
// the first store, so a thread keeps kUnroll loads in flight (one at a time left relu at 67% of
// copy bandwidth on the H200).
constexpr int kUnroll = 4;

__global__ void unary_contiguous_kernel(UnaryOp op, float param, float* out, const float* x,
                                        int64_t n) {
  const int64_t stride = int64_t{gridDim.x} * blockDim.x;
  for (int64_t first = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; first < n;
       first += kUnroll * stride) {
    float v[kUnroll];
#pragma unroll
    for (int k = 0; k < kUnroll; ++k) {
      const int64_t i = first + k * stride;
      v[k] = i < n ? x[i] : 0.0f;
    }
#pragma unroll
    for (int k = 0; k < kUnroll; ++k) {
      const int64_t i = first + k * stride;
      if (i < n) out[i] = ops::unary_forward<float>(op, v[k], param);
    }
  }
}

__global__ void unary_strided_kernel(UnaryOp op, float param, float* out, const float* x,
                                     ElementwiseLayout l) {
  REDLINE_GRID_STRIDE(i, l.numel) {
    int64_t at[2];
    element_offsets<2>(l, i, at);
    out[at[0]] = ops::unary_forward<float>(op, x[at[1]], param);
  }
}

__global__ void unary_backward_kernel(UnaryOp op, float param, float* dx, const float* x,
                                      const float* y, const float* dy, int64_t n) {
  REDLINE_GRID_STRIDE(i, n) { dx[i] = ops::unary_backward<float>(op, x[i], y[i], dy[i], param); }
}

template <typename T, bool kContiguous>
__global__ void binary_kernel(BinaryOp op, void* out, const T* a, const T* b, ElementwiseLayout l) {
  const bool compare = ops::binary_is_comparison(op);
  REDLINE_GRID_STRIDE(i, l.numel) {
    int64_t at[3] = {i, i, i};
    if (!kContiguous) element_offsets<3>(l, i, at);
    const T v = ops::binary_forward<T>(op, a[at[1]], b[at[2]]);
    if (compare) {
      static_cast<bool*>(out)[at[0]] = v != T(0);
    } else {
      static_cast<T*>(out)[at[0]] = v;
    }
  }
}

template <typename T>
__global__ void where_kernel(T* out, const bool* cond, const T* a, const T* b,
                             ElementwiseLayout l) {
  REDLINE_GRID_STRIDE(i, l.numel) {
    int64_t at[4];
    element_offsets<4>(l, i, at);
    out[at[0]] = cond[at[1]] ? a[at[2]] : b[at[3]];
  }
}

// Conversions through double, as the CPU twin (exact for every pair but i64 beyond 2^53).
__device__ inline double load(const void* p, DType t, int64_t i) {
  switch (t) {
    case DType::f32:
      return static_cast<const float*>(p)[i];
    case DType::bf16:
      return bf16_bits_to_float(static_cast<const uint16_t*>(p)[i]);
    case DType::f16:
      return f16_bits_to_float(static_cast<const uint16_t*>(p)[i]);
    case DType::u8:
      return static_cast<const uint8_t*>(p)[i];
    case DType::i32:
      return static_cast<const int32_t*>(p)[i];
    case DType::i64:
      return static_cast<double>(static_cast<const int64_t*>(p)[i]);
    case DType::boolean:
      return static_cast<const uint8_t*>(p)[i] != 0 ? 1.0 : 0.0;
    case DType::f64:  // CPU only: cast() below refuses it before launching
      break;
  }
  return 0.0;
}

__device__ inline void store(void* p, DType t, int64_t i, double v) {
  switch (t) {
    case DType::f32:
      static_cast<float*>(p)[i] = static_cast<float>(v);
      break;
    case DType::bf16:
      static_cast<uint16_t*>(p)[i] = float_to_bf16_bits(static_cast<float>(v));
      break;
    case DType::f16:
      static_cast<uint16_t*>(p)[i] = float_to_f16_bits(static_cast<float>(v));
      break;
    case DType::u8:
      static_cast<uint8_t*>(p)[i] = static_cast<uint8_t>(static_cast<int64_t>(v));
      break;
    case DType::i32:
      static_cast<int32_t*>(p)[i] = static_cast<int32_t>(v);
      break;
    case DType::i64:
      static_cast<int64_t*>(p)[i] = static_cast<int64_t>(v);
      break;
    case DType::boolean:
      static_cast<uint8_t*>(p)[i] = v != 0.0 ? 1 : 0;
      break;
    case DType::f64:  // CPU only: cast() below refuses it before launching
      break;
  }
}

__global__ void cast_kernel(DType from, DType to, void* out, const void* x, int64_t n) {
  REDLINE_GRID_STRIDE(i, n) { store(out, to, i, load(x, from, i)); }
}

template <typename T>
void launch_binary(BinaryOp op, void* out, const void* a, const void* b, const ElementwiseLayout& l,
                   cudaStream_t s) {
  if (all_contiguous(l, 3)) {
    binary_kernel<T, true><<<op_blocks(l.numel), kOpThreads, 0, s>>>(
        op, out, static_cast<const T*>(a), static_cast<const T*>(b), l);
  } else {
    binary_kernel<T, false><<<op_blocks(l.numel), kOpThreads, 0, s>>>(
        op, out, static_cast<const T*>(a), static_cast<const T*>(b), l);
  }
  GPU_CHECK_LAUNCH();
}

template <typename T>
void launch_where(void* out, const bool* cond, const void* a, const void* b,
                  const ElementwiseLayout& l, cudaStream_t s) {
  where_kernel<T><<<op_blocks(l.numel), kOpThreads, 0, s>>>(
      static_cast<T*>(out), cond, static_cast<const T*>(a), static_cast<const T*>(b), l);
  GPU_CHECK_LAUNCH();
}

}  // namespace

void unary(UnaryOp op, DType dtype, double param, void* out, const void* x,
           const ElementwiseLayout& l, StreamHandle stream) {
  REDLINE_CHECK(dtype == DType::f32, "GPU unary kernel got {}; expected f32", dtype_name(dtype));
  if (l.numel == 0) return;
  const float p = static_cast<float>(param);
  if (all_contiguous(l, 2)) {
    const int64_t passes = (l.numel + kUnroll - 1) / kUnroll;
    unary_contiguous_kernel<<<op_blocks(passes), kOpThreads, 0, as_stream(stream)>>>(
        op, p, static_cast<float*>(out), static_cast<const float*>(x), l.numel);
  } else {
    unary_strided_kernel<<<op_blocks(l.numel), kOpThreads, 0, as_stream(stream)>>>(
        op, p, static_cast<float*>(out), static_cast<const float*>(x), l);
  }
  GPU_CHECK_LAUNCH();
}

void unary_backward(UnaryOp op, DType dtype, double param, void* dx, const void* x, const void* y,
                    const void* dy, int64_t n, StreamHandle stream) {
  REDLINE_CHECK(dtype == DType::f32, "GPU unary backward got {}; expected f32", dtype_name(dtype));
  if (n == 0) return;
  unary_backward_kernel<<<op_blocks(n), kOpThreads, 0, as_stream(stream)>>>(
      op, static_cast<float>(param), static_cast<float*>(dx), static_cast<const float*>(x),
      static_cast<const float*>(y), static_cast<const float*>(dy), n);
  GPU_CHECK_LAUNCH();
}

void binary(BinaryOp op, DType dtype, void* out, const void* a, const void* b,
            const ElementwiseLayout& l, StreamHandle stream) {
  if (l.numel == 0) return;
  switch (dtype) {
    case DType::f32:
      return launch_binary<float>(op, out, a, b, l, as_stream(stream));
    case DType::i32:
      return launch_binary<int32_t>(op, out, a, b, l, as_stream(stream));
    case DType::i64:
      return launch_binary<int64_t>(op, out, a, b, l, as_stream(stream));
    default:
      REDLINE_FAIL("GPU binary kernel got {}; expected f32, i32 or i64", dtype_name(dtype));
  }
}

void where(DType dtype, void* out, const bool* cond, const void* a, const void* b,
           const ElementwiseLayout& l, StreamHandle stream) {
  if (l.numel == 0) return;
  const cudaStream_t s = as_stream(stream);
  switch (dtype_size(dtype)) {
    case 1:
      return launch_where<uint8_t>(out, cond, a, b, l, s);
    case 2:
      return launch_where<uint16_t>(out, cond, a, b, l, s);
    case 4:
      return launch_where<uint32_t>(out, cond, a, b, l, s);
    default:
      return launch_where<uint64_t>(out, cond, a, b, l, s);
  }
}

void cast(DType from, DType to, void* out, const void* x, int64_t n, StreamHandle stream) {
  REDLINE_CHECK(from != DType::f64 && to != DType::f64,
                "GPU cast got {} -> {}; f64 tensors are supported on the CPU only",
                dtype_name(from), dtype_name(to));
  if (n == 0) return;
  if (from == to) {
    memcpy_async(out, x, static_cast<size_t>(n) * dtype_size(from), CopyKind::device_to_device,
                 stream);
    return;
  }
  cast_kernel<<<op_blocks(n), kOpThreads, 0, as_stream(stream)>>>(from, to, out, x, n);
  GPU_CHECK_LAUNCH();
}

}  // namespace redline::gpu
