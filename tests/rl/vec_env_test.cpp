// VecEnv on the CPU: shapes, reset state, determinism, auto-reset and episode statistics,
// truncation, minimal action sets, sticky actions, final observations and bad input.
#include "redline/rl/vec_env.h"

#include <gtest/gtest.h>

#include <random>

#include "env_test_util.h"
#include "redline/rl/reference_env.h"
#include "rl/env/driver.h"
#include "test_util.h"

namespace redline::rl {
namespace {

Tensor random_actions(std::mt19937& gen, int64_t n, int num_actions) {
  std::vector<int32_t> a(static_cast<size_t>(n));
  std::uniform_int_distribution<int> pick(0, num_actions - 1);
  for (auto& x : a) x = pick(gen);
  return Tensor::from_host(a, {n});
}

VecEnv make(Game game, int64_t n, Device device = Device::cpu()) {
  VecEnvOptions options;
  options.game = game;
  options.num_envs = n;
  options.device = device;
  return VecEnv(options);
}

TEST(VecEnv, ShapesAndDtypes) {
  for (Game game : kAllGames) {
    VecEnv env = make(game, 3);
    const Tensor& obs = env.reset(1);
    const StepResult& r = env.step(Tensor::zeros({3}, DType::i64));
    EXPECT_EQ(r.observation.storage(), obs.storage());
    if (is_minatar(game)) {
      EXPECT_EQ(obs.shape(), (Shape{3, game_channels(game), 10, 10}));
      EXPECT_EQ(obs.dtype(), DType::u8);
      EXPECT_EQ(env.num_actions(), 6);
    } else {
      EXPECT_EQ(obs.shape(), (Shape{3, 4}));
      EXPECT_EQ(obs.dtype(), DType::f32);
      EXPECT_EQ(env.num_actions(), 2);
    }
    EXPECT_EQ(r.reward.shape(), (Shape{3}));
    EXPECT_EQ(r.reward.dtype(), DType::f32);
    EXPECT_EQ(r.terminated.dtype(), DType::boolean);
    EXPECT_EQ(r.truncated.dtype(), DType::boolean);
    EXPECT_EQ(r.episode_return.dtype(), DType::f32);
    EXPECT_EQ(r.episode_length.dtype(), DType::i32);
    EXPECT_FALSE(r.final_observation.defined());
    EXPECT_EQ(env.name(), game_name(game));
  }
}

// Spec section 8: active cells per channel right after reset.
TEST(VecEnv, ResetObservationCounts) {
  const std::vector<std::pair<Game, std::vector<int>>> expected = {
      {Game::breakout, {1, 1, 1, 30}},
      {Game::space_invaders, {1, 24, 24, 0, 0, 0}},
      {Game::asterix, {1, 0, 0, 0}},
      {Game::seaquest, {1, 1, 0, 0, 0, 0, 0, 10, 0, 0}},
  };
  for (const auto& [game, counts] : expected) {
    VecEnv env = make(game, 5);
    const std::vector<uint8_t> obs = env.reset(9).to_vector<uint8_t>();
    const int c = game_channels(game);
    for (int e = 0; e < 5; ++e) {
      for (int ch = 0; ch < c; ++ch) {
        int n = 0;
        for (int k = 0; k < 100; ++k) n += obs[(e * c + ch) * 100 + k];
        EXPECT_EQ(n, counts[ch]) << game_name(game) << " env " << e << " channel " << ch;
      }
    }
  }
  VecEnv freeway = make(Game::freeway, 5);
  const std::vector<uint8_t> obs = freeway.reset(9).to_vector<uint8_t>();
  for (int e = 0; e < 5; ++e) {
    int chicken = 0, cars = 0, trails = 0;
    for (int k = 0; k < 100; ++k) {
      chicken += obs[(e * 7 + 0) * 100 + k];
      cars += obs[(e * 7 + 1) * 100 + k];
      for (int ch = 2; ch < 7; ++ch) trails += obs[(e * 7 + ch) * 100 + k];
    }
    EXPECT_EQ(chicken, 1);
    EXPECT_EQ(cars, 8);
    EXPECT_EQ(trails, 8);
  }
}

TEST(VecEnv, SameSeedSameTrajectoryDifferentSeedDifferent) {
  for (Game game : kAllGames) {
    VecEnv a = make(game, 16), b = make(game, 16), c = make(game, 16);
    a.reset(5);
    b.reset(5);
    c.reset(6);
    std::mt19937 gen(2);
    bool differs = false;
    for (int t = 0; t < 200; ++t) {
      const Tensor actions = random_actions(gen, 16, a.num_actions());
      const StepResult& ra = a.step(actions);
      const StepResult& rb = b.step(actions);
      const StepResult& rc = c.step(actions);
      if (is_minatar(game)) {
        ASSERT_EQ(ra.observation.to_vector<uint8_t>(), rb.observation.to_vector<uint8_t>());
        differs |= ra.observation.to_vector<uint8_t>() != rc.observation.to_vector<uint8_t>();
      } else {
        ASSERT_EQ(ra.observation.to_vector<float>(), rb.observation.to_vector<float>());
        differs |= ra.observation.to_vector<float>() != rc.observation.to_vector<float>();
      }
      ASSERT_EQ(ra.reward.to_vector<float>(), rb.reward.to_vector<float>());
    }
    EXPECT_TRUE(differs) << game_name(game);
  }
}

// Rewards summed per environment between episode ends equal the reported return and length.
TEST(VecEnv, AutoResetReportsEpisodeReturnAndLength) {
  for (Game game : kAllGames) {
    const int64_t n = 32;
    VecEnv env = make(game, n);
    env.reset(21);
    std::mt19937 gen(3);
    std::vector<float> running(n, 0.0f);
    std::vector<int> steps(n, 0);
    int finished = 0;
    for (int t = 0; t < (game == Game::freeway ? 2600 : 400); ++t) {
      const StepResult& r = env.step(random_actions(gen, n, env.num_actions()));
      const auto reward = r.reward.to_vector<float>();
      const auto term = to_flags(r.terminated);
      const auto trunc = to_flags(r.truncated);
      const auto ret = r.episode_return.to_vector<float>();
      const auto len = r.episode_length.to_vector<int32_t>();
      for (int64_t i = 0; i < n; ++i) {
        running[i] += reward[i];
        steps[i] += 1;
        if (term[i] || trunc[i]) {
          ASSERT_EQ(ret[i], running[i]) << game_name(game);
          ASSERT_EQ(len[i], steps[i]) << game_name(game);
          if (game == Game::freeway) ASSERT_EQ(len[i], 2501);
          running[i] = 0.0f;
          steps[i] = 0;
          ++finished;
        } else {
          ASSERT_EQ(ret[i], 0.0f);
          ASSERT_EQ(len[i], 0);
        }
      }
    }
    EXPECT_GT(finished, 0) << game_name(game);
  }
}

TEST(VecEnv, MaxEpisodeStepsTruncatesNeverTerminates) {
  VecEnvOptions options;
  options.game = Game::seaquest;
  options.num_envs = 8;
  options.max_episode_steps = 25;
  VecEnv env(options);
  env.reset(4);
  for (int t = 1; t <= 50; ++t) {
    const StepResult& r = env.step(Tensor::zeros({8}, DType::i32));  // no-op: never terminal
    const auto trunc = to_flags(r.truncated);
    const auto term = to_flags(r.terminated);
    for (int i = 0; i < 8; ++i) {
      EXPECT_FALSE(term[i]);
      EXPECT_EQ(trunc[i], t % 25 == 0) << t;
    }
  }
}

TEST(VecEnv, FinalObservationIsTheLastOfTheEndedEpisode) {
  VecEnvOptions options;
  options.game = Game::breakout;
  options.num_envs = 4;
  options.keep_final_observation = true;
  options.sticky_action_prob = 0.0;
  VecEnv env(options);
  env.reset(8);
  bool seen = false;
  for (int t = 0; t < 40 && !seen; ++t) {
    const StepResult& r = env.step(Tensor::zeros({4}, DType::i32));
    const auto term = to_flags(r.terminated);
    const auto fin = r.final_observation.to_vector<uint8_t>();
    const auto obs = r.observation.to_vector<uint8_t>();
    for (int i = 0; i < 4; ++i) {
      if (!term[i]) continue;
      seen = true;
      int ball_row = -1, new_ball_row = -1;
      for (int k = 0; k < 100; ++k) {
        if (fin[(i * 4 + 1) * 100 + k]) ball_row = k / 10;
        if (obs[(i * 4 + 1) * 100 + k]) new_ball_row = k / 10;
      }
      EXPECT_EQ(ball_row, 9);      // the terminal observation shows the ball in row 9
      EXPECT_EQ(new_ball_row, 3);  // the returned one is the new episode's
    }
  }
  EXPECT_TRUE(seen);
}

TEST(VecEnv, MinimalActionSetMapsIndices) {
  EXPECT_EQ(minimal_action_set(Game::breakout), (std::vector<int>{0, 1, 3}));
  EXPECT_EQ(minimal_action_set(Game::space_invaders), (std::vector<int>{0, 1, 3, 5}));
  EXPECT_EQ(minimal_action_set(Game::freeway), (std::vector<int>{0, 2, 4}));
  EXPECT_EQ(minimal_action_set(Game::asterix), (std::vector<int>{0, 1, 2, 3, 4}));
  EXPECT_EQ(minimal_action_set(Game::seaquest), (std::vector<int>{0, 1, 2, 3, 4, 5}));
  VecEnvOptions options;
  options.game = Game::breakout;
  options.num_envs = 1;
  options.minimal_action_set = true;
  options.sticky_action_prob = 0.0;
  VecEnv env(options);
  EXPECT_EQ(env.num_actions(), 3);
  env.reset(1);
  const auto paddle_column = [&](const Tensor& obs) {
    const auto v = obs.to_vector<uint8_t>();
    for (int x = 0; x < 10; ++x) {
      if (v[90 + x]) return x;
    }
    return -1;
  };
  env.step(Tensor::from_host<int32_t>({2}, {1}));  // minimal index 2 = raw 3 = right
  EXPECT_EQ(paddle_column(env.step(Tensor::from_host<int32_t>({2}, {1})).observation), 6);
  EXPECT_EQ(paddle_column(env.step(Tensor::from_host<int32_t>({1}, {1})).observation), 5);
  EXPECT_THROW(env.step(Tensor::from_host<int32_t>({3}, {1})), Error);
}

// Sticky actions: with p = 1 every step repeats the first action ever taken (no-op);
// with p = 0 actions are taken as given.
TEST(VecEnv, StickyActions) {
  for (const double p : {0.0, 1.0}) {
    VecEnvOptions options;
    options.game = Game::space_invaders;
    options.num_envs = 1;
    options.sticky_action_prob = p;
    VecEnv env(options);
    env.reset(1);
    const auto v = env.step(Tensor::from_host<int32_t>({1}, {1})).observation.to_vector<uint8_t>();
    EXPECT_EQ(v[95], p == 0.0 ? 0 : 1);  // cannon at column 5 unless the left press stuck to no-op
    EXPECT_EQ(v[94], p == 0.0 ? 1 : 0);
  }
  // The original's wrapper: the last executed action survives reset().
  ReferenceMinAtar env(Game::breakout, 1, 1.0);
  EXPECT_EQ(env.act(kLeft).executed_action, kNoop);
  ReferenceMinAtar free_env(Game::breakout, 1, 0.0);
  EXPECT_EQ(free_env.act(kLeft).executed_action, kLeft);
  free_env.reset();
  ReferenceMinAtar half(Game::breakout, 1, 0.5);
  int repeats = 0;
  for (int t = 0; t < 2000; ++t)
    repeats += half.act(t % 2 ? kLeft : kRight).executed_action == (t % 2 ? kRight : kLeft);
  EXPECT_GT(repeats, 580);  // stationary mismatch rate 1/3 for alternating actions
  EXPECT_LT(repeats, 750);
}

TEST(VecEnv, DifficultyRampingSwitch) {
  // Slot-level check through the shared driver: Asterix ramps at step 102 only when on.
  for (const bool ramping : {true, false}) {
    Slot<Asterix> slot{};
    PhiloxSource rng(1, 0, 0);
    env_init(slot, rng);
    EnvParams params;
    params.difficulty_ramping = ramping;
    params.sticky_action_prob = 0.0;
    int t = 0;
    for (; t < 102 && !slot.game.terminal; ++t) env_step(slot, kNoop, params, rng);
    if (t == 102) EXPECT_EQ(slot.game.spawn_interval, ramping ? 9 : 10);
  }
}

TEST(VecEnvErrors, OneClearSentenceEach) {
  const auto message = [](auto&& fn) {
    try {
      fn();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message([] { parse_game("pong"); }).find("unknown game 'pong'"), std::string::npos);
  EXPECT_NE(message([] { make(Game::breakout, 0); }).find("num_envs is 0"), std::string::npos);
  VecEnv env = make(Game::breakout, 4);
  EXPECT_NE(message([&] { env.step(Tensor::zeros({4}, DType::i32)); }).find("before reset"),
            std::string::npos);
  env.reset(0);
  const std::string bad = message([&] { env.step(Tensor::from_host<int32_t>({0, 1, 6, 2}, {4})); });
  EXPECT_NE(bad.find("action 6 for environment 2 is out of range"), std::string::npos) << bad;
  EXPECT_NE(message([&] {
              env.step(Tensor::from_host<int64_t>({0, -1, 0, 0}, {4}));
            }).find("action -1 for environment 1"),
            std::string::npos);
  EXPECT_NE(message([&] { env.step(Tensor::zeros({3}, DType::i32)); }).find("shape (3,)"),
            std::string::npos);
  EXPECT_NE(message([&] { env.step(Tensor::zeros({4}, DType::f32)); }).find("dtype f32"),
            std::string::npos);
  if (gpu_count() == 0) {
    const std::string no_gpu = message([] { make(Game::seaquest, 4, Device::gpu()); });
    EXPECT_NE(no_gpu.find("gpu"), std::string::npos) << no_gpu;
    EXPECT_EQ(no_gpu.find('\n'), std::string::npos);
  }
}

}  // namespace
}  // namespace redline::rl
