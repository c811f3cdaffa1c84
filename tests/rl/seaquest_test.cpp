// Scripted scenarios for each Seaquest rule (spec section 7).
#include "rl/env/seaquest.h"

#include <gtest/gtest.h>

#include "env_test_util.h"
#include "rl/env/rng.h"

namespace redline::rl {
namespace {

using SQ = Seaquest;

SQ::State start() {
  SQ::State s{};
  NoDrawRng rng;
  SQ::reset(s, rng);
  // No spawns unless a test asks for them.
  s.enemy_spawn_timer = 120;
  s.diver_spawn_timer = 120;
  return s;
}

void add_enemy(SQ::State& s, int x, int y, bool right, bool sub, int move_timer, int shot = 10) {
  SQ::Enemy& e = s.enemies[s.n_enemies++];
  e.x = static_cast<int8_t>(x);
  e.y = static_cast<int8_t>(y);
  e.flags = static_cast<uint8_t>((right ? SQ::kFlagRight : 0) | (sub ? SQ::kFlagSub : 0));
  SQ::set_timers(e, move_timer, sub ? shot : 0);
}

void add_diver(SQ::State& s, int x, int y, bool right, int move_timer) {
  SQ::Diver& d = s.divers[s.n_divers++];
  d.x = static_cast<int8_t>(x);
  d.y = static_cast<int8_t>(y);
  d.right = right ? 1 : 0;
  d.move_timer = static_cast<uint8_t>(move_timer);
}

TEST(Seaquest, ResetObservation) {
  SQ::State s{};
  NoDrawRng rng;
  SQ::reset(s, rng);
  Grid g[SQ::kChannels];
  SQ::observe(s, g);
  const int expected[SQ::kChannels] = {1, 1, 0, 0, 0, 0, 0, 10, 0, 0};
  for (int c = 0; c < SQ::kChannels; ++c) EXPECT_EQ(g[c].count(), expected[c]) << c;
  EXPECT_TRUE(g[1].test(0, 6));  // facing left: the back is to the right
}

TEST(Seaquest, StayingAtTheSurfaceIsSafeForever) {
  SQ::State s{};
  NoDrawRng none;
  SQ::reset(s, none);
  Mt19937Source rng(3);
  for (int t = 0; t < 3000; ++t) ASSERT_FALSE(SQ::step(s, kFire, true, rng).terminal) << t;
  EXPECT_EQ(s.oxygen, 200);
}

TEST(Seaquest, OxygenRunsOutAfter200SubmergedSteps) {
  SQ::State s = start();
  NoDrawRng rng;
  SQ::step(s, kDown, true, rng);
  EXPECT_EQ(s.oxygen, 199);
  Grid g[SQ::kChannels];
  SQ::observe(s, g);
  EXPECT_EQ(g[7].count(), 9);  // floor(199 / 20)
  for (int t = 2; t <= 200; ++t) {
    s.enemy_spawn_timer = s.diver_spawn_timer = 100;  // keep the sea empty
    ASSERT_FALSE(SQ::step(s, kNoop, true, rng).terminal) << t;
  }
  EXPECT_EQ(s.oxygen, 0);
  SQ::observe(s, g);
  EXPECT_EQ(g[7].count(), 0);
  EXPECT_TRUE(SQ::step(s, kUp, true, rng).terminal);  // even when surfacing in that step
}

TEST(Seaquest, SurfacingWithoutDiversEndsTheEpisode) {
  SQ::State s = start();
  NoDrawRng rng;
  SQ::step(s, kDown, true, rng);
  const StepOutcome out = SQ::step(s, kUp, true, rng);
  EXPECT_TRUE(out.terminal);
}

TEST(Seaquest, DiverPickupAndSurfacingRefillsAndRamps) {
  SQ::State s = start();
  NoDrawRng rng;
  add_diver(s, 5, 1, false, 3);
  SQ::step(s, kDown, true, rng);  // the sub moves onto the diver
  EXPECT_EQ(s.diver_count, 1);
  EXPECT_EQ(s.n_divers, 0);
  Grid g[SQ::kChannels];
  SQ::observe(s, g);
  EXPECT_TRUE(g[8].test(9, 8));  // diver gauge: one cell ending at column 8
  for (int t = 0; t < 5; ++t) SQ::step(s, kNoop, true, rng);
  const StepOutcome out = SQ::step(s, kUp, true, rng);
  EXPECT_FALSE(out.terminal);
  EXPECT_EQ(out.reward, 0);
  EXPECT_EQ(s.oxygen, 200);
  EXPECT_EQ(s.diver_count, 0);
  EXPECT_EQ(s.enemy_spawn_interval, 19);
  EXPECT_EQ(s.move_interval, 5);
  EXPECT_EQ(s.ramp_index, 1);
}

TEST(Seaquest, SixDiversGiveTheOxygenBonusAndANegativeCount) {
  SQ::State s = start();
  NoDrawRng rng;
  s.sub_y = 3;
  s.surfaced = 0;
  s.diver_count = 6;
  s.oxygen = 157;
  s.sub_y = 1;
  const StepOutcome out = SQ::step(s, kUp, true, rng);
  EXPECT_FALSE(out.terminal);
  EXPECT_EQ(out.reward, 7);  // floor(157 * 10 / 200)
  EXPECT_EQ(s.diver_count, -1);
  // Negative counts allow surfacing again.
  SQ::step(s, kDown, true, rng);
  EXPECT_FALSE(SQ::step(s, kUp, true, rng).terminal);
  EXPECT_EQ(s.diver_count, -2);
  Grid g[SQ::kChannels];
  SQ::observe(s, g);
  EXPECT_EQ(g[8].count(), 0);
}

TEST(Seaquest, FullDiverCountPassesThrough) {
  SQ::State s = start();
  NoDrawRng rng;
  s.diver_count = 6;
  s.sub_y = 2;
  s.surfaced = 0;
  add_diver(s, 5, 2, true, 3);  // on the sub's cell
  SQ::step(s, kNoop, true, rng);
  EXPECT_EQ(s.n_divers, 1);
  EXPECT_EQ(s.diver_count, 6);
}

TEST(Seaquest, TorpedoKillsTheOldestFishBeforeAnySub) {
  SQ::State s = start();
  NoDrawRng rng;
  s.sub_y = 4;
  s.surfaced = 0;
  s.facing_right = 1;
  add_enemy(s, 6, 4, true, true, 3);   // sub, oldest
  add_enemy(s, 6, 4, true, false, 3);  // fish
  add_enemy(s, 6, 4, true, false, 4);  // fish, newer
  const StepOutcome out = SQ::step(s, kFire, true, rng);
  EXPECT_EQ(out.reward, 1);
  ASSERT_EQ(s.n_enemies, 2);
  EXPECT_TRUE(s.enemies[0].flags & SQ::kFlagSub);
  EXPECT_EQ(SQ::move_timer_of(s.enemies[1]), 3);  // the newer fish (timer 4 -> 3) remains
  EXPECT_EQ(s.n_friendly, 0);
}

TEST(Seaquest, EnemyMovesEveryIntervalPlusOneAndShoots) {
  SQ::State s = start();
  NoDrawRng rng;
  s.sub_x = 0;
  s.sub_y = 8;
  s.surfaced = 0;
  s.oxygen = 200;
  add_enemy(s, 9, 2, false, true, 5, 10);
  std::vector<int> moves, shots;
  for (int t = 1; t <= 12; ++t) {
    const int x = s.enemies[0].x;
    const int bullets = s.n_enemy_bullets;
    SQ::step(s, kNoop, true, rng);
    if (s.enemies[0].x != x) moves.push_back(t);
    if (s.n_enemy_bullets > bullets) shots.push_back(t);
  }
  EXPECT_EQ(moves, (std::vector<int>{6, 12}));
  EXPECT_EQ(shots, (std::vector<int>{11}));
  // Fired from x 8 on step 11 and moved in the same step (7), then on step 12 (6).
  EXPECT_EQ(s.enemy_bullets[0].x, 6);
}

TEST(Seaquest, DeadSubStillShoots) {
  SQ::State s = start();
  NoDrawRng rng;
  s.sub_x = 0;
  s.sub_y = 8;
  s.surfaced = 0;
  add_enemy(s, 5, 3, false, true, 0, 0);                // moves to x 4 and shoots this step
  s.friendly[s.n_friendly++] = SQ::Bullet{3, 3, 1, 0};  // a torpedo moving right: to x 4 first
  const StepOutcome out = SQ::step(s, kNoop, true, rng);
  EXPECT_EQ(out.reward, 1);  // the sub moved onto the torpedo
  EXPECT_EQ(s.n_enemies, 0);
  ASSERT_EQ(s.n_enemy_bullets, 1);  // and still fired from its final cell
  EXPECT_EQ(s.enemy_bullets[0].y, 3);
}

TEST(Seaquest, EnemySpawnIsCancelledByOppositeTrafficButConsumesDraws) {
  SQ::State s = start();
  s.enemy_spawn_timer = 0;
  add_enemy(s, 3, 4, true, false, 5);
  ScriptedRng rng;
  rng.doubles = {0.9, 0.1};  // moving left, a sub
  rng.ints = {4};            // row 4: opposite direction to the fish there
  SQ::step(s, kNoop, true, rng);
  EXPECT_EQ(rng.doubles_drawn, 2);
  EXPECT_EQ(rng.ints_drawn, 1);
  EXPECT_EQ(s.n_enemies, 1);
  EXPECT_EQ(s.enemy_spawn_timer, 19);
  s.enemy_spawn_timer = 0;
  rng.doubles = {0.1, 0.1};  // moving right, a sub, same row: allowed
  rng.ints = {4};
  SQ::step(s, kNoop, true, rng);
  ASSERT_EQ(s.n_enemies, 2);
  EXPECT_EQ(s.enemies[1].x, 0);
  EXPECT_TRUE(s.enemies[1].flags & SQ::kFlagSub);
}

TEST(Seaquest, FirstSpawnsOnSteps21And31) {
  SQ::State s{};
  NoDrawRng none;
  SQ::reset(s, none);
  ScriptedRng rng;
  for (int t = 1; t <= 20; ++t) SQ::step(s, kNoop, true, rng);
  rng.doubles = {0.1, 0.9};
  rng.ints = {2};
  SQ::step(s, kNoop, true, rng);  // step 21: a fish in row 2
  EXPECT_EQ(s.n_enemies, 1);
  for (int t = 22; t <= 30; ++t) SQ::step(s, kNoop, true, rng);
  rng.doubles = {0.9};
  rng.ints = {7};
  SQ::step(s, kNoop, true, rng);  // step 31: a diver in row 7
  EXPECT_EQ(s.n_divers, 1);
  EXPECT_EQ(s.divers[0].x, 9);
}

}  // namespace
}  // namespace redline::rl
