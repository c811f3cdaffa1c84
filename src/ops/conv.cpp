// conv2d (cuDNN where the build found it, else im2col + GEMM) and 2-D pooling front-ends, NCHW.
#include <atomic>

#include "backend/cpu/ops_kernels.h"
#include "ops/ops_common.h"
#include "redline/ops/ops.h"

namespace redline::ops {
namespace {

int64_t out_size(int64_t in, int64_t kernel, int stride, int pad, int dilation) {
  return (in + 2 * pad - dilation * (kernel - 1) - 1) / stride + 1;
}

ConvGeometry conv_geometry(const Tensor& x, const Tensor& w, const Conv2dOptions& o) {
  REDLINE_CHECK(x.dim() == 4, "conv2d: input must be (N, C, H, W) but is {}", x.describe());
  REDLINE_CHECK(w.dim() == 4, "conv2d: weight must be (O, C, KH, KW) but is {}", w.describe());
  REDLINE_CHECK(w.shape(1) == x.shape(1),
                "conv2d: weight {} expects {} input channels but input {} has {}", w.describe(),
                w.shape(1), x.describe(), x.shape(1));
  REDLINE_CHECK(o.stride_h > 0 && o.stride_w > 0 && o.dilation_h > 0 && o.dilation_w > 0 &&
                    o.pad_h >= 0 && o.pad_w >= 0,
                "conv2d: stride ({}, {}) and dilation ({}, {}) must be positive and padding "
                "({}, {}) non-negative",
                o.stride_h, o.stride_w, o.dilation_h, o.dilation_w, o.pad_h, o.pad_w);
  ConvGeometry g{
      x.shape(0), x.shape(1), x.shape(2), x.shape(3), w.shape(0), w.shape(2),   w.shape(3),  0,
      0,          o.stride_h, o.stride_w, o.pad_h,    o.pad_w,    o.dilation_h, o.dilation_w};
  g.oh = out_size(g.h, g.kh, o.stride_h, o.pad_h, o.dilation_h);
  g.ow = out_size(g.w, g.kw, o.stride_w, o.pad_w, o.dilation_w);
  REDLINE_CHECK(
      g.oh > 0 && g.ow > 0,
      "conv2d: kernel {}x{} (dilation {}, {}) does not fit input {} with padding ({}, {})", g.kh,
      g.kw, o.dilation_h, o.dilation_w, x.describe(), o.pad_h, o.pad_w);
  return g;
}

ConvGeometry pool_geometry(const Shape& x, const Pool2dOptions& o, const char* op) {
  REDLINE_CHECK(x.size() == 4, "{}: input must be (N, C, H, W) but has shape {}", op, shape_str(x));
  REDLINE_CHECK(o.kernel_h > 0 && o.kernel_w > 0 && o.stride_h > 0 && o.stride_w > 0,
                "{}: kernel ({}, {}) and stride ({}, {}) must be positive", op, o.kernel_h,
                o.kernel_w, o.stride_h, o.stride_w);
  REDLINE_CHECK(
      o.pad_h >= 0 && o.pad_w >= 0 && 2 * o.pad_h <= o.kernel_h && 2 * o.pad_w <= o.kernel_w,
      "{}: padding ({}, {}) must be non-negative and at most half the kernel ({}, {})", op, o.pad_h,
      o.pad_w, o.kernel_h, o.kernel_w);
  ConvGeometry g{x[0], x[1],       x[2],       x[3],    x[1],    o.kernel_h, o.kernel_w, 0,
                 0,    o.stride_h, o.stride_w, o.pad_h, o.pad_w, 1,          1};
  g.oh = out_size(g.h, g.kh, o.stride_h, o.pad_h, 1);
  g.ow = out_size(g.w, g.kw, o.stride_w, o.pad_w, 1);
  REDLINE_CHECK(g.oh > 0 && g.ow > 0, "{}: kernel {}x{} does not fit input {}", op, g.kh, g.kw,
                shape_str(x));
  return g;
}

// Row-major C (m, n) = op(A) @ op(B) with explicit leading dimensions, in c's dtype (f32 or f64).
cpu::GemmArgs gemm_args(int64_t m, int64_t n, int64_t k, const Tensor& a, bool ta, int64_t lda,
                        const Tensor& b, bool tb, int64_t ldb, Tensor& c) {
  cpu::GemmArgs g;
  g.dtype = c.dtype();
  g.trans_a = ta;
  g.trans_b = tb;
  g.m = m;
  g.n = n;
  g.k = k;
  g.a = a.raw_data();
  g.lda = lda;
  g.b = b.raw_data();
  g.ldb = ldb;
  g.c = c.raw_data();
  g.ldc = n;
  g.allow_tf32 = allow_tf32();
  return g;
}

// col (C*KH*KW, N*OH*OW) = im2col(x) for a contiguous x in its compute dtype.
Tensor im2col_batch(const Tensor& xc, const ConvGeometry& g) {
  Tensor col = Tensor::empty({g.c * g.kh * g.kw, g.n * g.oh * g.ow}, xc.dtype(), xc.device());
  detail::visit_compute_type(xc.dtype(), [&]<typename T>() {
    REDLINE_TYPED_KERNEL(T, xc.device(), im2col, xc.data<T>(), col.data<T>(), g);
  });
  return col;
}

std::atomic<bool> g_deterministic{false};

#if REDLINE_HAS_GPU && REDLINE_HAS_CUDNN
// cuDNN takes conv2d on CUDA GPUs (src/backend/gpu/ops_cudnn.cu) unless it cannot take this call.
bool use_cudnn(Device device, const ConvGeometry& g) {
  return device.is_gpu() && gpu::cudnn_conv2d_usable(g, detail::gpu_stream(device));
}

gpu::CudnnPolicy cudnn_policy() { return {allow_tf32(), deterministic()}; }
#endif

}  // namespace

void set_deterministic(bool on) { g_deterministic = on; }
bool deterministic() { return g_deterministic; }

// One im2col of the whole batch and one GEMM (the launch count does not grow with the batch):
//   col (C*KH*KW, N*OH*OW) = im2col(x)
//   yt  (N*OH*OW, O)       = col^T @ w^T + bias        (bias fused into the GEMM)
//   out (N, O, OH, OW)     = yt viewed (N, OH*OW, O), permuted
Tensor conv2d(const Tensor& x, const Tensor& w, const Tensor& bias, const Conv2dOptions& o) {
  const Device device = bias.defined() ? detail::common_device("conv2d", {&x, &w, &bias})
                                       : detail::common_device("conv2d", {&x, &w});
  if (bias.defined()) {
    detail::common_dtype("conv2d", {&x, &w, &bias});
  } else {
    detail::common_dtype("conv2d", {&x, &w});
  }
  detail::check_floating("conv2d", x);
  const ConvGeometry g = conv_geometry(x, w, o);
  REDLINE_CHECK(!bias.defined() || bias.shape() == Shape{g.o},
                "conv2d: bias must be ({},) but is {}", g.o, bias.describe());
  const Tensor xc = detail::to_compute(x).contiguous(), wc = detail::to_compute(w).contiguous();
  const Tensor bc = bias.defined() ? detail::to_compute(bias).contiguous() : Tensor();
#if REDLINE_HAS_GPU && REDLINE_HAS_CUDNN
  if (use_cudnn(device, g)) {
    Tensor y = Tensor::empty({g.n, g.o, g.oh, g.ow}, DType::f32, device);
    gpu::cudnn_conv2d(xc.data<float>(), wc.data<float>(), bc.defined() ? bc.data<float>() : nullptr,
                      y.data<float>(), g, cudnn_policy(), detail::gpu_stream(device));
    return detail::from_compute(y, x.dtype());
  }
#endif
  const int64_t rows = g.c * g.kh * g.kw, cols = g.n * g.oh * g.ow;
  const Tensor col = im2col_batch(xc, g);
  Tensor yt = Tensor::empty({cols, g.o}, xc.dtype(), device);
  cpu::GemmArgs args = gemm_args(cols, g.o, rows, col, true, cols, wc, true, rows, yt);
  args.bias = bc.defined() ? bc.raw_data() : nullptr;
  REDLINE_KERNEL(device, gemm, args);
  const Tensor out = yt.view({g.n, g.oh * g.ow, g.o}).permute({0, 2, 1}).contiguous();
  return detail::from_compute(out.view({g.n, g.o, g.oh, g.ow}), x.dtype());
}

//   dyt (N*OH*OW, O)       = dy permuted
//   dw  (O, C*KH*KW)       = dyt^T @ col^T
//   dcol (C*KH*KW, N*OH*OW) = w^T @ dyt^T, then dx = col2im(dcol)
Conv2dGrads conv2d_backward(const Tensor& x, const Tensor& w, const Tensor& dy,
                            const Conv2dOptions& o, bool need_dx, bool need_dw, bool need_dbias) {
  const Device device = detail::common_device("conv2d backward", {&x, &w, &dy});
  const DType compute = detail::common_compute_dtype("conv2d backward", {&x, &w, &dy});
  const ConvGeometry g = conv_geometry(x, w, o);
  REDLINE_CHECK(dy.shape() == (Shape{g.n, g.o, g.oh, g.ow}),
                "conv2d backward: dy is {} but the output shape is ({}, {}, {}, {})", dy.describe(),
                g.n, g.o, g.oh, g.ow);
#if REDLINE_HAS_GPU && REDLINE_HAS_CUDNN
  if (use_cudnn(device, g)) {
    void* stream = detail::gpu_stream(device);
    const Tensor dyc = detail::to_compute(dy).contiguous();
    Conv2dGrads grads;
    if (need_dw) {
      const Tensor xc = detail::to_compute(x).contiguous();
      Tensor dw = Tensor::empty(w.shape(), DType::f32, device);
      gpu::cudnn_conv2d_backward_filter(xc.data<float>(), dyc.data<float>(), dw.data<float>(), g,
                                        cudnn_policy(), stream);
      grads.dw = detail::from_compute(dw, w.dtype());
    }
    if (need_dx) {
      const Tensor wc = detail::to_compute(w).contiguous();
      Tensor dx = Tensor::empty(x.shape(), DType::f32, device);
      gpu::cudnn_conv2d_backward_data(wc.data<float>(), dyc.data<float>(), dx.data<float>(), g,
                                      cudnn_policy(), stream);
      grads.dx = detail::from_compute(dx, x.dtype());
    }
    if (need_dbias) grads.dbias = detail::from_compute(sum(dyc, {0, 2, 3}), dy.dtype());
    return grads;
  }
#endif
  const int64_t rows = g.c * g.kh * g.kw, cols = g.n * g.oh * g.ow;
  const Tensor dyt =
      detail::to_compute(dy).permute({0, 2, 3, 1}).contiguous().view({cols, g.o});  // (N*OH*OW, O)
  Conv2dGrads grads;
  if (need_dw) {
    const Tensor col = im2col_batch(detail::to_compute(x).contiguous(), g);
    Tensor dw = Tensor::empty(w.shape(), compute, device);
    REDLINE_KERNEL(device, gemm, gemm_args(g.o, rows, cols, dyt, true, g.o, col, true, cols, dw));
    grads.dw = detail::from_compute(dw, w.dtype());
  }
  if (need_dx) {
    const Tensor wc = detail::to_compute(w).contiguous();
    Tensor dcol = Tensor::empty({rows, cols}, compute, device);
    REDLINE_KERNEL(device, gemm, gemm_args(rows, cols, g.o, wc, true, rows, dyt, true, g.o, dcol));
    Tensor dx = Tensor::zeros(x.shape(), compute, device);
    detail::visit_compute_type(compute, [&]<typename T>() {
      REDLINE_TYPED_KERNEL(T, device, col2im, dcol.data<T>(), dx.data<T>(), g);
    });
    grads.dx = detail::from_compute(dx, x.dtype());
  }
  if (need_dbias) grads.dbias = detail::from_compute(sum(dyt, {0}), dy.dtype());
  return grads;
}

MaxPoolResult max_pool2d(const Tensor& x, const Pool2dOptions& o) {
  detail::common_device("max_pool2d", {&x});
  detail::check_floating("max_pool2d", x);
  const ConvGeometry g = pool_geometry(x.shape(), o, "max_pool2d");
  const Tensor xc = detail::to_compute(x).contiguous();
  Tensor y = Tensor::empty({g.n, g.c, g.oh, g.ow}, xc.dtype(), x.device());
  Tensor idx = Tensor::empty({g.n, g.c, g.oh, g.ow}, DType::i64, x.device());
  detail::visit_compute_type(xc.dtype(), [&]<typename T>() {
    REDLINE_TYPED_KERNEL(T, x.device(), max_pool2d, xc.data<T>(), y.data<T>(), idx.data<int64_t>(),
                         g);
  });
  return {detail::from_compute(y, x.dtype()), idx};
}

Tensor max_pool2d_backward(const Tensor& dy, const Tensor& indices, const Shape& x_shape) {
  detail::common_device("max_pool2d backward", {&dy, &indices});
  REDLINE_CHECK(x_shape.size() == 4 && dy.dim() == 4 && indices.shape() == dy.shape() &&
                    indices.dtype() == DType::i64 && dy.shape(0) == x_shape[0] &&
                    dy.shape(1) == x_shape[1],
                "max_pool2d backward: dy {} and indices {} do not fit input shape {}",
                dy.describe(), indices.describe(), shape_str(x_shape));
  ConvGeometry g{x_shape[0],  x_shape[1], x_shape[2], x_shape[3], x_shape[1], 1, 1, dy.shape(2),
                 dy.shape(3), 1,          1,          0,          0,          1, 1};
  const Tensor gc = detail::to_compute(dy).contiguous(), ic = indices.contiguous();
  Tensor dx = Tensor::zeros(x_shape, gc.dtype(), dy.device());
  detail::visit_compute_type(gc.dtype(), [&]<typename T>() {
    REDLINE_TYPED_KERNEL(T, dy.device(), max_pool2d_backward, gc.data<T>(), ic.data<int64_t>(),
                         dx.data<T>(), g);
  });
  return detail::from_compute(dx, dy.dtype());
}

Tensor avg_pool2d(const Tensor& x, const Pool2dOptions& o) {
  detail::common_device("avg_pool2d", {&x});
  detail::check_floating("avg_pool2d", x);
  const ConvGeometry g = pool_geometry(x.shape(), o, "avg_pool2d");
  const Tensor xc = detail::to_compute(x).contiguous();
  Tensor y = Tensor::empty({g.n, g.c, g.oh, g.ow}, xc.dtype(), x.device());
  detail::visit_compute_type(xc.dtype(), [&]<typename T>() {
    REDLINE_TYPED_KERNEL(T, x.device(), avg_pool2d, xc.data<T>(), y.data<T>(), g);
  });
  return detail::from_compute(y, x.dtype());
}

Tensor avg_pool2d_backward(const Tensor& dy, const Shape& x_shape, const Pool2dOptions& o) {
  detail::common_device("avg_pool2d backward", {&dy});
  const ConvGeometry g = pool_geometry(x_shape, o, "avg_pool2d backward");
  REDLINE_CHECK(dy.shape() == (Shape{g.n, g.c, g.oh, g.ow}),
                "avg_pool2d backward: dy is {} but the output shape is ({}, {}, {}, {})",
                dy.describe(), g.n, g.c, g.oh, g.ow);
  const Tensor gc = detail::to_compute(dy).contiguous();
  Tensor dx = Tensor::zeros(x_shape, gc.dtype(), dy.device());
  detail::visit_compute_type(gc.dtype(), [&]<typename T>() {
    REDLINE_TYPED_KERNEL(T, dy.device(), avg_pool2d_backward, gc.data<T>(), dx.data<T>(), g);
  });
  return detail::from_compute(dx, dy.dtype());
}

}  // namespace redline::ops
