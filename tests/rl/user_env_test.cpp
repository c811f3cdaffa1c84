// A user simulator through the C ABI (include/redline/rl/env_abi.h) inside VecEnv.
#include <gtest/gtest.h>

#include <vector>

#include "env_test_util.h"
#include "redline/rl/env_abi.h"
#include "redline/rl/vec_env.h"

namespace redline::rl {
namespace {

// A corridor: position 0..4, action 1 moves right, reaching 4 ends the episode with reward 1.
struct Corridor {
  std::vector<int> pos;
  std::vector<uint64_t> seeds;
  int fail_at_step = -1;
  int steps = 0;
};

extern "C" int corridor_shape(void*, redline_env_shape* out) {
  out->obs_ndim = 1;
  out->obs_shape[0] = 5;
  out->obs_dtype = REDLINE_ENV_F32;
  out->num_actions = 2;
  return 0;
}

void write(const Corridor& c, int64_t i, void* obs) {
  float* o = static_cast<float*>(obs);
  for (int k = 0; k < 5; ++k) o[k] = k == c.pos[i] ? 1.0f : 0.0f;
}

extern "C" int corridor_reset(void* user, int64_t i, uint64_t seed, void* obs) {
  Corridor& c = *static_cast<Corridor*>(user);
  c.pos[i] = 0;
  c.seeds.push_back(seed);
  write(c, i, obs);
  return 0;
}

extern "C" int corridor_step(void* user, int64_t i, int32_t action, void* obs, float* reward,
                             uint8_t* terminated, uint8_t* truncated) {
  Corridor& c = *static_cast<Corridor*>(user);
  if (c.steps++ == c.fail_at_step) return 7;
  if (action == 1) c.pos[i] += 1;
  *reward = c.pos[i] == 4 ? 1.0f : 0.0f;
  *terminated = c.pos[i] == 4;
  *truncated = 0;
  write(c, i, obs);
  return 0;
}

extern "C" const char* corridor_error(void*) { return "the corridor collapsed"; }

redline_env_api corridor_api(Corridor& c) {
  redline_env_api api{};
  api.abi_version = REDLINE_ENV_ABI_VERSION;
  api.user = &c;
  api.thread_safe = 0;
  api.shape = corridor_shape;
  api.reset = corridor_reset;
  api.step = corridor_step;
  api.error_message = corridor_error;
  return api;
}

TEST(UserEnv, RunsThroughTheCAbiWithAutoResetAndStatistics) {
  Corridor c;
  c.pos.assign(3, 0);
  VecEnv env = VecEnv::from_user(corridor_api(c), 3, 0, true);
  EXPECT_EQ(env.num_actions(), 2);
  EXPECT_EQ(env.observation_shape(), (Shape{5}));
  EXPECT_EQ(env.observation_dtype(), DType::f32);
  EXPECT_EQ(env.reset(1).shape(), (Shape{3, 5}));
  for (int t = 1; t <= 4; ++t) {
    const StepResult& r = env.step(Tensor::from_host<int32_t>({1, 1, 0}, {3}));
    const auto term = to_flags(r.terminated);
    EXPECT_EQ(term[0], t == 4);
    EXPECT_FALSE(term[2]);
    if (t == 4) {
      EXPECT_EQ(r.episode_return.to_vector<float>()[0], 1.0f);
      EXPECT_EQ(r.episode_length.to_vector<int32_t>()[0], 4);
      EXPECT_EQ(r.observation.to_vector<float>()[0], 1.0f);        // reset: at position 0
      EXPECT_EQ(r.final_observation.to_vector<float>()[4], 1.0f);  // ended at position 4
    }
  }
  EXPECT_EQ(c.seeds.size(), 5u);  // 3 resets + 2 automatic ones
  EXPECT_NE(c.seeds[0], c.seeds[3]);
}

TEST(UserEnv, TimeLimitAndErrors) {
  Corridor c;
  c.pos.assign(2, 0);
  VecEnv env = VecEnv::from_user(corridor_api(c), 2, 3);
  env.reset(0);
  for (int t = 1; t <= 3; ++t) {
    const StepResult& r = env.step(Tensor::zeros({2}, DType::i32));
    EXPECT_EQ(to_flags(r.truncated)[1], t == 3);
  }
  EXPECT_THROW(env.step(Tensor::from_host<int32_t>({0, 2}, {2})), Error);
  c.fail_at_step = c.steps;
  try {
    env.step(Tensor::zeros({2}, DType::i32));
    FAIL() << "a failing simulator must throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("the corridor collapsed"), std::string::npos);
  }
  redline_env_api bad = corridor_api(c);
  bad.abi_version = 99;
  EXPECT_THROW(VecEnv::from_user(bad, 2), Error);
  EXPECT_THROW(VecEnv::from_user(corridor_api(c), 0), Error);
}

}  // namespace
}  // namespace redline::rl
