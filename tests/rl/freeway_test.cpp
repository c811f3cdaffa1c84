// Scripted scenarios for each Freeway rule (spec section 5).
#include "rl/env/freeway.h"

#include <gtest/gtest.h>

#include "env_test_util.h"
#include "rl/env/rng.h"

namespace redline::rl {
namespace {

// Cars 0..7 with speeds 1..5,1,2,3 and directions from doubles (> 0.5: right).
Freeway::State start(ScriptedRng& rng) {
  rng.ints = {1, 2, 3, 4, 5, 1, 2, 3};
  rng.doubles = {0.9, 0.1, 0.9, 0.1, 0.9, 0.1, 0.9, 0.1};
  Freeway::State s{};
  Freeway::reset(s, rng);
  EXPECT_EQ(rng.ints_drawn, 8);
  EXPECT_EQ(rng.doubles_drawn, 8);
  return s;
}

TEST(Freeway, ResetCarsAndObservation) {
  ScriptedRng rng;
  const Freeway::State s = start(rng);
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(s.car_x[i], 0);
    const int speed = (i % 5) + 1;
    EXPECT_EQ(s.car_v[i], i % 2 == 0 ? speed : -speed) << i;
    EXPECT_EQ(s.car_timer[i], speed);
  }
  Grid g[Freeway::kChannels];
  Freeway::observe(s, g);
  EXPECT_EQ(g[0].count(), 1);
  EXPECT_TRUE(g[0].test(9, 4));
  EXPECT_EQ(g[1].count(), 8);
  int trails = 0;
  for (int c = 2; c < 7; ++c) trails += g[c].count();
  EXPECT_EQ(trails, 8);
  EXPECT_TRUE(g[2].test(1, 9));  // car 0: speed 1 moving right from column 0: trail wraps to 9
  EXPECT_TRUE(g[3].test(2, 1));  // car 1: speed 2 moving left: trail at x + 1
}

TEST(Freeway, CarMovesEverySpeedPlusOneSteps) {
  ScriptedRng rng;
  Freeway::State s = start(rng);
  // Car 2: speed 3, moving right. Moves on steps 4, 8, 12.
  std::vector<int> moves;
  for (int t = 1; t <= 12; ++t) {
    const int before = s.car_x[2];
    Freeway::step(s, kNoop, true, rng);
    if (s.car_x[2] != before) moves.push_back(t);
  }
  EXPECT_EQ(moves, (std::vector<int>{4, 8, 12}));
  // Car 1: speed 2 moving left wraps from column 0 to 9 on step 3.
  ScriptedRng rng2;
  Freeway::State w = start(rng2);
  for (int t = 1; t <= 3; ++t) Freeway::step(w, kNoop, true, rng2);
  EXPECT_EQ(w.car_x[1], 9);
}

TEST(Freeway, CooldownLimitsMoves) {
  ScriptedRng rng;
  Freeway::State s = start(rng);
  for (int t = 1; t <= 3; ++t) Freeway::step(s, kUp, true, rng);
  EXPECT_EQ(s.chicken_row, 9);  // cool-down 3 from reset: first move on step 4
  Freeway::step(s, kUp, true, rng);
  EXPECT_EQ(s.chicken_row, 8);
  Freeway::step(s, kUp, true, rng);
  EXPECT_EQ(s.chicken_row, 8);
}

TEST(Freeway, CrossingScoresAndRerandomizesSpeedsNotPositions) {
  ScriptedRng rng;
  Freeway::State s = start(rng);
  for (int i = 0; i < 8; ++i) {
    s.car_x[i] = static_cast<int8_t>(i);
    s.car_timer[i] = 1;
  }
  s.car_x[0] = 7;  // keep column 4 of row 1 clear
  s.chicken_row = 1;
  s.move_cooldown = 0;
  rng.ints = {5, 5, 5, 5, 5, 5, 5, 5};
  rng.doubles = {0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1};
  const StepOutcome out = Freeway::step(s, kUp, true, rng);
  EXPECT_EQ(out.reward, 1);
  EXPECT_EQ(s.chicken_row, 9);
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(s.car_v[i], -5);
    EXPECT_EQ(s.car_timer[i], 4);  // reloaded to 5 then decremented this step
  }
  EXPECT_EQ(s.car_x[3], 3);  // positions kept
}

TEST(Freeway, CarHitSendsChickenBack) {
  ScriptedRng rng;
  Freeway::State s = start(rng);
  s.chicken_row = 5;  // row of car 4
  s.car_x[4] = 3;
  s.car_v[4] = 1;
  s.car_timer[4] = 0;  // moves right onto column 4 this step
  const StepOutcome out = Freeway::step(s, kNoop, true, rng);
  EXPECT_EQ(s.chicken_row, 9);
  EXPECT_FALSE(out.terminal);
  EXPECT_EQ(out.reward, 0);
}

TEST(Freeway, EveryEpisodeLasts2501Steps) {
  Mt19937Source rng(7);
  Freeway::State s{};
  Freeway::reset(s, rng);
  int steps = 0;
  bool terminal = false;
  while (!terminal && steps < 5000) {
    terminal = Freeway::step(s, rng.randint(0, 6), true, rng).terminal;
    ++steps;
  }
  EXPECT_EQ(steps, 2501);
}

}  // namespace
}  // namespace redline::rl
