// Scripted scenarios for each Asterix rule (spec section 6).
#include "rl/env/asterix.h"

#include <gtest/gtest.h>

#include "env_test_util.h"

namespace redline::rl {
namespace {

Asterix::State start() {
  Asterix::State s{};
  NoDrawRng rng;
  Asterix::reset(s, rng);
  return s;
}

int present(const Asterix::State& s) {
  int n = 0;
  for (int i = 0; i < Asterix::kSlots; ++i) n += (s.slot_flags[i] & Asterix::kPresent) ? 1 : 0;
  return n;
}

TEST(Asterix, FirstSpawnOnStep11IntoTheChosenFreeSlot) {
  Asterix::State s = start();
  ScriptedRng rng;
  for (int t = 1; t <= 10; ++t) Asterix::step(s, kNoop, true, rng);
  EXPECT_EQ(present(s), 0);
  rng.doubles = {0.7, 0.2};  // moves left, gold
  rng.ints = {2};            // third empty slot: row 3
  Asterix::step(s, kNoop, true, rng);
  ASSERT_EQ(present(s), 1);
  EXPECT_EQ(s.slot_flags[2], Asterix::kPresent | Asterix::kGold);
  EXPECT_EQ(s.slot_x[2], 8);    // spawned at 9 and moved at once: step 11 is a move step
  EXPECT_EQ(s.spawn_timer, 9);  // reloaded to 10, decremented
  Grid g[Asterix::kChannels];
  Asterix::observe(s, g);
  EXPECT_TRUE(g[3].test(3, 8));
  EXPECT_EQ(g[2].count(), 1);
  EXPECT_TRUE(g[2].test(3, 9));
}

TEST(Asterix, TrailOffTheGridIsOmitted) {
  Asterix::State s = start();
  s.slot_flags[0] = Asterix::kPresent;  // moving left at column 9: trail would be at x = 10
  s.slot_x[0] = 9;
  Grid g[Asterix::kChannels];
  Asterix::observe(s, g);
  EXPECT_EQ(g[1].count(), 1);
  EXPECT_EQ(g[2].count(), 0);
}

TEST(Asterix, SpawnWithAllSlotsFullConsumesOnlyTheTwoDoubles) {
  Asterix::State s = start();
  for (int i = 0; i < Asterix::kSlots; ++i) {
    s.slot_flags[i] = Asterix::kPresent | Asterix::kGold;
    s.slot_x[i] = 2;
  }
  s.spawn_timer = 0;
  s.move_timer = 3;
  ScriptedRng rng;
  rng.doubles = {0.1, 0.1};
  Asterix::step(s, kNoop, true, rng);
  EXPECT_EQ(rng.doubles_drawn, 2);
  EXPECT_EQ(rng.ints_drawn, 0);
}

TEST(Asterix, SingleFreeSlotDrawsNoInteger) {
  Asterix::State s = start();
  for (int i = 1; i < Asterix::kSlots; ++i) {
    s.slot_flags[i] = Asterix::kPresent | Asterix::kGold;
    s.slot_x[i] = 2;
  }
  s.spawn_timer = 0;
  s.move_timer = 3;
  ScriptedRng rng;
  rng.doubles = {0.1, 0.9};  // moves right, enemy
  Asterix::step(s, kNoop, true, rng);
  EXPECT_EQ(rng.ints_drawn, 0);
  EXPECT_EQ(s.slot_flags[0], Asterix::kPresent | Asterix::kMovesRight);
  EXPECT_EQ(s.slot_x[0], 0);
}

TEST(Asterix, GoldScoresEnemyKills) {
  Asterix::State s = start();
  NoDrawRng rng;
  s.slot_flags[4] = Asterix::kPresent | Asterix::kGold;  // row 5, the player's row
  s.slot_x[4] = 4;
  StepOutcome out = Asterix::step(s, kLeft, true, rng);  // player walks onto the gold
  EXPECT_EQ(out.reward, 1);
  EXPECT_FALSE(out.terminal);
  EXPECT_EQ(s.slot_flags[4], 0);
  s.slot_flags[3] = Asterix::kPresent;  // an enemy in row 4, moving left
  s.slot_x[3] = 4;
  out = Asterix::step(s, kUp, true, rng);
  EXPECT_TRUE(out.terminal);
  EXPECT_EQ(s.slot_flags[3], Asterix::kPresent);  // the enemy stays
}

TEST(Asterix, EntitiesMoveOnStep6ThenEveryInterval) {
  Asterix::State s = start();
  s.slot_flags[0] = Asterix::kPresent | Asterix::kMovesRight;
  s.slot_x[0] = 0;
  s.spawn_timer = 100;  // no spawn in this test
  NoDrawRng rng;
  std::vector<int> moves;
  for (int t = 1; t <= 10; ++t) {
    const int before = s.slot_x[0];
    Asterix::step(s, kNoop, true, rng);
    if (s.slot_x[0] != before) moves.push_back(t);
  }
  EXPECT_EQ(moves, (std::vector<int>{6}));  // step 6, then every move_interval = 5 steps
  EXPECT_EQ(s.slot_x[0], 1);
  Asterix::step(s, kNoop, true, rng);  // step 11
  EXPECT_EQ(s.slot_x[0], 2);
}

// Ramps on steps 102, 204, ...; after the 9th (step 918) both intervals are 1.
TEST(Asterix, DifficultyRampSchedule) {
  for (const bool ramping : {true, false}) {
    Asterix::State s = start();
    ScriptedRng rng;
    int last_spawn_interval = s.spawn_interval;
    std::vector<int> ramp_steps;
    for (int t = 1; t <= 1000; ++t) {
      // Every spawn: gold moving right (harmless).
      rng.doubles = {0.1, 0.1};
      rng.ints = {0, 0};
      Asterix::step(s, kNoop, ramping, rng);
      if (s.spawn_interval != last_spawn_interval) ramp_steps.push_back(t);
      last_spawn_interval = s.spawn_interval;
      if (t == 203) EXPECT_EQ(s.move_interval, 5);
      if (t == 204) EXPECT_EQ(s.move_interval, ramping ? 4 : 5);  // ramp k = 1 (odd index)
      if (t == 306) EXPECT_EQ(s.move_interval, ramping ? 4 : 5);
    }
    if (ramping) {
      std::vector<int> expected;
      for (int k = 1; k <= 9; ++k) expected.push_back(102 * k);
      EXPECT_EQ(ramp_steps, expected);
      EXPECT_EQ(s.spawn_interval, 1);
      EXPECT_EQ(s.move_interval, 1);
      EXPECT_EQ(s.ramp_index, 9);
    } else {
      EXPECT_TRUE(ramp_steps.empty());
      EXPECT_EQ(s.spawn_interval, 10);
      EXPECT_EQ(s.ramp_index, 0);
    }
  }
}

}  // namespace
}  // namespace redline::rl
