// Scripted scenarios for each Breakout rule (spec section 3).
#include "rl/env/breakout.h"

#include <gtest/gtest.h>

#include "env_test_util.h"

namespace redline::rl {
namespace {

using S = Breakout::State;

S start(int k) {
  ScriptedRng rng;
  rng.ints = {k};
  S s{};
  Breakout::reset(s, rng);
  EXPECT_EQ(rng.ints_drawn, 1);
  return s;
}

int count_channel(const S& s, int c) {
  Grid g[Breakout::kChannels];
  Breakout::observe(s, g);
  return g[c].count();
}

TEST(Breakout, ResetStateAndObservation) {
  const S left = start(0);
  EXPECT_EQ(left.ball_x, 0);
  EXPECT_EQ(left.ball_y, 3);
  EXPECT_EQ(left.ball_dir, 2);
  EXPECT_EQ(left.paddle_x, 4);
  const S right = start(1);
  EXPECT_EQ(right.ball_x, 9);
  EXPECT_EQ(right.ball_dir, 3);
  EXPECT_EQ(count_channel(left, 0), 1);
  EXPECT_EQ(count_channel(left, 1), 1);
  EXPECT_EQ(count_channel(left, 2), 1);
  EXPECT_EQ(count_channel(left, 3), 30);
}

// Spec 3.5: k = 1 with always no-op lasts 16 steps with return 1; k = 0 lasts 6 with return 0.
TEST(Breakout, AlwaysNoopEpisodes) {
  for (int k = 0; k < 2; ++k) {
    S s = start(k);
    NoDrawRng rng;
    int steps = 0, total = 0;
    bool terminal = false;
    while (!terminal && steps < 100) {
      const StepOutcome out = Breakout::step(s, kNoop, true, rng);
      total += out.reward;
      terminal = out.terminal;
      ++steps;
    }
    EXPECT_EQ(steps, k == 0 ? 6 : 16);
    EXPECT_EQ(total, k == 0 ? 0 : 1);
    EXPECT_EQ(s.ball_y, 9);  // the terminal observation shows the ball in row 9
    EXPECT_EQ(s.last_y, 8);
  }
}

TEST(Breakout, CornerBounceReversesBothComponentsInPlace) {
  S s = start(0);
  s.bricks = 0;
  s.ball_x = 0;
  s.ball_y = 0;
  s.ball_dir = 0;  // up-left in the top-left corner
  NoDrawRng rng;
  Breakout::step(s, kNoop, true, rng);
  EXPECT_EQ(s.ball_x, 0);
  EXPECT_EQ(s.ball_y, 0);
  EXPECT_EQ(s.ball_dir, 2);  // down-right
}

TEST(Breakout, SideWallMovesStraightAndFlipsHorizontally) {
  S s = start(0);
  s.ball_x = 9;
  s.ball_y = 6;
  s.ball_dir = 2;  // down-right into the right wall
  NoDrawRng rng;
  Breakout::step(s, kNoop, true, rng);
  EXPECT_EQ(s.ball_x, 9);
  EXPECT_EQ(s.ball_y, 7);
  EXPECT_EQ(s.ball_dir, 3);
}

TEST(Breakout, BrickHitScoresBouncesAndKeepsTheRow) {
  S s = start(0);
  s.ball_x = 4;
  s.ball_y = 4;
  s.ball_dir = 1;  // up-right: target (3, 5) holds a brick
  NoDrawRng rng;
  const StepOutcome out = Breakout::step(s, kNoop, true, rng);
  EXPECT_EQ(out.reward, 1);
  EXPECT_FALSE(Breakout::brick_at(s, 3, 5));
  EXPECT_EQ(s.ball_x, 5);
  EXPECT_EQ(s.ball_y, 4);
  EXPECT_EQ(s.ball_dir, 2);  // V: up-right -> down-right
  EXPECT_TRUE(s.strike);
  EXPECT_EQ(count_channel(s, 3), 29);
}

TEST(Breakout, DoubleHitIsSuppressed) {
  S s = start(0);
  s.ball_x = 4;
  s.ball_y = 4;
  s.ball_dir = 1;
  s.strike = 1;  // the previous step touched a brick
  NoDrawRng rng;
  const StepOutcome out = Breakout::step(s, kNoop, true, rng);
  EXPECT_EQ(out.reward, 0);
  EXPECT_TRUE(Breakout::brick_at(s, 3, 5));  // neither scored nor removed
  EXPECT_EQ(s.ball_x, 5);                    // and the ball overlaps it
  EXPECT_EQ(s.ball_y, 3);
  EXPECT_EQ(s.ball_dir, 1);
  EXPECT_TRUE(s.strike);
}

TEST(Breakout, StrikeClearsOnAStepWithoutBrick) {
  S s = start(0);
  s.ball_x = 4;
  s.ball_y = 6;
  s.ball_dir = 1;
  s.strike = 1;
  NoDrawRng rng;
  Breakout::step(s, kNoop, true, rng);
  EXPECT_FALSE(s.strike);
}

TEST(Breakout, PaddleUnderTheBallKeepsHorizontalDirection) {
  S s = start(0);
  s.ball_x = 4;
  s.ball_y = 8;
  s.ball_dir = 2;  // down-right, paddle at 4 under the ball
  NoDrawRng rng;
  const StepOutcome out = Breakout::step(s, kNoop, true, rng);
  EXPECT_FALSE(out.terminal);
  EXPECT_EQ(s.ball_dir, 1);  // up-right
  EXPECT_EQ(s.ball_x, 5);
  EXPECT_EQ(s.ball_y, 8);
}

TEST(Breakout, PaddleAtTheLandingColumnReversesHorizontally) {
  S s = start(0);
  s.ball_x = 3;
  s.ball_y = 8;
  s.ball_dir = 2;  // lands at column 4, where the paddle is
  NoDrawRng rng;
  const StepOutcome out = Breakout::step(s, kNoop, true, rng);
  EXPECT_FALSE(out.terminal);
  EXPECT_EQ(s.ball_dir, 0);  // up-left
  EXPECT_EQ(s.ball_x, 4);
  EXPECT_EQ(s.ball_y, 8);
}

TEST(Breakout, PaddleMovesBeforeTheBall) {
  S s = start(0);
  s.ball_x = 4;
  s.ball_y = 8;
  s.ball_dir = 2;  // lands at 5; moving the paddle right catches it at the landing column
  NoDrawRng rng;
  const StepOutcome out = Breakout::step(s, kRight, true, rng);
  EXPECT_FALSE(out.terminal);
  EXPECT_EQ(s.paddle_x, 5);
  EXPECT_EQ(s.ball_dir, 0);
}

TEST(Breakout, BricksRegenerateOnlyAtTheBottomTest) {
  S s = start(0);
  s.bricks = 0;
  s.ball_x = 6;
  s.ball_y = 7;
  s.ball_dir = 2;
  NoDrawRng rng;
  Breakout::step(s, kNoop, true, rng);  // to row 8: no refill yet
  EXPECT_EQ(s.bricks, 0u);
  const StepOutcome out = Breakout::step(s, kNoop, true, rng);  // bottom test, paddle missed
  EXPECT_TRUE(out.terminal);
  EXPECT_EQ(s.bricks, Breakout::kAllBricks);  // refilled even on the terminal step
}

TEST(Breakout, FinishedGameIsInert) {
  S s = start(0);
  s.terminal = 1;
  const S before = s;
  NoDrawRng rng;
  const StepOutcome out = Breakout::step(s, kLeft, true, rng);
  EXPECT_EQ(out.reward, 0);
  EXPECT_TRUE(out.terminal);
  EXPECT_EQ(s.paddle_x, before.paddle_x);
}

}  // namespace
}  // namespace redline::rl
