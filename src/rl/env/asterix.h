// MinAtar Asterix rules (spec section 6), written once for the CPU and the GPU.
#pragma once

#include <cstdint>

#include "rl/env/grid.h"

namespace redline::rl {

struct Asterix {
  static constexpr int kChannels = 4;  // player, enemy, trail, gold
  static constexpr int kNumMinimalActions = 5;
  REDLINE_HD static constexpr int minimal_action(int i) { return i; }  // n, l, u, r, d
  static constexpr int kRampInterval = 100;
  static constexpr int kInitialSpawnInterval = 10;
  static constexpr int kInitialMoveInterval = 5;
  static constexpr int kSlots = 8;  // slot i is row i + 1

  // Slot flags.
  static constexpr uint8_t kPresent = 1, kMovesRight = 2, kGold = 4;

  struct State {
    int8_t slot_x[kSlots];
    uint8_t slot_flags[kSlots];
    int8_t player_x, player_y, spawn_interval, spawn_timer;
    int8_t move_interval, move_timer, ramp_timer, ramp_index;
    uint8_t terminal;
    uint8_t pad[7];
  };

  template <typename Rng>
  REDLINE_HD static void reset(State& s, Rng& /*rng*/) {
    for (int i = 0; i < kSlots; ++i) {
      s.slot_x[i] = 0;
      s.slot_flags[i] = 0;
    }
    s.player_x = 5;
    s.player_y = 5;
    s.spawn_interval = kInitialSpawnInterval;
    s.spawn_timer = kInitialSpawnInterval;
    s.move_interval = kInitialMoveInterval;
    s.move_timer = kInitialMoveInterval;
    s.ramp_timer = kRampInterval;
    s.ramp_index = 0;
    s.terminal = 0;
    for (int i = 0; i < 7; ++i) s.pad[i] = 0;
  }

  template <typename Rng>
  REDLINE_HD static void spawn(State& s, Rng& rng) {
    const bool moves_right = rng.uniform_double() < 0.5;
    const bool gold = rng.uniform_double() < 1.0 / 3.0;
    int free = 0;
    for (int i = 0; i < kSlots; ++i) free += (s.slot_flags[i] & kPresent) ? 0 : 1;
    if (free == 0) return;
    int k = rng.randint(0, free);
    for (int i = 0; i < kSlots; ++i) {
      if (s.slot_flags[i] & kPresent) continue;
      if (k-- == 0) {
        s.slot_x[i] = moves_right ? 0 : 9;
        s.slot_flags[i] =
            static_cast<uint8_t>(kPresent | (moves_right ? kMovesRight : 0) | (gold ? kGold : 0));
        return;
      }
    }
  }

  template <typename Rng>
  REDLINE_HD static StepOutcome step(State& s, int action, bool ramping, Rng& rng) {
    if (s.terminal) return {0, true};
    int reward = 0;
    if (s.spawn_timer == 0) {
      spawn(s, rng);
      s.spawn_timer = s.spawn_interval;
    }
    int px = s.player_x, py = s.player_y;
    if (action == kLeft) px = max_int(0, px - 1);
    if (action == kRight) px = min_int(9, px + 1);
    if (action == kUp) py = max_int(1, py - 1);
    if (action == kDown) py = min_int(8, py + 1);
    s.player_x = static_cast<int8_t>(px);
    s.player_y = static_cast<int8_t>(py);

    for (int i = 0; i < kSlots; ++i) {
      if ((s.slot_flags[i] & kPresent) && s.slot_x[i] == px && i + 1 == py) {
        if (s.slot_flags[i] & kGold) {
          s.slot_flags[i] = 0;
          reward += 1;
        } else {
          s.terminal = 1;
        }
      }
    }
    if (s.move_timer == 0) {
      s.move_timer = s.move_interval;
      for (int i = 0; i < kSlots; ++i) {
        if (!(s.slot_flags[i] & kPresent)) continue;
        const int x = s.slot_x[i] + ((s.slot_flags[i] & kMovesRight) ? 1 : -1);
        if (x < 0 || x > 9) {
          s.slot_flags[i] = 0;
          continue;
        }
        s.slot_x[i] = static_cast<int8_t>(x);
        if (x == px && i + 1 == py) {
          if (s.slot_flags[i] & kGold) {
            s.slot_flags[i] = 0;
            reward += 1;
          } else {
            s.terminal = 1;
          }
        }
      }
    }
    --s.spawn_timer;
    --s.move_timer;
    if (ramping && (s.spawn_interval > 1 || s.move_interval > 1)) {
      if (s.ramp_timer >= 0) {
        --s.ramp_timer;
      } else {
        if (s.move_interval > 1 && (s.ramp_index & 1)) --s.move_interval;
        if (s.spawn_interval > 1) --s.spawn_interval;
        ++s.ramp_index;
        s.ramp_timer = kRampInterval;
      }
    }
    return {reward, s.terminal != 0};
  }

  REDLINE_HD static void observe(const State& s, Grid* out) {
    Grid player, enemy, trail, gold;
    player.set(s.player_y, s.player_x);
    for (int i = 0; i < kSlots; ++i) {
      const uint8_t f = s.slot_flags[i];
      if (!(f & kPresent)) continue;
      const int x = s.slot_x[i];
      if (f & kGold) {
        gold.set(i + 1, x);
      } else {
        enemy.set(i + 1, x);
      }
      trail.set_if_inside(i + 1, (f & kMovesRight) ? x - 1 : x + 1);
    }
    out[0] = player;
    out[1] = enemy;
    out[2] = trail;
    out[3] = gold;
  }
};

}  // namespace redline::rl
