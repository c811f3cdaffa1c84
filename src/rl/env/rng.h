// The two random sources the game rules are templated on. Both offer the same three calls:
//   uint32_t next_u32();
//   double uniform_double();          // [0, 1)
//   int randint(int low, int high);   // [low, high)
// PhiloxSource (default, CPU and GPU): Philox-4x32-10 keyed by (seed, environment index).
// Mt19937Source (reference mode, CPU): numpy RandomState's recipes on MT19937 (spec 2.4), so the
// same rule code reproduces the original's trajectories bit for bit.
#pragma once

#include <cstdint>

#include "redline/core/hd.h"
#include "redline/core/philox.h"

namespace redline::rl {

// The same stream as redline::Philox (same blocks, same words, same recipes), but the unused words
// of the current block sit in four scalars that shift down on every draw instead of an array read
// at a running index: a GPU thread then keeps the whole generator in registers (an indexed array
// goes to local memory).
class PhiloxSource {
 public:
  REDLINE_HD PhiloxSource(uint64_t seed, uint64_t env_index, uint64_t block_offset)
      : key0_(static_cast<uint32_t>(seed)),
        key1_(static_cast<uint32_t>(seed >> 32)),
        stream_(env_index),
        block_(block_offset) {}

  REDLINE_HD uint32_t next_u32() {
    if (left_ == 0) {
      const PhiloxBlock ctr{{static_cast<uint32_t>(block_), static_cast<uint32_t>(block_ >> 32),
                             static_cast<uint32_t>(stream_), static_cast<uint32_t>(stream_ >> 32)}};
      const PhiloxBlock out = philox4x32_10(ctr, key0_, key1_);
      w0_ = out.v[0];
      w1_ = out.v[1];
      w2_ = out.v[2];
      w3_ = out.v[3];
      ++block_;
      left_ = 4;
    }
    const uint32_t word = w0_;
    w0_ = w1_;
    w1_ = w2_;
    w2_ = w3_;
    --left_;
    return word;
  }
  // Top 53 bits of two words (Philox::uniform_double).
  REDLINE_HD double uniform_double() {
    const uint32_t a = next_u32();
    return u32x2_to_unit_double(a, next_u32());
  }
  REDLINE_HD int randint(int low, int high) {
    return low + static_cast<int>(uniform_int(static_cast<uint32_t>(high - low)));
  }
  // Next unused block; stored per environment between steps (a partly used block is skipped).
  REDLINE_HD uint64_t offset() const { return block_; }

 private:
  // Uniform integer in [0, n), n > 0: Lemire's multiply-and-reject (Philox::uniform_int).
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

  uint32_t key0_, key1_;
  uint64_t stream_;
  uint64_t block_;
  uint32_t w0_ = 0, w1_ = 0, w2_ = 0, w3_ = 0;  // unused words of the current block, next first
  int left_ = 0;                                // how many of them are unused
};

// 32-bit Mersenne Twister (the standard MT19937 integer initialisation), host only.
class Mt19937 {
 public:
  explicit Mt19937(uint32_t seed) {
    state_[0] = seed;
    for (int i = 1; i < kN; ++i) {
      state_[i] = 1812433253u * (state_[i - 1] ^ (state_[i - 1] >> 30)) + static_cast<uint32_t>(i);
    }
    index_ = kN;
  }

  uint32_t next_u32() {
    if (index_ >= kN) twist();
    uint32_t y = state_[index_++];
    y ^= y >> 11;
    y ^= (y << 7) & 0x9D2C5680u;
    y ^= (y << 15) & 0xEFC60000u;
    y ^= y >> 18;
    return y;
  }

 private:
  static constexpr int kN = 624;
  static constexpr int kM = 397;

  void twist() {
    for (int i = 0; i < kN; ++i) {
      const uint32_t y = (state_[i] & 0x80000000u) | (state_[(i + 1) % kN] & 0x7FFFFFFFu);
      uint32_t next = state_[(i + kM) % kN] ^ (y >> 1);
      if (y & 1u) next ^= 0x9908B0DFu;
      state_[i] = next;
    }
    index_ = 0;
  }

  uint32_t state_[kN];
  int index_;
};

// numpy RandomState's rand() and randint() on an MT19937 stream (spec 2.4).
class Mt19937Source {
 public:
  explicit Mt19937Source(uint32_t seed) : mt_(seed) {}

  uint32_t next_u32() { return mt_.next_u32(); }
  double uniform_double() {
    const uint32_t a = mt_.next_u32() >> 5;
    const uint32_t b = mt_.next_u32() >> 6;
    return (static_cast<double>(a) * 67108864.0 + static_cast<double>(b)) / 9007199254740992.0;
  }
  // Masked rejection sampling on the low bits; no output consumed when the range has one value.
  int randint(int low, int high) {
    const uint32_t range = static_cast<uint32_t>(high - low - 1);
    if (range == 0) return low;
    uint32_t mask = range;
    mask |= mask >> 1;
    mask |= mask >> 2;
    mask |= mask >> 4;
    mask |= mask >> 8;
    mask |= mask >> 16;
    uint32_t value;
    do {
      value = mt_.next_u32() & mask;
    } while (value > range);
    return low + static_cast<int>(value);
  }

 private:
  Mt19937 mt_;
};

}  // namespace redline::rl
