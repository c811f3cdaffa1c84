// GPU kernels of the ops (src/backend/gpu/ops_*.cu, optim.cu): the same signatures as their CPU
// twins in src/backend/cpu/ops_kernels.h plus the stream last. Plain C++: no vendor header here.
// Differences from the CPU twins: index kernels cannot throw, so out-of-range indices are skipped
// (the CPU twin raises the error; run on the CPU to find a bad index).
#pragma once

#include <cstdint>

#include "backend/cpu/ops_kernels.h"

namespace redline::gpu {

void unary(ops::UnaryOp op, DType dtype, double param, void* out, const void* x,
           const ops::ElementwiseLayout& layout, StreamHandle stream);
void unary_backward(ops::UnaryOp op, DType dtype, double param, void* dx, const void* x,
                    const void* y, const void* dy, int64_t n, StreamHandle stream);
void binary(ops::BinaryOp op, DType dtype, void* out, const void* a, const void* b,
            const ops::ElementwiseLayout& layout, StreamHandle stream);
void where(DType dtype, void* out, const bool* cond, const void* a, const void* b,
           const ops::ElementwiseLayout& layout, StreamHandle stream);
void cast(DType from, DType to, void* out, const void* x, int64_t n, StreamHandle stream);

void reduce(ops::ReduceOp op, DType dtype, void* out, const void* x, const ops::DimSplit& s,
            StreamHandle stream);
void softmax(bool log, float* y, const float* x, const ops::DimSplit& s, StreamHandle stream);
void softmax_backward(bool log, float* dx, const float* y, const float* dy, const ops::DimSplit& s,
                      StreamHandle stream);

// cuBLASLt where available (descriptors cached per shape), else an own tiled kernel.
void gemm(const cpu::GemmArgs& args, StreamHandle stream);

void gather(int elem_size, void* out, const void* x, const int64_t* index, const ops::DimSplit& x_s,
            int64_t k, StreamHandle stream);
void scatter_add(DType dtype, void* out, const void* src, const int64_t* index,
                 const ops::DimSplit& out_s, int64_t k, StreamHandle stream);
void index_select(int elem_size, void* out, const void* x, const int64_t* index,
                  const ops::DimSplit& x_s, int64_t k, StreamHandle stream);
void index_add(DType dtype, void* out, const void* src, const int64_t* index,
               const ops::DimSplit& out_s, int64_t k, StreamHandle stream);

void im2col(const float* x, float* col, const ops::ConvGeometry& g, StreamHandle stream);
void col2im(const float* col, float* x, const ops::ConvGeometry& g, StreamHandle stream);
#if REDLINE_HAS_CUDNN
// conv2d through cuDNN (ops_cudnn.cu; CUDA builds that found cuDNN), NCHW f32, groups = 1:
//   x: (N, C, H, W)   w: (O, C, KH, KW)   bias: (O,) or nullptr   y, dy: (N, O, OH, OW)
// The algorithm of each shape is searched once (heuristics while the stream is captured).
// usable: false where cuDNN cannot take the call (an empty tensor, one over INT_MAX elements, or
// the device's first use while a graph is captured); the caller then runs im2col + GEMM.
// policy: TF32 tensor cores allowed (ops::allow_tf32()), and deterministic algorithms only
// (ops::deterministic()); otherwise the fastest algorithm of the search wins, as in PyTorch.
struct CudnnPolicy {
  bool allow_tf32 = false;
  bool deterministic = false;
};
bool cudnn_conv2d_usable(const ops::ConvGeometry& g, StreamHandle stream);
void cudnn_conv2d(const float* x, const float* w, const float* bias, float* y,
                  const ops::ConvGeometry& g, CudnnPolicy policy, StreamHandle stream);
void cudnn_conv2d_backward_data(const float* w, const float* dy, float* dx,
                                const ops::ConvGeometry& g, CudnnPolicy policy,
                                StreamHandle stream);
void cudnn_conv2d_backward_filter(const float* x, const float* dy, float* dw,
                                  const ops::ConvGeometry& g, CudnnPolicy policy,
                                  StreamHandle stream);
#endif
void max_pool2d(const float* x, float* y, int64_t* indices, const ops::ConvGeometry& g,
                StreamHandle stream);
void max_pool2d_backward(const float* dy, const int64_t* indices, float* dx,
                         const ops::ConvGeometry& g, StreamHandle stream);
void avg_pool2d(const float* x, float* y, const ops::ConvGeometry& g, StreamHandle stream);
void avg_pool2d_backward(const float* dy, float* dx, const ops::ConvGeometry& g,
                         StreamHandle stream);

// One update of every slot (all parameters of an optimizer in one pass; on the GPU one launch
// per 32 tensors).
void sgd_step(const optim::OptimSlot* slots, int count, const float* lr, const int64_t* step,
              const optim::SgdConfig& config, StreamHandle stream);
void adam_step(const optim::OptimSlot* slots, int count, const float* lr, const int64_t* step,
               const optim::AdamConfig& config, StreamHandle stream);
void rmsprop_step(const optim::OptimSlot* slots, int count, const float* lr,
                  const optim::RmspropConfig& config, StreamHandle stream);

}  // namespace redline::gpu
