// CPU kernels of the ops (the reference twins of src/backend/gpu/ops_*.cu): raw pointers and
// plain-data layouts; the front-ends in src/ops/ check the arguments first. Floating kernels take
// f32 (as their GPU twins) and f64, which exists on the CPU only; the typed ones are templates on
// the element type, instantiated for float and double.
#pragma once

#include <cstdint>

#include "nn/optim/optim_math.h"
#include "ops/kernel_args.h"

namespace redline::cpu {

// out = op(x) over the layout (operands: out, x). Floating dtypes: f32, f64.
void unary(ops::UnaryOp op, DType dtype, double param, void* out, const void* x,
           const ops::ElementwiseLayout& layout);
// dx = dy * op'(x) (operands: dx, x, y, dy), all contiguous of numel n.
void unary_backward(ops::UnaryOp op, DType dtype, double param, void* dx, const void* x,
                    const void* y, const void* dy, int64_t n);
// out = a op b (operands: out, a, b); comparisons store bool.
void binary(ops::BinaryOp op, DType dtype, void* out, const void* a, const void* b,
            const ops::ElementwiseLayout& layout);
// out = cond ? a : b (operands: out, cond, a, b); dtype of a, b and out.
void where(DType dtype, void* out, const bool* cond, const void* a, const void* b,
           const ops::ElementwiseLayout& layout);
// out[i] = convert(x[i]) for n contiguous elements.
void cast(DType from, DType to, void* out, const void* x, int64_t n);

// Reduction over the middle of a contiguous (outer, size, inner) -> (outer, inner). sum and max
// keep x's dtype (f32, f64, i32, i64); argmax stores i64.
void reduce(ops::ReduceOp op, DType dtype, void* out, const void* x, const ops::DimSplit& s);

// softmax / log_softmax over the middle dimension of a contiguous (outer, size, inner); T is float
// or double.
template <typename T>
void softmax(bool log, T* y, const T* x, const ops::DimSplit& s);
template <typename T>
void softmax_backward(bool log, T* dx, const T* y, const T* dy, const ops::DimSplit& s);

// C[b] = epilogue(alpha * op(A[b]) @ op(B[b]) + beta * C[b] + bias) (row-major, leading
// dimensions and batch strides in elements; a batch stride of 0 shares one matrix). bias, when
// given, has one value per column of C (n,). The CPU twin takes f32 and f64 (A, B, C and bias all
// of `dtype`); the GPU kernel takes f32, bf16 and f16 (f32 accumulation).
enum class GemmEpilogue : uint8_t { none, relu, gelu };
struct GemmArgs {
  DType dtype = DType::f32;
  bool trans_a = false, trans_b = false;
  int64_t m = 0, n = 0, k = 0, batch = 1;
  const void* a = nullptr;
  int64_t lda = 0, stride_a = 0;
  const void* b = nullptr;
  int64_t ldb = 0, stride_b = 0;
  void* c = nullptr;
  int64_t ldc = 0, stride_c = 0;
  float alpha = 1.0f, beta = 0.0f;
  const void* bias = nullptr;
  GemmEpilogue epilogue = GemmEpilogue::none;
  bool allow_tf32 = false;  // f32 inputs through TF32 tensor cores (GPU only)
};
void gemm(const GemmArgs& args);

// Index ops on contiguous tensors seen around `dim` (element size 1, 2, 4 or 8 bytes).
// gather:       out (outer, k, inner) = x (outer, size, inner) at index (outer, k, inner)
// scatter_add:  out (outer, size, inner) += src (outer, k, inner) at index (outer, k, inner)
// index_select: out (outer, k, inner) = x (outer, size, inner) at index (k,)
// index_add:    out (outer, size, inner) += src (outer, k, inner) at index (k,)
// Indices out of [0, size) throw redline::Error naming the first bad one.
void gather(int elem_size, void* out, const void* x, const int64_t* index, const ops::DimSplit& x_s,
            int64_t k);
void scatter_add(DType dtype, void* out, const void* src, const int64_t* index,
                 const ops::DimSplit& out_s, int64_t k);
void index_select(int elem_size, void* out, const void* x, const int64_t* index,
                  const ops::DimSplit& x_s, int64_t k);
void index_add(DType dtype, void* out, const void* src, const int64_t* index,
               const ops::DimSplit& out_s, int64_t k);

// im2col of the batch: col (C * KH * KW, N * OH * OW) from x (N, C, H, W), column
// image * OH * OW + output pixel; col2im adds col back into x (which it does not zero).
// T is float or double.
template <typename T>
void im2col(const T* x, T* col, const ops::ConvGeometry& g);
template <typename T>
void col2im(const T* col, T* x, const ops::ConvGeometry& g);
// Pooling on (N * C) planes; indices flat in each input plane.
template <typename T>
void max_pool2d(const T* x, T* y, int64_t* indices, const ops::ConvGeometry& g);
template <typename T>
void max_pool2d_backward(const T* dy, const int64_t* indices, T* dx, const ops::ConvGeometry& g);
template <typename T>
void avg_pool2d(const T* x, T* y, const ops::ConvGeometry& g);
template <typename T>
void avg_pool2d_backward(const T* dy, T* dx, const ops::ConvGeometry& g);

}  // namespace redline::cpu

namespace redline::cpu {

// ---- optimizer steps (one parameter tensor of n f32 elements; lr and step read from memory) ---

// One update of every slot (all parameters of an optimizer in one pass; on the GPU one launch
// per 32 tensors).
void sgd_step(const optim::OptimSlot* slots, int count, const float* lr, const int64_t* step,
              const optim::SgdConfig& config);
void adam_step(const optim::OptimSlot* slots, int count, const float* lr, const int64_t* step,
               const optim::AdamConfig& config);
void rmsprop_step(const optim::OptimSlot* slots, int count, const float* lr,
                  const optim::RmspropConfig& config);

}  // namespace redline::cpu
