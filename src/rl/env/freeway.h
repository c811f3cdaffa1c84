// MinAtar Freeway rules (spec section 5), written once for the CPU and the GPU.
#pragma once

#include <cstdint>

#include "rl/env/grid.h"

namespace redline::rl {

struct Freeway {
  static constexpr int kChannels = 7;  // chicken, car, speed1..speed5
  static constexpr int kNumMinimalActions = 3;
  REDLINE_HD static constexpr int minimal_action(int i) {
    return i == 0 ? kNoop : (i == 1 ? kUp : kDown);
  }
  static constexpr int kMoveCooldown = 3;
  static constexpr int kTimeLimit = 2500;
  static constexpr int kCars = 8;
  static constexpr int kChickenColumn = 4;

  // Car i lives in row i + 1. v: signed speed class (|v| in 1..5, + moves right).
  struct State {
    int8_t car_x[kCars];
    int8_t car_timer[kCars];
    int8_t car_v[kCars];
    int16_t time_left;
    int8_t chicken_row, move_cooldown;
    uint8_t terminal;
    uint8_t pad[3];
  };

  // 8 integers in [1, 6), then 8 doubles (spec 5.4). At reset the cars also go to column 0.
  template <typename Rng>
  REDLINE_HD static void randomize_cars(State& s, bool initial, Rng& rng) {
    int speed[kCars];
    for (int i = 0; i < kCars; ++i) speed[i] = rng.randint(1, 6);
    for (int i = 0; i < kCars; ++i) {
      const double u = rng.uniform_double();
      const int direction = u > 0.5 ? 1 : (u < 0.5 ? -1 : 0);
      const int v = speed[i] * direction;
      if (initial) s.car_x[i] = 0;
      s.car_timer[i] = static_cast<int8_t>(v < 0 ? -v : v);
      s.car_v[i] = static_cast<int8_t>(v);
    }
  }

  template <typename Rng>
  REDLINE_HD static void reset(State& s, Rng& rng) {
    randomize_cars(s, true, rng);
    s.chicken_row = 9;
    s.move_cooldown = kMoveCooldown;
    s.time_left = kTimeLimit;
    s.terminal = 0;
    s.pad[0] = s.pad[1] = s.pad[2] = 0;
  }

  template <typename Rng>
  REDLINE_HD static StepOutcome step(State& s, int action, bool /*ramping*/, Rng& rng) {
    if (s.terminal) return {0, true};
    int reward = 0;
    int row = s.chicken_row;
    if (action == kUp && s.move_cooldown == 0) {
      s.move_cooldown = kMoveCooldown;
      row = max_int(0, row - 1);
    } else if (action == kDown && s.move_cooldown == 0) {
      s.move_cooldown = kMoveCooldown;
      row = min_int(9, row + 1);
    }
    if (row == 0) {
      reward += 1;
      randomize_cars(s, false, rng);
      row = 9;
    }
    for (int i = 0; i < kCars; ++i) {
      if (s.car_x[i] == kChickenColumn && row == i + 1) row = 9;
      if (s.car_timer[i] == 0) {
        const int v = s.car_v[i];
        s.car_timer[i] = static_cast<int8_t>(v < 0 ? -v : v);
        int x = s.car_x[i] + (v > 0 ? 1 : -1);
        x = x < 0 ? 9 : (x > 9 ? 0 : x);
        s.car_x[i] = static_cast<int8_t>(x);
        if (x == kChickenColumn && row == i + 1) row = 9;
      } else {
        --s.car_timer[i];
      }
    }
    s.chicken_row = static_cast<int8_t>(row);
    if (s.move_cooldown > 0) --s.move_cooldown;
    --s.time_left;
    if (s.time_left < 0) s.terminal = 1;
    return {reward, s.terminal != 0};
  }

  REDLINE_HD static void observe(const State& s, Grid* out) {
    Grid chicken, car, speed1, speed2, speed3, speed4, speed5, speed0;
    chicken.set(s.chicken_row, kChickenColumn);
    for (int i = 0; i < kCars; ++i) {
      const int x = s.car_x[i];
      const int v = s.car_v[i];
      car.set(i + 1, x);
      int trail = v > 0 ? x - 1 : x + 1;
      trail = trail < 0 ? 9 : (trail > 9 ? 0 : trail);
      const int k = cell(i + 1, trail);
      switch (v < 0 ? -v : v) {
        case 1:
          speed1.set(k);
          break;
        case 2:
          speed2.set(k);
          break;
        case 3:
          speed3.set(k);
          break;
        case 4:
          speed4.set(k);
          break;
        case 5:
          speed5.set(k);
          break;
        default:
          speed0.set(k);
          break;  // v = 0 (probability 2^-53): channel 1 + 0, the car channel
      }
    }
    out[0] = chicken;
    out[1] = car | speed0;
    out[2] = speed1;
    out[3] = speed2;
    out[4] = speed3;
    out[5] = speed4;
    out[6] = speed5;
  }
};

}  // namespace redline::rl
