// A 10 x 10 bitmap (cell k = 10 * y + x; bits 0..63 in lo, 64..99 in hi) and the small helpers
// every game's rules share. Host and device code alike (REDLINE_HD), no dynamic array indexing so
// that a GPU thread keeps everything in registers.
#pragma once

#include <cstdint>

#include "redline/core/hd.h"

namespace redline::rl {

inline constexpr int kGridSize = 10;
inline constexpr int kCells = 100;

// The six raw MinAtar actions (spec 1.3).
enum Action : int { kNoop = 0, kLeft = 1, kUp = 2, kRight = 3, kDown = 4, kFire = 5 };
inline constexpr int kNumRawActions = 6;

REDLINE_HD inline int popcount64(uint64_t x) {
#if defined(__CUDA_ARCH__)
  return __popcll(x);
#else  // host compilers and the HIP device pass (clang) share the builtin
  return __builtin_popcountll(x);
#endif
}

REDLINE_HD inline constexpr int cell(int y, int x) { return y * kGridSize + x; }
REDLINE_HD inline constexpr int min_int(int a, int b) { return a < b ? a : b; }
REDLINE_HD inline constexpr int max_int(int a, int b) { return a > b ? a : b; }

struct Grid {
  static constexpr uint64_t kHiMask = (uint64_t{1} << 36) - 1;  // cells 64..99

  uint64_t lo = 0;
  uint64_t hi = 0;

  REDLINE_HD bool test(int k) const {
    return k < 64 ? ((lo >> k) & 1u) != 0 : ((hi >> (k - 64)) & 1u) != 0;
  }
  REDLINE_HD bool test(int y, int x) const { return test(cell(y, x)); }
  REDLINE_HD void set(int k) {
    if (k < 64) {
      lo |= uint64_t{1} << k;
    } else {
      hi |= uint64_t{1} << (k - 64);
    }
  }
  REDLINE_HD void set(int y, int x) { set(cell(y, x)); }
  // Sets (y, x) only when it is on the grid.
  REDLINE_HD void set_if_inside(int y, int x) {
    if (y >= 0 && y < kGridSize && x >= 0 && x < kGridSize) set(cell(y, x));
  }
  REDLINE_HD bool any() const { return (lo | hi) != 0; }
  REDLINE_HD int count() const { return popcount64(lo) + popcount64(hi); }

  REDLINE_HD Grid operator&(const Grid& o) const { return Grid{lo & o.lo, hi & o.hi}; }
  REDLINE_HD Grid operator|(const Grid& o) const { return Grid{lo | o.lo, hi | o.hi}; }
  REDLINE_HD Grid without(const Grid& o) const { return Grid{lo & ~o.lo, hi & ~o.hi}; }

  // Row r moves to row r + 1; row 9 is dropped.
  REDLINE_HD Grid shifted_down() const {
    return Grid{lo << 10, ((hi << 10) | (lo >> 54)) & kHiMask};
  }
  // Row r moves to row r - 1; row 0 is dropped.
  REDLINE_HD Grid shifted_up() const { return Grid{(lo >> 10) | (hi << 54), hi >> 10}; }
  // Every cell moves one column left (x - 1). Cells in column 0 would land in the row above,
  // so callers only shift grids whose column 0 is empty.
  REDLINE_HD Grid shifted_left() const { return Grid{(lo >> 1) | (hi << 63), hi >> 1}; }
  // Every cell moves one column right (x + 1); callers guarantee column 9 is empty.
  REDLINE_HD Grid shifted_right() const {
    return Grid{lo << 1, ((hi << 1) | (lo >> 63)) & kHiMask};
  }
  // The ten bits of row y, bit x for column x.
  REDLINE_HD uint32_t row_bits(int y) const {
    const int k = y * 10;
    if (k + 10 <= 64) return static_cast<uint32_t>(lo >> k) & 0x3FFu;
    if (k >= 64) return static_cast<uint32_t>(hi >> (k - 64)) & 0x3FFu;
    return static_cast<uint32_t>((lo >> k) | (hi << (64 - k))) & 0x3FFu;  // row 6: cells 60..69
  }
  // Four consecutive cells k..k+3 (k a multiple of 4) as the low bits of the result.
  REDLINE_HD uint32_t nibble(int k) const {
    return static_cast<uint32_t>(k < 64 ? (lo >> k) : (hi >> (k - 64))) & 0xFu;
  }
};

// Rows y0..y1 (inclusive), columns x0..x1 (inclusive) set.
REDLINE_HD inline constexpr Grid grid_block(int y0, int y1, int x0, int x1) {
  Grid g;
  for (int y = y0; y <= y1; ++y) {
    for (int x = x0; x <= x1; ++x) {
      const int k = y * 10 + x;
      if (k < 64) {
        g.lo |= uint64_t{1} << k;
      } else {
        g.hi |= uint64_t{1} << (k - 64);
      }
    }
  }
  return g;
}

// Functions rather than constants: a namespace-scope constant is not visible to device code.
REDLINE_HD inline constexpr Grid column0_mask() { return grid_block(0, 9, 0, 0); }
REDLINE_HD inline constexpr Grid column9_mask() { return grid_block(0, 9, 9, 9); }
REDLINE_HD inline constexpr Grid row9_mask() { return grid_block(9, 9, 0, 9); }

// What one game step returns.
struct StepOutcome {
  int reward;
  bool terminal;
};

}  // namespace redline::rl
