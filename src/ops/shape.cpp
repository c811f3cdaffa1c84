// cat and stack: each input is copied into its slice of the output (strided copies on any device).
#include "ops/ops_common.h"
#include "redline/ops/ops.h"

namespace redline::ops {

Tensor cat(const std::vector<Tensor>& xs, int dim) {
  REDLINE_CHECK(!xs.empty(), "cat: needs at least one tensor");
  const Tensor& first = xs[0];
  REDLINE_CHECK(first.defined(), "cat: tensor 0 is undefined");
  const int d = detail::normalize_dim(dim, first.shape(), "cat");
  int64_t total = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    const Tensor& x = xs[i];
    REDLINE_CHECK(x.defined(), "cat: tensor {} is undefined", i);
    REDLINE_CHECK(x.device() == first.device() && x.dtype() == first.dtype(),
                  "cat: tensor {} is {} but tensor 0 is {}; dtypes and devices must match", i,
                  x.describe(), first.describe());
    bool ok = x.dim() == first.dim();
    for (int k = 0; ok && k < x.dim(); ++k) ok = k == d || x.shape()[k] == first.shape()[k];
    REDLINE_CHECK(ok, "cat: tensor {} {} does not match tensor 0 {} outside dimension {}", i,
                  x.describe(), first.describe(), d);
    total += x.shape()[d];
  }
  Shape shape = first.shape();
  shape[d] = total;
  Tensor out = Tensor::empty(shape, first.dtype(), first.device());
  int64_t at = 0;
  for (const Tensor& x : xs) {
    out.slice(d, at, at + x.shape()[d]).copy_from(x);
    at += x.shape()[d];
  }
  return out;
}

Tensor stack(const std::vector<Tensor>& xs, int dim) {
  REDLINE_CHECK(!xs.empty(), "stack: needs at least one tensor");
  REDLINE_CHECK(xs[0].defined(), "stack: tensor 0 is undefined");
  const int n = xs[0].dim() + 1;
  REDLINE_CHECK(dim >= -n && dim < n,
                "stack: dimension {} is out of range for {} (expected {} to {})", dim,
                xs[0].describe(), -n, n - 1);
  const int d = dim < 0 ? dim + n : dim;
  std::vector<Tensor> parts;
  for (size_t i = 0; i < xs.size(); ++i) {
    REDLINE_CHECK(xs[i].defined() && xs[i].shape() == xs[0].shape(),
                  "stack: tensor {} is {} but tensor 0 is {}; shapes must match", i,
                  xs[i].describe(), xs[0].describe());
    parts.push_back(xs[i].unsqueeze(d));
  }
  return cat(parts, d);
}

}  // namespace redline::ops
