// Helpers shared by the environment tests.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

// FNV-1a 64-bit over the observation as bytes in the original's order [y][x][c] (the digest of
// specs/minatar_reference_trajectories.json), from our (C, 10, 10) layout.
inline std::string observation_digest(const std::vector<uint8_t>& chw, int channels) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (int y = 0; y < 10; ++y) {
    for (int x = 0; x < 10; ++x) {
      for (int c = 0; c < channels; ++c) {
        h ^= chw[static_cast<size_t>(c) * 100 + y * 10 + x];
        h *= 0x100000001b3ull;
      }
    }
  }
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(h));
  return text;
}

#include <deque>
#include <stdexcept>

// A random source that returns scripted values (tests of spawn rules) and fails loudly when a
// rule draws more than the script holds.
struct ScriptedRng {
  std::deque<double> doubles;
  std::deque<int> ints;
  int doubles_drawn = 0;
  int ints_drawn = 0;

  uint32_t next_u32() { throw std::logic_error("ScriptedRng: unexpected raw draw"); }
  double uniform_double() {
    if (doubles.empty()) throw std::logic_error("ScriptedRng: no scripted double left");
    const double u = doubles.front();
    doubles.pop_front();
    ++doubles_drawn;
    return u;
  }
  int randint(int low, int high) {
    if (high - low == 1) return low;  // like numpy: a one-value range consumes nothing
    if (ints.empty()) throw std::logic_error("ScriptedRng: no scripted integer left");
    const int v = ints.front();
    ints.pop_front();
    if (v < low || v >= high) throw std::logic_error("ScriptedRng: scripted integer out of range");
    ++ints_drawn;
    return v;
  }
};

// A random source for deterministic games: any draw is a test failure.
struct NoDrawRng {
  uint32_t next_u32() { throw std::logic_error("NoDrawRng: unexpected draw"); }
  double uniform_double() { throw std::logic_error("NoDrawRng: unexpected draw"); }
  int randint(int, int) { throw std::logic_error("NoDrawRng: unexpected draw"); }
};

#include "redline/core/tensor.h"

// Host copy of a bool tensor as bytes (std::vector<bool> has no data(), so Tensor::to_vector
// cannot produce it).
inline std::vector<uint8_t> to_flags(const redline::Tensor& t) {
  const redline::Tensor host = t.to(redline::Device::cpu()).contiguous();
  const bool* p = host.data<bool>();
  std::vector<uint8_t> out(static_cast<size_t>(host.numel()));
  for (size_t i = 0; i < out.size(); ++i) out[i] = p[i] ? 1 : 0;
  return out;
}
