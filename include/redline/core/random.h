// Tensors of random numbers from Philox, identical on every device.
//
// Element layout (shared by the CPU loop and the GPU kernel, so both give the same bits):
//   uniform f32: element i is word i%4 of block offset + i/4       (n/4 blocks used)
//   normal f32:  element i is Box-Muller on words 2(i%2), 2(i%2)+1 of block offset + i/2
//   integer:     element i draws from a Philox positioned at block offset + i (n blocks used)
#pragma once

#include <cstdint>

#include "redline/core/hd.h"
#include "redline/core/philox.h"
#include "redline/core/tensor.h"

namespace redline {

REDLINE_HD inline float random_uniform_element(uint64_t seed, uint64_t stream, uint64_t offset,
                                               int64_t i) {
  const uint64_t block = offset + static_cast<uint64_t>(i) / 4;
  const PhiloxBlock ctr{{static_cast<uint32_t>(block), static_cast<uint32_t>(block >> 32),
                         static_cast<uint32_t>(stream), static_cast<uint32_t>(stream >> 32)}};
  const PhiloxBlock r =
      philox4x32_10(ctr, static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32));
  return u32_to_unit_float(r.v[i % 4]);
}

REDLINE_HD inline float random_normal_element(uint64_t seed, uint64_t stream, uint64_t offset,
                                              int64_t i) {
  Philox gen(seed, stream, offset + static_cast<uint64_t>(i) / 2);
  if (i % 2) {
    gen.next_u32();
    gen.next_u32();
  }
  return gen.normal();
}

REDLINE_HD inline uint32_t random_int_element(uint64_t seed, uint64_t stream, uint64_t offset,
                                              int64_t i, uint32_t bound) {
  Philox gen(seed, stream, offset + static_cast<uint64_t>(i));
  return gen.uniform_int(bound);
}

constexpr int64_t random_blocks_used_uniform(int64_t n) { return (n + 3) / 4; }
constexpr int64_t random_blocks_used_normal(int64_t n) { return (n + 1) / 2; }
constexpr int64_t random_blocks_used_int(int64_t n) { return n; }

// A (seed, stream) pair with its block offset held in a one-element i64 tensor on the device the
// generator serves, so that fills inside a captured graph advance it without the host.
class Generator {
 public:
  Generator(uint64_t seed, uint64_t stream, Device device = Device::cpu());

  uint64_t seed() const { return seed_; }
  uint64_t stream() const { return stream_; }
  Device device() const { return offset_.device(); }
  // Reads the offset back to the host (synchronizes with the device).
  uint64_t offset() const;
  void set_offset(uint64_t offset);
  // The (1,) i64 tensor that holds the offset.
  const Tensor& offset_tensor() const { return offset_; }

 private:
  uint64_t seed_;
  uint64_t stream_;
  Tensor offset_;  // (1,) i64 on device()
};

// Fills a contiguous tensor on the generator's device and advances the generator's offset.
void uniform_(Tensor& out, Generator& gen);                  // f32 in [0, 1)
void normal_(Tensor& out, Generator& gen);                   // f32 standard normal
void randint_(Tensor& out, uint32_t bound, Generator& gen);  // i32 or i64 in [0, bound)

}  // namespace redline
