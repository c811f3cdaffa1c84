#include "ops/ops_common.h"

#include "redline/core/device.h"
#include "redline/core/stream.h"
#include "redline/ops/ops.h"

namespace redline::ops::detail {

void check_defined(const Tensor& t, const char* op, const char* what) {
  REDLINE_CHECK(t.defined(), "{}: argument '{}' is an undefined tensor", op, what);
}

Device common_device(const char* op, std::initializer_list<const Tensor*> tensors) {
  const Tensor* first = nullptr;
  for (const Tensor* t : tensors) {
    REDLINE_CHECK(t->defined(), "{}: an argument is an undefined tensor", op);
    check_device_dtype(op, t->dtype(), t->device());
    if (first == nullptr) {
      first = t;
      continue;
    }
    REDLINE_CHECK(t->device() == first->device(),
                  "{}: tensors are on different devices ({} and {}); move them to one device "
                  "with .to()",
                  op, first->describe(), t->describe());
  }
  // A fault an earlier kernel on this device found (an index out of range) is raised here.
  if (first->device().is_gpu()) gpu::check_kernel_faults(first->device().index);
  return first->device();
}

void check_device_dtype(const char* op, DType dtype, Device device) {
  REDLINE_CHECK(dtype != DType::f64 || device.is_cpu(),
                "{}: f64 tensors are supported on the CPU only; cast to f32 before moving to {}",
                op, device);
}

DType common_dtype(const char* op, std::initializer_list<const Tensor*> tensors) {
  const Tensor* first = *tensors.begin();
  for (const Tensor* t : tensors) {
    REDLINE_CHECK(t->dtype() == first->dtype(),
                  "{}: dtypes differ ({} and {}); cast one with ops::cast first", op,
                  first->describe(), t->describe());
  }
  return first->dtype();
}

DType common_compute_dtype(const char* op, std::initializer_list<const Tensor*> tensors) {
  const Tensor* first = *tensors.begin();
  for (const Tensor* t : tensors) {
    REDLINE_CHECK(compute_dtype(t->dtype()) == compute_dtype(first->dtype()),
                  "{}: {} and {} do not compute in one dtype; cast one with ops::cast first", op,
                  first->describe(), t->describe());
  }
  return compute_dtype(first->dtype());
}

void check_floating(const char* op, const Tensor& t) {
  REDLINE_CHECK(dtype_is_floating(t.dtype()),
                "{}: expected a floating tensor (f32, f64, bf16, f16) but got {}", op,
                t.describe());
}

void* gpu_stream(Device device) {
  gpu::set_device(device.index);
  return Stream::current(device).handle();
}

int normalize_dim(int dim, const Shape& shape, const char* op) {
  const int n = static_cast<int>(shape.size());
  REDLINE_CHECK(dim >= -n && dim < n,
                "{}: dimension {} is out of range for shape {} (expected {} to {})", op, dim,
                shape_str(shape), -n, n - 1);
  return dim < 0 ? dim + n : dim;
}

ElementwiseLayout broadcast_layout(const Shape& out_shape, const Shape& out_strides,
                                   std::initializer_list<const Tensor*> ins) {
  ElementwiseLayout l;
  l.ndim = static_cast<int>(out_shape.size());
  l.numel = shape_numel(out_shape);
  for (int d = 0; d < l.ndim; ++d) {
    l.sizes[d] = out_shape[d];
    l.strides[0][d] = out_strides[d];
  }
  int k = 1;
  for (const Tensor* t : ins) {
    const int lead = l.ndim - t->dim();
    for (int d = 0; d < t->dim(); ++d) {
      l.strides[k][lead + d] = t->shape()[d] == 1 ? 0 : t->strides()[d];
    }
    ++k;
  }
  if (l.ndim == 0) {  // a 0-d loop is one element
    l.ndim = 1;
    l.sizes[0] = 1;
  }
  return l;
}

ElementwiseLayout broadcast_layout(const Shape& out_shape,
                                   std::initializer_list<const Tensor*> ins) {
  return broadcast_layout(out_shape, contiguous_strides(out_shape), ins);
}

DimSplit split_at(const Shape& shape, int dim) {
  DimSplit s;
  for (int d = 0; d < static_cast<int>(shape.size()); ++d) {
    if (d < dim) s.outer *= shape[d];
    if (d == dim) s.size = shape[d];
    if (d > dim) s.inner *= shape[d];
  }
  return s;
}

DType compute_dtype(DType dtype) { return dtype == DType::f64 ? DType::f64 : DType::f32; }

Tensor to_compute(const Tensor& x) {
  return x.dtype() == DType::bf16 || x.dtype() == DType::f16 ? cast(x, DType::f32) : x;
}

Tensor from_compute(const Tensor& y, DType dtype) {
  return y.dtype() == dtype ? y : cast(y, dtype);
}

}  // namespace redline::ops::detail
