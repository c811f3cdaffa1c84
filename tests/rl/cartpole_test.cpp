// CartPole-v1 against hand-computed physics, and our portable sin/cos against the C library.
#include "rl/env/cartpole.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "env_test_util.h"
#include "redline/rl/vec_env.h"

namespace redline::rl {
namespace {

TEST(CartPole, PortableSinCosMatchesTheCLibrary) {
  std::mt19937_64 gen(1);
  std::uniform_real_distribution<double> wide(-50.0, 50.0), narrow(-0.3, 0.3);
  for (int i = 0; i < 200000; ++i) {
    const double x = i % 2 ? wide(gen) : narrow(gen);
    double s, c;
    portable_sincos(x, &s, &c);
    ASSERT_NEAR(s, std::sin(x), 2e-16 * std::max(1.0, std::fabs(x)) + 1e-16) << x;
    ASSERT_NEAR(c, std::cos(x), 2e-16 * std::max(1.0, std::fabs(x)) + 1e-16) << x;
    // Relative accuracy near zero, where CartPole lives.
    if (std::fabs(x) < 0.3 && x != 0.0) ASSERT_LE(std::fabs(s - std::sin(x)), 4e-16 * std::fabs(x));
  }
  double s, c;
  portable_sincos(0.0, &s, &c);
  EXPECT_EQ(s, 0.0);
  EXPECT_EQ(c, 1.0);
}

// One Euler step written out from Gymnasium's CartPoleEnv.step with the library's sin/cos.
CartPole::State hand_step(CartPole::State s, int action) {
  const double gravity = 9.8, masscart = 1.0, masspole = 0.1, length = 0.5, force_mag = 10.0,
               tau = 0.02;
  const double total_mass = masspole + masscart;
  const double polemass_length = masspole * length;
  const double force = action == 1 ? force_mag : -force_mag;
  const double costheta = std::cos(s.theta), sintheta = std::sin(s.theta);
  const double temp = (force + polemass_length * s.theta_dot * s.theta_dot * sintheta) / total_mass;
  const double thetaacc = (gravity * sintheta - costheta * temp) /
                          (length * (4.0 / 3.0 - masspole * costheta * costheta / total_mass));
  const double xacc = temp - polemass_length * thetaacc * costheta / total_mass;
  CartPole::State n = s;
  n.x = s.x + tau * s.x_dot;
  n.x_dot = s.x_dot + tau * xacc;
  n.theta = s.theta + tau * s.theta_dot;
  n.theta_dot = s.theta_dot + tau * thetaacc;
  return n;
}

struct NoRng {
  double uniform_double() { return 0.5; }
};

TEST(CartPole, StepsMatchHandComputedPhysics) {
  CartPole::State s{};
  s.x = 0.01;
  s.x_dot = -0.02;
  s.theta = 0.03;
  s.theta_dot = 0.04;
  NoRng rng;
  CartPole::State expected = s;
  for (int t = 0; t < 40; ++t) {
    const int action = (t * 7) % 3 == 0 ? 1 : 0;
    expected = hand_step(expected, action);
    const StepOutcome out = CartPole::step(s, action, false, rng);
    EXPECT_EQ(out.reward, 1);
    ASSERT_NEAR(s.x, expected.x, 1e-14) << t;
    ASSERT_NEAR(s.x_dot, expected.x_dot, 1e-13) << t;
    ASSERT_NEAR(s.theta, expected.theta, 1e-14) << t;
    ASSERT_NEAR(s.theta_dot, expected.theta_dot, 1e-13) << t;
  }
  // First step by hand, from theta = 0: temp = 10 / 1.1, thetaacc = -temp / (0.5 * (4/3 -
  // 0.1/1.1)).
  CartPole::State z{};
  CartPole::step(z, 1, false, rng);
  const double temp = 10.0 / 1.1;
  const double thetaacc = -temp / (0.5 * (4.0 / 3.0 - 0.1 / 1.1));
  EXPECT_DOUBLE_EQ(z.x_dot, 0.02 * (temp - 0.05 * thetaacc / 1.1));
  EXPECT_DOUBLE_EQ(z.theta_dot, 0.02 * thetaacc);
  EXPECT_EQ(z.x, 0.0);
  EXPECT_EQ(z.theta, 0.0);
}

TEST(CartPole, TerminationThresholds) {
  NoRng rng;
  CartPole::State s{};
  s.x = 2.4;
  s.x_dot = 1.0;  // crosses 2.4 this step
  EXPECT_TRUE(CartPole::step(s, 1, false, rng).terminal);
  CartPole::State t{};
  t.theta = 0.2094;
  t.theta_dot = 0.1;  // crosses 12 degrees (0.20944 rad)
  EXPECT_TRUE(CartPole::step(t, 1, false, rng).terminal);
  CartPole::State u{};
  u.theta = 0.2;
  EXPECT_FALSE(CartPole::step(u, 1, false, rng).terminal);
}

TEST(CartPole, ResetIsUniformInPlusMinus005) {
  VecEnvOptions options;
  options.game = Game::cartpole;
  options.num_envs = 1000;
  VecEnv env(options);
  const Tensor obs = env.reset(3);
  ASSERT_EQ(obs.shape(), (Shape{1000, 4}));
  ASSERT_EQ(obs.dtype(), DType::f32);
  const std::vector<float> v = obs.to_vector<float>();
  float lo = 1, hi = -1;
  for (float x : v) {
    lo = std::min(lo, x);
    hi = std::max(hi, x);
  }
  EXPECT_GE(lo, -0.05f);
  EXPECT_LT(hi, 0.05f);
  EXPECT_LT(lo, -0.045f);
  EXPECT_GT(hi, 0.045f);
}

TEST(CartPole, EpisodesTruncateAt500) {
  VecEnvOptions options;
  options.game = Game::cartpole;
  options.num_envs = 64;
  VecEnv env(options);
  env.reset(11);
  // A balancing controller: push toward the side the pole leans to.
  Tensor obs = env.reset(11).clone();
  int truncations = 0;
  for (int t = 0; t < 500; ++t) {
    std::vector<int32_t> actions(64);
    const std::vector<float> o = obs.to_vector<float>();
    for (int i = 0; i < 64; ++i) actions[i] = (o[i * 4 + 2] + 0.5f * o[i * 4 + 3]) > 0 ? 1 : 0;
    const StepResult& r = env.step(Tensor::from_host(actions, {64}));
    const auto trunc = to_flags(r.truncated);
    const auto term = to_flags(r.terminated);
    const auto len = r.episode_length.to_vector<int32_t>();
    const auto ret = r.episode_return.to_vector<float>();
    for (int i = 0; i < 64; ++i) {
      if (trunc[i]) {
        ++truncations;
        EXPECT_EQ(t, 499);
        EXPECT_EQ(len[i], 500);
        EXPECT_EQ(ret[i], 500.0f);
      }
      if (term[i]) EXPECT_LT(t, 499);
    }
    obs = r.observation.clone();
  }
  EXPECT_GT(truncations, 32);  // the controller balances most poles for the whole episode
}

}  // namespace
}  // namespace redline::rl
