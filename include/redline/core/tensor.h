// Tensor: shared storage + shape + strides + offset + dtype + device.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <ostream>
#include <string>
#include <type_traits>
#include <vector>

#include "redline/core/device.h"
#include "redline/core/dtype.h"
#include "redline/core/error.h"

namespace redline {

using Shape = std::vector<int64_t>;

std::string shape_str(const Shape& shape);  // "(2, 3)"
int64_t shape_numel(const Shape& shape);

// A block of bytes on one device, returned to its allocator when the last tensor lets go.
class Storage {
 public:
  Storage(size_t bytes, Device device);  // allocates (caching allocator)
  Storage(void* data, size_t bytes, Device device, std::shared_ptr<void> owner);  // wraps memory
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() const { return data_; }
  size_t bytes() const { return bytes_; }
  Device device() const { return device_; }

 private:
  void* data_ = nullptr;
  size_t bytes_ = 0;
  Device device_;
  bool owned_ = true;
  std::shared_ptr<void> owner_;
};

class Tensor {
 public:
  Tensor() = default;  // undefined tensor: defined() is false

  // ---- factories --------------------------------------------------------------------------------
  static Tensor empty(const Shape& shape, DType dtype, Device device = Device::cpu());
  static Tensor zeros(const Shape& shape, DType dtype, Device device = Device::cpu());
  static Tensor ones(const Shape& shape, DType dtype, Device device = Device::cpu());
  static Tensor full(const Shape& shape, double value, DType dtype, Device device = Device::cpu());
  // [start, start + step, ...) below end (above end for a negative step), 1-D.
  static Tensor arange(double start, double end, double step = 1.0, DType dtype = DType::f32,
                       Device device = Device::cpu());
  // Copies host data (T's DType must equal dtype) into a new tensor on device.
  template <typename T>
  static Tensor from_host(const std::vector<T>& values, const Shape& shape,
                          Device device = Device::cpu()) {
    return from_host_bytes(values.data(), values.size(), DTypeOf<T>::value, shape, device);
  }
  template <typename T>
  static Tensor from_host(std::initializer_list<T> values, const Shape& shape,
                          Device device = Device::cpu()) {
    return from_host(std::vector<T>(values), shape, device);
  }
  static Tensor from_host_bytes(const void* data, size_t count, DType dtype, const Shape& shape,
                                Device device);

  // ---- properties -------------------------------------------------------------------------------
  bool defined() const { return storage_ != nullptr; }
  const Shape& shape() const { return shape_; }
  int64_t shape(int dim) const;  // negative dims count from the end
  const Shape& strides() const { return strides_; }
  int dim() const { return static_cast<int>(shape_.size()); }
  int64_t numel() const { return shape_numel(shape_); }
  DType dtype() const { return dtype_; }
  Device device() const { return device_; }
  int64_t offset() const { return offset_; }
  size_t nbytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype_); }
  bool is_contiguous() const;
  const std::shared_ptr<Storage>& storage() const { return storage_; }

  // Pointer to the first element. T must match the dtype.
  void* raw_data() const;
  template <typename T>
  T* data() const {
    check_dtype(DTypeOf<T>::value, "data<T>()");
    return static_cast<T*>(raw_data());
  }

  // ---- copies -----------------------------------------------------------------------------------
  Tensor to(Device device) const;  // a copy on device (itself when already there)
  Tensor clone() const;            // a contiguous copy on the same device
  Tensor contiguous() const;       // itself when contiguous, else a contiguous copy
  // Copies src (same shape and dtype, any device) into this tensor's elements.
  void copy_from(const Tensor& src);
  void fill_(double value);

  // Contiguous host copy of the elements (synchronizes with the device). T must match dtype.
  template <typename T>
  std::vector<T> to_vector() const {
    check_dtype(DTypeOf<T>::value, "to_vector<T>()");
    if constexpr (std::is_same_v<T, bool>) {  // std::vector<bool> has no data(): go through bytes
      std::vector<uint8_t> bytes(static_cast<size_t>(numel()));
      copy_to_host(bytes.data());
      return std::vector<bool>(bytes.begin(), bytes.end());
    } else {
      std::vector<T> out(static_cast<size_t>(numel()));
      copy_to_host(out.data());
      return out;
    }
  }
  // The single element of a one-element tensor, as double.
  double item() const;
  // Element at a multi-index, as double (host read; for tests and printing).
  double at(const std::vector<int64_t>& index) const;

  // ---- views (share storage)
  // ----------------------------------------------------------------------
  Tensor view(const Shape& shape) const;     // contiguous only; one -1 is inferred
  Tensor reshape(const Shape& shape) const;  // view when possible, else a copy
  Tensor permute(const std::vector<int>& dims) const;
  Tensor transpose(int dim0, int dim1) const;
  Tensor slice(int dim, int64_t start, int64_t end, int64_t step = 1) const;
  Tensor select(int dim, int64_t index) const;  // removes dim
  Tensor unsqueeze(int dim) const;
  Tensor squeeze(int dim) const;

  std::string str() const;       // readable printing with shape, dtype and device
  std::string describe() const;  // "f32 (2, 3) on gpu:0"

 private:
  void check_dtype(DType expected, const char* what) const;
  void copy_to_host(void* dst) const;
  int normalize_dim(int dim, int extra = 0) const;

  std::shared_ptr<Storage> storage_;
  Shape shape_;
  Shape strides_;
  int64_t offset_ = 0;  // in elements
  DType dtype_ = DType::f32;
  Device device_;
};

std::ostream& operator<<(std::ostream& out, const Tensor& t);

// Contiguous strides of a shape.
Shape contiguous_strides(const Shape& shape);

}  // namespace redline
