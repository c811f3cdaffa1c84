// Front-ends of gather, scatter_add, index_select, index_add.
#include "backend/cpu/ops_kernels.h"
#include "ops/ops_common.h"
#include "redline/ops/ops.h"

namespace redline::ops {
namespace {

void check_index_tensor(const char* op, const Tensor& index) {
  REDLINE_CHECK(index.dtype() == DType::i64, "{}: index must be i64 but is {}", op,
                index.describe());
}

// index / src agree with x on every dimension but dim.
void check_same_but_dim(const char* op, const Tensor& x, const Tensor& other, int dim,
                        const char* what) {
  bool ok = other.dim() == x.dim();
  for (int d = 0; ok && d < x.dim(); ++d) ok = d == dim || other.shape()[d] == x.shape()[d];
  REDLINE_CHECK(ok, "{}: {} {} must match {} on every dimension but {}", op, what, other.describe(),
                x.describe(), dim);
}

void check_addable(const char* op, const Tensor& t) {
  REDLINE_CHECK(dtype_is_floating(t.dtype()) || t.dtype() == DType::i32 || t.dtype() == DType::i64,
                "{}: dtype {} is not supported (expected f32, f64, bf16, f16, i32 or i64)", op,
                dtype_name(t.dtype()));
}

}  // namespace

Tensor gather(const Tensor& x, int dim, const Tensor& index) {
  detail::common_device("gather", {&x, &index});
  check_index_tensor("gather", index);
  const int d = detail::normalize_dim(dim, x.shape(), "gather");
  check_same_but_dim("gather", x, index, d, "index");
  const Tensor xc = x.contiguous(), ic = index.contiguous();
  Tensor out = Tensor::empty(index.shape(), x.dtype(), x.device());
  REDLINE_KERNEL(x.device(), gather, static_cast<int>(dtype_size(x.dtype())), out.raw_data(),
                 xc.raw_data(), ic.data<int64_t>(), detail::split_at(x.shape(), d),
                 index.shape()[d]);
  return out;
}

Tensor scatter_add(const Tensor& self, int dim, const Tensor& index, const Tensor& src) {
  detail::common_device("scatter_add", {&self, &index, &src});
  detail::common_dtype("scatter_add", {&self, &src});
  check_index_tensor("scatter_add", index);
  check_addable("scatter_add", self);
  const int d = detail::normalize_dim(dim, self.shape(), "scatter_add");
  check_same_but_dim("scatter_add", self, index, d, "index");
  REDLINE_CHECK(src.shape() == index.shape(), "scatter_add: src {} and index {} differ in shape",
                src.describe(), index.describe());
  Tensor out = detail::to_compute(self).clone();
  const Tensor sc = detail::to_compute(src).contiguous(), ic = index.contiguous();
  REDLINE_KERNEL(self.device(), scatter_add, out.dtype(), out.raw_data(), sc.raw_data(),
                 ic.data<int64_t>(), detail::split_at(self.shape(), d), index.shape()[d]);
  return detail::from_compute(out, self.dtype());
}

Tensor index_select(const Tensor& x, int dim, const Tensor& index) {
  detail::common_device("index_select", {&x, &index});
  check_index_tensor("index_select", index);
  REDLINE_CHECK(index.dim() == 1, "index_select: index must be 1-D but is {}", index.describe());
  const int d = detail::normalize_dim(dim, x.shape(), "index_select");
  Shape out_shape = x.shape();
  out_shape[d] = index.numel();
  const Tensor xc = x.contiguous(), ic = index.contiguous();
  Tensor out = Tensor::empty(out_shape, x.dtype(), x.device());
  REDLINE_KERNEL(x.device(), index_select, static_cast<int>(dtype_size(x.dtype())), out.raw_data(),
                 xc.raw_data(), ic.data<int64_t>(), detail::split_at(x.shape(), d), index.numel());
  return out;
}

Tensor index_add(const Tensor& self, int dim, const Tensor& index, const Tensor& src) {
  detail::common_device("index_add", {&self, &index, &src});
  detail::common_dtype("index_add", {&self, &src});
  check_index_tensor("index_add", index);
  check_addable("index_add", self);
  REDLINE_CHECK(index.dim() == 1, "index_add: index must be 1-D but is {}", index.describe());
  const int d = detail::normalize_dim(dim, self.shape(), "index_add");
  check_same_but_dim("index_add", self, src, d, "src");
  REDLINE_CHECK(src.shape()[d] == index.numel(),
                "index_add: src {} has {} entries along dimension {} but index has {}",
                src.describe(), src.shape()[d], d, index.numel());
  Tensor out = detail::to_compute(self).clone();
  const Tensor sc = detail::to_compute(src).contiguous(), ic = index.contiguous();
  REDLINE_KERNEL(self.device(), index_add, out.dtype(), out.raw_data(), sc.raw_data(),
                 ic.data<int64_t>(), detail::split_at(self.shape(), d), index.numel());
  return detail::from_compute(out, self.dtype());
}

}  // namespace redline::ops
