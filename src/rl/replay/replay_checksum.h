// The 64-bit checksum at the end of a replay file (replay_io.cpp): every byte before it, taken as
// little-endian 8-byte words (the last one zero-padded) through a multiply-rotate mix, then the
// byte count and a final avalanche. It detects truncation, bit flips and reordering. The value
// depends only on the bytes, not on how they are split between add() calls, and it is part of the
// file format: files written by earlier builds must keep loading (replay/io_test.cpp pins it).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace redline::rl::replay {

class Checksum {
 public:
  void add(const void* data, size_t bytes) {
    const auto* p = static_cast<const uint8_t*>(data);
    if (pending_ > 0) {  // complete the word that an earlier call left open
      const size_t take = bytes < 8 - pending_ ? bytes : 8 - pending_;
      std::memcpy(word_ + pending_, p, take);
      pending_ += take;
      p += take;
      bytes -= take;
      if (pending_ < 8) return;
      uint64_t w;
      std::memcpy(&w, word_, 8);
      hash_ = mix(hash_, w);
      total_ += 8;
      pending_ = 0;
    }
    // Whole words straight from the buffer: the mix is the only dependent chain (about 3x faster
    // than staging every word through word_).
    const size_t words = bytes / 8;
    uint64_t h = hash_;
    for (size_t i = 0; i < words; ++i) {
      uint64_t w;
      std::memcpy(&w, p + 8 * i, 8);
      h = mix(h, w);
    }
    hash_ = h;
    total_ += 8 * words;
    pending_ = bytes - 8 * words;
    std::memcpy(word_, p + 8 * words, pending_);
  }

  uint64_t value() const {
    uint64_t h = hash_ ^ (total_ * 0xFF51AFD7ED558CCDull);
    if (pending_ > 0) {
      uint8_t last[8] = {};
      std::memcpy(last, word_, pending_);
      uint64_t w;
      std::memcpy(&w, last, 8);
      h = mix(h, w);
    }
    h ^= h >> 33;
    h *= 0xC4CEB9FE1A85EC53ull;
    h ^= h >> 33;
    return h;
  }

 private:
  static uint64_t mix(uint64_t h, uint64_t w) {
    h ^= w * 0x9E3779B97F4A7C15ull;
    h = (h << 29) | (h >> 35);
    return h * 0xBF58476D1CE4E5B9ull + 0x94D049BB133111EBull;
  }
  uint64_t hash_ = 0x6A09E667F3BCC909ull;
  uint64_t total_ = 0;  // bytes in whole words so far (as the format has always counted them)
  uint8_t word_[8] = {};
  size_t pending_ = 0;
};

}  // namespace redline::rl::replay
