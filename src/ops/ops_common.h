// Argument checks and layout helpers shared by the op front-ends in src/ops/.
#pragma once

#include <initializer_list>
#include <type_traits>
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
// Every tensor defined and on one device, in a dtype that device computes (see
// check_device_dtype); returns that device.
Device common_device(const char* op, std::initializer_list<const Tensor*> tensors);
// f64 exists on the CPU only: throws ("f64 tensors are supported on the CPU only ...") when dtype
// is f64 and device is a GPU. Copies between devices are plain bytes and do not check this.
void check_device_dtype(const char* op, DType dtype, Device device);
// Every tensor of one dtype; returns it.
DType common_dtype(const char* op, std::initializer_list<const Tensor*> tensors);
// Every tensor of one compute dtype (see compute_dtype: bf16 and f16 go with f32, f64 with nothing
// else); returns it.
DType common_compute_dtype(const char* op, std::initializer_list<const Tensor*> tensors);
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

// The dtype a floating op computes in: f64 for f64, f32 for f32, bf16 and f16 (the CPU kernels
// take f32 and f64; the GPU's bf16/f16 paths that compute natively do not go through this).
DType compute_dtype(DType dtype);
// x in its compute dtype: the f32 working copy of a bf16/f16 tensor, else x itself.
Tensor to_compute(const Tensor& x);
// Rounds a result in the compute dtype back to dtype (bf16/f16), else returns it.
Tensor from_compute(const Tensor& y, DType dtype);

// Calls fn.template operator()<T>() with T = double for f64 and float for f32: the element type
// of a compute dtype, for the kernels templated on it.
template <typename Fn>
void visit_compute_type(DType compute, Fn&& fn) {
  if (compute == DType::f64) {
    fn.template operator()<double>();
  } else {
    fn.template operator()<float>();
  }
}

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

// REDLINE_KERNEL for a kernel templated on its element type T (inside visit_compute_type): f64
// (T = double) has CPU kernels only, and common_device has already refused it on GPUs.
#define REDLINE_TYPED_KERNEL(T, device, name, ...) \
  do {                                             \
    if constexpr (std::is_same_v<T, double>) {     \
      ::redline::cpu::name(__VA_ARGS__);           \
    } else {                                       \
      REDLINE_KERNEL(device, name, __VA_ARGS__);   \
    }                                              \
  } while (0)
