// Replays every episode of specs/minatar_reference_trajectories.json in reference mode and checks
// each policy action, executed action, reward, terminal flag and observation digest, plus the
// full observations the file lists for its first episodes.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "env_test_util.h"
#include "redline/rl/reference_env.h"
#include "test_util.h"

namespace redline::rl {
namespace {

// The oracle is a copy of the spec's reference trajectories in tests/fixtures/ (the shared specs
// folder next to the checkout, or REDLINE_MINATAR_ORACLE, are tried first).
nlohmann::json load_oracle() {
  std::vector<std::string> candidates;
  if (const char* env = std::getenv("REDLINE_MINATAR_ORACLE")) candidates.push_back(env);
  candidates.push_back(source_path("../shared/specs/minatar_reference_trajectories.json"));
  candidates.push_back(source_path("shared/specs/minatar_reference_trajectories.json"));
  candidates.push_back(source_path("tests/fixtures/minatar_reference_trajectories.json"));
  for (const std::string& path : candidates) {
    std::ifstream in(path);
    if (in) return nlohmann::json::parse(in);
  }
  ADD_FAILURE() << "cannot find minatar_reference_trajectories.json (tried "
                << candidates[candidates.size() - 3] << ", " << candidates[candidates.size() - 2]
                << " and " << candidates.back() << "; set REDLINE_MINATAR_ORACLE to its path)";
  return nlohmann::json::object();
}

// The observation from the file's list of active (y, x, c) cells, as (C, 10, 10) bytes.
std::vector<uint8_t> from_cells(const nlohmann::json& cells, int channels) {
  std::vector<uint8_t> chw(static_cast<size_t>(channels) * 100, 0);
  for (const auto& yxc : cells) {
    chw[yxc[2].get<int>() * 100 + yxc[0].get<int>() * 10 + yxc[1].get<int>()] = 1;
  }
  return chw;
}

class ReferenceTrajectories : public ::testing::TestWithParam<const char*> {};

TEST_P(ReferenceTrajectories, EveryStepMatchesTheOriginal) {
  static const nlohmann::json oracle = load_oracle();
  ASSERT_TRUE(oracle.contains("protocol")) << "no reference trajectories to check against";
  const auto& protocol = oracle["protocol"];
  const Game game = parse_game(GetParam());
  const auto& episodes = oracle["games"][GetParam()];
  ASSERT_EQ(episodes.size(), protocol["episodes_per_game"].get<size_t>());

  ReferenceMinAtar env(game, protocol["env_seed"].get<uint32_t>(),
                       protocol["sticky_action_prob"].get<double>(),
                       protocol["difficulty_ramping"].get<bool>());
  ReferencePolicy policy(protocol["policy_seed"].get<uint32_t>());
  const int cap = protocol["cap_steps"].get<int>();
  const int channels = env.channels();
  int64_t steps_checked = 0;

  for (size_t e = 0; e < episodes.size(); ++e) {
    const auto& episode = episodes[e];
    if (e > 0) env.reset();
    ASSERT_EQ(observation_digest(env.observation(), channels),
              episode["reset_digest"].get<std::string>())
        << GetParam() << " episode " << e << " reset";
    const auto& full =
        episode.contains("full_cells_yxc") ? episode["full_cells_yxc"] : nlohmann::json::array();
    if (!full.empty()) {
      ASSERT_EQ(env.observation(), from_cells(full[0], channels)) << "episode " << e << " reset";
    }
    int total = 0;
    int length = 0;
    const auto& steps = episode["steps"];
    for (size_t t = 0; t < steps.size(); ++t) {
      const auto& record = steps[t];
      const int action = policy.next(6);
      ASSERT_EQ(action, record[0].get<int>()) << GetParam() << " episode " << e << " step " << t;
      const auto result = env.act(action);
      ASSERT_EQ(result.executed_action, record[1].get<int>())
          << GetParam() << " episode " << e << " step " << t;
      ASSERT_EQ(result.reward, record[2].get<int>())
          << GetParam() << " episode " << e << " step " << t;
      ASSERT_EQ(result.terminal, record[3].get<bool>())
          << GetParam() << " episode " << e << " step " << t;
      const auto obs = env.observation();
      if (t + 1 < full.size()) {
        ASSERT_EQ(obs, from_cells(full[t + 1], channels))
            << GetParam() << " episode " << e << " step " << t;
      }
      ASSERT_EQ(observation_digest(obs, channels), record[4].get<std::string>())
          << GetParam() << " episode " << e << " step " << t;
      total += result.reward;
      ++length;
      ++steps_checked;
      if (result.terminal || length >= cap) break;
    }
    EXPECT_EQ(length, steps.size());
    EXPECT_EQ(length, episode["length"].get<int>());
    EXPECT_EQ(total, episode["return"].get<int>());
  }
  std::printf("%s: %lld reference steps matched\n", GetParam(),
              static_cast<long long>(steps_checked));
}

INSTANTIATE_TEST_SUITE_P(MinAtar, ReferenceTrajectories,
                         ::testing::Values("breakout", "space_invaders", "freeway", "asterix",
                                           "seaquest"));

}  // namespace
}  // namespace redline::rl
