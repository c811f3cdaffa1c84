// Differentiable elementwise functions and reductions.
#include <algorithm>

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

Variable unary_fn(const char* name, ops::UnaryOp op, const Variable& x, double param) {
  const Tensor xv = value(x, name);
  Tensor y = ops::detail::unary(op, xv, param, name);
  const Tensor yv = y;
  return record(name, std::move(y), {x}, [=](const Tensor& g, const Needs&) -> Grads {
    return {ops::detail::unary_backward(op, xv, yv, g, param)};
  });
}

}  // namespace

Variable add(const Variable& a, const Variable& b) {
  const Tensor av = value(a, "add"), bv = value(b, "add");
  return record(
      "add", ops::add(av, bv), {a, b},
      [sa = av.shape(), sb = bv.shape()](const Tensor& g, const Needs& n) -> Grads {
        return {n[0] ? ops::sum_to(g, sa) : Tensor(), n[1] ? ops::sum_to(g, sb) : Tensor()};
      });
}

Variable sub(const Variable& a, const Variable& b) {
  const Tensor av = value(a, "sub"), bv = value(b, "sub");
  return record("sub", ops::sub(av, bv), {a, b},
                [sa = av.shape(), sb = bv.shape()](const Tensor& g, const Needs& n) -> Grads {
                  return {n[0] ? ops::sum_to(g, sa) : Tensor(),
                          n[1] ? ops::sum_to(ops::neg(g), sb) : Tensor()};
                });
}

Variable mul(const Variable& a, const Variable& b) {
  const Tensor av = value(a, "mul"), bv = value(b, "mul");
  return record("mul", ops::mul(av, bv), {a, b}, [=](const Tensor& g, const Needs& n) -> Grads {
    return {n[0] ? ops::sum_to(ops::mul(g, bv), av.shape()) : Tensor(),
            n[1] ? ops::sum_to(ops::mul(g, av), bv.shape()) : Tensor()};
  });
}

Variable div(const Variable& a, const Variable& b) {
  const Tensor av = value(a, "div"), bv = value(b, "div");
  Tensor y = ops::div(av, bv);
  return record("div", y, {a, b}, [=](const Tensor& g, const Needs& n) -> Grads {
    const Tensor ga = ops::div(g, bv);
    return {n[0] ? ops::sum_to(ga, av.shape()) : Tensor(),
            n[1] ? ops::sum_to(ops::neg(ops::mul(ga, y)), bv.shape()) : Tensor()};
  });
}

namespace {

Variable extremum(const char* name, bool is_max, const Variable& a, const Variable& b) {
  const Tensor av = value(a, name), bv = value(b, name);
  Tensor y = is_max ? ops::maximum(av, bv) : ops::minimum(av, bv);
  return record(name, std::move(y), {a, b}, [=](const Tensor& g, const Needs& n) -> Grads {
    const Tensor zero = Tensor::zeros({}, g.dtype(), g.device());
    const Tensor half = ops::mul_scalar(g, 0.5);
    const Tensor a_wins = is_max ? ops::gt(av, bv) : ops::lt(av, bv);
    const Tensor b_wins = is_max ? ops::lt(av, bv) : ops::gt(av, bv);
    const Tensor tie = ops::eq(av, bv);
    const Tensor ga = ops::where(a_wins, g, ops::where(tie, half, zero));
    const Tensor gb = ops::where(b_wins, g, ops::where(tie, half, zero));
    return {n[0] ? ops::sum_to(ga, av.shape()) : Tensor(),
            n[1] ? ops::sum_to(gb, bv.shape()) : Tensor()};
  });
}

}  // namespace

Variable maximum(const Variable& a, const Variable& b) { return extremum("maximum", true, a, b); }
Variable minimum(const Variable& a, const Variable& b) { return extremum("minimum", false, a, b); }

Variable add_scalar(const Variable& x, double v) {
  return unary_fn("add_scalar", ops::UnaryOp::add_scalar, x, v);
}
Variable mul_scalar(const Variable& x, double v) {
  return unary_fn("mul_scalar", ops::UnaryOp::mul_scalar, x, v);
}
Variable pow_scalar(const Variable& x, double e) {
  return unary_fn("pow_scalar", ops::UnaryOp::pow_scalar, x, e);
}
Variable neg(const Variable& x) { return unary_fn("neg", ops::UnaryOp::neg, x, 0); }
Variable abs(const Variable& x) { return unary_fn("abs", ops::UnaryOp::abs, x, 0); }
Variable relu(const Variable& x) { return unary_fn("relu", ops::UnaryOp::relu, x, 0); }
Variable leaky_relu(const Variable& x, double slope) {
  return unary_fn("leaky_relu", ops::UnaryOp::leaky_relu, x, slope);
}
Variable tanh(const Variable& x) { return unary_fn("tanh", ops::UnaryOp::tanh, x, 0); }
Variable sigmoid(const Variable& x) { return unary_fn("sigmoid", ops::UnaryOp::sigmoid, x, 0); }
Variable exp(const Variable& x) { return unary_fn("exp", ops::UnaryOp::exp, x, 0); }
Variable log(const Variable& x) { return unary_fn("log", ops::UnaryOp::log, x, 0); }
Variable sqrt(const Variable& x) { return unary_fn("sqrt", ops::UnaryOp::sqrt, x, 0); }
Variable gelu(const Variable& x) { return unary_fn("gelu", ops::UnaryOp::gelu, x, 0); }
Variable square(const Variable& x) { return unary_fn("square", ops::UnaryOp::square, x, 0); }

Variable clamp(const Variable& x, std::optional<double> lo, std::optional<double> hi) {
  const Tensor xv = value(x, "clamp");
  return record("clamp", ops::clamp(xv, lo, hi), {x}, [=](const Tensor& g, const Needs&) -> Grads {
    const Tensor zero = Tensor::zeros({}, g.dtype(), g.device());
    Tensor out = g;
    if (lo) {
      out = ops::where(ops::ge(xv, Tensor::full({}, *lo, xv.dtype(), xv.device())), out, zero);
    }
    if (hi) {
      out = ops::where(ops::le(xv, Tensor::full({}, *hi, xv.dtype(), xv.device())), out, zero);
    }
    return {out.shape() == xv.shape() ? out : ops::sum_to(out, xv.shape())};
  });
}

Variable where(const Tensor& cond, const Variable& a, const Variable& b) {
  const Tensor av = value(a, "where"), bv = value(b, "where");
  return record("where", ops::where(cond, av, bv), {a, b},
                [=](const Tensor& g, const Needs& n) -> Grads {
                  const Tensor zero = Tensor::zeros({}, g.dtype(), g.device());
                  return {n[0] ? ops::sum_to(ops::where(cond, g, zero), av.shape()) : Tensor(),
                          n[1] ? ops::sum_to(ops::where(cond, zero, g), bv.shape()) : Tensor()};
                });
}

// ---- reductions ---------------------------------------------------------------------------------

namespace {

// g broadcast back over the reduced dims of shape (keepdim layout first).
Tensor expand_back(const Tensor& g, const Shape& shape, const std::vector<int>& dims,
                   bool keepdim) {
  Tensor gk = g;
  if (!keepdim) {
    std::vector<int> sorted;
    for (int d : dims) sorted.push_back(ops::detail::normalize_dim(d, shape, "sum"));
    std::sort(sorted.begin(), sorted.end());
    for (int d : sorted) gk = gk.unsqueeze(d);
  }
  return ops::add(Tensor::zeros(shape, g.dtype(), g.device()), gk);
}

}  // namespace

Variable sum(const Variable& x) {
  const Tensor xv = value(x, "sum");
  return record("sum", ops::sum(xv), {x}, [s = xv.shape()](const Tensor& g, const Needs&) -> Grads {
    return {ops::add(Tensor::zeros(s, g.dtype(), g.device()), g)};
  });
}

Variable sum(const Variable& x, const std::vector<int>& dims, bool keepdim) {
  const Tensor xv = value(x, "sum");
  return record("sum", ops::sum(xv, dims, keepdim), {x},
                [=, s = xv.shape()](const Tensor& g, const Needs&) -> Grads {
                  return {expand_back(g, s, dims, keepdim)};
                });
}

Variable mean(const Variable& x) {
  const Tensor xv = value(x, "mean");
  const double scale = 1.0 / static_cast<double>(std::max<int64_t>(xv.numel(), 1));
  return record(
      "mean", ops::mean(xv), {x}, [=, s = xv.shape()](const Tensor& g, const Needs&) -> Grads {
        return {ops::add(Tensor::zeros(s, g.dtype(), g.device()), ops::mul_scalar(g, scale))};
      });
}

Variable mean(const Variable& x, const std::vector<int>& dims, bool keepdim) {
  const Tensor xv = value(x, "mean");
  Tensor y = ops::mean(xv, dims, keepdim);
  const double scale = static_cast<double>(y.numel()) / static_cast<double>(xv.numel());
  return record("mean", std::move(y), {x},
                [=, s = xv.shape()](const Tensor& g, const Needs&) -> Grads {
                  return {expand_back(ops::mul_scalar(g, scale), s, dims, keepdim)};
                });
}

Variable max(const Variable& x) {
  const Tensor xv = value(x, "max");
  const Tensor flat_index = ops::argmax(xv).reshape({1});
  return record("max", ops::max(xv), {x},
                [=, s = xv.shape()](const Tensor& g, const Needs&) -> Grads {
                  const Tensor zeros = Tensor::zeros({shape_numel(s)}, g.dtype(), g.device());
                  return {ops::scatter_add(zeros, 0, flat_index, g.reshape({1})).reshape(s)};
                });
}

Variable max(const Variable& x, int dim, bool keepdim) {
  const Tensor xv = value(x, "max");
  const int d = ops::detail::normalize_dim(dim, xv.shape(), "max");
  const Tensor index = ops::argmax(xv, d, true);
  return record("max", ops::max(xv, d, keepdim), {x},
                [=, s = xv.shape()](const Tensor& g, const Needs&) -> Grads {
                  const Tensor gk = keepdim ? g : g.unsqueeze(d);
                  return {ops::scatter_add(Tensor::zeros(s, g.dtype(), g.device()), d, index, gk)};
                });
}

}  // namespace redline
