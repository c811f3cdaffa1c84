// Sum/min tree: layout, invariants after long random insert/update sequences, leaf values against
// an independent model of the rules, the portable power functions, and descent edge cases.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <vector>

#include "replay_test_util.h"
#include "rl/replay/replay_math.h"

namespace redline::rl {
namespace {

using testing::Reference;
using testing::ScriptedEnvs;
using testing::Step;

// The importance weight's power: float accuracy over ratios from 1 to the largest double and
// exponents in [-1, 0], exact at the edges, 0 where the float range ends.
TEST(ReplayMath, WeightPowerIsFloatAccurate) {
  std::mt19937_64 rng(5);
  double worst = 0;
  for (int i = 0; i < 400000; ++i) {
    double x = std::exp(std::uniform_real_distribution<double>(0, i % 8 == 0 ? 709 : 40)(rng));
    if (i % 5 == 0) x = 1.0 + std::uniform_real_distribution<double>(0, 1e-4)(rng);
    const double y = -std::uniform_real_distribution<double>(0, 1)(rng);
    const double want = std::pow(x, y);
    if (want < 1e-37) continue;  // below float's normal range
    worst = std::max(worst, std::abs(replay::weight_power(x, y) - want) / want);
  }
  EXPECT_LT(worst, 3e-7);  // a few float roundings
  EXPECT_EQ(replay::weight_power(1.0, -0.7), 1.0f);
  EXPECT_EQ(replay::weight_power(123.0, 0.0), 1.0f);
  EXPECT_EQ(replay::weight_power(2.0, -1.0), 0.5f);
  EXPECT_EQ(replay::weight_power(1e300, -1.0), 0.0f);
  EXPECT_EQ(replay::weight_power(1e308, -1.0), 0.0f);
}

// The division-free reciprocal: within one rounding of 1 / x over the whole normal range, exact
// for powers of two.
TEST(ReplayMath, ReciprocalIsWithinOneRounding) {
  std::mt19937_64 rng(17);
  double worst = 0;
  for (int i = 0; i < 400000; ++i) {
    const double x = std::ldexp(std::uniform_real_distribution<double>(1, 2)(rng),
                                std::uniform_int_distribution<int>(-1020, 1020)(rng));
    const double want = 1.0 / x;
    worst = std::max(worst, std::abs(replay::reciprocal(x) - want) / want);
  }
  EXPECT_LE(worst, 2.3e-16);  // 2^-52: the last Newton step's rounding, at most one ulp
  EXPECT_EQ(replay::reciprocal(1.0), 1.0);
  EXPECT_EQ(replay::reciprocal(0.25), 4.0);
  EXPECT_EQ(replay::reciprocal(std::ldexp(1.0, 1000)), std::ldexp(1.0, -1000));
}

// ln x at float precision, without a division: absolute error at most 1.5e-7 over every positive
// double, subnormals included, and 0 at 1.
TEST(ReplayMath, LogFloatPrecisionIsAccurate) {
  std::mt19937_64 rng(23);
  double worst = 0;
  for (int i = 0; i < 400000; ++i) {
    double x = std::exp(std::uniform_real_distribution<double>(-744, 709)(rng));
    if (i % 4 == 0) x = 1.0 + std::uniform_real_distribution<double>(-0.5, 1.0)(rng);
    if (!(x > 0.0)) continue;
    worst = std::max(worst, std::abs(replay::log_float_precision(x) - std::log(x)));
  }
  EXPECT_LT(worst, 1.5e-7);
  EXPECT_EQ(replay::log_float_precision(1.0), 0.0);
  EXPECT_NEAR(replay::log_float_precision(5e-324), std::log(5e-324), 1.5e-7);  // least subnormal
}

// A leaf's mass p^alpha: float accuracy over every float priority (subnormals included) and
// alpha in [0, 1], exact at the edges, and finite for the largest doubles.
TEST(ReplayMath, PriorityPowerIsFloatAccurate) {
  std::mt19937_64 rng(11);
  double worst = 0;
  for (int i = 0; i < 400000; ++i) {
    auto p = static_cast<float>(std::exp(std::uniform_real_distribution<double>(-103, 88)(rng)));
    if (i % 5 == 0) p = 1.0f + std::uniform_real_distribution<float>(-1e-3f, 1e-3f)(rng);
    if (!(p > 0.0f)) continue;
    const double alpha = std::uniform_real_distribution<double>(0, 1)(rng);
    const double want = std::pow(static_cast<double>(p), alpha);
    worst = std::max(worst, std::abs(replay::priority_power(p, alpha) - want) / want);
  }
  EXPECT_LT(worst, 5e-7);  // a few float roundings: a priority is a float
  EXPECT_EQ(replay::priority_power(3.5, 1.0), 3.5);
  EXPECT_EQ(replay::priority_power(3.5, 0.0), 1.0);
  EXPECT_EQ(replay::priority_power(1.0, 0.6), 1.0);
  EXPECT_EQ(replay::priority_power(4.0, 0.5), 2.0);
  EXPECT_NEAR(replay::priority_power(1e-310, 0.5), 1e-155, 1e-155 * 5e-7);  // subnormal double
  EXPECT_NEAR(replay::priority_power(1.7e308, 0.999), std::pow(1.7e308, 0.999), 1e302);
}

// The min tree's floats: masses rounded to the nearest float (a mass is never below the smallest
// positive float), +inf for a slot that is not sampleable. The normalizer is then the smallest mass
// within 2^-24 relative, and the float weights absorb that: the smallest mass weighs exactly 1 and
// no heavier one more.
TEST(ReplayMath, LeafMinsAreMassesRoundedToFloats) {
  EXPECT_EQ(replay::tree_leaf_min(0.1), 0.1f);  // above 0.1: rounding down would differ
  EXPECT_EQ(replay::tree_leaf_min(1.0 / 3.0), 1.0f / 3.0f);
  EXPECT_EQ(replay::tree_leaf_min(3.0), 3.0f);
  EXPECT_EQ(replay::tree_leaf_min(1.5e-45), std::numeric_limits<float>::denorm_min());
  EXPECT_EQ(replay::tree_leaf_min(0.0), std::numeric_limits<float>::infinity());
  EXPECT_EQ(replay::tree_leaf_min(-2.0), std::numeric_limits<float>::infinity());
  replay::ReplayView v;
  v.prioritized = true;
  std::mt19937_64 gen(11);
  std::uniform_real_distribution<double> mantissa(1.0, 2.0), exponent(-60.0, 60.0);
  int64_t not_one = 0, above_one = 0, off = 0;
  for (int i = 0; i < 200000; ++i) {
    const double smallest = mantissa(gen) * std::exp2(std::floor(exponent(gen)));
    const double inverse = replay::reciprocal(static_cast<double>(replay::tree_leaf_min(smallest)));
    const double beta = i % 2 == 0 ? 1.0 : 0.4;
    not_one += replay::importance_weight(v, smallest, inverse, beta) != 1.0f;
    above_one += replay::importance_weight(v, smallest * (1.0 + 1e-8), inverse, beta) > 1.0f;
    const double want = std::pow(2.0, -beta);  // twice the smallest mass
    off +=
        std::abs(replay::importance_weight(v, 2.0 * smallest, inverse, beta) - want) > 4e-7 * want;
  }
  EXPECT_EQ(not_one, 0) << "the smallest mass's weight";
  EXPECT_EQ(above_one, 0) << "weights above 1";
  EXPECT_EQ(off, 0) << "weights of twice the smallest mass";
}

TEST(ReplayMath, LayoutAndDescent) {
  const replay::TreeLayout t = replay::make_tree_layout(1000);
  const int leaf_level = t.levels - 1;
  if (replay::kFanout == 16) {
    EXPECT_EQ(t.levels, 2);  // 1000 -> 63 (the top: 4 rows, then the unstored root)
    EXPECT_EQ(t.count[0], 64);
    EXPECT_EQ(t.count[leaf_level], 1008);
  } else {
    EXPECT_EQ(t.levels, 1);  // 1000 leaves are the top (32 rows)
    EXPECT_EQ(t.count[leaf_level], 1024);
  }
  std::vector<double> sum(t.nodes, 0.0);
  std::vector<float> mn(replay::tree_min_nodes(t), INFINITY);
  EXPECT_EQ(replay::tree_min_nodes(t), t.count[0]);  // the min tree is the top level
  // Mass on leaves 3 (1.0), 500 (2.0) and 999 (1.0).
  for (auto [leaf, v] : std::map<int64_t, double>{{3, 1.0}, {500, 2.0}, {999, 1.0}}) {
    replay::tree_set_leaf(t, sum.data(), mn.data(), leaf, v);
    const int64_t top = replay::tree_top_of(t, leaf);
    mn[top] = replay::tree_min(mn[top], replay::tree_leaf_min(v));
  }
  for (int d = leaf_level - 1; d >= 0; --d) {
    for (int64_t j = 0; j * replay::kFanout < t.count[d + 1]; ++j)
      replay::tree_recompute(t, sum.data(), d, j);
  }
  double total = 0.0;
  float min_leaf = 0.0f;
  replay::tree_top(t, sum.data(), mn.data(), &total, &min_leaf);
  EXPECT_EQ(total, 4.0);
  EXPECT_EQ(min_leaf, 1.0f);
  EXPECT_EQ(replay::tree_descend(t, sum.data(), 0.0), 3);
  EXPECT_EQ(replay::tree_descend(t, sum.data(), 0.999), 3);
  EXPECT_EQ(replay::tree_descend(t, sum.data(), 1.0), 500);
  EXPECT_EQ(replay::tree_descend(t, sum.data(), 2.999), 500);
  EXPECT_EQ(replay::tree_descend(t, sum.data(), 3.5), 999);
  // At or past the end (rounding): the last positive leaf, never an empty one.
  EXPECT_EQ(replay::tree_descend(t, sum.data(), 4.0), 999);
  EXPECT_EQ(replay::tree_descend(t, sum.data(), 1e9), 999);
}

// Long random sequences of inserts and updates: the tree stays consistent and its leaves are
// exactly what the rules say (sampleable or not, entry at the running max, last write wins).
void run_invariant_sequence(bool prioritized, int64_t n_envs, int64_t k, int64_t n_step) {
  ReplayConfig c;
  c.num_envs = n_envs;
  c.capacity = 37 * n_envs;
  c.obs_shape = {k, 3};
  c.obs_dtype = DType::f32;
  c.frame_stack = k;
  c.n_step = n_step;
  c.prioritized = prioritized;
  c.alpha = 0.7;
  c.seed = 11;
  ReplayMemory m(c);
  ScriptedEnvs envs(n_envs, k, 3, false, 99);
  Reference ref{m.num_rows(), n_step, k, {}};
  std::mt19937 rng(5);
  std::vector<double> priority(c.capacity, 0.0);  // model: the priority each slot holds
  std::vector<int64_t> slot_global(c.capacity, -1);
  double max_p = 1.0;
  for (int step = 0; step < 400; ++step) {
    const Step s = envs.next();
    testing::insert_step(m, s, c, Device::cpu());
    ref.steps.push_back(s);
    const int64_t g = static_cast<int64_t>(ref.steps.size()) - 1;
    // A row that completes now enters at the running max.
    if (g - n_step >= 0) {
      const int64_t row = (g - n_step) % m.num_rows();
      for (int64_t e = 0; e < n_envs; ++e) priority[row * n_envs + e] = max_p;
    }
    if (prioritized && m.size() >= 16 && rng() % 3 == 0) {
      // Update a batch with duplicates; the model applies it in order (last write wins).
      const ReplaySample smp = m.sample(16, 0.5);
      std::vector<int64_t> idx = smp.indices.to_vector<int64_t>();
      idx[15] = idx[3];
      std::vector<float> p(16);
      for (auto& v : p) v = std::uniform_real_distribution<float>(0.01f, 5.0f)(rng);
      m.update_priorities(Tensor::from_host(idx, {16}), Tensor::from_host(p, {16}));
      for (int i = 0; i < 16; ++i) {
        max_p = std::max(max_p, static_cast<double>(p[i]));
        const int64_t gi = ref.global_row(idx[i] / n_envs);
        if (ref.sampleable(gi, idx[i] % n_envs)) priority[idx[i]] = p[i];
      }
    }
  }
  const std::vector<double> sum = m.sum_tree_host(), mn = m.min_tree_host();
  const std::vector<int64_t> off = m.tree_level_offsets();
  testing::expect_tree_invariants(sum, mn, off, c.capacity, m.min_tree_counts_host());
  const int64_t leaf0 = off[off.size() - 2];
  const double unit = std::ldexp(
      1.0, -static_cast<int>(replay::mass_unit_shift(c.capacity, c.alpha, c.priority_limit)));
  int64_t mismatches = 0, sampleable = 0, off_grid = 0;
  for (int64_t slot = 0; slot < c.capacity; ++slot) {
    const int64_t g = ref.global_row(slot / n_envs);
    const bool ok = ref.sampleable(g, slot % n_envs);
    sampleable += ok;
    // Leaves are p^alpha at float precision (priority_power; exact for uniform memories), rounded
    // to the memory's grid (leaf_mass): at most half a unit away.
    const double want = !ok ? 0.0 : (prioritized ? std::pow(priority[slot], c.alpha) : 1.0);
    if (std::abs(sum[leaf0 + slot] - want) > 5e-7 * want + unit / 2) ++mismatches;
    if (std::fmod(sum[leaf0 + slot], unit) != 0.0) ++off_grid;
  }
  EXPECT_EQ(mismatches, 0);
  EXPECT_EQ(off_grid, 0) << "leaves off the grid of " << unit;
  EXPECT_GT(sampleable, 0);
  if (prioritized) EXPECT_NEAR(m.max_priority(), max_p, 1e-6);
}

// The grid: masses are p^alpha rounded to multiples of the unit, at least one unit, priorities
// above the limit count as the limit; capacity leaves of the largest mass fit in 2^53 units, so
// sums of masses in any order give the same bits.
TEST(ReplayMath, MassesLieOnAGridWhereSumsAreExact) {
  replay::ReplayView v;
  v.alpha = 0.6;
  v.priority_limit = 1e3;
  v.prioritized = true;
  for (int64_t capacity :
       {int64_t{100}, int64_t{100'000}, int64_t{10'000'000}, int64_t{100'000'000}}) {
    replay::set_mass_grid(v, capacity);
    const double unit = std::ldexp(1.0, -static_cast<int>(v.unit_shift));
    const double largest = replay::leaf_mass(v, v.priority_limit);
    EXPECT_LE(static_cast<double>(capacity) * largest, std::ldexp(1.0, 53) * unit) << capacity;
    EXPECT_GT(static_cast<double>(capacity) * largest, std::ldexp(1.0, 52) * unit)
        << capacity << ": the unit is the finest that fits";
    EXPECT_EQ(replay::leaf_mass(v, 5e3), largest) << "above the limit counts as the limit";
    EXPECT_EQ(replay::leaf_mass(v, 1e-30), unit) << "at least one unit";
    std::mt19937 rng(static_cast<unsigned>(capacity));
    std::vector<double> masses(static_cast<size_t>(std::min<int64_t>(capacity, 4096)));
    for (double& m : masses) {
      const double p = std::exp(std::uniform_real_distribution<double>(-14.0, 7.0)(rng));
      m = replay::leaf_mass(v, p);
      EXPECT_EQ(std::fmod(m, unit), 0.0);
      const double exact = replay::priority_power(std::min(p, v.priority_limit), v.alpha);
      EXPECT_LE(std::abs(m - exact), std::max(unit / 2, unit - exact)) << p;
    }
    // Scaled up to capacity leaves of the largest mass, in three orders.
    masses.back() =
        static_cast<double>(capacity - static_cast<int64_t>(masses.size()) + 1) * largest;
    double forward = 0.0, backward = 0.0;
    for (double m : masses) forward += m;
    for (auto it = masses.rbegin(); it != masses.rend(); ++it) backward += *it;
    std::shuffle(masses.begin(), masses.end(), rng);
    double shuffled = 0.0;
    for (double m : masses) shuffled += m;
    EXPECT_EQ(forward, backward) << capacity;
    EXPECT_EQ(forward, shuffled) << capacity;
  }
}

// The min tree's counts and rescans: a leaf that held its top node's min alone and grows, or stops
// being sampleable, makes the node take the next smallest leaf; a leaf that falls lowers it; ties
// are counted.
TEST(ReplayTree, TopMinFollowsAGrownHolder) {
  ReplayConfig c;
  c.num_envs = 64;
  c.capacity = 64 * 80;  // 5,120 leaves: three levels, top nodes of 256 leaves
  c.obs_shape = {1};
  c.obs_dtype = DType::f32;
  c.prioritized = true;
  c.alpha = 1.0;
  ReplayMemory m(c);
  ScriptedEnvs envs(c.num_envs, 1, 1, false, 3);
  for (int64_t step = 0; step < 80; ++step) testing::insert_step(m, envs.next(), c, Device::cpu());
  const auto top_min = [&](int64_t top) { return m.min_tree_host()[static_cast<size_t>(top)]; };
  const auto update = [&](std::vector<int64_t> idx, std::vector<float> p) {
    const auto n = static_cast<int64_t>(idx.size());
    m.update_priorities(Tensor::from_host(idx, {n}), Tensor::from_host(p, {n}));
    testing::expect_tree_invariants(m.sum_tree_host(), m.min_tree_host(), m.tree_level_offsets(),
                                    c.capacity, m.min_tree_counts_host());
  };
  // Top node 1 holds leaves 256..511. Lower two of them, then grow the smaller one back.
  update({300, 400}, {0.25f, 0.5f});
  EXPECT_EQ(top_min(1), 0.25);
  update({300}, {2.0f});
  EXPECT_EQ(top_min(1), 0.5);
  // Two holders of the same min: growing one keeps it.
  update({260, 270}, {0.125f, 0.125f});
  EXPECT_EQ(m.min_tree_counts_host()[1], 2);
  update({260}, {3.0f});
  EXPECT_EQ(top_min(1), 0.125);
  EXPECT_EQ(m.min_tree_counts_host()[1], 1);
  // Within one batch, a holder grows and another leaf falls below it.
  update({270, 280}, {4.0f, 0.0625f});
  EXPECT_EQ(top_min(1), 0.0625);
  // The last occurrence wins: 280 falls, then rises again in the same batch.
  update({280, 290, 280}, {0.01f, 0.75f, 5.0f});
  EXPECT_EQ(top_min(1), 0.5);
  // Inserts that overwrite a holder: the memory wraps over rows 0.. (leaves 0..63 first).
  update({10}, {0.03125f});
  EXPECT_EQ(top_min(0), 0.03125);
  testing::insert_step(m, envs.next(), c, Device::cpu());
  testing::expect_tree_invariants(m.sum_tree_host(), m.min_tree_host(), m.tree_level_offsets(),
                                  c.capacity, m.min_tree_counts_host());
  EXPECT_GT(top_min(0), 0.03125);
}

TEST(ReplayTree, InvariantsUniformOneEnv) { run_invariant_sequence(false, 1, 1, 1); }
TEST(ReplayTree, InvariantsUniformStackedNStep) { run_invariant_sequence(false, 5, 4, 3); }
TEST(ReplayTree, InvariantsPrioritizedOneEnv) { run_invariant_sequence(true, 1, 1, 1); }
TEST(ReplayTree, InvariantsPrioritizedStackedNStep) { run_invariant_sequence(true, 7, 3, 4); }
// 4,107 slots: three stored levels (4,107 leaves, 257 parents, a top of 17).
TEST(ReplayTree, InvariantsPrioritizedThreeLevels) { run_invariant_sequence(true, 111, 2, 3); }

}  // namespace
}  // namespace redline::rl
