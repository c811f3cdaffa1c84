// GPU parity: the same seed and the same inserts give bit-identical samples, weights, batches and
// trees on the GPU and the CPU; tree invariants hold on the GPU; a captured step (insert, sample,
// update) replays like the eager CPU sequence; kernel faults surface as one sentence; a memory
// saved on the GPU loads on the CPU. Skipped where no GPU is usable.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <random>
#include <string>

#include "redline/core/probe.h"
#include "redline/core/stream.h"
#include "replay_test_util.h"
#include "test_util.h"

namespace redline::rl {
namespace {

using testing::expect_error;
using testing::ScriptedEnvs;
using testing::Step;

const Device kGpu = Device::gpu(0);

template <typename T>
bool bit_equal(const Tensor& a, const Tensor& b) {
  const std::vector<T> x = a.to_vector<T>(), y = b.to_vector<T>();
  return x.size() == y.size() && std::memcmp(x.data(), y.data(), x.size() * sizeof(T)) == 0;
}

// Weights compared bit for bit; a mismatch names the first position that differs, with both values
// and how many differ.
::testing::AssertionResult weights_equal(const Tensor& want, const Tensor& got) {
  const std::vector<float> x = want.to_vector<float>(), y = got.to_vector<float>();
  if (x.size() != y.size()) return ::testing::AssertionFailure() << "weight counts differ";
  size_t differ = 0, first = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    if (std::memcmp(&x[i], &y[i], sizeof(float)) != 0 && differ++ == 0) first = i;
  }
  if (differ == 0) return ::testing::AssertionSuccess();
  char text[160];
  std::snprintf(text, sizeof(text), "%zu of %zu weights differ; first at %zu: CPU %.9g, GPU %.9g",
                differ, x.size(), first, static_cast<double>(x[first]),
                static_cast<double>(y[first]));
  return ::testing::AssertionFailure() << text;
}

bool batches_equal(const ReplayBatch& a, const ReplayBatch& b, DType obs_dtype) {
  const bool obs =
      obs_dtype == DType::u8
          ? bit_equal<uint8_t>(a.obs, b.obs) && bit_equal<uint8_t>(a.next_obs, b.next_obs)
          : bit_equal<float>(a.obs, b.obs) && bit_equal<float>(a.next_obs, b.next_obs);
  return obs && bit_equal<int64_t>(a.indices, b.indices) &&
         bit_equal<float>(a.weights, b.weights) && bit_equal<float>(a.reward, b.reward) &&
         bit_equal<float>(a.discount, b.discount) && bit_equal<int64_t>(a.action, b.action);
}

// Inserts the step on one device (u8 observations are the f32 codes modulo 251).
void insert_on(ReplayMemory& m, const Step& s, Device dev) {
  const ReplayConfig& c = m.config();
  Shape shape{c.num_envs};
  shape.insert(shape.end(), c.obs_shape.begin(), c.obs_shape.end());
  std::vector<uint8_t> te(s.terminated), tr(s.truncated);
  Tensor obs;
  if (c.obs_dtype == DType::u8) {
    std::vector<uint8_t> o(s.obs.size());
    for (size_t j = 0; j < o.size(); ++j)
      o[j] = static_cast<uint8_t>(static_cast<int64_t>(s.obs[j]) % 251);
    obs = Tensor::from_host(o, shape, dev);
  } else {
    obs = Tensor::from_host(s.obs, shape, dev);
  }
  const int64_t n = c.num_envs;
  m.insert(obs, Tensor::from_host(s.action, {n}, dev), Tensor::from_host(s.reward, {n}, dev),
           Tensor::from_host(te, {n}, dev), Tensor::from_host(tr, {n}, dev));
}

struct ParityCase {
  const char* name;
  int64_t envs, k, frame, rows, n;
  DType obs_dtype;
  bool prioritized;
};

void run_parity(const ParityCase& pc) {
  SCOPED_TRACE(pc.name);
  ReplayConfig c;
  c.num_envs = pc.envs;
  c.capacity = pc.rows * pc.envs;
  c.obs_shape = {pc.k, pc.frame};
  c.obs_dtype = pc.obs_dtype;
  c.frame_stack = pc.k;
  c.n_step = pc.n;
  c.prioritized = pc.prioritized;
  c.alpha = 0.6;
  c.seed = 0xFEED;
  c.stream = 9;
  ReplayConfig g = c;
  g.device = kGpu;
  ReplayMemory cpu(c), gpu(g);
  ScriptedEnvs envs(pc.envs, pc.k, pc.frame, false, 31);
  int64_t mismatched = 0, compared = 0;
  for (int step = 0; step < 3 * pc.rows; ++step) {
    const Step s = envs.next();
    insert_on(cpu, s, Device::cpu());
    insert_on(gpu, s, kGpu);
    if (cpu.size() < 64) continue;
    const ReplayBatch a = cpu.sample_batch(64, 0.4), b = gpu.sample_batch(64, 0.4);
    ++compared;
    if (!batches_equal(a, b, c.obs_dtype)) ++mismatched;
    if (pc.prioritized) {
      // Priorities from a fixed formula of the indices, with a duplicate index in the batch.
      std::vector<int64_t> idx = a.indices.to_vector<int64_t>();
      idx[63] = idx[0];
      std::vector<float> p(64);
      for (int i = 0; i < 64; ++i)
        p[i] = 0.01f + static_cast<float>((idx[i] * 7919 + step) % 1000) * 0.013f;
      cpu.update_priorities(Tensor::from_host(idx, {64}), Tensor::from_host(p, {64}));
      gpu.update_priorities(Tensor::from_host(idx, {64}, kGpu), Tensor::from_host(p, {64}, kGpu));
    }
  }
  gpu.check_errors();
  EXPECT_GT(compared, 10);
  EXPECT_EQ(mismatched, 0) << "of " << compared << " sampled batches";
  const auto cs = cpu.sum_tree_host(), gs = gpu.sum_tree_host();
  EXPECT_EQ(std::memcmp(cs.data(), gs.data(), cs.size() * 8), 0) << "sum trees differ";
  EXPECT_EQ(cpu.min_tree_host(), gpu.min_tree_host());
  EXPECT_EQ(cpu.min_tree_counts_host(), gpu.min_tree_counts_host());
  EXPECT_EQ(cpu.max_priority(), gpu.max_priority());
  testing::expect_tree_invariants(gs, gpu.min_tree_host(), gpu.tree_level_offsets(), c.capacity,
                                  gpu.min_tree_counts_host());
}

TEST(GpuReplay, SamplesAndBatchesBitIdenticalToCpu) {
  REDLINE_REQUIRE_GPU();
  run_parity({"prioritized f32 vector obs", 4, 1, 7, 60, 1, DType::f32, true});
  run_parity({"prioritized u8 stacks, n-step", 8, 4, 84 * 84, 50, 3, DType::u8, true});
  run_parity({"uniform u8 odd frame size", 3, 2, 101, 70, 2, DType::u8, false});
  run_parity({"prioritized, many envs", 300, 1, 16, 24, 1, DType::u8, true});
  // The GPU's gather loads rows t - (k - 1) .. t + n into shared memory when k + n <= 64, and walks
  // the memory beyond: both sides of that bound.
  run_parity({"window of 64 rows: k 16, n 48", 3, 16, 5, 90, 48, DType::u8, true});
  run_parity({"window past 64 rows: k 2, n 70", 4, 2, 9, 100, 70, DType::f32, true});
}

// A prioritized memory of scalar f32 observations: envs environments, rows rows of them.
ReplayConfig scalar_prioritized(int64_t envs, int64_t rows, Device device) {
  ReplayConfig c;
  c.num_envs = envs;
  c.capacity = envs * rows;
  c.obs_shape = {1};
  c.obs_dtype = DType::f32;
  c.prioritized = true;
  c.device = device;
  return c;
}

// A CPU and a GPU memory of scalar_prioritized(envs, rows) with the same seed, fed the same `rows`
// steps of ScriptedEnvs (its seed: env_seed), so the memory is full.
struct FilledTwins {
  ReplayMemory cpu, gpu;
  FilledTwins(int64_t envs, int64_t rows, uint64_t seed, uint32_t env_seed)
      : cpu(config(envs, rows, seed, Device::cpu())), gpu(config(envs, rows, seed, kGpu)) {
    ScriptedEnvs envs_script(envs, 1, 1, false, env_seed);
    for (int64_t i = 0; i < rows; ++i) {
      const Step s = envs_script.next();
      insert_on(cpu, s, Device::cpu());
      insert_on(gpu, s, kGpu);
    }
  }
  static ReplayConfig config(int64_t envs, int64_t rows, uint64_t seed, Device device) {
    ReplayConfig c = scalar_prioritized(envs, rows, device);
    c.seed = seed;
    return c;
  }
};

TEST(GpuReplay, TreeInvariantsAfterLongSequences) {
  REDLINE_REQUIRE_GPU();
  const ReplayConfig c = scalar_prioritized(64, 500, kGpu);
  ReplayMemory m(c);
  std::mt19937 rng(3);
  Tensor obs = Tensor::zeros({64, 1}, DType::f32, kGpu);
  Tensor act = Tensor::zeros({64}, DType::i64, kGpu);
  Tensor rew = Tensor::ones({64}, DType::f32, kGpu);
  Tensor no = Tensor::zeros({64}, DType::boolean, kGpu);
  for (int step = 0; step < 1300; ++step) {
    m.insert(obs, act, rew, no, no);
    if (m.size() >= 1024 && step % 2 == 0) {
      const ReplaySample s = m.sample(1024, 0.4);
      std::vector<int64_t> idx = s.indices.to_vector<int64_t>();
      for (int i = 0; i < 1024; i += 5) idx[i] = idx[(i * 31) % 1024];  // many duplicates
      std::vector<float> p(1024);
      for (auto& v : p) v = std::uniform_real_distribution<float>(1e-3f, 1e3f)(rng);
      m.update_priorities(Tensor::from_host(idx, {1024}, kGpu), Tensor::from_host(p, {1024}, kGpu));
    }
  }
  m.check_errors();
  testing::expect_tree_invariants(m.sum_tree_host(), m.min_tree_host(), m.tree_level_offsets(),
                                  c.capacity, m.min_tree_counts_host());
}

// Update has two paths on the GPU: batches up to 512 are staged in shared memory (duplicates found
// from the next index where the batch is sorted, else through a hash table), larger ones are read
// from global memory. Both must leave the CPU's trees bit for bit after every update, at every
// depth (0 to 5 stored levels of ancestors: the last shape, 17M slots, has the depth of 1e8), with
// duplicates (the last occurrence wins), with slots that are not sampleable (left alone), with
// inserts between the updates, with leaves that share a parent (pairs, then triples), and with
// sorted batches (staged ones skip the hash table there): spread over the whole memory, then dense
// over 40 and over 1,000 consecutive slots, where long runs of indices share their ancestors and
// those runs cross the boundaries between warps.
TEST(GpuReplay, UpdateMatchesCpuAtEveryBatchAndDepth) {
  REDLINE_REQUIRE_GPU();
  const int64_t batches[] = {1, 3, 16, 64, 127, 128, 129, 256, 257, 512, 513};
  const struct {
    int64_t envs, rows;
  } shapes[] = {{4, 4}, {8, 25}, {30, 100}, {50, 100}, {100, 700}, {1000, 1100}, {10000, 1700}};
  for (const auto& shape : shapes) {
    const ReplayConfig c = scalar_prioritized(shape.envs, shape.rows, Device::cpu());
    ReplayConfig g = c;
    g.device = kGpu;
    ReplayMemory cpu(c), gpu(g);
    SCOPED_TRACE(::testing::Message() << "capacity " << c.capacity << ", "
                                      << cpu.tree_level_offsets().size() - 1 << " levels");
    std::mt19937 rng(static_cast<uint32_t>(c.capacity));
    const auto insert_both = [&](int64_t step) {
      std::vector<float> r(static_cast<size_t>(shape.envs), static_cast<float>(step));
      std::vector<uint8_t> done(static_cast<size_t>(shape.envs), 0);
      for (size_t e = 0; e < done.size(); e += 7) done[e] = static_cast<uint8_t>(step % 3 == 0);
      const std::vector<float> obs(static_cast<size_t>(shape.envs), 0.5f);
      const std::vector<int64_t> act(static_cast<size_t>(shape.envs), 1);
      const std::vector<uint8_t> no(static_cast<size_t>(shape.envs), 0);
      for (ReplayMemory* m : {&cpu, &gpu}) {
        const Device dev = m == &cpu ? Device::cpu() : kGpu;
        m->insert(
            Tensor::from_host(obs, {shape.envs, 1}, dev), Tensor::from_host(act, {shape.envs}, dev),
            Tensor::from_host(r, {shape.envs}, dev), Tensor::from_host(done, {shape.envs}, dev),
            Tensor::from_host(no, {shape.envs}, dev));
      }
    };
    // Partly filled, so that many slots are not sampleable yet.
    for (int64_t step = 0; step < shape.rows / 2 + 2; ++step) insert_both(step);
    int64_t mismatched = 0, round = 0;
    for (int pass = 0; pass < 5; ++pass) {
      for (const int64_t b : batches) {
        std::vector<int64_t> idx(static_cast<size_t>(b));
        for (auto& i : idx) i = std::uniform_int_distribution<int64_t>(0, c.capacity - 1)(rng);
        for (size_t j = 3; j < idx.size(); j += 4) idx[j] = idx[j / 4];  // duplicates
        // Leaves sharing a parent (their parent is recomputed by several groups): pairs in both
        // passes, triples in the second.
        const auto sibling = [&](int64_t of, int64_t by) {
          return std::min(c.capacity - 1,
                          of / replay::kFanout * replay::kFanout + (of + by) % replay::kFanout);
        };
        for (size_t j = 5; j < idx.size(); j += 8) idx[j] = sibling(idx[j - 1], 5);
        if (pass >= 1) {
          for (size_t j = 6; j < idx.size(); j += 16) idx[j] = sibling(idx[j - 2], 9);
        }
        if (pass == 2) {
          // Sorted, as a sample's indices come: duplicates in runs, one across the boundary of the
          // first two warps and one at the end.
          std::sort(idx.begin(), idx.end());
          for (size_t j = 30; j < 36 && j < idx.size(); ++j) idx[j] = idx[29];
          if (idx.size() > 1) idx.back() = idx[idx.size() - 2];
        }
        if (pass >= 3) {
          const int64_t span = std::min<int64_t>(c.capacity, pass == 3 ? 40 : 1000);
          const int64_t from = std::uniform_int_distribution<int64_t>(0, c.capacity - span)(rng);
          for (auto& i : idx) i = from + std::uniform_int_distribution<int64_t>(0, span - 1)(rng);
          std::sort(idx.begin(), idx.end());
        }
        std::vector<float> p(static_cast<size_t>(b));
        for (auto& x : p) x = std::uniform_real_distribution<float>(1e-3f, 1e3f)(rng);
        cpu.update_priorities(Tensor::from_host(idx, {b}), Tensor::from_host(p, {b}));
        gpu.update_priorities(Tensor::from_host(idx, {b}, kGpu), Tensor::from_host(p, {b}, kGpu));
        const auto cs = cpu.sum_tree_host(), gs = gpu.sum_tree_host();
        const bool same = cs.size() == gs.size() &&
                          std::memcmp(cs.data(), gs.data(), cs.size() * sizeof(double)) == 0 &&
                          cpu.min_tree_host() == gpu.min_tree_host();
        if (!same) {
          ++mismatched;
          ADD_FAILURE() << "trees differ after an update of batch " << b;
        }
        if (++round % 3 == 0) insert_both(shape.rows + round);
      }
    }
    gpu.check_errors();
    EXPECT_EQ(mismatched, 0);
    EXPECT_EQ(cpu.max_priority(), gpu.max_priority());
    testing::expect_tree_invariants(gpu.sum_tree_host(), gpu.min_tree_host(),
                                    gpu.tree_level_offsets(), c.capacity,
                                    gpu.min_tree_counts_host());
  }
}

// The min tree against the CPU's where a wrong step would show (its mins and counts are exact, so
// the two must agree however each keeps them): the first updates raise leaves of a flat memory
// (every top node's min held by thousands of entries: counts moved by atomic adds), then the unique
// global minimum raised (every ancestor up to the top changes), raised with its siblings lowered in
// the same batch, a tie for the minimum in two distant subtrees raised one by one (the minimum
// stays, then moves), a mass lowered past the minimum and raised back, unsorted batches (the hash
// table's path), and whole leaf rows of the same mass raised together. Every other step a sample
// (indices and weights, which use the smallest leaf) is compared too.
TEST(GpuReplay, MinTreeFollowsRaisedAndLoweredMinimums) {
  REDLINE_REQUIRE_GPU();
  FilledTwins t(100, 700, 5, 9);  // 70,000 slots: three stored levels above the leaves
  const int64_t capacity = 70000;
  const std::vector<int64_t> offsets = t.cpu.tree_level_offsets();
  const int64_t leaf0 = offsets[offsets.size() - 2];
  std::vector<int64_t> sampleable;
  {
    const std::vector<double> sum = t.cpu.sum_tree_host();
    for (int64_t i = 0; i < capacity; ++i) {
      if (sum[static_cast<size_t>(leaf0 + i)] > 0.0) sampleable.push_back(i);
    }
  }
  ASSERT_GT(sampleable.size(), 60000u);
  int step = 0;
  const auto update_both = [&](const std::vector<int64_t>& idx, const std::vector<float>& p) {
    const auto b = static_cast<int64_t>(idx.size());
    t.cpu.update_priorities(Tensor::from_host(idx, {b}), Tensor::from_host(p, {b}));
    t.gpu.update_priorities(Tensor::from_host(idx, {b}, kGpu), Tensor::from_host(p, {b}, kGpu));
    ++step;
    // Every other step a sample comes first: its weights read the smallest leaf from the min tree
    // that the update has just changed.
    if (step % 2 == 0) {
      const ReplaySample want = t.cpu.sample(128, 0.5);
      const ReplaySample got = t.gpu.sample(128, 0.5);
      EXPECT_TRUE(bit_equal<int64_t>(want.indices, got.indices))
          << "indices differ at step " << step;
      EXPECT_TRUE(weights_equal(want.weights, got.weights)) << "at step " << step;
    }
    EXPECT_TRUE(t.cpu.min_tree_host() == t.gpu.min_tree_host())
        << "min trees differ at step " << step;
    EXPECT_TRUE(t.cpu.min_tree_counts_host() == t.gpu.min_tree_counts_host())
        << "the min tree's counts differ at step " << step;
    EXPECT_TRUE(t.cpu.sum_tree_host() == t.gpu.sum_tree_host())
        << "sum trees differ at step " << step;
  };
  // Every sampleable slot gets a distinct priority in [1, 2), in staged batches of 512.
  std::mt19937 rng(11);
  std::vector<int64_t> order = sampleable;
  std::shuffle(order.begin(), order.end(), rng);
  std::vector<float> priority(static_cast<size_t>(capacity), 0.0f);
  for (size_t k = 0; k < order.size(); ++k) {
    priority[static_cast<size_t>(order[k])] =
        1.0f + static_cast<float>(k) / static_cast<float>(order.size());
  }
  for (size_t first = 0; first < sampleable.size(); first += 512) {
    const size_t n = std::min<size_t>(512, sampleable.size() - first);
    std::vector<int64_t> idx(sampleable.begin() + static_cast<std::ptrdiff_t>(first),
                             sampleable.begin() + static_cast<std::ptrdiff_t>(first + n));
    std::vector<float> p;
    for (const int64_t i : idx) p.push_back(priority[static_cast<size_t>(i)]);
    update_both(idx, p);
  }
  const int64_t lowest = order.front();  // priority 1: the unique global minimum
  // 1. The global minimum raised: every level up to the top changes.
  update_both({lowest}, {3.0f});
  // 2. The new global minimum raised while two of its siblings fall (in the same batch, sorted)
  //    and a slot in a distant subtree falls too.
  const int64_t second = order[1];
  std::vector<int64_t> idx;
  std::vector<float> p;
  for (const int64_t i : sampleable) {
    if (i / replay::kFanout == second / replay::kFanout && i != second && idx.size() < 2) {
      idx.push_back(i);
      p.push_back(0.9f - 0.1f * static_cast<float>(idx.size()));
    }
  }
  idx.push_back(second);
  p.push_back(4.0f);
  idx.push_back(sampleable[(std::find(sampleable.begin(), sampleable.end(), second) -
                            sampleable.begin() + 30000) %
                           static_cast<std::ptrdiff_t>(sampleable.size())]);
  p.push_back(0.75f);
  update_both(idx, p);
  // 3. A tie for the minimum in two distant subtrees: raising one leaves the minimum, raising the
  //    other moves it.
  const int64_t a = sampleable[10], b = sampleable[sampleable.size() - 10];
  update_both({b, a}, {0.5f, 0.5f});  // unsorted: the hash table's path
  update_both({a}, {5.0f});
  update_both({b}, {5.0f});
  // 4. A mass lowered far below the minimum, then raised back above it, with duplicates.
  const int64_t c = sampleable[sampleable.size() / 2];
  update_both({c, c}, {0.1f, 0.01f});
  update_both({c, a, c}, {0.2f, 7.0f, 6.0f});
  // 5. Whole rows of slots set to one mass (ties across every level), then raised in runs of 64
  //    with every fourth one lowered instead.
  std::vector<int64_t> run(sampleable.begin(), sampleable.begin() + 512);
  update_both(run, std::vector<float>(512, 0.3f));
  for (size_t first = 0; first < run.size(); first += 64) {
    std::vector<int64_t> part(run.begin() + static_cast<std::ptrdiff_t>(first),
                              run.begin() + static_cast<std::ptrdiff_t>(first + 64));
    std::vector<float> q(64, 2.5f);
    for (size_t k = 0; k < q.size(); k += 4) q[k] = 0.05f + 0.001f * static_cast<float>(first + k);
    update_both(part, q);
  }
  t.gpu.check_errors();
  testing::expect_tree_invariants(t.gpu.sum_tree_host(), t.gpu.min_tree_host(),
                                  t.gpu.tree_level_offsets(), capacity,
                                  t.gpu.min_tree_counts_host());
}

TEST(GpuReplay, CapturedStepReplaysLikeEagerCpu) {
  REDLINE_REQUIRE_GPU();
  ReplayConfig c;
  c.num_envs = 16;
  c.capacity = 16 * 64;
  c.obs_shape = {2, 8};
  c.obs_dtype = DType::u8;
  c.frame_stack = 2;
  c.n_step = 3;
  c.prioritized = true;
  c.seed = 5;
  ReplayConfig g = c;
  g.device = kGpu;
  ReplayMemory cpu(c), gpu(g);
  ScriptedEnvs envs(16, 2, 8, false, 77);
  for (int i = 0; i < 20; ++i) {  // fill eagerly on both
    const Step s = envs.next();
    insert_on(cpu, s, Device::cpu());
    insert_on(gpu, s, kGpu);
  }
  // Device inputs of the captured step, refilled before each replay.
  Tensor obs = Tensor::zeros({16, 2, 8}, DType::u8, kGpu),
         act = Tensor::zeros({16}, DType::i64, kGpu);
  Tensor rew = Tensor::zeros({16}, DType::f32, kGpu), te = Tensor::zeros({16}, DType::u8, kGpu);
  Tensor tr = Tensor::zeros({16}, DType::u8, kGpu), pri = Tensor::ones({32}, DType::f32, kGpu);
  Tensor beta = Tensor::full({1}, 0.5, DType::f32, kGpu);
  ReplaySample smp;
  ReplayBatch batch;
  const auto step_fn = [&] {
    gpu.insert(obs, act, rew, te, tr);
    gpu.sample_into(32, beta, smp);
    gpu.gather_into(smp, batch);
    gpu.update_priorities(smp.indices, pri);
  };
  const auto load_inputs = [&](const Step& s, const std::vector<float>& p) {
    std::vector<uint8_t> o(s.obs.size());
    for (size_t j = 0; j < o.size(); ++j)
      o[j] = static_cast<uint8_t>(static_cast<int64_t>(s.obs[j]) % 251);
    obs.copy_from(Tensor::from_host(o, {16, 2, 8}));
    act.copy_from(Tensor::from_host(s.action, {16}));
    rew.copy_from(Tensor::from_host(s.reward, {16}));
    std::vector<uint8_t> a(s.terminated), b(s.truncated);
    te.copy_from(Tensor::from_host(a, {16}));
    tr.copy_from(Tensor::from_host(b, {16}));
    pri.copy_from(Tensor::from_host(p, {32}));
  };
  const auto cpu_step = [&](const Step& s, const std::vector<float>& p) {
    insert_on(cpu, s, Device::cpu());
    const ReplayBatch b = cpu.gather(cpu.sample(32, 0.5));
    cpu.update_priorities(b.indices, Tensor::from_host(p, {32}));
    return b;
  };
  std::vector<float> p(32);
  int64_t mismatched = 0;
  std::unique_ptr<StepGraph> graph;
  for (int r = 0; r < 41; ++r) {
    const Step s = envs.next();
    for (int i = 0; i < 32; ++i) p[i] = 0.1f + static_cast<float>((r * 13 + i * 7) % 17);
    load_inputs(s, p);
    if (r == 0) {
      step_fn();  // eager warm-up (allocates the outputs)
    } else {
      if (graph == nullptr) {
        graph = std::make_unique<StepGraph>(kGpu);
        graph->capture(step_fn);
      }
      graph->replay();
    }
    const ReplayBatch want = cpu_step(s, p);
    if (!batches_equal(want, batch, DType::u8)) ++mismatched;
  }
  gpu.check_errors();
  EXPECT_EQ(mismatched, 0) << "of 41 steps";
  EXPECT_EQ(cpu.sum_tree_host(), gpu.sum_tree_host());
}

// Sample and update launched back to back, with no other work or host wait between them: on
// sm_90 update may start while sample finishes (chained launches), so it must wait for sample's
// indices. The GPU's rounds are all enqueued before the host waits (eager launches, then one
// captured graph of rounds), so the kernels run back to back; any stale read of the indices
// updates the wrong leaves, and the tree then differs from the CPU's.
TEST(GpuReplay, BackToBackSampleAndUpdateMatchCpu) {
  REDLINE_REQUIRE_GPU();
  FilledTwins twins(4096, 64, 11, 19);
  ReplayMemory &cpu = twins.cpu, &gpu = twins.gpu;
  // Batches of 128 (update stages them in shared memory) and 1,024 (it reads them from global
  // memory), alternating; each size has its own sample, allocated by the first rounds.
  constexpr int kRounds = 400;
  const auto batch_of = [](int r) -> int64_t { return r % 2 == 0 ? 128 : 1024; };
  std::vector<Tensor> cpu_p, gpu_p;  // made up front: no copies between the launches
  for (int r = 0; r < kRounds; ++r) {
    std::vector<float> p(static_cast<size_t>(batch_of(r)));
    for (size_t i = 0; i < p.size(); ++i) {
      p[i] = 0.05f + static_cast<float>((r * 29 + static_cast<int>(i) * 11) % 97);
    }
    cpu_p.push_back(Tensor::from_host(p, {batch_of(r)}));
    gpu_p.push_back(Tensor::from_host(p, {batch_of(r)}, kGpu));
  }
  Tensor beta = Tensor::full({1}, 0.4, DType::f32, kGpu);
  ReplaySample smp[2];
  const auto gpu_round = [&](int r) {
    ReplaySample& s = smp[r % 2];
    gpu.sample_into(batch_of(r), beta, s);
    gpu.update_priorities(s.indices, gpu_p[static_cast<size_t>(r)]);
  };
  gpu_round(0);  // allocates both samples
  gpu_round(1);
  for (int r = 2; r < kRounds / 2; ++r) gpu_round(r);
  StepGraph graph(kGpu);
  graph.capture([&] {
    for (int r = kRounds / 2; r < kRounds; ++r) gpu_round(r);
  });
  graph.replay();
  gpu.check_errors();
  for (int r = 0; r < kRounds; ++r) {
    const ReplaySample want = cpu.sample(batch_of(r), 0.4);
    cpu.update_priorities(want.indices, cpu_p[static_cast<size_t>(r)]);
  }
  // The GPU's beta is a float tensor, so the CPU takes the same float (0.4 as a double would give
  // other weights).
  const ReplaySample last_cpu = cpu.sample(128, Tensor::full({1}, 0.4, DType::f32));
  gpu.sample_into(128, beta, smp[0]);
  EXPECT_EQ(last_cpu.indices.to_vector<int64_t>(), smp[0].indices.to_vector<int64_t>());
  EXPECT_TRUE(weights_equal(last_cpu.weights, smp[0].weights));
  EXPECT_EQ(cpu.sum_tree_host(), gpu.sum_tree_host());
  EXPECT_EQ(cpu.min_tree_host(), gpu.min_tree_host());
  EXPECT_EQ(cpu.min_tree_counts_host(), gpu.min_tree_counts_host());
}

// Samples enqueued back to back, nothing between them (eager, then captured), each draw afresh: a
// GPU sample reads the Philox offset before the kernel ahead of it has finished, which is safe only
// because a sample advances the offset before it lets later kernels start. A sample whose device
// beta is out of range faults and still uses its draws, on both devices alike.
TEST(GpuReplay, BackToBackSamplesEachDrawAfresh) {
  REDLINE_REQUIRE_GPU();
  FilledTwins twins(512, 8, 5, 23);
  ReplayMemory &cpu = twins.cpu, &gpu = twins.gpu;
  constexpr int kSamples = 96;
  const Tensor beta = Tensor::full({1}, 0.4, DType::f32, kGpu);
  std::vector<ReplaySample> got(kSamples);
  for (ReplaySample& s : got) {  // allocated up front, so nothing but samples is enqueued
    s.indices = Tensor::empty({128}, DType::i64, kGpu);
    s.weights = Tensor::empty({128}, DType::f32, kGpu);
  }
  for (int r = 0; r < kSamples / 2; ++r) gpu.sample_into(128, beta, got[r]);
  StepGraph graph(kGpu);
  graph.capture([&] {
    for (int r = kSamples / 2; r < kSamples; ++r) gpu.sample_into(128, beta, got[r]);
  });
  graph.replay();
  gpu.check_errors();
  for (int r = 0; r < kSamples; ++r) {
    SCOPED_TRACE("sample " + std::to_string(r));
    const ReplaySample want = cpu.sample(128, 0.4);
    EXPECT_TRUE(bit_equal<int64_t>(want.indices, got[r].indices));
    EXPECT_TRUE(bit_equal<float>(want.weights, got[r].weights));
  }
  (void)gpu.sample(128, Tensor::full({1}, 2.0, DType::f32, kGpu));
  expect_error([&] { gpu.check_errors(); }, "sample got beta = 2; beta must be in [0, 1]");
  expect_error([&] { (void)cpu.sample(128, Tensor::full({1}, 2.0, DType::f32)); },
               "sample got beta = 2; beta must be in [0, 1]");
  const ReplaySample after_cpu = cpu.sample(128, 0.4);
  const ReplaySample after_gpu = gpu.sample(128, 0.4);
  EXPECT_TRUE(bit_equal<int64_t>(after_cpu.indices, after_gpu.indices));
  EXPECT_TRUE(bit_equal<float>(after_cpu.weights, after_gpu.weights));
}

TEST(GpuReplay, KernelFaultsAreOneSentence) {
  REDLINE_REQUIRE_GPU();
  ReplayConfig c;
  c.capacity = 40;
  c.obs_shape = {2};
  c.obs_dtype = DType::f32;
  c.prioritized = true;
  c.device = kGpu;
  ReplayMemory m(c);
  for (int i = 0; i < 10; ++i) {
    m.insert(Tensor::zeros({1, 2}, DType::f32, kGpu), Tensor::zeros({1}, DType::i64, kGpu),
             Tensor::ones({1}, DType::f32, kGpu), Tensor::zeros({1}, DType::boolean, kGpu),
             Tensor::zeros({1}, DType::boolean, kGpu));
  }
  const auto before = m.sum_tree_host();
  m.update_priorities(Tensor::from_host<int64_t>({1, 2, 3}, {3}, kGpu),
                      Tensor::from_host<float>({1.0f, 2.0f, NAN}, {3}, kGpu));
  expect_error([&] { m.check_errors(); },
               "update_priorities got priority nan at position 2 of the batch");
  EXPECT_EQ(m.sum_tree_host(), before);  // the batch was not applied
  m.check_errors();                      // raised once
  m.update_priorities(Tensor::from_host<int64_t>({1, 45}, {2}, kGpu),
                      Tensor::from_host<float>({1.0f, 2.0f}, {2}, kGpu));
  expect_error([&] { m.check_errors(); }, "got index 45 at position 1 of the batch");
  ReplayBatch gathered;
  m.gather_into(ReplaySample{Tensor::from_host<int64_t>({3, -7}, {2}, kGpu),
                             Tensor::ones({2}, DType::f32, kGpu)},
                gathered);
  expect_error([&] { m.check_errors(); }, "got index -7 at position 1 of the batch");
  (void)m.sample(4, Tensor::full({1}, 2.0, DType::f32, kGpu));
  expect_error([&] { m.check_errors(); }, "sample got beta = 2; beta must be in [0, 1]");
  // A fault already visible is raised by the next call without check_errors.
  m.update_priorities(Tensor::from_host<int64_t>({1}, {1}, kGpu),
                      Tensor::from_host<float>({-1.0f}, {1}, kGpu));
  Stream::current(kGpu).synchronize();
  expect_error([&] { (void)m.sample(4); }, "got priority -1 at position 0");
}

TEST(GpuReplay, SavedOnGpuLoadsOnCpu) {
  REDLINE_REQUIRE_GPU();
  ReplayConfig c;
  c.num_envs = 4;
  c.capacity = 200;
  c.obs_shape = {4, 10};
  c.obs_dtype = DType::u8;
  c.frame_stack = 4;
  c.n_step = 3;
  c.prioritized = true;
  ReplayConfig g = c;
  g.device = kGpu;
  ReplayMemory gpu(g), cpu(c);
  ScriptedEnvs envs(4, 4, 10, false, 12);
  for (int i = 0; i < 80; ++i) insert_on(gpu, envs.next(), kGpu);
  const ReplaySample s = gpu.sample(16);
  gpu.update_priorities(s.indices, Tensor::full({16}, 3.0, DType::f32, kGpu));
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("redline_replay_gpu_" + std::to_string(::getpid()) + ".bin"))
                               .string();
  gpu.save(path);
  cpu.load(path);
  std::remove(path.c_str());
  for (int r = 0; r < 4; ++r) {
    EXPECT_TRUE(batches_equal(gpu.sample_batch(32, 0.4), cpu.sample_batch(32, 0.4), DType::u8));
  }
}

// The capacity: 100 million MinAtar transitions ((4, 10, 10) u8 observations) on one GPU
// that holds them (the H200; smaller GPUs skip), about 430 bytes each. The memory is filled to the
// last slot and wrapped, sampled and updated there, and every gathered transition is the one
// inserted: its observation, next observation and reward all name the insert that wrote it.
TEST(GpuReplay, HundredMillionMinAtarTransitionsFit) {
  REDLINE_REQUIRE_GPU();
  ReplayConfig c;
  c.capacity = 100'000'000;
  c.num_envs = 10'000;
  c.obs_shape = {4, 10, 10};
  c.obs_dtype = DType::u8;
  c.prioritized = true;
  c.seed = 5;
  c.device = kGpu;
  const size_t needed = ReplayMemory::bytes_needed(c);
  EXPECT_LT(static_cast<double>(needed) / static_cast<double>(c.capacity), 440.0);
  GpuRuntimeInfo runtime;
  const std::vector<GpuInfo> gpus = probe_gpus(&runtime, false);
  ASSERT_FALSE(gpus.empty());
  if (gpus[0].memory_free_bytes < needed + (size_t{4} << 30)) {
    GTEST_SKIP() << gpus[0].name << " has " << (gpus[0].memory_free_bytes >> 20)
                 << " MiB free; 1e8 MinAtar transitions need " << (needed >> 20) << " MiB";
  }
  ReplayMemory m(c);
  EXPECT_EQ(m.bytes(), needed);
  EXPECT_EQ(m.stats().bytes, needed);
  const int64_t rows = c.capacity / c.num_envs;
  const Tensor action = Tensor::zeros({c.num_envs}, DType::i64, kGpu);
  const Tensor no = Tensor::zeros({c.num_envs}, DType::boolean, kGpu);
  const int64_t inserts = rows + 7;  // every slot written, then 7 rows overwritten
  for (int64_t r = 0; r < inserts; ++r) {
    m.insert(Tensor::full({c.num_envs, 4, 10, 10}, static_cast<double>(r % 251), DType::u8, kGpu),
             action, Tensor::full({c.num_envs}, static_cast<double>(r), DType::f32, kGpu), no, no);
  }
  m.check_errors();
  EXPECT_EQ(m.stats().stored, c.capacity);
  int64_t high = 0, mismatched = 0;
  for (int round = 0; round < 8; ++round) {
    const ReplayBatch b = m.sample_batch(128, 0.4);
    const std::vector<int64_t> idx = b.indices.to_vector<int64_t>();
    const std::vector<float> reward = b.reward.to_vector<float>();
    const std::vector<uint8_t> obs = b.obs.to_vector<uint8_t>();
    const std::vector<uint8_t> next = b.next_obs.to_vector<uint8_t>();
    for (size_t i = 0; i < idx.size(); ++i) {
      EXPECT_GE(idx[i], 0);
      EXPECT_LT(idx[i], c.capacity);
      high += idx[i] >= c.capacity - c.capacity / 10;
      const auto r = static_cast<int64_t>(reward[i]);
      // Rows of the first 7 inserts were overwritten; the newest row has no next observation yet.
      EXPECT_GE(r, 7);
      EXPECT_LT(r, inserts - 1);
      for (int x = 0; x < 400; ++x) {
        mismatched += obs[i * 400 + x] != static_cast<uint8_t>(r % 251);
        mismatched += next[i * 400 + x] != static_cast<uint8_t>((r + 1) % 251);
      }
    }
    // New priorities for the sampled slots and for the very last slot.
    std::vector<int64_t> at = idx;
    at.back() = c.capacity - 1;
    m.update_priorities(Tensor::from_host(at, {128}, kGpu),
                        Tensor::full({128}, 0.5 + round, DType::f32, kGpu));
  }
  m.check_errors();
  EXPECT_EQ(mismatched, 0);
  // The top tenth of the slots holds a tenth of the mass, give or take: about 102 of 1,024 draws.
  EXPECT_GT(high, 40);
  EXPECT_EQ(m.max_priority(), 7.5);
}

TEST(GpuReplay, CapacityBeyondDeviceMemoryIsRefusedBeforeAllocating) {
  REDLINE_REQUIRE_GPU();
  ReplayConfig c;
  c.capacity = int64_t{1} << 36;
  c.obs_shape = {4, 84, 84};
  c.frame_stack = 4;
  c.device = kGpu;
  const size_t before = allocator_for(kGpu).stats().raw_allocations;
  expect_error([&] { ReplayMemory m(c); }, "but gpu:0 has");
  EXPECT_EQ(allocator_for(kGpu).stats().raw_allocations, before);
}

}  // namespace
}  // namespace redline::rl
