// Device-side bf16 / f16 conversions with the same rounding as the host ones in
// redline/core/dtype.h (round to nearest even, NaN kept, f16 overflow to inf, subnormals kept).
// They exist because dtype.h's REDLINE_HD versions call memcpy, which Debian's hipcc (ROCm 5.2)
// refuses in device code; these use the bit-cast intrinsics every GPU compiler has.
#pragma once

#include <cstdint>

#include "vendor/gpu.h"

namespace redline::gpu {

__device__ inline uint16_t dev_float_to_bf16(float f) {
  const uint32_t u = __float_as_uint(f);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((u >> 16) | 0x0040u);
  return static_cast<uint16_t>((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}

__device__ inline float dev_bf16_to_float(uint16_t b) {
  return __uint_as_float(static_cast<uint32_t>(b) << 16);
}

__device__ inline uint16_t dev_float_to_f16(float f) {
  const uint32_t u = __float_as_uint(f);
  const uint32_t sign = (u >> 16) & 0x8000u;
  const uint32_t abs = u & 0x7FFFFFFFu;
  if (abs > 0x7F800000u) return static_cast<uint16_t>(sign | 0x7E00u);
  if (abs >= 0x477FF000u) return static_cast<uint16_t>(sign | 0x7C00u);
  if (abs < 0x38800000u) {
    if (abs < 0x33000000u) return static_cast<uint16_t>(sign);
    const uint32_t exponent = abs >> 23;
    const uint32_t mantissa = (abs & 0x007FFFFFu) | 0x00800000u;
    const uint32_t shift = 126u - exponent;
    uint32_t half = mantissa >> shift;
    const uint32_t rest = mantissa & ((1u << shift) - 1u);
    const uint32_t halfway = 1u << (shift - 1u);
    if (rest > halfway || (rest == halfway && (half & 1u))) ++half;
    return static_cast<uint16_t>(sign | half);
  }
  uint32_t half = (abs - 0x38000000u) >> 13;
  const uint32_t rest = abs & 0x1FFFu;
  if (rest > 0x1000u || (rest == 0x1000u && (half & 1u))) ++half;
  return static_cast<uint16_t>(sign | half);
}

__device__ inline float dev_f16_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1Fu;
  uint32_t mantissa = h & 0x3FFu;
  uint32_t u;
  if (exponent == 0) {
    if (mantissa == 0) {
      u = sign;
    } else {
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
  return __uint_as_float(u);
}

}  // namespace redline::gpu
