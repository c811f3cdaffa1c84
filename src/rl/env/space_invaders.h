// MinAtar Space Invaders rules (spec section 4), written once for the CPU and the GPU.
#pragma once

#include <cstdint>

#include "rl/env/grid.h"

namespace redline::rl {

struct SpaceInvaders {
  static constexpr int kChannels =
      6;  // cannon, alien, alien_left, alien_right, f. bullet, e. bullet
  static constexpr int kNumMinimalActions = 4;
  REDLINE_HD static constexpr int minimal_action(int i) {
    return i == 0 ? kNoop : (i == 1 ? kLeft : (i == 2 ? kRight : kFire));
  }
  static constexpr int kShotCooldown = 5;
  static constexpr int kInitialMoveInterval = 12;
  static constexpr int kMinMoveInterval = 6;
  static constexpr int kAlienShotInterval = 10;
  REDLINE_HD static constexpr Grid wave() { return grid_block(0, 3, 2, 7); }

  struct State {
    Grid aliens, friendly, enemy;
    int8_t pos, alien_dir, move_interval, alien_move_timer;
    int8_t alien_shot_timer, shot_timer, ramp_index;
    uint8_t terminal;
  };

  template <typename Rng>
  REDLINE_HD static void reset(State& s, Rng& /*rng*/) {
    s.aliens = wave();
    s.friendly = Grid{};
    s.enemy = Grid{};
    s.pos = 5;
    s.alien_dir = -1;
    s.move_interval = kInitialMoveInterval;
    s.alien_move_timer = kInitialMoveInterval;
    s.alien_shot_timer = kAlienShotInterval;
    s.shot_timer = 0;
    s.ramp_index = 0;
    s.terminal = 0;
  }

  // The lowest alien of the first column with aliens, visiting columns by distance from pos
  // (ties: the smaller column first). Returns the cell, or -1 when there are no aliens.
  REDLINE_HD static int shooter_cell(const Grid& aliens, int pos) {
    for (int d = 0; d < 10; ++d) {
      for (int side = 0; side < 2; ++side) {
        if (d == 0 && side == 1) break;
        const int x = side == 0 ? pos - d : pos + d;
        if (x < 0 || x > 9) continue;
        for (int y = 9; y >= 0; --y) {
          if (aliens.test(y, x)) return cell(y, x);
        }
      }
    }
    return -1;
  }

  template <typename Rng>
  REDLINE_HD static StepOutcome step(State& s, int action, bool ramping, Rng& /*rng*/) {
    if (s.terminal) return {0, true};
    int reward = 0;
    bool terminal = false;
    int pos = s.pos;
    if (action == kFire && s.shot_timer == 0) {
      s.friendly.set(9, pos);
      s.shot_timer = kShotCooldown;
    } else if (action == kLeft) {
      pos = max_int(0, pos - 1);
    } else if (action == kRight) {
      pos = min_int(9, pos + 1);
    }
    s.pos = static_cast<int8_t>(pos);

    s.friendly = s.friendly.shifted_up();
    s.enemy = s.enemy.shifted_down();
    if (s.enemy.test(9, pos)) terminal = true;
    if (s.aliens.test(9, pos)) terminal = true;

    if (s.alien_move_timer == 0) {
      s.alien_move_timer = static_cast<int8_t>(min_int(s.aliens.count(), s.move_interval));
      const bool at_left = (s.aliens & column0_mask()).any();
      const bool at_right = (s.aliens & column9_mask()).any();
      if ((at_left && s.alien_dir == -1) || (at_right && s.alien_dir == 1)) {
        s.alien_dir = static_cast<int8_t>(-s.alien_dir);
        const Grid bottom = s.aliens & row9_mask();
        if (bottom.any()) terminal = true;
        Grid moved = s.aliens.shifted_down();
        moved.lo |= bottom.hi >> 26;  // row 9 (cells 90..99 = hi bits 26..35) wraps into row 0
        s.aliens = moved;
      } else {
        s.aliens = s.alien_dir < 0 ? s.aliens.shifted_left() : s.aliens.shifted_right();
      }
      if (s.aliens.test(9, pos)) terminal = true;
    }

    if (s.alien_shot_timer == 0) {
      s.alien_shot_timer = kAlienShotInterval;
      const int k = shooter_cell(s.aliens, pos);
      if (k >= 0) s.enemy.set(k);
    }

    const Grid kills = s.aliens & s.friendly;
    reward += kills.count();
    s.aliens = s.aliens.without(kills);
    s.friendly = s.friendly.without(kills);

    if (s.shot_timer > 0) --s.shot_timer;
    --s.alien_move_timer;
    --s.alien_shot_timer;

    if (!s.aliens.any()) {
      if (ramping && s.move_interval > kMinMoveInterval) {
        --s.move_interval;
        ++s.ramp_index;
      }
      s.aliens = wave();
    }
    if (terminal) s.terminal = 1;
    return {reward, s.terminal != 0};
  }

  REDLINE_HD static void observe(const State& s, Grid* out) {
    Grid cannon;
    cannon.set(9, s.pos);
    out[0] = cannon;
    out[1] = s.aliens;
    out[2] = s.alien_dir < 0 ? s.aliens : Grid{};
    out[3] = s.alien_dir > 0 ? s.aliens : Grid{};
    out[4] = s.friendly;
    out[5] = s.enemy;
  }
};

}  // namespace redline::rl
