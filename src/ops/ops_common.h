// Argument checks and layout helpers shared by the op front-ends in src/ops/.
#pragma once

#include <initializer_list>
#include <vector>

#include "backend/cpu/ops_kernels.h"
#include "ops/kernel_args.h"
#include "redline/core/tensor.h"
#if REDLINE_HAS_GPU
#include "backend/gpu/ops_kernels.h"
#endif

namespace redline::ops::detail {

// Throws unless t is defined ("op: argument `what` is an undefined tensor").
void check_defined(const Tensor& t, const char* op, const char* what);
// Every tensor defined and on one device; returns that device.
Device common_device(const char* op, std::initializer_list<const Tensor*> tensors);
// Every tensor of one dtype; returns it.
DType common_dtype(const char* op, std::initializer_list<const Tensor*> tensors);
// Throws unless dtype is one of the floating dtypes.
void check_floating(const char* op, const Tensor& t);
// The current stream of a GPU device (and makes that device current).
void* gpu_stream(Device device);

// dim in [-ndim, ndim) to [0, ndim), or a redline::Error naming the op and the shape.
int normalize_dim(int dim, const Shape& shape, const char* op);

// A layout over out_shape for operand 0 = out (contiguous) and the given operands, each
// broadcast to out_shape (stride 0 along dimensions of size 1 or missing on the left).
ElementwiseLayout broadcast_layout(const Shape& out_shape,
                                   std::initializer_list<const Tensor*> ins);
// Layout with explicit output strides (for in-place writes).
ElementwiseLayout broadcast_layout(const Shape& out_shape, const Shape& out_strides,
                                   std::initializer_list<const Tensor*> ins);

DimSplit split_at(const Shape& shape, int dim);

// The f32 working copy of a bf16/f16 tensor (CPU kernels compute in f32), or x itself.
Tensor to_f32(const Tensor& x);
// Rounds an f32 result back to dtype when dtype is bf16/f16.
Tensor from_f32(const Tensor& y, DType dtype);

// Tensor-level kernels driven by the maths enums (autograd uses them for the backward pass).
Tensor unary(UnaryOp op, const Tensor& x, double param, const char* name);
Tensor unary_backward(UnaryOp op, const Tensor& x, const Tensor& y, const Tensor& dy, double param);
Tensor binary(BinaryOp op, const Tensor& a, const Tensor& b, const char* name);

}  // namespace redline::ops::detail

// Runs the CPU twin or the GPU kernel `name` for the device (GPU kernels take the stream last).
// CPU-only builds cannot hold GPU tensors (Tensor::empty refuses them), so only the CPU branch.
#if REDLINE_HAS_GPU
#define REDLINE_KERNEL(device, name, ...)                                            \
  do {                                                                               \
    if ((device).is_cpu()) {                                                         \
      ::redline::cpu::name(__VA_ARGS__);                                             \
    } else {                                                                         \
      ::redline::gpu::name(__VA_ARGS__, ::redline::ops::detail::gpu_stream(device)); \
    }                                                                                \
  } while (0)
#else
#define REDLINE_KERNEL(device, name, ...) ::redline::cpu::name(__VA_ARGS__)
#endif
