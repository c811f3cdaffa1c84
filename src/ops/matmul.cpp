// matmul / batched matmul / fused linear front-ends: read row-major and transposed views in place.
#include <atomic>

#include "ops/ops_common.h"
#include "redline/ops/ops.h"

namespace redline::ops {
namespace {

std::atomic<bool> g_allow_tf32{false};

struct MatrixView {
  bool trans = false;
  int64_t ld = 0;
  bool ok = false;
};

// How BLAS can read the last two dimensions of t (rows, cols) without a copy.
MatrixView matrix_view(const Tensor& t) {
  const int64_t rows = t.shape(-2), cols = t.shape(-1);
  const int64_t rs = t.strides()[t.dim() - 2], cs = t.strides()[t.dim() - 1];
  if ((cs == 1 || cols == 1) && (rows == 1 || rs >= std::max<int64_t>(cols, 1))) {
    return {false, rows == 1 ? std::max<int64_t>(cols, 1) : rs, true};
  }
  if ((rs == 1 || rows == 1) && (cols == 1 || cs >= std::max<int64_t>(rows, 1))) {
    return {true, cols == 1 ? std::max<int64_t>(rows, 1) : cs, true};
  }
  return {};
}

// The GPU GEMM takes bf16/f16 as they are; the CPU GEMM takes f32 and f64, so bf16/f16 go
// through f32 there.
Tensor gemm_input(const Tensor& t) { return t.device().is_cpu() ? detail::to_compute(t) : t; }

}  // namespace

void set_allow_tf32(bool allow) { g_allow_tf32 = allow; }
bool allow_tf32() { return g_allow_tf32; }

Tensor matmul(const Tensor& a, const Tensor& b) {
  const Device device = detail::common_device("matmul", {&a, &b});
  const DType dtype = detail::common_dtype("matmul", {&a, &b});
  detail::check_floating("matmul", a);
  REDLINE_CHECK((a.dim() == 2 || a.dim() == 3) && (b.dim() == 2 || b.dim() == 3),
                "matmul: expected 2-D or 3-D operands but got {} and {}", a.describe(),
                b.describe());
  REDLINE_CHECK(a.shape(-1) == b.shape(-2), "matmul: inner dimensions differ: {} @ {} ({} vs {})",
                a.describe(), b.describe(), a.shape(-1), b.shape(-2));
  const int64_t batch_a = a.dim() == 3 ? a.shape(0) : 1, batch_b = b.dim() == 3 ? b.shape(0) : 1;
  REDLINE_CHECK(a.dim() == 2 || b.dim() == 2 || batch_a == batch_b,
                "matmul: batch sizes differ: {} @ {}", a.describe(), b.describe());
  const int64_t batch = std::max(batch_a, batch_b);
  const int64_t m = a.shape(-2), k = a.shape(-1), n = b.shape(-1);

  Tensor af = gemm_input(a), bf = gemm_input(b);
  MatrixView va = matrix_view(af), vb = matrix_view(bf);
  if (!va.ok) {
    af = af.contiguous();
    va = matrix_view(af);
  }
  if (!vb.ok) {
    bf = bf.contiguous();
    vb = matrix_view(bf);
  }
  const bool batched = a.dim() == 3 || b.dim() == 3;
  const Shape out_shape = batched ? Shape{batch, m, n} : Shape{m, n};
  Tensor out = Tensor::empty(out_shape, af.dtype(), device);
  cpu::GemmArgs g;
  g.dtype = af.dtype();
  g.trans_a = va.trans;
  g.trans_b = vb.trans;
  g.m = m;
  g.n = n;
  g.k = k;
  g.batch = batch;
  g.a = af.raw_data();
  g.lda = va.ld;
  g.stride_a = a.dim() == 3 ? af.strides()[0] : 0;
  g.b = bf.raw_data();
  g.ldb = vb.ld;
  g.stride_b = b.dim() == 3 ? bf.strides()[0] : 0;
  g.c = out.raw_data();
  g.ldc = n;
  g.stride_c = m * n;
  g.allow_tf32 = allow_tf32();
  REDLINE_KERNEL(device, gemm, g);
  return detail::from_compute(out, dtype);
}

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias, Activation act) {
  const Device device = bias.defined() ? detail::common_device("linear", {&x, &weight, &bias})
                                       : detail::common_device("linear", {&x, &weight});
  const DType dtype = bias.defined() ? detail::common_dtype("linear", {&x, &weight, &bias})
                                     : detail::common_dtype("linear", {&x, &weight});
  detail::check_floating("linear", x);
  REDLINE_CHECK(x.dim() == 2 && weight.dim() == 2 && x.shape(1) == weight.shape(1),
                "linear: input {} does not fit weight {} (expected (M, {}))", x.describe(),
                weight.describe(), weight.dim() == 2 ? weight.shape(1) : 0);
  const int64_t m = x.shape(0), k = x.shape(1), n = weight.shape(0);
  REDLINE_CHECK(!bias.defined() || bias.shape() == Shape{n}, "linear: bias must be ({},) but is {}",
                n, bias.describe());
  Tensor xf = gemm_input(x), wf = gemm_input(weight);
  const Tensor bf = bias.defined() ? gemm_input(bias).contiguous() : Tensor();
  MatrixView vx = matrix_view(xf), vw = matrix_view(wf.transpose(0, 1));
  if (!vx.ok) {
    xf = xf.contiguous();
    vx = matrix_view(xf);
  }
  if (!vw.ok) {
    wf = wf.contiguous();
    vw = matrix_view(wf.transpose(0, 1));
  }
  Tensor out = Tensor::empty({m, n}, xf.dtype(), device);
  cpu::GemmArgs g;
  g.dtype = xf.dtype();
  g.trans_a = vx.trans;
  g.trans_b = vw.trans;
  g.m = m;
  g.n = n;
  g.k = k;
  g.a = xf.raw_data();
  g.lda = vx.ld;
  g.b = wf.raw_data();
  g.ldb = vw.ld;
  g.c = out.raw_data();
  g.ldc = n;
  g.stride_c = m * n;
  g.bias = bf.defined() ? bf.raw_data() : nullptr;
  g.epilogue = act == Activation::relu   ? cpu::GemmEpilogue::relu
               : act == Activation::gelu ? cpu::GemmEpilogue::gelu
                                         : cpu::GemmEpilogue::none;
  g.allow_tf32 = allow_tf32();
  REDLINE_KERNEL(device, gemm, g);
  return detail::from_compute(out, dtype);
}

}  // namespace redline::ops
