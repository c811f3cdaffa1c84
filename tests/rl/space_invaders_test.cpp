// Scripted scenarios for each Space Invaders rule (spec section 4).
#include "rl/env/space_invaders.h"

#include <gtest/gtest.h>

#include "env_test_util.h"

namespace redline::rl {
namespace {

using SI = SpaceInvaders;

SI::State start() {
  SI::State s{};
  NoDrawRng rng;
  SI::reset(s, rng);
  return s;
}

struct Episode {
  int length = 0;
  int total = 0;
};

Episode run_constant(int action) {
  SI::State s = start();
  NoDrawRng rng;
  Episode e;
  bool terminal = false;
  while (!terminal && e.length < 1000) {
    const StepOutcome out = SI::step(s, action, true, rng);
    e.total += out.reward;
    terminal = out.terminal;
    ++e.length;
  }
  return e;
}

TEST(SpaceInvaders, ResetObservation) {
  const SI::State s = start();
  Grid g[SI::kChannels];
  SI::observe(s, g);
  EXPECT_EQ(g[0].count(), 1);
  EXPECT_EQ(g[1].count(), 24);
  EXPECT_EQ(g[2].count(), 24);
  EXPECT_EQ(g[3].count(), 0);
  EXPECT_EQ(g[4].count(), 0);
  EXPECT_EQ(g[5].count(), 0);
}

// Spec 4.6: the constant-action episodes of the original.
TEST(SpaceInvaders, ConstantActionEpisodes) {
  const Episode noop = run_constant(kNoop);
  EXPECT_EQ(noop.length, 17);
  EXPECT_EQ(noop.total, 0);
  const Episode fire = run_constant(kFire);
  EXPECT_EQ(fire.length, 18);
  EXPECT_EQ(fire.total, 3);
  EXPECT_EQ(run_constant(kLeft).length, 37);
  EXPECT_EQ(run_constant(kRight).length, 96);
}

TEST(SpaceInvaders, FirstAlienShotAndItsPath) {
  SI::State s = start();
  NoDrawRng rng;
  for (int t = 1; t <= 10; ++t) SI::step(s, kNoop, true, rng);
  EXPECT_FALSE(s.enemy.any());
  SI::step(s, kNoop, true, rng);  // step 11: the shooter is the lowest alien of column 5
  EXPECT_TRUE(s.enemy.test(3, 5));
  EXPECT_EQ(s.enemy.count(), 1);
  SI::step(s, kNoop, true, rng);
  EXPECT_TRUE(s.enemy.test(4, 5));
}

TEST(SpaceInvaders, AliensMoveEveryIntervalAndReverseAtTheEdge) {
  SI::State s = start();
  NoDrawRng rng;
  for (int t = 1; t <= 12; ++t) SI::step(s, kLeft, true, rng);
  EXPECT_TRUE(s.aliens.test(0, 2));  // not moved yet
  s.pos = 9;
  s.enemy = Grid{};
  SI::step(s, kNoop, true, rng);  // step 13: first move, one column left
  EXPECT_TRUE(s.aliens.test(0, 1));
  EXPECT_FALSE(s.aliens.test(0, 7));
  EXPECT_EQ(s.alien_move_timer, 11);  // min(24, 12) reloaded then decremented
  // Put the wave against the left wall: the next move steps down and reverses.
  s.aliens = grid_block(0, 3, 0, 5);
  s.alien_move_timer = 0;
  s.alien_dir = -1;
  s.enemy = Grid{};
  SI::step(s, kNoop, true, rng);
  EXPECT_EQ(s.alien_dir, 1);
  EXPECT_TRUE(s.aliens.test(4, 0));
  EXPECT_FALSE(s.aliens.test(0, 0));
}

TEST(SpaceInvaders, LoneAlienMovesEveryStep) {
  SI::State s = start();
  s.aliens = Grid{};
  s.aliens.set(2, 5);
  s.alien_move_timer = 0;
  s.alien_shot_timer = 100;
  NoDrawRng rng;
  for (int t = 0; t < 3; ++t) SI::step(s, kNoop, true, rng);
  EXPECT_TRUE(s.aliens.test(2, 2));  // min(1, interval) = 1: one column per step
}

TEST(SpaceInvaders, FireCooldownAndKill) {
  SI::State s = start();
  s.alien_shot_timer = 100;
  NoDrawRng rng;
  SI::step(s, kFire, true, rng);
  EXPECT_TRUE(s.friendly.test(8, 5));  // fired at row 9, moved up in the same step
  EXPECT_EQ(s.shot_timer, 4);
  SI::step(s, kFire, true, rng);  // cooling down: no new bullet
  EXPECT_EQ(s.friendly.count(), 1);
  int total = 0;
  for (int t = 0; t < 6; ++t) total += SI::step(s, kNoop, true, rng).reward;
  EXPECT_EQ(total, 1);  // the bullet reaches the lowest alien of column 5 (row 3)
  EXPECT_EQ(s.aliens.count(), 23);
  EXPECT_FALSE(s.friendly.any());
}

TEST(SpaceInvaders, WaveRefillRampsWhenOn) {
  for (const bool ramping : {true, false}) {
    SI::State s = start();
    s.aliens = Grid{};
    s.aliens.set(7, 5);
    s.friendly.set(8, 5);  // moves into the alien this step
    s.alien_move_timer = 5;
    s.alien_shot_timer = 5;
    NoDrawRng rng;
    const StepOutcome out = SI::step(s, kNoop, ramping, rng);
    EXPECT_EQ(out.reward, 1);
    EXPECT_EQ(s.aliens.count(), 24);  // refilled
    EXPECT_EQ(s.move_interval, ramping ? 11 : 12);
    EXPECT_EQ(s.ramp_index, ramping ? 1 : 0);
    EXPECT_EQ(s.alien_move_timer, 4);  // timers keep running
  }
}

TEST(SpaceInvaders, ShooterSearchOrder) {
  Grid aliens;
  aliens.set(1, 3);
  aliens.set(4, 7);
  aliens.set(2, 7);
  // pos 5: columns 5, 4, 6, 3, 7, ...: column 3 comes before 7.
  EXPECT_EQ(SI::shooter_cell(aliens, 5), cell(1, 3));
  EXPECT_EQ(SI::shooter_cell(aliens, 6), cell(4, 7));  // lowest alien of column 7
}

}  // namespace
}  // namespace redline::rl
