// Transitions: n-step returns and frame stacks across episode boundaries and the circular wrap,
// checked against the stacks the scripted envs produced and an independent n-step reference;
// memory accounting; and bad input, each refused with one sentence.
#include <gtest/gtest.h>

#include <limits>

#include "replay_test_util.h"

namespace redline::rl {
namespace {

using testing::expect_error;
using testing::Reference;
using testing::ScriptedEnvs;
using testing::Step;

struct Scenario {
  int64_t envs, k, n, rows, steps;
  bool pad_zeros;
};

void check_scenario(const Scenario& sc) {
  const int64_t frame = 3;
  ReplayConfig c;
  c.num_envs = sc.envs;
  c.capacity = sc.rows * sc.envs;
  c.obs_shape = {sc.k, frame};
  c.obs_dtype = DType::f32;
  c.frame_stack = sc.k;
  c.padding = sc.pad_zeros ? FramePadding::zeros : FramePadding::repeat_first;
  c.n_step = sc.n;
  c.gamma = 0.9;
  ReplayMemory m(c);
  ScriptedEnvs envs(sc.envs, sc.k, frame, sc.pad_zeros, 2024);
  Reference ref{sc.rows, sc.n, sc.k, {}};
  for (int64_t i = 0; i < sc.steps; ++i) {
    ref.steps.push_back(envs.next());
    testing::insert_step(m, ref.steps.back(), c, Device::cpu());
  }
  // Gather every slot that is sampleable and compare with what the envs produced.
  std::vector<int64_t> slots;
  for (int64_t slot = 0; slot < c.capacity; ++slot) {
    if (ref.sampleable(ref.global_row(slot / sc.envs), slot % sc.envs)) slots.push_back(slot);
  }
  ASSERT_FALSE(slots.empty());
  const int64_t b = static_cast<int64_t>(slots.size());
  ReplaySample s{Tensor::from_host(slots, {b}), Tensor::ones({b}, DType::f32)};
  const ReplayBatch batch = m.gather(s);
  const auto obs = batch.obs.to_vector<float>();
  const auto next = batch.next_obs.to_vector<float>();
  const auto reward = batch.reward.to_vector<float>();
  const auto discount = batch.discount.to_vector<float>();
  const auto action = batch.action.to_vector<int64_t>();
  const int64_t obs_numel = sc.k * frame;
  int64_t terminal = 0, cut = 0, across_wrap = 0;
  for (int64_t i = 0; i < b; ++i) {
    const int64_t e = slots[i] % sc.envs;
    const int64_t g = ref.global_row(slots[i] / sc.envs);
    const Reference::NStep want = ref.n_step(g, e, c.gamma);
    EXPECT_FLOAT_EQ(reward[i], static_cast<float>(want.ret)) << "slot " << slots[i];
    EXPECT_FLOAT_EQ(discount[i], static_cast<float>(want.discount)) << "slot " << slots[i];
    EXPECT_EQ(action[i], ref.steps[g].action[e]);
    const float* want_obs = &ref.steps[g].obs[e * obs_numel];
    const float* want_next = &ref.steps[want.next_g].obs[e * obs_numel];
    EXPECT_TRUE(std::equal(want_obs, want_obs + obs_numel, &obs[i * obs_numel]))
        << "obs stack of slot " << slots[i] << " (global row " << g << ")";
    EXPECT_TRUE(std::equal(want_next, want_next + obs_numel, &next[i * obs_numel]))
        << "next obs of slot " << slots[i] << " (global row " << g << ")";
    terminal += want.discount == 0.0;
    cut += want.next_g < g + sc.n;
    across_wrap += (g % sc.rows) + sc.n >= sc.rows || (g % sc.rows) < sc.k - 1;
  }
  // The scenario did exercise the boundaries it is about.
  EXPECT_GT(terminal, 0);
  if (sc.n > 1) EXPECT_GT(cut, 0);
  EXPECT_GT(across_wrap, 0);
  EXPECT_EQ(m.size(), (sc.rows - sc.n - sc.k + 1) * sc.envs);
}

TEST(ReplayTransitions, OneStepNoStackAcrossWrap) { check_scenario({3, 1, 1, 20, 73, false}); }
TEST(ReplayTransitions, NStepAcrossEpisodesAndWrap) { check_scenario({4, 1, 3, 17, 90, false}); }
TEST(ReplayTransitions, FrameStacksRepeatFirst) { check_scenario({2, 4, 1, 23, 101, false}); }
TEST(ReplayTransitions, FrameStacksZeroPaddingNStep) { check_scenario({3, 4, 5, 29, 130, true}); }

TEST(ReplayTransitions, NewestFrameOnlyInsertIsTheSame) {
  // Inserting (N, c, ...) newest frames gives the same memory as inserting full stacks.
  ReplayConfig c;
  c.num_envs = 2;
  c.capacity = 40;
  c.obs_shape = {4, 3};
  c.obs_dtype = DType::f32;
  c.frame_stack = 4;
  ReplayMemory full(c), newest(c);
  ScriptedEnvs envs(2, 4, 3, false, 8);
  for (int i = 0; i < 30; ++i) {
    const Step s = envs.next();
    testing::insert_step(full, s, c, Device::cpu());
    std::vector<float> last(2 * 3);
    for (int e = 0; e < 2; ++e) std::copy_n(&s.obs[(e * 4 + 3) * 3], 3, &last[e * 3]);
    std::vector<uint8_t> te(s.terminated), tr(s.truncated);
    newest.insert(Tensor::from_host(last, {2, 1, 3}), Tensor::from_host(s.action, {2}),
                  Tensor::from_host(s.reward, {2}), Tensor::from_host(te, {2}),
                  Tensor::from_host(tr, {2}));
  }
  const ReplayBatch a = full.sample_batch(8), b = newest.sample_batch(8);
  EXPECT_EQ(a.indices.to_vector<int64_t>(), b.indices.to_vector<int64_t>());
  EXPECT_EQ(a.obs.to_vector<float>(), b.obs.to_vector<float>());
  EXPECT_EQ(a.next_obs.to_vector<float>(), b.next_obs.to_vector<float>());
}

TEST(ReplayMemoryBytes, PixelFramesAreStoredOnce) {
  ReplayConfig c;
  c.num_envs = 8;
  c.capacity = 100000;
  c.obs_shape = {4, 84, 84};
  c.frame_stack = 4;
  c.prioritized = true;
  const size_t need = ReplayMemory::bytes_needed(c);
  const double frames = 100000.0 * 84 * 84;
  EXPECT_LE(static_cast<double>(need), 1.1 * frames + 40.0 * 100000);
  ReplayMemory m(c);
  EXPECT_EQ(m.bytes(), need);
  EXPECT_EQ(m.stats().bytes, need);
}

TEST(ReplayErrors, BadInputIsOneClearSentence) {
  ReplayConfig c;
  c.num_envs = 2;
  c.capacity = 20;
  c.obs_shape = {3};
  c.obs_dtype = DType::f32;
  c.prioritized = true;
  // Configuration: c with one change, refused by the constructor in one sentence.
  const auto refused = [&](const auto& change, const std::string& message) {
    expect_error(
        [&] {
          ReplayConfig d = c;
          change(d);
          ReplayMemory m(d);
        },
        message);
  };
  refused([](ReplayConfig& d) { d.alpha = 1.5; }, "alpha is 1.5; it must be in [0, 1]");
  refused([](ReplayConfig& d) { d.priority_limit = 0.5; },
          "replay priority_limit is 0.5; it must be in [1, 1e30]");
  refused([](ReplayConfig& d) { d.priority_limit = std::numeric_limits<double>::infinity(); },
          "replay priority_limit is inf; it must be in [1, 1e30]");
  refused([](ReplayConfig& d) { d.capacity = 21; }, "positive multiple of num_envs");
  refused([](ReplayConfig& d) { d.n_step = 0; }, "n_step is 0");
  refused([](ReplayConfig& d) { d.gamma = -0.1; }, "gamma is -0.1");
  refused([](ReplayConfig& d) { d.capacity = 4; }, "needs more than n_step + frame_stack");
  refused([](ReplayConfig& d) { d.frame_stack = 2; }, "cannot hold frame_stack = 2");
  refused(
      [](ReplayConfig& d) {
        d.capacity = int64_t{1} << 40;
        d.obs_shape = {4, 84, 84};
        d.obs_dtype = DType::u8;
      },
      "lower the capacity");
  refused([](ReplayConfig& d) { d.capacity = int64_t{1} << 40; }, "available; lower the capacity");

  ReplayMemory m(c);
  const auto insert = [&](Tensor obs, Tensor reward) {
    m.insert(obs, Tensor::zeros({2}, DType::i64), reward, Tensor::zeros({2}, DType::boolean),
             Tensor::zeros({2}, DType::boolean));
  };
  expect_error(
      [&] {
        insert(Tensor::zeros({2, 4}, DType::f32), Tensor::zeros({2}, DType::f32));
      },
      "insert got obs of shape (2, 4); expected (2, 3)");
  expect_error(
      [&] {
        insert(Tensor::zeros({2, 3}, DType::u8), Tensor::zeros({2}, DType::f32));
      },
      "insert got obs of dtype u8; expected f32");
  expect_error(
      [&] {
        insert(Tensor::zeros({2, 3}, DType::f32), Tensor::zeros({3}, DType::f32));
      },
      "insert's reward has shape (3,); expected (2,)");
  for (int i = 0; i < 4; ++i)
    insert(Tensor::zeros({2, 3}, DType::f32), Tensor::ones({2}, DType::f32));
  ASSERT_EQ(m.size(), 6);
  // Sampling.
  expect_error([&] { m.sample(7); }, "sample batch 7 is larger than the 6 sampleable transitions");
  expect_error([&] { m.sample(4, 1.5); }, "beta = 1.5; beta must be in [0, 1]");
  expect_error([&] { m.sample(4, -0.1); }, "beta must be in [0, 1]");
  expect_error([&] { m.sample(0); }, "sample batch is 0");
  // Priorities: non-finite, zero, wrong index; nothing changes.
  const auto before = m.sum_tree_host();
  expect_error(
      [&] {
        m.update_priorities(Tensor::from_host<int64_t>({0, 1}, {2}),
                            Tensor::from_host<float>({1.0f, NAN}, {2}));
      },
      "update_priorities got priority nan at position 1 of the batch; priorities must be finite "
      "and > 0");
  expect_error(
      [&] {
        m.update_priorities(Tensor::from_host<int64_t>({0}, {1}),
                            Tensor::from_host<float>({INFINITY}, {1}));
      },
      "got priority inf at position 0");
  expect_error(
      [&] {
        m.update_priorities(Tensor::from_host<int64_t>({0}, {1}),
                            Tensor::from_host<float>({0.0f}, {1}));
      },
      "got priority 0 at position 0");
  expect_error(
      [&] {
        m.update_priorities(Tensor::from_host<int64_t>({3, 20}, {2}),
                            Tensor::from_host<float>({1.0f, 1.0f}, {2}));
      },
      "got index 20 at position 1 of the batch; indices must be in [0, 20)");
  expect_error(
      [&] {
        m.update_priorities(Tensor::from_host<int64_t>({3}, {1}),
                            Tensor::from_host<int32_t>({1}, {1}));
      },
      "update_priorities' priorities is i32; expected f32");
  EXPECT_EQ(m.sum_tree_host(), before);
  // A uniform memory has no priorities.
  ReplayConfig u = c;
  u.prioritized = false;
  ReplayMemory um(u);
  expect_error(
      [&] {
        um.update_priorities(Tensor::from_host<int64_t>({0}, {1}),
                             Tensor::from_host<float>({1.0f}, {1}));
      },
      "update_priorities needs a prioritized memory");
  expect_error([&] { um.sample(1); }, "larger than the 0 sampleable transitions");
}

}  // namespace
}  // namespace redline::rl
