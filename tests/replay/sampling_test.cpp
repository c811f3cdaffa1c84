// Sampling: frequencies follow p^alpha (chi-square at a fixed seed), importance weights follow
// the formula, stratification, determinism, and a uniform memory samples uniformly.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "replay_test_util.h"

namespace redline::rl {
namespace {

// A memory of one env with 64 sampleable slots (after 65 inserts with n = 1).
ReplayMemory make_filled(bool prioritized, double alpha, int64_t rows = 80, int64_t inserts = 65) {
  ReplayConfig c;
  c.capacity = rows;
  c.obs_shape = {2};
  c.obs_dtype = DType::f32;
  c.prioritized = prioritized;
  c.alpha = alpha;
  c.seed = 1234;
  c.stream = 3;
  ReplayMemory m(c);
  for (int64_t i = 0; i < inserts; ++i) {
    m.insert(Tensor::full({1, 2}, static_cast<double>(i), DType::f32),
             Tensor::from_host<int64_t>({i % 4}, {1}), Tensor::from_host<float>({1.0f}, {1}),
             Tensor::zeros({1}, DType::boolean), Tensor::zeros({1}, DType::boolean));
  }
  return m;
}

double chi_square(const std::vector<double>& counts, const std::vector<double>& probs) {
  const double total = std::accumulate(counts.begin(), counts.end(), 0.0);
  double chi = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    const double e = total * probs[i];
    chi += (counts[i] - e) * (counts[i] - e) / e;
  }
  return chi;
}

TEST(ReplaySampling, FrequenciesFollowPriorityToTheAlpha) {
  const double alpha = 0.6;
  ReplayMemory m = make_filled(true, alpha);
  ASSERT_EQ(m.size(), 64);
  std::vector<int64_t> idx(64);
  std::vector<float> p(64);
  for (int i = 0; i < 64; ++i) {
    idx[i] = i;
    p[i] = 0.05f + static_cast<float>((i * 37) % 64) * 0.3f;  // 0.05 .. 18.95
  }
  m.update_priorities(Tensor::from_host(idx, {64}), Tensor::from_host(p, {64}));
  std::vector<double> counts(64, 0.0);
  for (int r = 0; r < 1500; ++r) {
    const ReplaySample s = m.sample(64, 0.4);
    for (int64_t i : s.indices.to_vector<int64_t>()) {
      ASSERT_GE(i, 0);
      ASSERT_LT(i, 64);
      counts[i] += 1;
    }
  }
  std::vector<double> probs(64), wrong(64);
  double z = 0, zw = 0;
  for (int i = 0; i < 64; ++i) {
    z += std::pow(p[i], alpha);
    zw += p[i];
  }
  for (int i = 0; i < 64; ++i) {
    probs[i] = std::pow(p[i], alpha) / z;
    wrong[i] = p[i] / zw;  // alpha ignored
  }
  // 63 degrees of freedom: the 0.999 quantile is 103.4.
  EXPECT_LT(chi_square(counts, probs), 103.4);
  EXPECT_GT(chi_square(counts, wrong), 1000.0);  // the test can tell alpha = 0.6 from 1
}

TEST(ReplaySampling, UniformMemorySamplesUniformly) {
  ReplayMemory m = make_filled(false, 0.6);
  std::vector<double> counts(64, 0.0);
  for (int r = 0; r < 500; ++r) {
    const ReplaySample s = m.sample(32);
    for (int64_t i : s.indices.to_vector<int64_t>()) counts[i] += 1;
    for (float w : s.weights.to_vector<float>()) ASSERT_EQ(w, 1.0f);
  }
  EXPECT_LT(chi_square(counts, std::vector<double>(64, 1.0 / 64)), 103.4);
}

TEST(ReplaySampling, ImportanceWeightsFollowTheFormula) {
  const double alpha = 0.7, beta = 0.45;
  ReplayMemory m = make_filled(true, alpha);
  std::vector<int64_t> idx(64);
  std::vector<float> p(64);
  for (int i = 0; i < 64; ++i) {
    idx[i] = i;
    p[i] = 0.1f + 0.2f * static_cast<float>(i % 13);
  }
  m.update_priorities(Tensor::from_host(idx, {64}), Tensor::from_host(p, {64}));
  // w_i = (S P(i))^-beta / max_j (S P(j))^-beta, straight from the paper.
  const double s_count = 64;
  double z = 0;
  for (float v : p) z += std::pow(v, alpha);
  double w_max = 0;
  for (float v : p) w_max = std::max(w_max, std::pow(s_count * std::pow(v, alpha) / z, -beta));
  const ReplaySample s = m.sample(64, beta);
  const auto got_i = s.indices.to_vector<int64_t>();
  const auto got_w = s.weights.to_vector<float>();
  for (int i = 0; i < 64; ++i) {
    const double want = std::pow(s_count * std::pow(p[got_i[i]], alpha) / z, -beta) / w_max;
    EXPECT_NEAR(got_w[i], want, 2e-6 * want) << "sample " << i;
    EXPECT_LE(got_w[i], 1.0f);
  }
  // The smallest priority has weight exactly 1.
  const ReplaySample all = m.sample(64, 1.0);
  const auto wi = all.indices.to_vector<int64_t>();
  const auto ww = all.weights.to_vector<float>();
  for (int i = 0; i < 64; ++i) {
    if (p[wi[i]] == 0.1f) EXPECT_EQ(ww[i], 1.0f);
  }
  // beta = 0: all weights 1.
  for (float w : m.sample(64, 0.0).weights.to_vector<float>()) EXPECT_EQ(w, 1.0f);
}

TEST(ReplaySampling, StratifiedOneDrawPerSlice) {
  // Equal priorities and batch = stored count: slice j holds exactly slot j.
  ReplayMemory m = make_filled(true, 1.0);
  const auto idx = m.sample(64, 0.4).indices.to_vector<int64_t>();
  for (int j = 0; j < 64; ++j) EXPECT_EQ(idx[j], j);
}

TEST(ReplaySampling, SameSeedSameSamplesAndOffsetAdvances) {
  ReplayMemory a = make_filled(true, 0.6), b = make_filled(true, 0.6);
  const auto a1 = a.sample(16, 0.4).indices.to_vector<int64_t>();
  const auto b1 = b.sample(16, 0.4).indices.to_vector<int64_t>();
  EXPECT_EQ(a1, b1);
  // beta as a (1,) tensor gives the same as the number.
  const ReplaySample a2 = a.sample(16, 0.25);
  const ReplaySample b2 = b.sample(16, Tensor::full({1}, 0.25, DType::f32));
  EXPECT_NE(a1, a2.indices.to_vector<int64_t>());  // the Philox offset moved on
  EXPECT_EQ(a2.indices.to_vector<int64_t>(), b2.indices.to_vector<int64_t>());
  EXPECT_EQ(a2.weights.to_vector<float>(), b2.weights.to_vector<float>());
}

// A sample that faults on a beta tensor out of range (a check made where the sample runs, as on the
// GPU) still uses its draws: the GPU's sample advances the Philox offset before it reads beta.
TEST(ReplaySampling, FaultedSampleStillUsesItsDraws) {
  ReplayMemory a = make_filled(true, 0.6), b = make_filled(true, 0.6);
  testing::expect_error([&] { (void)a.sample(16, Tensor::full({1}, 1.5, DType::f32)); },
                        "sample got beta = 1.5; beta must be in [0, 1]");
  (void)b.sample(16, 0.4);
  const ReplaySample a2 = a.sample(16, 0.4), b2 = b.sample(16, 0.4);
  EXPECT_EQ(a2.indices.to_vector<int64_t>(), b2.indices.to_vector<int64_t>());
  EXPECT_EQ(a2.weights.to_vector<float>(), b2.weights.to_vector<float>());
  // A beta number out of range is refused before anything runs: no draws are used.
  ReplayMemory c = make_filled(true, 0.6);
  testing::expect_error([&] { (void)c.sample(16, 1.5); }, "beta = 1.5");
  EXPECT_EQ(c.sample(16, 0.4).indices.to_vector<int64_t>(),
            make_filled(true, 0.6).sample(16, 0.4).indices.to_vector<int64_t>());
}

TEST(ReplaySampling, UpdateLastWriteWinsAndStaleSlotsStayOut) {
  ReplayMemory m = make_filled(true, 1.0);
  m.update_priorities(Tensor::from_host<int64_t>({5, 9, 5, 5}, {4}),
                      Tensor::from_host<float>({2.0f, 3.0f, 7.0f, 4.0f}, {4}));
  const auto sum = m.sum_tree_host();
  const auto off = m.tree_level_offsets();
  const int64_t leaf0 = off[off.size() - 2];
  EXPECT_EQ(sum[leaf0 + 5], 4.0);  // last of 2, 7, 4
  EXPECT_EQ(sum[leaf0 + 9], 3.0);
  EXPECT_EQ(m.max_priority(), 7.0);  // the running max sees every value given
  // Slot 70 is not sampleable (never completed): an update leaves it out of the tree.
  m.update_priorities(Tensor::from_host<int64_t>({70}, {1}), Tensor::from_host<float>({9.0f}, {1}));
  EXPECT_EQ(m.sum_tree_host()[leaf0 + 70], 0.0);
}

}  // namespace
}  // namespace redline::rl
