// CPU twins of src/backend/gpu/ops_index.cu: gather, scatter_add, index_select, index_add.
#include <cstring>

#include "backend/cpu/ops_kernels.h"
#include "redline/core/error.h"

namespace redline::cpu {
namespace {

using ops::DimSplit;

// The GPU kernels report the same facts (src/backend/gpu/ops_index.cu, raised later).
void check_index(int64_t value, int64_t position, int64_t size, const char* op) {
  REDLINE_CHECK(value >= 0 && value < size,
                "{}: index {} at position {} of the index tensor is out of range for a dimension "
                "of size {}",
                op, value, position, size);
}

template <typename T>
void add_at(void* out, const void* src, int64_t out_at, int64_t src_at) {
  static_cast<T*>(out)[out_at] += static_cast<const T*>(src)[src_at];
}

void add_element(DType dtype, void* out, const void* src, int64_t out_at, int64_t src_at) {
  switch (dtype) {
    case DType::f32:
      return add_at<float>(out, src, out_at, src_at);
    case DType::f64:
      return add_at<double>(out, src, out_at, src_at);
    case DType::i32:
      return add_at<int32_t>(out, src, out_at, src_at);
    case DType::i64:
      return add_at<int64_t>(out, src, out_at, src_at);
    default:
      REDLINE_FAIL("CPU scatter/index add got {}; expected f32, f64, i32 or i64",
                   dtype_name(dtype));
  }
}

}  // namespace

void gather(int elem_size, void* out, const void* x, const int64_t* index, const DimSplit& s,
            int64_t k) {
  char* o = static_cast<char*>(out);
  const char* xs = static_cast<const char*>(x);
  for (int64_t a = 0; a < s.outer; ++a) {
    for (int64_t j = 0; j < k; ++j) {
      for (int64_t i = 0; i < s.inner; ++i) {
        const int64_t at = (a * k + j) * s.inner + i;
        const int64_t row = index[at];
        check_index(row, at, s.size, "gather");
        std::memcpy(o + at * elem_size, xs + ((a * s.size + row) * s.inner + i) * elem_size,
                    elem_size);
      }
    }
  }
}

void scatter_add(DType dtype, void* out, const void* src, const int64_t* index, const DimSplit& s,
                 int64_t k) {
  for (int64_t a = 0; a < s.outer; ++a) {
    for (int64_t j = 0; j < k; ++j) {
      for (int64_t i = 0; i < s.inner; ++i) {
        const int64_t at = (a * k + j) * s.inner + i;
        const int64_t row = index[at];
        check_index(row, at, s.size, "scatter_add");
        add_element(dtype, out, src, (a * s.size + row) * s.inner + i, at);
      }
    }
  }
}

void index_select(int elem_size, void* out, const void* x, const int64_t* index, const DimSplit& s,
                  int64_t k) {
  for (int64_t j = 0; j < k; ++j) check_index(index[j], j, s.size, "index_select");
  char* o = static_cast<char*>(out);
  const char* xs = static_cast<const char*>(x);
  const size_t row_bytes = static_cast<size_t>(s.inner) * elem_size;
  for (int64_t a = 0; a < s.outer; ++a) {
    for (int64_t j = 0; j < k; ++j) {
      std::memcpy(o + (a * k + j) * row_bytes, xs + (a * s.size + index[j]) * row_bytes, row_bytes);
    }
  }
}

void index_add(DType dtype, void* out, const void* src, const int64_t* index, const DimSplit& s,
               int64_t k) {
  for (int64_t j = 0; j < k; ++j) check_index(index[j], j, s.size, "index_add");
  for (int64_t a = 0; a < s.outer; ++a) {
    for (int64_t j = 0; j < k; ++j) {
      for (int64_t i = 0; i < s.inner; ++i) {
        add_element(dtype, out, src, (a * s.size + index[j]) * s.inner + i,
                    (a * k + j) * s.inner + i);
      }
    }
  }
}

}  // namespace redline::cpu
