// CPU twins of src/backend/gpu/ops_elementwise.cu: unary, binary, where, cast.
#include <cstring>

#include "backend/cpu/ops_iter.h"
#include "backend/cpu/ops_kernels.h"
#include "redline/core/error.h"

namespace redline::cpu {
namespace {

using ops::BinaryOp;
using ops::ElementwiseLayout;
using ops::UnaryOp;

template <typename T>
void unary_typed(UnaryOp op, T param, T* out, const T* x, const ElementwiseLayout& l) {
  for_each_element<2>(
      l, [&](const int64_t* at) { out[at[0]] = ops::unary_forward<T>(op, x[at[1]], param); });
}

template <typename T>
void binary_typed(BinaryOp op, void* out, const T* a, const T* b, const ElementwiseLayout& l) {
  if (ops::binary_is_comparison(op)) {
    bool* o = static_cast<bool*>(out);
    for_each_element<3>(l, [&](const int64_t* at) {
      o[at[0]] = ops::binary_forward<T>(op, a[at[1]], b[at[2]]) != T(0);
    });
  } else {
    T* o = static_cast<T*>(out);
    for_each_element<3>(
        l, [&](const int64_t* at) { o[at[0]] = ops::binary_forward<T>(op, a[at[1]], b[at[2]]); });
  }
}

template <typename T>
void unary_backward_typed(UnaryOp op, T param, T* dx, const T* x, const T* y, const T* dy,
                          int64_t n) {
#pragma omp parallel for if (n > (1 << 16))
  for (int64_t i = 0; i < n; ++i) dx[i] = ops::unary_backward<T>(op, x[i], y[i], dy[i], param);
}

template <typename T>
void where_typed(T* out, const bool* cond, const T* a, const T* b, const ElementwiseLayout& l) {
  for_each_element<4>(l,
                      [&](const int64_t* at) { out[at[0]] = cond[at[1]] ? a[at[2]] : b[at[3]]; });
}

// Element conversions through double (exact for every pair of redline dtypes but i64 > 2^53).
double load(const void* p, DType t, int64_t i) {
  switch (t) {
    case DType::f32:
      return static_cast<const float*>(p)[i];
    case DType::bf16:
      return bf16_bits_to_float(static_cast<const uint16_t*>(p)[i]);
    case DType::f16:
      return f16_bits_to_float(static_cast<const uint16_t*>(p)[i]);
    case DType::u8:
      return static_cast<const uint8_t*>(p)[i];
    case DType::i32:
      return static_cast<const int32_t*>(p)[i];
    case DType::i64:
      return static_cast<double>(static_cast<const int64_t*>(p)[i]);
    case DType::boolean:
      return static_cast<const uint8_t*>(p)[i] != 0 ? 1.0 : 0.0;
    case DType::f64:
      return static_cast<const double*>(p)[i];
  }
  return 0.0;
}

void store(void* p, DType t, int64_t i, double v) {
  switch (t) {
    case DType::f32:
      static_cast<float*>(p)[i] = static_cast<float>(v);
      break;
    case DType::bf16:
      static_cast<uint16_t*>(p)[i] = float_to_bf16_bits(static_cast<float>(v));
      break;
    case DType::f16:
      static_cast<uint16_t*>(p)[i] = float_to_f16_bits(static_cast<float>(v));
      break;
    case DType::u8:
      static_cast<uint8_t*>(p)[i] = static_cast<uint8_t>(static_cast<int64_t>(v));
      break;
    case DType::i32:
      static_cast<int32_t*>(p)[i] = static_cast<int32_t>(v);
      break;
    case DType::i64:
      static_cast<int64_t*>(p)[i] = static_cast<int64_t>(v);
      break;
    case DType::boolean:
      static_cast<uint8_t*>(p)[i] = v != 0.0 ? 1 : 0;
      break;
    case DType::f64:
      static_cast<double*>(p)[i] = v;
      break;
  }
}

}  // namespace

void unary(UnaryOp op, DType dtype, double param, void* out, const void* x,
           const ElementwiseLayout& layout) {
  switch (dtype) {
    case DType::f32:
      return unary_typed<float>(op, static_cast<float>(param), static_cast<float*>(out),
                                static_cast<const float*>(x), layout);
    case DType::f64:
      return unary_typed<double>(op, param, static_cast<double*>(out),
                                 static_cast<const double*>(x), layout);
    default:
      REDLINE_FAIL("CPU unary kernel got {}; expected f32 or f64", dtype_name(dtype));
  }
}

void unary_backward(UnaryOp op, DType dtype, double param, void* dx, const void* x, const void* y,
                    const void* dy, int64_t n) {
  switch (dtype) {
    case DType::f32:
      return unary_backward_typed<float>(op, static_cast<float>(param), static_cast<float*>(dx),
                                         static_cast<const float*>(x), static_cast<const float*>(y),
                                         static_cast<const float*>(dy), n);
    case DType::f64:
      return unary_backward_typed<double>(
          op, param, static_cast<double*>(dx), static_cast<const double*>(x),
          static_cast<const double*>(y), static_cast<const double*>(dy), n);
    default:
      REDLINE_FAIL("CPU unary backward got {}; expected f32 or f64", dtype_name(dtype));
  }
}

void binary(BinaryOp op, DType dtype, void* out, const void* a, const void* b,
            const ElementwiseLayout& layout) {
  switch (dtype) {
    case DType::f32:
      return binary_typed<float>(op, out, static_cast<const float*>(a),
                                 static_cast<const float*>(b), layout);
    case DType::f64:
      return binary_typed<double>(op, out, static_cast<const double*>(a),
                                  static_cast<const double*>(b), layout);
    case DType::i32:
      return binary_typed<int32_t>(op, out, static_cast<const int32_t*>(a),
                                   static_cast<const int32_t*>(b), layout);
    case DType::i64:
      return binary_typed<int64_t>(op, out, static_cast<const int64_t*>(a),
                                   static_cast<const int64_t*>(b), layout);
    default:
      REDLINE_FAIL("CPU binary kernel got {}; expected f32, f64, i32 or i64", dtype_name(dtype));
  }
}

void where(DType dtype, void* out, const bool* cond, const void* a, const void* b,
           const ElementwiseLayout& layout) {
  switch (dtype_size(dtype)) {
    case 1:
      return where_typed<uint8_t>(static_cast<uint8_t*>(out), cond, static_cast<const uint8_t*>(a),
                                  static_cast<const uint8_t*>(b), layout);
    case 2:
      return where_typed<uint16_t>(static_cast<uint16_t*>(out), cond,
                                   static_cast<const uint16_t*>(a), static_cast<const uint16_t*>(b),
                                   layout);
    case 4:
      return where_typed<uint32_t>(static_cast<uint32_t*>(out), cond,
                                   static_cast<const uint32_t*>(a), static_cast<const uint32_t*>(b),
                                   layout);
    default:
      return where_typed<uint64_t>(static_cast<uint64_t*>(out), cond,
                                   static_cast<const uint64_t*>(a), static_cast<const uint64_t*>(b),
                                   layout);
  }
}

void cast(DType from, DType to, void* out, const void* x, int64_t n) {
  if (from == to) {
    std::memcpy(out, x, static_cast<size_t>(n) * dtype_size(from));
    return;
  }
#pragma omp parallel for if (n > (1 << 16))
  for (int64_t i = 0; i < n; ++i) store(out, to, i, load(x, from, i));
}

}  // namespace redline::cpu
