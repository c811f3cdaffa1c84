// Front-ends of the elementwise ops: broadcasting, dtype rules, kernel choice.
#include <cmath>
#include <limits>

#include "backend/cpu/ops_kernels.h"
#include "ops/ops_common.h"
#include "redline/ops/ops.h"

namespace redline::ops {

using detail::broadcast_layout;
using detail::common_device;
using detail::common_dtype;

Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op) {
  const size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    const int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    const int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    REDLINE_CHECK(da == db || da == 1 || db == 1,
                  "{}: shapes {} and {} do not broadcast (dimension {} is {} vs {})", op,
                  shape_str(a), shape_str(b), i, da, db);
    out[i] = da == 1 ? db : da;
  }
  return out;
}

Tensor sum_to(const Tensor& grad, const Shape& shape) {
  if (grad.shape() == shape) return grad;
  const int lead = grad.dim() - static_cast<int>(shape.size());
  REDLINE_CHECK(lead >= 0, "sum_to: shape {} has more dimensions than {}", shape_str(shape),
                grad.describe());
  std::vector<int> dims;
  for (int d = 0; d < grad.dim(); ++d) {
    if (d < lead || (shape[d - lead] == 1 && grad.shape()[d] != 1)) dims.push_back(d);
  }
  Tensor reduced = dims.empty() ? grad : sum(grad, dims, true);
  return reduced.reshape(shape);
}

namespace detail {

Tensor unary(UnaryOp op, const Tensor& x, double param, const char* name) {
  common_device(name, {&x});
  check_floating(name, x);
  const Tensor xf = to_compute(x);
  Tensor out = Tensor::empty(x.shape(), xf.dtype(), x.device());
  REDLINE_KERNEL(x.device(), unary, op, xf.dtype(), param, out.raw_data(), xf.raw_data(),
                 broadcast_layout(x.shape(), {&xf}));
  return from_compute(out, x.dtype());
}

Tensor unary_backward(UnaryOp op, const Tensor& x, const Tensor& y, const Tensor& dy,
                      double param) {
  common_device("unary backward", {&x, &y, &dy});
  const DType compute = common_compute_dtype("unary backward", {&x, &y, &dy});
  const Tensor xf = to_compute(x).contiguous(), yf = to_compute(y).contiguous(),
               gf = to_compute(dy).contiguous();
  REDLINE_CHECK(xf.shape() == gf.shape() && yf.shape() == gf.shape(),
                "unary backward: x {}, y {} and dy {} must have one shape", x.describe(),
                y.describe(), dy.describe());
  Tensor dx = Tensor::empty(x.shape(), compute, x.device());
  REDLINE_KERNEL(x.device(), unary_backward, op, compute, param, dx.raw_data(), xf.raw_data(),
                 yf.raw_data(), gf.raw_data(), x.numel());
  return from_compute(dx, x.dtype());
}

Tensor binary(BinaryOp op, const Tensor& a, const Tensor& b, const char* name) {
  common_device(name, {&a, &b});
  const DType dtype = common_dtype(name, {&a, &b});
  const bool integer_ok = op != BinaryOp::div;
  REDLINE_CHECK(
      dtype_is_floating(dtype) || (integer_ok && (dtype == DType::i32 || dtype == DType::i64)),
      "{}: dtype {} is not supported (expected f32, f64, bf16, f16{})", name, dtype_name(dtype),
      integer_ok ? ", i32 or i64" : "");
  const Shape shape = broadcast_shapes(a.shape(), b.shape(), name);
  const Tensor af = to_compute(a), bf = to_compute(b);
  const bool compare = binary_is_comparison(op);
  Tensor out = Tensor::empty(shape, compare ? DType::boolean : af.dtype(), a.device());
  REDLINE_KERNEL(a.device(), binary, op, af.dtype(), out.raw_data(), af.raw_data(), bf.raw_data(),
                 broadcast_layout(shape, {&af, &bf}));
  return compare ? out : from_compute(out, dtype);
}

}  // namespace detail

using detail::binary;
using detail::unary;

Tensor add(const Tensor& a, const Tensor& b) { return binary(BinaryOp::add, a, b, "add"); }
Tensor sub(const Tensor& a, const Tensor& b) { return binary(BinaryOp::sub, a, b, "sub"); }
Tensor mul(const Tensor& a, const Tensor& b) { return binary(BinaryOp::mul, a, b, "mul"); }
Tensor div(const Tensor& a, const Tensor& b) { return binary(BinaryOp::div, a, b, "div"); }
Tensor maximum(const Tensor& a, const Tensor& b) {
  return binary(BinaryOp::maximum, a, b, "maximum");
}
Tensor minimum(const Tensor& a, const Tensor& b) {
  return binary(BinaryOp::minimum, a, b, "minimum");
}
Tensor lt(const Tensor& a, const Tensor& b) { return binary(BinaryOp::lt, a, b, "lt"); }
Tensor le(const Tensor& a, const Tensor& b) { return binary(BinaryOp::le, a, b, "le"); }
Tensor gt(const Tensor& a, const Tensor& b) { return binary(BinaryOp::gt, a, b, "gt"); }
Tensor ge(const Tensor& a, const Tensor& b) { return binary(BinaryOp::ge, a, b, "ge"); }
Tensor eq(const Tensor& a, const Tensor& b) { return binary(BinaryOp::eq, a, b, "eq"); }
Tensor ne(const Tensor& a, const Tensor& b) { return binary(BinaryOp::ne, a, b, "ne"); }

void add_(Tensor& self, const Tensor& other) {
  common_device("add_", {&self, &other});
  const DType dtype = common_dtype("add_", {&self, &other});
  const Shape shape = broadcast_shapes(self.shape(), other.shape(), "add_");
  REDLINE_CHECK(shape == self.shape(), "add_: {} does not broadcast into {}", other.describe(),
                self.describe());
  if (dtype == DType::bf16 || dtype == DType::f16) {
    self.copy_from(add(self, other));
    return;
  }
  REDLINE_KERNEL(self.device(), binary, BinaryOp::add, dtype, self.raw_data(), self.raw_data(),
                 other.raw_data(), broadcast_layout(shape, self.strides(), {&self, &other}));
}

Tensor add_scalar(const Tensor& x, double value) {
  return unary(UnaryOp::add_scalar, x, value, "add_scalar");
}
Tensor mul_scalar(const Tensor& x, double value) {
  return unary(UnaryOp::mul_scalar, x, value, "mul_scalar");
}
Tensor pow_scalar(const Tensor& x, double exponent) {
  return unary(UnaryOp::pow_scalar, x, exponent, "pow_scalar");
}
Tensor neg(const Tensor& x) { return unary(UnaryOp::neg, x, 0, "neg"); }
Tensor abs(const Tensor& x) { return unary(UnaryOp::abs, x, 0, "abs"); }
Tensor relu(const Tensor& x) { return unary(UnaryOp::relu, x, 0, "relu"); }
Tensor leaky_relu(const Tensor& x, double negative_slope) {
  return unary(UnaryOp::leaky_relu, x, negative_slope, "leaky_relu");
}
Tensor tanh(const Tensor& x) { return unary(UnaryOp::tanh, x, 0, "tanh"); }
Tensor sigmoid(const Tensor& x) { return unary(UnaryOp::sigmoid, x, 0, "sigmoid"); }
Tensor exp(const Tensor& x) { return unary(UnaryOp::exp, x, 0, "exp"); }
Tensor log(const Tensor& x) { return unary(UnaryOp::log, x, 0, "log"); }
Tensor sqrt(const Tensor& x) { return unary(UnaryOp::sqrt, x, 0, "sqrt"); }
Tensor gelu(const Tensor& x) { return unary(UnaryOp::gelu, x, 0, "gelu"); }
Tensor square(const Tensor& x) { return unary(UnaryOp::square, x, 0, "square"); }
Tensor reciprocal(const Tensor& x) { return unary(UnaryOp::reciprocal, x, 0, "reciprocal"); }

Tensor clamp(const Tensor& x, std::optional<double> lo, std::optional<double> hi) {
  REDLINE_CHECK(!lo || !hi || *lo <= *hi, "clamp: lower bound {} is above upper bound {}", *lo,
                *hi);
  detail::check_defined(x, "clamp", "x");
  Tensor out = x;
  if (lo) out = maximum(out, Tensor::full({}, *lo, x.dtype(), x.device()));
  if (hi) out = minimum(out, Tensor::full({}, *hi, x.dtype(), x.device()));
  return lo || hi ? out : x.clone();
}

Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) {
  common_device("where", {&cond, &a, &b});
  REDLINE_CHECK(cond.dtype() == DType::boolean, "where: the condition must be bool but is {}",
                cond.describe());
  const DType dtype = common_dtype("where", {&a, &b});
  const Shape shape =
      broadcast_shapes(cond.shape(), broadcast_shapes(a.shape(), b.shape(), "where"), "where");
  Tensor out = Tensor::empty(shape, dtype, a.device());
  REDLINE_KERNEL(a.device(), where, dtype, out.raw_data(),
                 static_cast<const bool*>(cond.raw_data()), a.raw_data(), b.raw_data(),
                 broadcast_layout(shape, {&cond, &a, &b}));
  return out;
}

Tensor cast(const Tensor& x, DType dtype) {
  common_device("cast", {&x});
  detail::check_device_dtype("cast", dtype, x.device());
  const Tensor src = x.contiguous();
  Tensor out = Tensor::empty(x.shape(), dtype, x.device());
  REDLINE_KERNEL(x.device(), cast, x.dtype(), dtype, out.raw_data(), src.raw_data(), x.numel());
  return out;
}

Tensor pixels_to_float(const Tensor& x, DType dtype) {
  detail::check_defined(x, "pixels_to_float", "x");
  REDLINE_CHECK(x.dtype() == DType::u8, "pixels_to_float expects u8 pixels but got {}",
                x.describe());
  REDLINE_CHECK(dtype_is_floating(dtype), "pixels_to_float: target dtype {} is not floating",
                dtype_name(dtype));
  const Tensor f = mul_scalar(cast(x, detail::compute_dtype(dtype)), 1.0 / 255.0);
  return detail::from_compute(f, dtype);
}

}  // namespace redline::ops
