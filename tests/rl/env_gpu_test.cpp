// CPU and GPU trajectories must be identical, bit for bit: same seed, same random actions,
// thousands of environments, every output compared on every step. Skipped without a GPU.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <random>

#include "env_test_util.h"
#include "redline/rl/vec_env.h"
#include "test_util.h"

namespace redline::rl {
namespace {

struct ParityCase {
  Game game;
  int64_t num_envs;
  int steps;
  bool minimal;
  bool ramping;
  int64_t max_episode_steps;
  bool i64_actions;
};

void expect_same(const Tensor& cpu, const Tensor& gpu, const char* what, int t, Game game) {
  ASSERT_EQ(gpu.device(), Device::gpu());
  const Tensor back = gpu.to(Device::cpu());
  ASSERT_EQ(cpu.nbytes(), back.nbytes());
  const uint8_t* a = static_cast<const uint8_t*>(cpu.raw_data());
  const uint8_t* b = static_cast<const uint8_t*>(back.raw_data());
  for (size_t k = 0; k < cpu.nbytes(); ++k) {
    ASSERT_EQ(a[k], b[k]) << game_name(game) << ": " << what << " differs at byte " << k
                          << " after step " << t;
  }
}

void run_parity(const ParityCase& c) {
  VecEnvOptions options;
  options.game = c.game;
  options.num_envs = c.num_envs;
  options.minimal_action_set = c.minimal;
  options.difficulty_ramping = c.ramping;
  options.max_episode_steps = c.max_episode_steps;
  options.keep_final_observation = true;
  VecEnv cpu(options);
  options.device = Device::gpu();
  VecEnv gpu(options);
  expect_same(cpu.reset(1234), gpu.reset(1234), "reset observation", 0, c.game);
  std::mt19937 gen(static_cast<uint32_t>(c.game) * 7919 + 1);
  std::uniform_int_distribution<int> pick(0, cpu.num_actions() - 1);
  int64_t episodes = 0;
  double total_return = 0;
  for (int t = 1; t <= c.steps; ++t) {
    Tensor actions;
    if (c.i64_actions) {
      std::vector<int64_t> a(static_cast<size_t>(c.num_envs));
      for (auto& x : a) x = pick(gen);
      actions = Tensor::from_host(a, {c.num_envs});
    } else {
      std::vector<int32_t> a(static_cast<size_t>(c.num_envs));
      for (auto& x : a) x = pick(gen);
      actions = Tensor::from_host(a, {c.num_envs});
    }
    const StepResult& rc = cpu.step(actions);
    const StepResult& rg = gpu.step(actions.to(Device::gpu()));
    expect_same(rc.observation, rg.observation, "observation", t, c.game);
    expect_same(rc.reward, rg.reward, "reward", t, c.game);
    expect_same(rc.terminated, rg.terminated, "terminated", t, c.game);
    expect_same(rc.truncated, rg.truncated, "truncated", t, c.game);
    expect_same(rc.episode_return, rg.episode_return, "episode_return", t, c.game);
    expect_same(rc.episode_length, rg.episode_length, "episode_length", t, c.game);
    // Final observations are only defined in the rows of finished environments.
    const auto done_c = to_flags(rc.terminated), trunc_c = to_flags(rc.truncated);
    const Tensor fin_c = rc.final_observation, fin_g = rg.final_observation.to(Device::cpu());
    const int64_t row =
        fin_c.numel() / c.num_envs * static_cast<int64_t>(dtype_size(fin_c.dtype()));
    const auto returns = rc.episode_return.to_vector<float>();
    for (int64_t i = 0; i < c.num_envs; ++i) {
      if (!done_c[i] && !trunc_c[i]) continue;
      ++episodes;
      total_return += returns[i];
      ASSERT_EQ(0, std::memcmp(static_cast<const uint8_t*>(fin_c.raw_data()) + i * row,
                               static_cast<const uint8_t*>(fin_g.raw_data()) + i * row, row))
          << game_name(c.game) << ": final observation of env " << i << " at step " << t;
    }
    if (::testing::Test::HasFatalFailure()) return;
  }
  std::printf(
      "GPU parity %-14s N=%-6lld steps=%-5d minimal=%d ramping=%d limit=%lld: "
      "identical (%lld episodes, mean return %.3f)\n",
      std::string(game_name(c.game)).c_str(), static_cast<long long>(c.num_envs), c.steps,
      c.minimal, c.ramping, static_cast<long long>(c.max_episode_steps),
      static_cast<long long>(episodes), episodes ? total_return / episodes : 0.0);
}

class GpuParity : public ::testing::TestWithParam<Game> {};

TEST_P(GpuParity, RandomActionSequencesGiveIdenticalTrajectories) {
  REDLINE_REQUIRE_GPU();
  const Game game = GetParam();
  const int steps = game == Game::freeway ? 2600 : 600;
  const int64_t n = game == Game::freeway ? 1024 : 4096;
  run_parity({game, n, steps, false, true, -1, false});
  if (HasFatalFailure()) return;
  // Variants: minimal action sets, ramping off, a time limit, i64 actions.
  run_parity({game, 2048, 300, true, false, 77, true});
}

INSTANTIATE_TEST_SUITE_P(AllGames, GpuParity, ::testing::ValuesIn(kAllGames),
                         [](const auto& info) { return std::string(game_name(info.param)); });

TEST(GpuEnv, OutOfRangeActionIsReportedBeforeStepping) {
  REDLINE_REQUIRE_GPU();
  VecEnvOptions options;
  options.game = Game::asterix;
  options.num_envs = 1000;
  options.device = Device::gpu();
  VecEnv env(options);
  env.reset(3);
  std::vector<int32_t> a(1000, 0);
  a[637] = 9;
  try {
    env.step(Tensor::from_host(a, {1000}, Device::gpu()));
    FAIL() << "an out-of-range action must throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("action 9 for environment 637"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(env.step(Tensor::zeros({1000}, DType::i32)), Error);  // actions on the CPU
}

TEST(GpuEnv, LargeBatchMatchesCpuOnSampledEnvironments) {
  REDLINE_REQUIRE_GPU();
  // 1M environments: the GPU result for a sample of rows equals a CPU VecEnv run... the CPU
  // environments are keyed by their own index, so compare the first 4096 rows with a 4096 batch.
  VecEnvOptions options;
  options.game = Game::breakout;
  options.num_envs = 1 << 20;
  options.device = Device::gpu();
  VecEnv big(options);
  options.num_envs = 4096;
  options.device = Device::cpu();
  VecEnv small(options);
  big.reset(77);
  small.reset(77);
  std::mt19937 gen(5);
  for (int t = 0; t < 50; ++t) {
    std::vector<int32_t> a(1 << 20);
    for (auto& x : a) x = static_cast<int32_t>(gen() % 6);
    const Tensor all = Tensor::from_host(a, {1 << 20});
    const StepResult& rb = big.step(all.to(Device::gpu()));
    const StepResult& rs = small.step(all.slice(0, 0, 4096).contiguous());
    const Tensor head = rb.observation.slice(0, 0, 4096).contiguous();
    expect_same(rs.observation, head, "observation (first 4096 of 1M)", t, Game::breakout);
  }
}

}  // namespace
}  // namespace redline::rl
