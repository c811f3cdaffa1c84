// Front-ends of the reductions and of softmax / log_softmax.
#include <algorithm>
#include <numeric>

#include "backend/cpu/ops_kernels.h"
#include "ops/ops_common.h"
#include "redline/ops/ops.h"

namespace redline::ops {
namespace {

using detail::common_device;

void check_reducible(const char* op, const Tensor& x) {
  common_device(op, {&x});
  REDLINE_CHECK(dtype_is_floating(x.dtype()) || x.dtype() == DType::i32 || x.dtype() == DType::i64,
                "{}: dtype {} is not supported (expected f32, f64, bf16, f16, i32 or i64)", op,
                dtype_name(x.dtype()));
}

// Reduces one dimension of x (any layout) with op; the result keeps the dimension as size 1.
Tensor reduce_dim(ReduceOp op, const Tensor& x, int dim) {
  const Tensor xc = detail::to_compute(x).contiguous();
  Shape out_shape = x.shape();
  out_shape[dim] = 1;
  const DType out_dtype = op == ReduceOp::argmax ? DType::i64 : xc.dtype();
  Tensor out = Tensor::empty(out_shape, out_dtype, x.device());
  REDLINE_KERNEL(x.device(), reduce, op, xc.dtype(), out.raw_data(), xc.raw_data(),
                 detail::split_at(x.shape(), dim));
  return op == ReduceOp::argmax ? out : detail::from_compute(out, x.dtype());
}

Shape drop_dims(const Shape& shape, const std::vector<int>& dims) {
  Shape out;
  for (int d = 0; d < static_cast<int>(shape.size()); ++d) {
    if (std::find(dims.begin(), dims.end(), d) == dims.end()) out.push_back(shape[d]);
  }
  return out;
}

std::vector<int> normalize_dims(const std::vector<int>& dims, const Shape& shape, const char* op) {
  std::vector<int> out;
  for (int d : dims) {
    const int n = detail::normalize_dim(d, shape, op);
    REDLINE_CHECK(std::find(out.begin(), out.end(), n) == out.end(),
                  "{}: dimension {} is listed twice", op, n);
    out.push_back(n);
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

Tensor sum(const Tensor& x) {
  check_reducible("sum", x);
  return reduce_dim(ReduceOp::sum, x.reshape({x.numel()}), 0).reshape({});
}

// Runs of adjacent reduced dimensions become one dimension of a contiguous view, and the runs are
// reduced from the last to the first, so the first pass reads contiguous rows and later passes
// read what is left: (N, C, H, W) over {0, 2, 3} is one pass over (N*C, H*W) rows, then one over N.
Tensor sum(const Tensor& x, const std::vector<int>& dims, bool keepdim) {
  check_reducible("sum", x);
  const std::vector<int> ds = normalize_dims(dims, x.shape(), "sum");
  Shape kept_shape = x.shape();
  for (int d : ds) kept_shape[d] = 1;
  if (ds.empty()) return x.clone();
  Shape merged;
  std::vector<int> runs;  // the merged dimensions to reduce
  for (int d = 0; d < x.dim(); ++d) {
    const bool reduced = std::binary_search(ds.begin(), ds.end(), d);
    const bool extends = reduced && d > 0 && std::binary_search(ds.begin(), ds.end(), d - 1);
    if (extends) {
      merged.back() *= x.shape(d);
    } else {
      if (reduced) runs.push_back(static_cast<int>(merged.size()));
      merged.push_back(x.shape(d));
    }
  }
  Tensor out = x.contiguous().reshape(merged);
  for (auto run = runs.rbegin(); run != runs.rend(); ++run) {
    out = reduce_dim(ReduceOp::sum, out, *run);
  }
  return out.reshape(keepdim ? kept_shape : drop_dims(x.shape(), ds));
}

Tensor mean(const Tensor& x) {
  REDLINE_CHECK(x.defined() && dtype_is_floating(x.dtype()),
                "mean: expected a floating tensor but got {}", x.describe());
  REDLINE_CHECK(x.numel() > 0, "mean of an empty tensor {} is undefined", x.describe());
  return mul_scalar(sum(x), 1.0 / static_cast<double>(x.numel()));
}

Tensor mean(const Tensor& x, const std::vector<int>& dims, bool keepdim) {
  REDLINE_CHECK(x.defined() && dtype_is_floating(x.dtype()),
                "mean: expected a floating tensor but got {}", x.describe());
  const Tensor s = sum(x, dims, keepdim);
  const int64_t count = s.numel() == 0 ? 0 : x.numel() / s.numel();
  REDLINE_CHECK(count > 0, "mean over an empty dimension of {} is undefined", x.describe());
  return mul_scalar(s, 1.0 / static_cast<double>(count));
}

Tensor max(const Tensor& x) {
  check_reducible("max", x);
  REDLINE_CHECK(x.numel() > 0, "max of an empty tensor {} is undefined", x.describe());
  return reduce_dim(ReduceOp::max, x.reshape({x.numel()}), 0).reshape({});
}

Tensor max(const Tensor& x, int dim, bool keepdim) {
  check_reducible("max", x);
  const int d = detail::normalize_dim(dim, x.shape(), "max");
  REDLINE_CHECK(x.shape()[d] > 0, "max over empty dimension {} of {}", d, x.describe());
  const Tensor out = reduce_dim(ReduceOp::max, x, d);
  return keepdim ? out : out.squeeze(d);
}

Tensor argmax(const Tensor& x) {
  check_reducible("argmax", x);
  REDLINE_CHECK(x.numel() > 0, "argmax of an empty tensor {} is undefined", x.describe());
  return reduce_dim(ReduceOp::argmax, x.reshape({x.numel()}), 0).reshape({});
}

Tensor argmax(const Tensor& x, int dim, bool keepdim) {
  check_reducible("argmax", x);
  const int d = detail::normalize_dim(dim, x.shape(), "argmax");
  REDLINE_CHECK(x.shape()[d] > 0, "argmax over empty dimension {} of {}", d, x.describe());
  const Tensor out = reduce_dim(ReduceOp::argmax, x, d);
  return keepdim ? out : out.squeeze(d);
}

namespace {

Tensor softmax_impl(bool log, const Tensor& x, int dim) {
  const char* op = log ? "log_softmax" : "softmax";
  common_device(op, {&x});
  detail::check_floating(op, x);
  const int d = detail::normalize_dim(dim, x.shape(), op);
  const Tensor xc = detail::to_compute(x).contiguous();
  Tensor y = Tensor::empty(x.shape(), xc.dtype(), x.device());
  detail::visit_compute_type(xc.dtype(), [&]<typename T>() {
    REDLINE_TYPED_KERNEL(T, x.device(), softmax, log, y.data<T>(), xc.data<T>(),
                         detail::split_at(x.shape(), d));
  });
  return detail::from_compute(y, x.dtype());
}

Tensor softmax_backward_impl(bool log, const Tensor& y, const Tensor& dy, int dim) {
  const char* op = log ? "log_softmax backward" : "softmax backward";
  common_device(op, {&y, &dy});
  REDLINE_CHECK(y.shape() == dy.shape(), "{}: y {} and dy {} differ in shape", op, y.describe(),
                dy.describe());
  const int d = detail::normalize_dim(dim, y.shape(), op);
  const Tensor yc = detail::to_compute(y).contiguous(), gc = detail::to_compute(dy).contiguous();
  Tensor dx = Tensor::empty(y.shape(), yc.dtype(), y.device());
  detail::visit_compute_type(yc.dtype(), [&]<typename T>() {
    REDLINE_TYPED_KERNEL(T, y.device(), softmax_backward, log, dx.data<T>(), yc.data<T>(),
                         gc.data<T>(), detail::split_at(y.shape(), d));
  });
  return detail::from_compute(dx, y.dtype());
}

}  // namespace

Tensor softmax(const Tensor& x, int dim) { return softmax_impl(false, x, dim); }
Tensor log_softmax(const Tensor& x, int dim) { return softmax_impl(true, x, dim); }
Tensor softmax_backward(const Tensor& y, const Tensor& dy, int dim) {
  return softmax_backward_impl(false, y, dy, dim);
}
Tensor log_softmax_backward(const Tensor& y, const Tensor& dy, int dim) {
  return softmax_backward_impl(true, y, dy, dim);
}

}  // namespace redline::ops
