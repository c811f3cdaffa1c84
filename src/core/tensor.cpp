#include "redline/core/tensor.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iomanip>
#include <numeric>
#include <sstream>

#include "backend/cpu/cpu_kernels.h"
#include "backend/gpu_api.h"
#include "redline/core/allocator.h"
#include "redline/core/stream.h"

namespace redline {
namespace {

// The bit pattern of `value` stored as dtype (integers truncate toward zero, bool is value != 0).
uint64_t encode_value(double value, DType dtype) {
  uint64_t bits = 0;
  switch (dtype) {
    case DType::f32: {
      const float f = static_cast<float>(value);
      std::memcpy(&bits, &f, 4);
      break;
    }
    case DType::bf16:
      bits = float_to_bf16_bits(static_cast<float>(value));
      break;
    case DType::f16:
      bits = float_to_f16_bits(static_cast<float>(value));
      break;
    case DType::u8:
      bits = static_cast<uint8_t>(static_cast<int64_t>(value));
      break;
    case DType::i32: {
      const int32_t v = static_cast<int32_t>(value);
      std::memcpy(&bits, &v, 4);
      break;
    }
    case DType::i64: {
      const int64_t v = static_cast<int64_t>(value);
      std::memcpy(&bits, &v, 8);
      break;
    }
    case DType::boolean:
      bits = value != 0.0 ? 1 : 0;
      break;
    case DType::f64:
      std::memcpy(&bits, &value, 8);
      break;
  }
  return bits;
}

double decode_value(const void* p, DType dtype) {
  switch (dtype) {
    case DType::f32: {
      float f;
      std::memcpy(&f, p, 4);
      return f;
    }
    case DType::bf16: {
      uint16_t b;
      std::memcpy(&b, p, 2);
      return bf16_bits_to_float(b);
    }
    case DType::f16: {
      uint16_t b;
      std::memcpy(&b, p, 2);
      return f16_bits_to_float(b);
    }
    case DType::u8:
      return *static_cast<const uint8_t*>(p);
    case DType::i32: {
      int32_t v;
      std::memcpy(&v, p, 4);
      return v;
    }
    case DType::i64: {
      int64_t v;
      std::memcpy(&v, p, 8);
      return static_cast<double>(v);
    }
    case DType::boolean:
      return *static_cast<const uint8_t*>(p) != 0 ? 1.0 : 0.0;
    case DType::f64: {
      double v;
      std::memcpy(&v, p, 8);
      return v;
    }
  }
  return 0.0;
}

void check_shape(const Shape& shape) {
  for (int64_t s : shape) {
    REDLINE_CHECK(s >= 0, "shape {} has a negative size; sizes must be >= 0", shape_str(shape));
  }
  REDLINE_CHECK(shape.size() <= static_cast<size_t>(gpu::kMaxDims),
                "shape {} has {} dimensions; redline supports at most {}", shape_str(shape),
                shape.size(), gpu::kMaxDims);
}

gpu::CopyKind copy_kind(Device dst, Device src) {
  if (dst.is_gpu() && src.is_gpu()) return gpu::CopyKind::device_to_device;
  if (dst.is_gpu()) return gpu::CopyKind::host_to_device;
  if (src.is_gpu()) return gpu::CopyKind::device_to_host;
  return gpu::CopyKind::host_to_host;
}

}  // namespace

std::string shape_str(const Shape& shape) {
  std::ostringstream out;
  out << '(';
  for (size_t i = 0; i < shape.size(); ++i) out << (i ? ", " : "") << shape[i];
  if (shape.size() == 1) out << ',';
  out << ')';
  return out.str();
}

int64_t shape_numel(const Shape& shape) {
  return std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<int64_t>());
}

Shape contiguous_strides(const Shape& shape) {
  Shape strides(shape.size());
  int64_t stride = 1;
  for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
    strides[d] = stride;
    stride *= std::max<int64_t>(shape[d], 1);
  }
  return strides;
}

// ---- Storage ----------------------------------------------------------------------------------

Storage::Storage(size_t bytes, Device device) : bytes_(bytes), device_(device) {
  if (device.is_gpu()) gpu::set_device(device.index);
  data_ = allocator_for(device).allocate(bytes, Stream::current(device).handle());
}

Storage::Storage(void* data, size_t bytes, Device device, std::shared_ptr<void> owner)
    : data_(data), bytes_(bytes), device_(device), owned_(false), owner_(std::move(owner)) {}

Storage::~Storage() {
  if (owned_ && data_ != nullptr) allocator_for(device_).deallocate(data_);
}

// ---- factories --------------------------------------------------------------------------------

Tensor Tensor::empty(const Shape& shape, DType dtype, Device device) {
  check_shape(shape);
  check_device(device);
  Tensor t;
  t.shape_ = shape;
  t.strides_ = contiguous_strides(shape);
  t.dtype_ = dtype;
  t.device_ = device;
  t.storage_ = std::make_shared<Storage>(shape_numel(shape) * dtype_size(dtype), device);
  return t;
}

Tensor Tensor::zeros(const Shape& shape, DType dtype, Device device) {
  return full(shape, 0.0, dtype, device);
}

Tensor Tensor::ones(const Shape& shape, DType dtype, Device device) {
  return full(shape, 1.0, dtype, device);
}

Tensor Tensor::full(const Shape& shape, double value, DType dtype, Device device) {
  Tensor t = empty(shape, dtype, device);
  t.fill_(value);
  return t;
}

Tensor Tensor::arange(double start, double end, double step, DType dtype, Device device) {
  REDLINE_CHECK(step != 0.0 && std::isfinite(step),
                "arange step is {}; it must be finite and non-zero", step);
  REDLINE_CHECK(std::isfinite(start) && std::isfinite(end), "arange bounds [{}, {}) must be finite",
                start, end);
  const double span = (end - start) / step;
  const int64_t n = span > 0 ? static_cast<int64_t>(std::ceil(span)) : 0;
  Tensor host = empty({n}, dtype, Device::cpu());
  const size_t size = dtype_size(dtype);
  char* out = static_cast<char*>(host.raw_data());
  for (int64_t i = 0; i < n; ++i) {
    const uint64_t bits = encode_value(start + static_cast<double>(i) * step, dtype);
    std::memcpy(out + i * size, &bits, size);
  }
  return host.to(device);
}

Tensor Tensor::from_host_bytes(const void* data, size_t count, DType dtype, const Shape& shape,
                               Device device) {
  check_shape(shape);
  REDLINE_CHECK(static_cast<int64_t>(count) == shape_numel(shape),
                "from_host got {} values for shape {}, which holds {}", count, shape_str(shape),
                shape_numel(shape));
  Tensor t = empty(shape, dtype, device);
  const size_t bytes = count * dtype_size(dtype);
  if (bytes == 0) return t;
  if (device.is_cpu()) {
    std::memcpy(t.raw_data(), data, bytes);
  } else {
    const Stream stream = Stream::current(device);
    gpu::memcpy_async(t.raw_data(), data, bytes, gpu::CopyKind::host_to_device, stream.handle());
    stream.synchronize();  // `data` may be freed as soon as we return
  }
  return t;
}

// ---- properties -------------------------------------------------------------------------------

int Tensor::normalize_dim(int dim, int extra) const {
  const int n = this->dim() + extra;
  REDLINE_CHECK(dim >= -n && dim < n,
                "dimension {} is out of range for a tensor of shape {} "
                "(expected {} to {})",
                dim, shape_str(shape_), -n, n - 1);
  return dim < 0 ? dim + n : dim;
}

int64_t Tensor::shape(int dim) const { return shape_[normalize_dim(dim)]; }

bool Tensor::is_contiguous() const {
  int64_t expected = 1;
  for (int d = dim() - 1; d >= 0; --d) {
    if (shape_[d] != 1 && strides_[d] != expected) return false;
    expected *= shape_[d];
  }
  return true;
}

void* Tensor::raw_data() const {
  REDLINE_CHECK(defined(), "the tensor is undefined (default-constructed); create it first");
  return static_cast<char*>(storage_->data()) + offset_ * static_cast<int64_t>(dtype_size(dtype_));
}

void Tensor::check_dtype(DType expected, const char* what) const {
  REDLINE_CHECK(dtype_ == expected, "{} asked for {} elements but the tensor is {}", what,
                dtype_name(expected), describe());
}

std::string Tensor::describe() const {
  if (!defined()) return "an undefined tensor";
  return format("{} {} on {}", dtype_name(dtype_), shape_str(shape_), device_);
}

// ---- copies -----------------------------------------------------------------------------------

Tensor Tensor::to(Device device) const {
  REDLINE_CHECK(defined(), "to({}) on an undefined tensor", device);
  if (device == device_) return *this;
  Tensor out = empty(shape_, dtype_, device);
  out.copy_from(*this);
  return out;
}

Tensor Tensor::clone() const {
  Tensor out = empty(shape_, dtype_, device_);
  out.copy_from(*this);
  return out;
}

Tensor Tensor::contiguous() const { return is_contiguous() ? *this : clone(); }

void Tensor::copy_from(const Tensor& src) {
  REDLINE_CHECK(defined() && src.defined(), "copy_from needs two defined tensors");
  REDLINE_CHECK(shape_ == src.shape_ && dtype_ == src.dtype_,
                "copy_from: destination is {} but source is {}; shapes and dtypes must match",
                describe(), src.describe());
  const int64_t n = numel();
  if (n == 0) return;
  const int elem = static_cast<int>(dtype_size(dtype_));

  if (device_ == src.device_ && !(is_contiguous() && src.is_contiguous())) {
    gpu::StridedLayout layout{};
    layout.ndim = dim();
    for (int d = 0; d < dim(); ++d) {
      layout.sizes[d] = shape_[d];
      layout.src_strides[d] = src.strides_[d];
      layout.dst_strides[d] = strides_[d];
    }
    if (device_.is_cpu()) {
      cpu::strided_copy(raw_data(), src.raw_data(), elem, layout, n);
    } else {
      gpu::set_device(device_.index);
      gpu::strided_copy(raw_data(), src.raw_data(), elem, layout, n,
                        Stream::current(device_).handle());
    }
    return;
  }
  if (!is_contiguous() || !src.is_contiguous()) {  // across devices: stage contiguous copies
    const Tensor staged = src.contiguous().to(device_);
    copy_from(staged);
    return;
  }
  const size_t bytes = static_cast<size_t>(n) * elem;
  if (device_.is_cpu() && src.device_.is_cpu()) {
    cpu::copy_bytes(raw_data(), src.raw_data(), bytes);
    return;
  }
  // GPU involved: order the copy after the work of both sides, then wait when the host reads.
  const Device gpu_side = device_.is_gpu() ? device_ : src.device_;
  gpu::set_device(gpu_side.index);
  const Stream stream = Stream::current(gpu_side);
  if (src.device_.is_gpu() && device_.is_gpu() && src.device_ != device_) {
    Stream::current(src.device_).synchronize();
  }
  gpu::memcpy_async(raw_data(), src.raw_data(), bytes, copy_kind(device_, src.device_),
                    stream.handle());
  if (device_.is_cpu() || src.device_.is_cpu()) stream.synchronize();
}

void Tensor::fill_(double value) {
  REDLINE_CHECK(defined(), "fill_ on an undefined tensor");
  if (numel() == 0) return;
  if (!is_contiguous()) {
    copy_from(full(shape_, value, dtype_, device_));
    return;
  }
  const uint64_t pattern = encode_value(value, dtype_);
  const int elem = static_cast<int>(dtype_size(dtype_));
  if (device_.is_cpu()) {
    cpu::fill(raw_data(), numel(), elem, pattern);
  } else {
    gpu::set_device(device_.index);
    gpu::fill(raw_data(), numel(), elem, pattern, Stream::current(device_).handle());
  }
}

void Tensor::copy_to_host(void* dst) const {
  const Tensor host = contiguous().to(Device::cpu());
  if (host.nbytes() > 0) std::memcpy(dst, host.raw_data(), host.nbytes());
}

double Tensor::item() const {
  REDLINE_CHECK(defined() && numel() == 1, "item() needs a tensor with one element, got {}",
                describe());
  uint64_t bits = 0;
  const Tensor one = contiguous().to(Device::cpu());
  std::memcpy(&bits, one.raw_data(), dtype_size(dtype_));
  return decode_value(&bits, dtype_);
}

double Tensor::at(const std::vector<int64_t>& index) const {
  REDLINE_CHECK(defined(), "at() on an undefined tensor");
  REDLINE_CHECK(static_cast<int>(index.size()) == dim(),
                "at() got an index with {} entries for a tensor of shape {}", index.size(),
                shape_str(shape_));
  Tensor element = *this;
  for (int d = dim() - 1; d >= 0; --d) element = element.select(d, index[d]);
  return element.item();
}

// ---- views ------------------------------------------------------------------------------------

Tensor Tensor::view(const Shape& shape) const {
  REDLINE_CHECK(defined(), "view on an undefined tensor");
  Shape resolved = shape;
  int infer = -1;
  int64_t known = 1;
  for (size_t d = 0; d < resolved.size(); ++d) {
    if (resolved[d] == -1) {
      REDLINE_CHECK(infer < 0, "view shape {} has more than one -1", shape_str(shape));
      infer = static_cast<int>(d);
    } else {
      REDLINE_CHECK(resolved[d] >= 0, "view shape {} has a negative size", shape_str(shape));
      known *= resolved[d];
    }
  }
  if (infer >= 0) {
    REDLINE_CHECK(known != 0 && numel() % known == 0,
                  "view shape {} does not fit the {} elements of {}", shape_str(shape), numel(),
                  describe());
    resolved[infer] = numel() / known;
  }
  REDLINE_CHECK(shape_numel(resolved) == numel(),
                "view shape {} holds {} elements but the tensor {} has {}", shape_str(resolved),
                shape_numel(resolved), describe(), numel());
  REDLINE_CHECK(is_contiguous(),
                "view {} of a non-contiguous tensor {} (strides {}); use reshape() or contiguous()",
                shape_str(resolved), describe(), shape_str(strides_));
  check_shape(resolved);
  Tensor t = *this;
  t.shape_ = resolved;
  t.strides_ = contiguous_strides(resolved);
  return t;
}

Tensor Tensor::reshape(const Shape& shape) const {
  return is_contiguous() ? view(shape) : contiguous().view(shape);
}

Tensor Tensor::permute(const std::vector<int>& dims) const {
  REDLINE_CHECK(static_cast<int>(dims.size()) == dim(),
                "permute got {} dimensions for a tensor of shape {}", dims.size(),
                shape_str(shape_));
  std::vector<bool> seen(dim(), false);
  Tensor t = *this;
  for (int d = 0; d < dim(); ++d) {
    const int from = normalize_dim(dims[d]);
    REDLINE_CHECK(!seen[from], "permute lists dimension {} twice", from);
    seen[from] = true;
    t.shape_[d] = shape_[from];
    t.strides_[d] = strides_[from];
  }
  return t;
}

Tensor Tensor::transpose(int dim0, int dim1) const {
  std::vector<int> dims(dim());
  std::iota(dims.begin(), dims.end(), 0);
  std::swap(dims[normalize_dim(dim0)], dims[normalize_dim(dim1)]);
  return permute(dims);
}

Tensor Tensor::slice(int dim, int64_t start, int64_t end, int64_t step) const {
  const int d = normalize_dim(dim);
  const int64_t size = shape_[d];
  REDLINE_CHECK(step > 0, "slice step is {}; it must be positive", step);
  if (start < 0) start += size;
  if (end < 0) end += size;
  start = std::clamp<int64_t>(start, 0, size);
  end = std::clamp<int64_t>(end, start, size);
  Tensor t = *this;
  t.offset_ += start * strides_[d];
  t.shape_[d] = (end - start + step - 1) / step;
  t.strides_[d] = strides_[d] * step;
  return t;
}

Tensor Tensor::select(int dim, int64_t index) const {
  const int d = normalize_dim(dim);
  REDLINE_CHECK(index >= -shape_[d] && index < shape_[d],
                "index {} is out of range for dimension {} of size {} in {}", index, d, shape_[d],
                describe());
  if (index < 0) index += shape_[d];
  Tensor t = *this;
  t.offset_ += index * strides_[d];
  t.shape_.erase(t.shape_.begin() + d);
  t.strides_.erase(t.strides_.begin() + d);
  return t;
}

Tensor Tensor::unsqueeze(int dim) const {
  const int d = normalize_dim(dim, 1);
  Tensor t = *this;
  const int64_t stride = d < this->dim() ? strides_[d] * shape_[d] : 1;
  t.shape_.insert(t.shape_.begin() + d, 1);
  t.strides_.insert(t.strides_.begin() + d, stride);
  check_shape(t.shape_);
  return t;
}

Tensor Tensor::squeeze(int dim) const {
  const int d = normalize_dim(dim);
  REDLINE_CHECK(shape_[d] == 1, "squeeze({}) needs size 1 but {} has {}", d, describe(), shape_[d]);
  Tensor t = *this;
  t.shape_.erase(t.shape_.begin() + d);
  t.strides_.erase(t.strides_.begin() + d);
  return t;
}

// ---- printing ---------------------------------------------------------------------------------

namespace {

constexpr int64_t kEdgeItems = 3;  // printed at each end of a long dimension

void print_values(std::ostringstream& out, const Tensor& host, int d, int64_t at, int indent) {
  const int64_t size = host.shape()[d];
  const int64_t stride = host.strides()[d];
  const bool summarize = size > 2 * kEdgeItems + 1;
  out << '[';
  for (int64_t i = 0; i < size; ++i) {
    if (summarize && i == kEdgeItems) {
      out << (d + 1 == host.dim() ? "..., " : "...,\n" + std::string(indent + 1, ' '));
      i = size - kEdgeItems;
    }
    const int64_t pos = at + i * stride;
    if (d + 1 == host.dim()) {
      const char* base = static_cast<const char*>(host.storage()->data());
      const double v = decode_value(base + pos * dtype_size(host.dtype()), host.dtype());
      if (host.dtype() == DType::boolean) {
        out << (v != 0 ? "true" : "false");
      } else if (dtype_is_floating(host.dtype())) {
        out << std::setprecision(6) << v;
      } else {
        out << static_cast<int64_t>(v);
      }
    } else {
      print_values(out, host, d + 1, pos, indent + 1);
    }
    if (i + 1 < size) out << (d + 1 == host.dim() ? ", " : ",\n" + std::string(indent + 1, ' '));
  }
  out << ']';
}

}  // namespace

std::string Tensor::str() const {
  if (!defined()) return "Tensor(undefined)";
  std::ostringstream out;
  out << "Tensor(";
  const Tensor host = to(Device::cpu());
  if (dim() == 0) {
    out << decode_value(host.raw_data(), dtype_);
  } else {
    print_values(out, host, 0, host.offset(), 7);
  }
  out << ", dtype=" << dtype_name(dtype_) << ", shape=" << shape_str(shape_)
      << ", device=" << device_ << ')';
  return out.str();
}

std::ostream& operator<<(std::ostream& out, const Tensor& t) { return out << t.str(); }

}  // namespace redline
