// Differentiable linear algebra, indexing, softmax, layout, convolution, pooling, losses.
#include <numeric>

#include "ops/ops_common.h"
#include "redline/autograd/functions.h"

namespace redline {
namespace {

using Grads = std::vector<Tensor>;
using Needs = std::vector<bool>;

const Tensor& value(const Variable& v, const char* op) {
  REDLINE_CHECK(v.defined(), "{}: an argument is an undefined Variable", op);
  return v.data();
}

Tensor zeros_like(const Tensor& t) { return Tensor::zeros(t.shape(), t.dtype(), t.device()); }

}  // namespace

// ---- linear algebra -----------------------------------------------------------------------------

Variable matmul(const Variable& a, const Variable& b) {
  const Tensor av = value(a, "matmul"), bv = value(b, "matmul");
  return record(
      "matmul", ops::matmul(av, bv), {a, b}, [=](const Tensor& g, const Needs& n) -> Grads {
        Tensor ga, gb;
        if (n[0]) {  // g @ b^T, summed over the batch when a is shared
          ga = ops::matmul(g, bv.transpose(-2, -1));
          if (av.dim() == 2 && ga.dim() == 3) ga = ops::sum(ga, {0});
        }
        if (n[1]) {  // a^T @ g, summed over the batch when b is shared
          if (bv.dim() == 2 && g.dim() == 3) {
            const int64_t rows = g.shape(0) * g.shape(1);
            const Tensor a2 = av.reshape({rows, av.shape(2)});  // g is batched, so a is (B, M, K)
            gb = ops::matmul(a2.transpose(0, 1), g.reshape({rows, g.shape(2)}));
          } else {
            gb = ops::matmul(av.transpose(-2, -1), g);
          }
        }
        return {ga, gb};
      });
}

Variable linear(const Variable& x, const Variable& weight, const Variable& bias,
                ops::Activation act) {
  const Tensor& xv = value(x, "linear");
  const Tensor& wv = value(weight, "linear");
  REDLINE_CHECK(xv.dim() >= 1 && wv.dim() == 2 && xv.shape(-1) == wv.shape(1),
                "linear: input {} does not fit weight {} (expected (..., {}))", xv.describe(),
                wv.describe(), wv.dim() == 2 ? wv.shape(1) : 0);
  REDLINE_CHECK(act != ops::Activation::gelu,
                "linear: a fused gelu has no backward here; use gelu(linear(x, w, b))");
  Shape out_shape = xv.shape();
  out_shape.back() = wv.shape(0);
  const Variable x2 = xv.dim() == 2 ? x : reshape(x, {-1, xv.shape(-1)});
  const Tensor x2v = x2.data();
  const Tensor bv = bias.defined() ? bias.data() : Tensor();
  Tensor y = ops::linear(x2v, wv, bv, act);
  const Tensor yv = act == ops::Activation::relu ? y : Tensor();
  const Variable out = record(
      "linear", std::move(y), {x2, weight, bias}, [=](const Tensor& g, const Needs& n) -> Grads {
        // With a fused relu, the gradient passes where the output is positive.
        const Tensor gz =
            yv.defined() ? ops::detail::unary_backward(ops::UnaryOp::relu, yv, yv, g, 0) : g;
        return {n[0] ? ops::matmul(gz, wv) : Tensor(),                   // (M, N) @ (N, K)
                n[1] ? ops::matmul(gz.transpose(0, 1), x2v) : Tensor(),  // (N, M) @ (M, K)
                n[2] ? ops::sum(gz, {0}) : Tensor()};
      });
  return xv.dim() == 2 ? out : reshape(out, out_shape);
}

// ---- indexing -----------------------------------------------------------------------------------

Variable gather(const Variable& x, int dim, const Tensor& index) {
  const Tensor xv = value(x, "gather");
  return record("gather", ops::gather(xv, dim, index), {x},
                [=](const Tensor& g, const Needs&) -> Grads {
                  return {ops::scatter_add(zeros_like(xv), dim, index, g)};
                });
}

Variable index_select(const Variable& x, int dim, const Tensor& index) {
  const Tensor xv = value(x, "index_select");
  return record("index_select", ops::index_select(xv, dim, index), {x},
                [=](const Tensor& g, const Needs&) -> Grads {
                  return {ops::index_add(zeros_like(xv), dim, index, g)};
                });
}

Variable scatter_add(const Variable& self, int dim, const Tensor& index, const Variable& src) {
  const Tensor sv = value(self, "scatter_add"), srcv = value(src, "scatter_add");
  return record("scatter_add", ops::scatter_add(sv, dim, index, srcv), {self, src},
                [=](const Tensor& g, const Needs& n) -> Grads {
                  return {n[0] ? g : Tensor(), n[1] ? ops::gather(g, dim, index) : Tensor()};
                });
}

// ---- softmax and dtype --------------------------------------------------------------------------

Variable softmax(const Variable& x, int dim) {
  Tensor y = ops::softmax(value(x, "softmax"), dim);
  return record("softmax", y, {x}, [=](const Tensor& g, const Needs&) -> Grads {
    return {ops::softmax_backward(y, g, dim)};
  });
}

Variable log_softmax(const Variable& x, int dim) {
  Tensor y = ops::log_softmax(value(x, "log_softmax"), dim);
  return record("log_softmax", y, {x}, [=](const Tensor& g, const Needs&) -> Grads {
    return {ops::log_softmax_backward(y, g, dim)};
  });
}

Variable cast(const Variable& x, DType dtype) {
  const Tensor& xv = value(x, "cast");
  const DType from = xv.dtype();
  return record("cast", ops::cast(xv, dtype), {x}, [=](const Tensor& g, const Needs&) -> Grads {
    return {dtype_is_floating(from) ? ops::cast(g, from) : Tensor()};
  });
}

// ---- layout -------------------------------------------------------------------------------------

Variable reshape(const Variable& x, const Shape& shape) {
  const Tensor& xv = value(x, "reshape");
  return record(
      "reshape", xv.reshape(shape), {x},
      [s = xv.shape()](const Tensor& g, const Needs&) -> Grads { return {g.reshape(s)}; });
}

Variable flatten(const Variable& x, int start_dim) {
  const Tensor& xv = value(x, "flatten");
  const int d = ops::detail::normalize_dim(start_dim, xv.shape(), "flatten");
  Shape shape(xv.shape().begin(), xv.shape().begin() + d);
  shape.push_back(shape_numel(Shape(xv.shape().begin() + d, xv.shape().end())));
  return reshape(x, shape);
}

Variable permute(const Variable& x, const std::vector<int>& dims) {
  const Tensor& xv = value(x, "permute");
  Tensor y = xv.permute(dims);
  std::vector<int> inverse(dims.size());
  for (size_t i = 0; i < dims.size(); ++i) {
    inverse[ops::detail::normalize_dim(dims[i], xv.shape(), "permute")] = static_cast<int>(i);
  }
  return record("permute", std::move(y), {x},
                [=](const Tensor& g, const Needs&) -> Grads { return {g.permute(inverse)}; });
}

Variable transpose(const Variable& x, int dim0, int dim1) {
  const Tensor& xv = value(x, "transpose");
  std::vector<int> dims(xv.dim());
  std::iota(dims.begin(), dims.end(), 0);
  std::swap(dims[ops::detail::normalize_dim(dim0, xv.shape(), "transpose")],
            dims[ops::detail::normalize_dim(dim1, xv.shape(), "transpose")]);
  return permute(x, dims);
}

Variable unsqueeze(const Variable& x, int dim) {
  const Tensor& xv = value(x, "unsqueeze");
  Tensor y = xv.unsqueeze(dim);
  return reshape(x, y.shape());
}

Variable squeeze(const Variable& x, int dim) {
  const Tensor& xv = value(x, "squeeze");
  Tensor y = xv.squeeze(dim);
  return reshape(x, y.shape());
}

Variable cat(const std::vector<Variable>& xs, int dim) {
  std::vector<Tensor> values;
  for (const Variable& x : xs) values.push_back(value(x, "cat"));
  Tensor y = ops::cat(values, dim);
  const int d = ops::detail::normalize_dim(dim, values[0].shape(), "cat");
  std::vector<int64_t> sizes;
  for (const Tensor& v : values) sizes.push_back(v.shape()[d]);
  return record("cat", std::move(y), xs, [=](const Tensor& g, const Needs& n) -> Grads {
    Grads out(sizes.size());
    int64_t at = 0;
    for (size_t i = 0; i < sizes.size(); ++i) {
      if (n[i]) out[i] = g.slice(d, at, at + sizes[i]);
      at += sizes[i];
    }
    return out;
  });
}

Variable stack(const std::vector<Variable>& xs, int dim) {
  REDLINE_CHECK(!xs.empty(), "stack: needs at least one Variable");
  const int n = value(xs[0], "stack").dim() + 1;
  REDLINE_CHECK(dim >= -n && dim < n, "stack: dimension {} is out of range for {}", dim,
                xs[0].describe());
  const int d = dim < 0 ? dim + n : dim;
  std::vector<Variable> parts;
  for (const Variable& x : xs) {
    REDLINE_CHECK(x.defined() && x.shape() == xs[0].shape(),
                  "stack: {} does not match the shape of {}",
                  x.defined() ? x.describe() : "undefined", xs[0].describe());
    parts.push_back(unsqueeze(x, d));
  }
  return cat(parts, d);
}

// ---- convolution and pooling --------------------------------------------------------------------

Variable conv2d(const Variable& x, const Variable& weight, const Variable& bias,
                const ops::Conv2dOptions& o) {
  const Tensor xv = value(x, "conv2d"), wv = value(weight, "conv2d");
  const Tensor bv = bias.defined() ? bias.data() : Tensor();
  return record("conv2d", ops::conv2d(xv, wv, bv, o), {x, weight, bias},
                [=](const Tensor& g, const Needs& n) -> Grads {
                  ops::Conv2dGrads grads = ops::conv2d_backward(xv, wv, g, o, n[0], n[1], n[2]);
                  return {grads.dx, grads.dw, grads.dbias};
                });
}

Variable max_pool2d(const Variable& x, const ops::Pool2dOptions& o) {
  const Tensor xv = value(x, "max_pool2d");
  ops::MaxPoolResult r = ops::max_pool2d(xv, o);
  const Tensor indices = r.indices;
  return record("max_pool2d", std::move(r.values), {x},
                [=, s = xv.shape()](const Tensor& g, const Needs&) -> Grads {
                  return {ops::max_pool2d_backward(g, indices, s)};
                });
}

Variable avg_pool2d(const Variable& x, const ops::Pool2dOptions& o) {
  const Tensor xv = value(x, "avg_pool2d");
  return record("avg_pool2d", ops::avg_pool2d(xv, o), {x},
                [=, s = xv.shape()](const Tensor& g, const Needs&) -> Grads {
                  return {ops::avg_pool2d_backward(g, s, o)};
                });
}

// ---- normalization ------------------------------------------------------------------------------

Variable layer_norm(const Variable& x, const Variable& weight, const Variable& bias, double eps) {
  const Tensor& xv = value(x, "layer_norm");
  REDLINE_CHECK(xv.dim() >= 1, "layer_norm: input must have at least one dimension");
  const int64_t d = xv.shape(-1);
  REDLINE_CHECK(!weight.defined() || weight.shape() == Shape{d},
                "layer_norm: weight must be ({},) but is {}", d, weight.describe());
  REDLINE_CHECK(!bias.defined() || bias.shape() == Shape{d},
                "layer_norm: bias must be ({},) but is {}", d, bias.describe());
  const Variable centered = sub(x, mean(x, {-1}, true));
  const Variable variance = mean(square(centered), {-1}, true);
  Variable y = div(centered, sqrt(add_scalar(variance, eps)));
  if (weight.defined()) y = mul(y, weight);
  if (bias.defined()) y = add(y, bias);
  return y;
}

// ---- losses -------------------------------------------------------------------------------------

namespace {

Variable weighted_mean(const char* op, const Variable& loss, const Tensor& weight) {
  if (!weight.defined()) return mean(loss);
  REDLINE_CHECK(weight.shape() == loss.shape(),
                "{}: weight {} must have the shape of the per-element loss {}", op,
                weight.describe(), loss.describe());
  return mean(mul(loss, Variable(weight)));
}

void check_target(const char* op, const Variable& prediction, const Tensor& target) {
  REDLINE_CHECK(prediction.defined() && target.defined(),
                "{}: prediction and target must be defined", op);
  REDLINE_CHECK(prediction.shape() == target.shape(),
                "{}: prediction {} and target {} must have one shape", op, prediction.describe(),
                target.describe());
}

}  // namespace

Variable mse_loss(const Variable& prediction, const Tensor& target, const Tensor& weight) {
  check_target("mse_loss", prediction, target);
  return weighted_mean("mse_loss", square(sub(prediction, Variable(target))), weight);
}

Variable huber_loss(const Variable& prediction, const Tensor& target, double delta,
                    const Tensor& weight) {
  check_target("huber_loss", prediction, target);
  REDLINE_CHECK(delta > 0, "huber_loss: delta is {}; it must be positive", delta);
  // With a = |d| and q = min(a, delta): 0.5 q^2 + delta (a - q) is the Huber loss, smooth at
  // |d| = delta.
  const Variable a = abs(sub(prediction, Variable(target)));
  const Variable q =
      minimum(a, Variable(Tensor::full({}, delta, prediction.dtype(), prediction.device())));
  const Variable loss = add(mul_scalar(square(q), 0.5), mul_scalar(sub(a, q), delta));
  return weighted_mean("huber_loss", loss, weight);
}

Variable cross_entropy(const Variable& logits, const Tensor& target, const Tensor& weight) {
  REDLINE_CHECK(logits.defined() && logits.dim() == 2,
                "cross_entropy: logits must be (N, C) but are {}",
                logits.defined() ? logits.describe() : "undefined");
  REDLINE_CHECK(
      target.defined() && target.dtype() == DType::i64 && target.shape() == Shape{logits.shape(0)},
      "cross_entropy: target must be ({},) i64 class indices but is {}", logits.shape(0),
      target.describe());
  const Variable picked = gather(log_softmax(logits, 1), 1, target.reshape({-1, 1}));
  return weighted_mean("cross_entropy", neg(reshape(picked, {logits.shape(0)})), weight);
}

}  // namespace redline
