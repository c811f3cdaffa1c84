// Element types of tensors, and the host-side 16-bit float conversions.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "redline/core/hd.h"

namespace redline {

// f64 is last so that the numeric values of the older dtypes stay what they were. It exists on the
// CPU only (finite-difference gradient checks and double references); ops refuse it on GPUs.
enum class DType : uint8_t { f32, bf16, f16, u8, i32, i64, boolean, f64 };

inline constexpr DType kAllDTypes[] = {DType::f32, DType::bf16, DType::f16,     DType::u8,
                                       DType::i32, DType::i64,  DType::boolean, DType::f64};

constexpr size_t dtype_size(DType t) {
  switch (t) {
    case DType::f32:
      return 4;
    case DType::bf16:
      return 2;
    case DType::f16:
      return 2;
    case DType::u8:
      return 1;
    case DType::i32:
      return 4;
    case DType::i64:
      return 8;
    case DType::boolean:
      return 1;
    case DType::f64:
      return 8;
  }
  return 0;
}

constexpr std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::f32:
      return "f32";
    case DType::bf16:
      return "bf16";
    case DType::f16:
      return "f16";
    case DType::u8:
      return "u8";
    case DType::i32:
      return "i32";
    case DType::i64:
      return "i64";
    case DType::boolean:
      return "bool";
    case DType::f64:
      return "f64";
  }
  return "?";
}

constexpr bool dtype_is_floating(DType t) {
  return t == DType::f32 || t == DType::bf16 || t == DType::f16 || t == DType::f64;
}

// Parses "f32", "bf16", "f16", "u8", "i32", "i64", "bool", "f64"; throws redline::Error otherwise.
DType parse_dtype(std::string_view name);

// Maps a C++ type to its DType. bf16 and f16 values are carried as these 16-bit wrappers.
struct BFloat16 {
  uint16_t bits;
};
struct Float16 {
  uint16_t bits;
};

template <typename T>
struct DTypeOf;
template <>
struct DTypeOf<float> {
  static constexpr DType value = DType::f32;
};
template <>
struct DTypeOf<double> {
  static constexpr DType value = DType::f64;
};
template <>
struct DTypeOf<BFloat16> {
  static constexpr DType value = DType::bf16;
};
template <>
struct DTypeOf<Float16> {
  static constexpr DType value = DType::f16;
};
template <>
struct DTypeOf<uint8_t> {
  static constexpr DType value = DType::u8;
};
template <>
struct DTypeOf<int32_t> {
  static constexpr DType value = DType::i32;
};
template <>
struct DTypeOf<int64_t> {
  static constexpr DType value = DType::i64;
};
template <>
struct DTypeOf<bool> {
  static constexpr DType value = DType::boolean;
};

// Bit casts usable in host and device code. __builtin_memcpy, unlike memcpy, is accepted in device
// code by every compiler redline supports (Debian's hipcc refuses plain memcpy there).
REDLINE_HD inline uint32_t float_to_bits(float f) {
  uint32_t u;
  __builtin_memcpy(&u, &f, 4);
  return u;
}

REDLINE_HD inline float bits_to_float(uint32_t u) {
  float f;
  __builtin_memcpy(&f, &u, 4);
  return f;
}

// float -> bf16 with round-to-nearest-even; NaN stays NaN.
REDLINE_HD inline uint16_t float_to_bf16_bits(float f) {
  const uint32_t u = float_to_bits(f);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((u >> 16) | 0x0040u);
  const uint32_t rounding = 0x7FFFu + ((u >> 16) & 1u);
  return static_cast<uint16_t>((u + rounding) >> 16);
}

REDLINE_HD inline float bf16_bits_to_float(uint16_t b) {
  return bits_to_float(static_cast<uint32_t>(b) << 16);
}

// float -> IEEE binary16 with round-to-nearest-even, overflow to infinity, subnormals kept.
REDLINE_HD inline uint16_t float_to_f16_bits(float f) {
  const uint32_t u = float_to_bits(f);
  const uint32_t sign = (u >> 16) & 0x8000u;
  const uint32_t abs = u & 0x7FFFFFFFu;
  if (abs > 0x7F800000u) return static_cast<uint16_t>(sign | 0x7E00u);   // NaN
  if (abs >= 0x477FF000u) return static_cast<uint16_t>(sign | 0x7C00u);  // rounds to inf
  if (abs < 0x38800000u) {  // below the smallest normal half: subnormal or zero
    if (abs < 0x33000000u) return static_cast<uint16_t>(sign);
    const uint32_t exponent = abs >> 23;
    const uint32_t mantissa = (abs & 0x007FFFFFu) | 0x00800000u;
    const uint32_t shift = 126u - exponent;  // 14..24
    uint32_t half = mantissa >> shift;
    const uint32_t rest = mantissa & ((1u << shift) - 1u);
    const uint32_t halfway = 1u << (shift - 1u);
    if (rest > halfway || (rest == halfway && (half & 1u))) ++half;
    return static_cast<uint16_t>(sign | half);
  }
  uint32_t half = ((abs - 0x38000000u) >> 13);
  const uint32_t rest = abs & 0x1FFFu;
  if (rest > 0x1000u || (rest == 0x1000u && (half & 1u))) ++half;
  return static_cast<uint16_t>(sign | half);
}

REDLINE_HD inline float f16_bits_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1Fu;
  uint32_t mantissa = h & 0x3FFu;
  uint32_t u;
  if (exponent == 0) {
    if (mantissa == 0) {
      u = sign;
    } else {  // subnormal: normalise
      int e = -1;
      do {
        ++e;
        mantissa <<= 1;
      } while ((mantissa & 0x400u) == 0);
      u = sign | ((112u - e) << 23) | ((mantissa & 0x3FFu) << 13);
    }
  } else if (exponent == 31) {
    u = sign | 0x7F800000u | (mantissa << 13);
  } else {
    u = sign | ((exponent + 112u) << 23) | (mantissa << 13);
  }
  return bits_to_float(u);
}

}  // namespace redline
