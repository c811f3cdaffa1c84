#include "redline/core/dtype.h"

#include "redline/core/error.h"

namespace redline {

DType parse_dtype(std::string_view name) {
  for (DType t : kAllDTypes) {
    if (dtype_name(t) == name) return t;
  }
  if (name == "float32" || name == "float") return DType::f32;
  if (name == "float64" || name == "double") return DType::f64;
  if (name == "bfloat16") return DType::bf16;
  if (name == "float16" || name == "half") return DType::f16;
  if (name == "uint8") return DType::u8;
  if (name == "int32") return DType::i32;
  if (name == "int64") return DType::i64;
  REDLINE_FAIL("unknown dtype '{}' (expected one of f32, bf16, f16, u8, i32, i64, bool, f64)",
               name);
}

}  // namespace redline
