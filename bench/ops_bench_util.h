// Timing for the op benchmarks (bench/ops_*.cpp): warm-up, then the median of event-timed
// repeats on a GPU (wall clock on the CPU).
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <vector>

#include "redline/core/device.h"
#include "redline/core/stream.h"

namespace redline::bench {

// Median milliseconds of one call of fn (fn may run several iterations; pass `iterations`).
inline double median_ms(Device device, const std::function<void()>& fn, int iterations = 10,
                        int repeats = 7, int warmup = 3) {
  for (int i = 0; i < warmup; ++i) fn();
  Stream::current(device).synchronize();
  std::vector<double> times;
  for (int r = 0; r < repeats; ++r) {
    if (device.is_gpu()) {
      Event start(device), end(device);
      start.record();
      for (int i = 0; i < iterations; ++i) fn();
      end.record();
      times.push_back(end.elapsed_ms_since(start) / iterations);
    } else {
      const auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < iterations; ++i) fn();
      const auto t1 = std::chrono::steady_clock::now();
      times.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count() / iterations);
    }
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

inline bool has_flag(int argc, char** argv, const char* flag) {
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == flag) return true;
  }
  return false;
}

}  // namespace redline::bench
