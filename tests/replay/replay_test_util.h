// Helpers for the replay tests: a scripted stream of VecEnv steps with its own frame stacker, an
// independent reference of the documented rules (which slots are sampleable, n-step windows),
// and tree invariant checks.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "redline/core/error.h"
#include "redline/rl/replay/replay.h"
#include "rl/replay/replay_math.h"

namespace redline::rl::testing {

// Runs fn and checks that it throws redline::Error whose message contains `part`.
inline void expect_error(const std::function<void()>& fn, const std::string& part) {
  try {
    fn();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos)
        << "message: " << e.what() << "\nexpected to contain: " << part;
    return;
  }
  ADD_FAILURE() << "expected a redline::Error containing '" << part << "'";
}

// One VecEnv step as the test produced it (host copies).
struct Step {
  std::vector<float> obs;  // (N, k, frame) stacked, the observation the actions were taken in
  std::vector<int64_t> action;
  std::vector<float> reward;
  std::vector<uint8_t> terminated, truncated;
};

// A scripted VecEnv of N environments with f32 frames of `frame` values: frame values encode
// (env, global step, position) so every gathered frame names its origin. Episodes end at random
// (terminated with p_term, truncated with p_trunc); the stacker pads like FramePadding says.
class ScriptedEnvs {
 public:
  ScriptedEnvs(int64_t n, int64_t k, int64_t frame, bool pad_zeros, uint32_t seed,
               double p_term = 0.12, double p_trunc = 0.08)
      : n_(n),
        k_(k),
        frame_(frame),
        pad_zeros_(pad_zeros),
        rng_(seed),
        p_term_(p_term),
        p_trunc_(p_trunc),
        stacks_(n),
        fresh_(n, true) {}

  Step next() {
    Step s;
    s.obs.resize(n_ * k_ * frame_);
    for (int64_t e = 0; e < n_; ++e) {
      std::vector<float> f(frame_);
      for (int64_t x = 0; x < frame_; ++x) f[x] = static_cast<float>(e * 1000000 + t_ * 100 + x);
      auto& st = stacks_[e];
      if (fresh_[e]) {
        st.assign(k_, pad_zeros_ ? std::vector<float>(frame_, 0.0f) : f);
        fresh_[e] = false;
      }
      st.erase(st.begin());
      st.push_back(f);
      for (int64_t j = 0; j < k_; ++j) {
        std::memcpy(&s.obs[(e * k_ + j) * frame_], st[j].data(), frame_ * sizeof(float));
      }
      s.action.push_back(static_cast<int64_t>(rng_() % 6));
      s.reward.push_back(static_cast<float>(static_cast<int>(rng_() % 21) - 10) * 0.25f);
      const double u = std::uniform_real_distribution<double>(0, 1)(rng_);
      s.terminated.push_back(u < p_term_);
      s.truncated.push_back(u >= p_term_ && u < p_term_ + p_trunc_);
      if (s.terminated.back() || s.truncated.back()) fresh_[e] = true;
    }
    ++t_;
    return s;
  }

 private:
  int64_t n_, k_, frame_;
  bool pad_zeros_;
  std::mt19937 rng_;
  double p_term_, p_trunc_;
  std::vector<std::vector<std::vector<float>>> stacks_;
  std::vector<bool> fresh_;
  int64_t t_ = 0;
};

inline void insert_step(ReplayMemory& m, const Step& s, const ReplayConfig& c, Device dev) {
  const int64_t n = c.num_envs;
  Shape shape{n};
  shape.insert(shape.end(), c.obs_shape.begin(), c.obs_shape.end());
  std::vector<uint8_t> te(s.terminated), tr(s.truncated);
  m.insert(Tensor::from_host(s.obs, shape, dev), Tensor::from_host(s.action, {n}, dev),
           Tensor::from_host(s.reward, {n}, dev), Tensor::from_host(te, {n}, dev),
           Tensor::from_host(tr, {n}, dev));
}

// The documented rules, written independently of the library: transition (global row g, env e)
// is sampleable after G rows were inserted when g + n <= G - 1, it is not among the k - 1 oldest
// rows once the memory has wrapped, and its own step was not truncated.
struct Reference {
  int64_t rows, n, k;
  std::vector<Step> steps;  // by global row

  bool sampleable(int64_t g, int64_t e) const {
    const int64_t inserted = static_cast<int64_t>(steps.size());
    if (g < 0 || g + n > inserted - 1) return false;
    if (inserted > rows && g < inserted - rows + k - 1) return false;
    return !steps[g].truncated[e];
  }
  // The global row a slot holds now.
  int64_t global_row(int64_t slot_row) const {
    const int64_t inserted = static_cast<int64_t>(steps.size());
    const int64_t last = inserted - 1;
    const int64_t g = last - ((last % rows) - slot_row + rows) % rows;
    return g;
  }
  struct NStep {
    double ret;
    double discount;
    int64_t next_g;
  };
  NStep n_step(int64_t g, int64_t e, double gamma) const {
    NStep out{0.0, 0.0, g + 1};
    double d = 1.0;
    for (int64_t j = 0; j < n; ++j) {
      const Step& s = steps[g + j];
      if (j > 0 && s.truncated[e]) return {out.ret, d, g + j};
      out.ret += d * s.reward[e];
      d *= gamma;
      out.next_g = g + j + 1;
      if (s.terminated[e]) return {out.ret, 0.0, g + j + 1};
    }
    out.discount = d;
    return out;
  }
};

// Every internal node of the sum tree equals the in-order sum of its kFanout children, bit for
// bit, and so does the plain left-to-right sum: masses lie on a grid where sums are exact, so the
// order cannot matter. The min tree is one level: each top-level node's smallest leaf mass rounded
// to a float (+inf where none is positive), which in a one-level tree is each leaf's own. The min
// tree's floats come as doubles (exact).
inline void expect_tree_invariants(const std::vector<double>& sum, const std::vector<double>& mn,
                                   const std::vector<int64_t>& offsets, int64_t leaves,
                                   const std::vector<int64_t>& counts = {}) {
  constexpr int kFanout = replay::kFanout;
  const int levels = static_cast<int>(offsets.size()) - 1;
  const int64_t leaf0 = offsets[levels - 1];
  ASSERT_EQ(static_cast<int64_t>(mn.size()), offsets[1] - offsets[0]) << "the min tree's one level";
  // The top level is the only one of at most kTopNodes nodes (the two above it are not stored).
  EXPECT_LE(offsets[1] - offsets[0], replay::kTopNodes);
  if (levels > 1) EXPECT_GT(offsets[2] - offsets[1], replay::kTopNodes);
  int64_t bad = 0, order_dependent = 0;
  for (int d = 0; d + 1 < levels; ++d) {
    for (int64_t j = 0; j < offsets[d + 1] - offsets[d]; ++j) {
      const int64_t c = offsets[d + 1] + j * kFanout;
      if (c >= offsets[d + 2]) break;
      // The documented order: pairs, then quarters, then pairs of quarters, and so on (written
      // out here, not taken from replay_math.h, so that a change there is caught).
      double q[8];
      for (int k = 0; k < kFanout / 4; ++k) {
        const double* x = &sum[c + 4 * k];
        q[k] = (x[0] + x[1]) + (x[2] + x[3]);
      }
      double s = (q[0] + q[1]) + (q[2] + q[3]);
      if (kFanout == 32) s = s + ((q[4] + q[5]) + (q[6] + q[7]));
      double plain = 0.0;
      for (int x = kFanout - 1; x >= 0; --x) plain += sum[c + x];
      if (std::memcmp(&s, &sum[offsets[d] + j], 8) != 0) ++bad;
      if (std::memcmp(&s, &plain, 8) != 0) ++order_dependent;
    }
  }
  EXPECT_EQ(bad, 0) << "internal nodes that differ from their children";
  EXPECT_EQ(order_dependent, 0) << "sums that change with the order of the additions";
  // Each top node's min, from its leaves (written out here, not taken from replay_math.h).
  const int64_t span = int64_t{1} << (replay::kFanoutBits * (levels - 1));
  int64_t bad_min = 0, bad_count = 0;
  for (int64_t top = 0; top < offsets[1] - offsets[0]; ++top) {
    double m = INFINITY;
    int64_t holders = 0;
    for (int64_t i = top * span; i < std::min((top + 1) * span, leaves); ++i) {
      const double mass = sum[leaf0 + i];
      if (!(mass > 0.0)) continue;
      const double x = static_cast<float>(mass);
      holders = x < m ? 1 : holders + (x == m ? 1 : 0);
      m = std::min(m, x);
    }
    if (m != mn[top]) ++bad_min;
    if (levels > 1 && !counts.empty() && counts[static_cast<size_t>(top)] != holders) ++bad_count;
  }
  EXPECT_EQ(bad_min, 0) << "top-level mins that differ from their leaves'";
  EXPECT_EQ(bad_count, 0) << "top-level counts of the leaves that hold the min";
  for (int64_t i = leaves; i < offsets[levels] - leaf0; ++i) EXPECT_EQ(sum[leaf0 + i], 0.0);
}

}  // namespace redline::rl::testing
