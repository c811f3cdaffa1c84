// Philox-4x32-10 (Salmon et al., SC'11), keyed by (seed, stream) with a block counter offset.
//
// The same (seed, stream, offset) yields bit-identical numbers on the CPU and on any GPU: every
// floating-point step below is written with explicitly rounded operations (no fused multiply-add
// contraction can change a result), and the transcendental functions are our own polynomials.
#pragma once

#include <cmath>
#include <cstdint>

#include "redline/core/hd.h"

namespace redline {

struct PhiloxBlock {
  uint32_t v[4];
};

namespace philox_detail {

constexpr uint32_t kMul0 = 0xD2511F53u;
constexpr uint32_t kMul1 = 0xCD9E8D57u;
constexpr uint32_t kWeyl0 = 0x9E3779B9u;
constexpr uint32_t kWeyl1 = 0xBB67AE85u;

REDLINE_HD inline void mulhilo(uint32_t a, uint32_t b, uint32_t* hi, uint32_t* lo) {
  const uint64_t p = static_cast<uint64_t>(a) * static_cast<uint64_t>(b);
  *hi = static_cast<uint32_t>(p >> 32);
  *lo = static_cast<uint32_t>(p);
}

// Rounded float operations that no compiler may fuse.
REDLINE_HD inline float mul_rn(float a, float b) {
#if REDLINE_DEVICE_PASS
  return __fmul_rn(a, b);
#else
  volatile float p = a * b;  // volatile blocks contraction into a later add
  return p;
#endif
}
REDLINE_HD inline float add_rn(float a, float b) {
#if REDLINE_DEVICE_PASS
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}

}  // namespace philox_detail

// One Philox-4x32-10 evaluation: counter (4 words) and key (2 words) to 4 random words.
REDLINE_HD inline PhiloxBlock philox4x32_10(PhiloxBlock ctr, uint32_t key0, uint32_t key1) {
  using namespace philox_detail;
  for (int round = 0; round < 10; ++round) {
    uint32_t hi0, lo0, hi1, lo1;
    mulhilo(kMul0, ctr.v[0], &hi0, &lo0);
    mulhilo(kMul1, ctr.v[2], &hi1, &lo1);
    ctr = PhiloxBlock{{hi1 ^ ctr.v[1] ^ key0, lo1, hi0 ^ ctr.v[3] ^ key1, lo0}};
    key0 += kWeyl0;
    key1 += kWeyl1;
  }
  return ctr;
}

// Top 24 bits of a word as a float in [0, 1).
REDLINE_HD inline float u32_to_unit_float(uint32_t x) {
  return static_cast<float>(x >> 8) * (1.0f / 16777216.0f);
}

// Top 53 bits of two words as a double in [0, 1).
REDLINE_HD inline double u32x2_to_unit_double(uint32_t a, uint32_t b) {
  const uint64_t bits = (static_cast<uint64_t>(a) << 21) ^ (static_cast<uint64_t>(b) >> 11);
  return static_cast<double>(bits & ((uint64_t{1} << 53) - 1)) * (1.0 / 9007199254740992.0);
}

// ln m for m in [sqrt(1/2), sqrt(2)), given s = (m - 1) / (m + 1): the atanh series
// 2 (s + s^3/3 + s^5/5 + s^7/7 + s^9/9), deterministic across devices.
REDLINE_HD inline float log_from_atanh_ratio(float s) {
  using namespace philox_detail;
  const float s2 = mul_rn(s, s);
  float poly = fma_f(s2, 1.0f / 9.0f, 1.0f / 7.0f);
  poly = fma_f(s2, poly, 1.0f / 5.0f);
  poly = fma_f(s2, poly, 1.0f / 3.0f);
  poly = fma_f(s2, poly, 1.0f);
  return mul_rn(mul_rn(2.0f, s), poly);
}

// Natural logarithm of a positive normal float x (Philox uses it on (0, 1]), deterministic across
// devices (max error about 2 ulp).
REDLINE_HD inline float portable_log_unit(float x) {
  using namespace philox_detail;
  union {
    float f;
    uint32_t u;
  } pun{x};
  const uint32_t bits = pun.u;
  int exponent = static_cast<int>((bits >> 23) & 0xFF) - 127;
  union {
    uint32_t u;
    float f;
  } mant{(bits & 0x007FFFFFu) | 0x3F800000u};  // mantissa in [1, 2)
  float m = mant.f;
  if (m > 1.41421356f) {  // keep m in [sqrt(1/2), sqrt(2)) so s stays small
    m = mul_rn(m, 0.5f);
    exponent += 1;
  }
  const float log_m = log_from_atanh_ratio(add_rn(m, -1.0f) / add_rn(m, 1.0f));
  return fma_f(static_cast<float>(exponent), 0.69314718f, log_m);
}

// sin and cos of 2*pi*v for v in [0, 1), deterministic across devices.
REDLINE_HD inline void portable_sincos_turns(float v, float* sin_out, float* cos_out) {
  using namespace philox_detail;
  const float t = mul_rn(v, 4.0f);  // exact: scaling by a power of two
  int quadrant = static_cast<int>(t);
  float f = add_rn(t, -static_cast<float>(quadrant));  // exact
  if (f >= 0.5f) {
    f = add_rn(f, -1.0f);
    quadrant += 1;
  }
  const float x = mul_rn(f, 1.57079632679f);  // x in [-pi/4, pi/4]
  const float x2 = mul_rn(x, x);
  float sp = fma_f(x2, -1.0f / 362880.0f, 1.0f / 5040.0f);  // odd Taylor series to x^9
  sp = fma_f(x2, sp, -1.0f / 120.0f);
  sp = fma_f(x2, sp, 1.0f / 6.0f);
  sp = fma_f(x2, -sp, 1.0f);
  const float s = mul_rn(x, sp);
  float cp = fma_f(x2, 1.0f / 40320.0f, -1.0f / 720.0f);  // even Taylor series to x^8
  cp = fma_f(x2, cp, 1.0f / 24.0f);
  cp = fma_f(x2, cp, -0.5f);
  const float c = fma_f(x2, cp, 1.0f);
  switch (quadrant & 3) {
    case 0:
      *sin_out = s;
      *cos_out = c;
      break;
    case 1:
      *sin_out = c;
      *cos_out = -s;
      break;
    case 2:
      *sin_out = -s;
      *cos_out = -c;
      break;
    default:
      *sin_out = -c;
      *cos_out = s;
      break;
  }
}

// A stream of random numbers: key = seed, counter = (block offset, stream). Each block gives four
// 32-bit words; offset() counts blocks, so a kernel that knows how many blocks it drew can advance
// a device-resident offset for the next launch.
class Philox {
 public:
  REDLINE_HD Philox(uint64_t seed, uint64_t stream, uint64_t offset = 0)
      : key0_(static_cast<uint32_t>(seed)),
        key1_(static_cast<uint32_t>(seed >> 32)),
        stream_(stream),
        block_(offset),
        used_(4) {}

  // Index of the next block that will be generated.
  REDLINE_HD uint64_t offset() const { return block_; }

  REDLINE_HD uint32_t next_u32() {
    if (used_ == 4) {
      const PhiloxBlock ctr{{static_cast<uint32_t>(block_), static_cast<uint32_t>(block_ >> 32),
                             static_cast<uint32_t>(stream_), static_cast<uint32_t>(stream_ >> 32)}};
      buffer_ = philox4x32_10(ctr, key0_, key1_);
      ++block_;
      used_ = 0;
    }
    return buffer_.v[used_++];
  }

  // Uniform float in [0, 1) with 24 random bits.
  REDLINE_HD float uniform() { return u32_to_unit_float(next_u32()); }

  // Uniform double in [0, 1) with 53 random bits.
  REDLINE_HD double uniform_double() {
    const uint32_t a = next_u32();
    return u32x2_to_unit_double(a, next_u32());
  }

  // Uniform integer in [0, n), unbiased (Lemire's multiply-and-reject). n must be > 0.
  REDLINE_HD uint32_t uniform_int(uint32_t n) {
    uint64_t m = static_cast<uint64_t>(next_u32()) * n;
    uint32_t low = static_cast<uint32_t>(m);
    if (low < n) {
      const uint32_t threshold = (0u - n) % n;
      while (low < threshold) {
        m = static_cast<uint64_t>(next_u32()) * n;
        low = static_cast<uint32_t>(m);
      }
    }
    return static_cast<uint32_t>(m >> 32);
  }

  // Standard normal float (Box-Muller on two words; the second variate is discarded so that each
  // call consumes exactly two words).
  REDLINE_HD float normal() {
    using namespace philox_detail;
    // u1 in (0, 1]: never zero, so the log is finite.
    const float u1 = add_rn(1.0f, -u32_to_unit_float(next_u32()));
    const float u2 = u32_to_unit_float(next_u32());
    float s, c;
    portable_sincos_turns(u2, &s, &c);
    const float radius = sqrtf(mul_rn(-2.0f, portable_log_unit(u1)));
    return mul_rn(radius, c);
  }

 private:
  uint32_t key0_, key1_;
  uint64_t stream_;
  uint64_t block_;
  PhiloxBlock buffer_{};
  int used_;
};

}  // namespace redline
