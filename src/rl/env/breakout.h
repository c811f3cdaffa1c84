// MinAtar Breakout rules (spec section 3), written once for the CPU and the GPU.
#pragma once

#include <cstdint>

#include "rl/env/grid.h"

namespace redline::rl {

struct Breakout {
  static constexpr int kChannels = 4;  // paddle, ball, trail, brick
  static constexpr int kNumMinimalActions = 3;
  REDLINE_HD static constexpr int minimal_action(int i) {
    return i == 0 ? kNoop : (i == 1 ? kLeft : kRight);
  }
  // Bricks only ever exist in rows 1..3: bit (y - 1) * 10 + x.
  static constexpr uint32_t kAllBricks = (1u << 30) - 1;

  struct State {
    uint32_t bricks;
    int8_t ball_x, ball_y, ball_dir, paddle_x;
    int8_t last_x, last_y;
    uint8_t strike, terminal;
  };

  // Direction codes (spec 3.2): 0 up-left, 1 up-right, 2 down-right, 3 down-left.
  REDLINE_HD static int dir_dx(int dir) { return (dir == 1 || dir == 2) ? 1 : -1; }
  REDLINE_HD static int dir_dy(int dir) { return dir < 2 ? -1 : 1; }
  REDLINE_HD static int flip_h(int dir) { return dir ^ 1; }     // side wall
  REDLINE_HD static int flip_v(int dir) { return 3 - dir; }     // ceiling, brick, paddle below
  REDLINE_HD static int flip_both(int dir) { return dir ^ 2; }  // paddle at the landing column

  REDLINE_HD static bool brick_at(const State& s, int y, int x) {
    return y >= 1 && y <= 3 && ((s.bricks >> ((y - 1) * 10 + x)) & 1u) != 0;
  }

  template <typename Rng>
  REDLINE_HD static void reset(State& s, Rng& rng) {
    s.bricks = kAllBricks;
    s.ball_y = 3;
    const int k = rng.randint(0, 2);
    s.ball_x = k == 0 ? 0 : 9;
    s.ball_dir = k == 0 ? 2 : 3;
    s.paddle_x = 4;
    s.strike = 0;
    s.last_x = s.ball_x;
    s.last_y = s.ball_y;
    s.terminal = 0;
  }

  template <typename Rng>
  REDLINE_HD static StepOutcome step(State& s, int action, bool /*ramping*/, Rng& /*rng*/) {
    if (s.terminal) return {0, true};
    int reward = 0;
    int paddle = s.paddle_x;
    if (action == kLeft) paddle = max_int(0, paddle - 1);
    if (action == kRight) paddle = min_int(9, paddle + 1);
    s.paddle_x = static_cast<int8_t>(paddle);

    const int ball_x = s.ball_x;
    const int ball_y = s.ball_y;
    s.last_x = static_cast<int8_t>(ball_x);
    s.last_y = static_cast<int8_t>(ball_y);
    int dir = s.ball_dir;
    int nx = ball_x + dir_dx(dir);
    int ny = ball_y + dir_dy(dir);
    bool hit_brick_now = false;
    if (nx < 0 || nx > 9) {
      nx = nx < 0 ? 0 : 9;
      dir = flip_h(dir);
    }
    if (ny < 0) {
      ny = 0;
      dir = flip_v(dir);
    } else if (brick_at(s, ny, nx)) {
      hit_brick_now = true;
      if (!s.strike) {
        reward += 1;
        s.strike = 1;
        s.bricks &= ~(1u << ((ny - 1) * 10 + nx));
        ny = ball_y;
        dir = flip_v(dir);
      }
    } else if (ny == 9) {
      if (s.bricks == 0) s.bricks = kAllBricks;
      if (ball_x == paddle) {
        dir = flip_v(dir);
        ny = ball_y;
      } else if (nx == paddle) {
        dir = flip_both(dir);
        ny = ball_y;
      } else {
        s.terminal = 1;
      }
    }
    if (!hit_brick_now) s.strike = 0;
    s.ball_x = static_cast<int8_t>(nx);
    s.ball_y = static_cast<int8_t>(ny);
    s.ball_dir = static_cast<int8_t>(dir);
    return {reward, s.terminal != 0};
  }

  REDLINE_HD static void observe(const State& s, Grid* out) {
    Grid paddle, ball, trail, brick;
    paddle.set(9, s.paddle_x);
    ball.set(s.ball_y, s.ball_x);
    trail.set(s.last_y, s.last_x);
    // Rows 1..3 are cells 10..39, all in the low word.
    brick.lo = static_cast<uint64_t>(s.bricks) << 10;
    out[0] = paddle;
    out[1] = ball;
    out[2] = trail;
    out[3] = brick;
  }
};

}  // namespace redline::rl
