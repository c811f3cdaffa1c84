// How often the one-level min tree rescans a top node, in two patterns of use, by a sequential
// model that applies the library's own rule (replay_math.h: leaf_mass, tree_top_change, a rescan
// where a touched node's count falls to 0 under a finite min, as replay_cpu.cpp's update_top_mins
// does) to a memory of masses. Sampling is proportional and stratified (one draw per slice of the
// total, as the library's), through a Fenwick tree of the masses; only which slots are drawn
// matters here, not the library's exact bits.
//   bench:    the bench's pattern (bench/replay.cpp): a full memory at priority 1, 2,000 operations
//             spreading 16 fixed sets of 128 priorities in [0.01, 10], then 1,000 sample + update
//             pairs with the first set, no inserts.
//   training: a DQN-like loop. A full memory at priority 1, then each step inserts `envs`
//             transitions at the running maximum (a circular cursor overwriting the oldest), and
//             samples 128 slots whose new priorities are |TD error| + 1e-6, the error normal with a
//             scale that falls from 1 to 0.05 over the run. It runs until the cursor has wrapped
//             1.25 times. (The library makes an overwritten row unsampleable until its successor
//             arrives; here an insert is one change of the slot, to the running maximum.)
// Prints, per capacity and pattern, rescans per 1,000 updates and per 1,000 inserts and the leaves
// they read. Build and run (from the repository root):
//   g++ -std=c++20 -O2 -ffp-contract=off -Iinclude -Isrc lab/replay/rescan_model.cpp -o rescans
//   ./rescans [capacity ...]   (default 1e5 1e6 1e7)
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "rl/replay/replay_math.h"

using namespace redline::rl::replay;

namespace {

constexpr int kBatch = 128;
constexpr double kAlpha = 0.6;
constexpr double kLimit = 1e3;  // ReplayConfig::priority_limit's default

class Fenwick {
 public:
  explicit Fenwick(int64_t n) : tree_(n + 1, 0.0), n_(n) {
    top_ = 1;
    while (top_ * 2 <= n_) top_ *= 2;
  }
  void add(int64_t i, double d) {
    for (int64_t k = i + 1; k <= n_; k += k & -k) tree_[k] += d;
  }
  // The slot whose prefix range holds u (0 <= u < total).
  int64_t find(double u) const {
    int64_t pos = 0;
    for (int64_t step = top_; step > 0; step /= 2) {
      if (pos + step <= n_ && tree_[pos + step] <= u) {
        pos += step;
        u -= tree_[pos];
      }
    }
    return std::min(pos, n_ - 1);
  }

 private:
  std::vector<double> tree_;
  int64_t n_, top_;
};

struct Memory {
  ReplayView v;
  std::vector<double> mass;
  std::vector<float> min;
  std::vector<uint32_t> count;
  Fenwick fen;
  double total = 0.0;
  double max_priority = 1.0;
  int64_t rescans = 0, rescanned_leaves = 0;

  explicit Memory(int64_t capacity) : fen(capacity) {
    v.tree = make_tree_layout(capacity);
    v.alpha = kAlpha;
    v.priority_limit = kLimit;
    set_mass_grid(v, capacity);
    const double m = leaf_mass(v, 1.0);
    mass.assign(capacity, m);
    for (int64_t i = 0; i < capacity; ++i) fen.add(i, m);
    total = m * static_cast<double>(capacity);
    const int64_t tops = tree_min_nodes(v.tree);
    min.assign(tops, static_cast<float>(m));
    count.assign(tops, 0);
    for (int64_t j = 0; j < tops; ++j) {
      int64_t first = 0, end = 0;
      tree_top_leaves(v.tree, j, &first, &end);
      count[j] = static_cast<uint32_t>(end - first);
    }
  }

  // One batch of changes (slot, new mass), each slot once, applied as the library does.
  void apply(const std::vector<std::pair<int64_t, double>>& changes) {
    std::vector<int64_t> touched;
    for (const auto& [slot, m] : changes) {
      const double old = mass[slot];
      mass[slot] = m;
      fen.add(slot, m - old);
      total += m - old;
      const int64_t top = tree_top_of(v.tree, slot);
      tree_top_change(&min[top], &count[top], old, m);
      touched.push_back(top);
    }
    std::sort(touched.begin(), touched.end());
    touched.erase(std::unique(touched.begin(), touched.end()), touched.end());
    for (int64_t top : touched) {
      if (count[top] != 0 || !std::isfinite(min[top])) continue;
      int64_t first = 0, end = 0;
      tree_top_leaves(v.tree, top, &first, &end);
      float m = bits_to_float(kFloatInfBits);
      uint32_t c = 0;
      for (int64_t j = first; j < end; ++j) tree_top_change(&m, &c, 0.0, mass[j]);
      min[top] = m;
      count[top] = c;
      ++rescans;
      rescanned_leaves += end - first;
    }
  }

  std::vector<int64_t> sample(std::mt19937_64& rng) const {
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    std::vector<int64_t> out(kBatch);
    for (int j = 0; j < kBatch; ++j) {
      out[j] = fen.find((j + unit(rng)) / kBatch * total);
    }
    return out;  // ascending, as the library's stratified draws
  }

  // The last occurrence of each index wins, as in update_priorities.
  void update(const std::vector<int64_t>& idx, const std::vector<float>& p) {
    std::vector<std::pair<int64_t, double>> changes;
    for (int j = 0; j < kBatch; ++j) {
      if (j + 1 < kBatch && idx[j + 1] == idx[j]) continue;
      changes.emplace_back(idx[j], leaf_mass(v, p[j]));
    }
    for (float x : p) max_priority = std::max(max_priority, static_cast<double>(x));
    apply(changes);
  }
};

struct Counts {
  int64_t updates = 0, inserts = 0;
  int64_t update_rescans = 0, update_leaves = 0, insert_rescans = 0, insert_leaves = 0;
};

Counts run_bench(int64_t capacity) {
  Memory mem(capacity);
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<float> pri(0.01f, 10.0f);
  std::vector<std::vector<float>> sets(16, std::vector<float>(kBatch));
  for (auto& s : sets) {
    for (float& x : s) x = pri(rng);
  }
  for (int i = 0; i < 2000; ++i) mem.update(mem.sample(rng), sets[i % 16]);
  const int64_t r0 = mem.rescans, l0 = mem.rescanned_leaves;
  Counts c;
  for (int i = 0; i < 1000; ++i) mem.update(mem.sample(rng), sets[0]);
  c.updates = 1000;
  c.update_rescans = mem.rescans - r0;
  c.update_leaves = mem.rescanned_leaves - l0;
  return c;
}

Counts run_training(int64_t capacity, int64_t envs) {
  Memory mem(capacity);
  std::mt19937_64 rng(7);
  std::normal_distribution<double> normal(0.0, 1.0);
  const int64_t steps = capacity * 5 / 4 / envs;
  Counts c;
  int64_t cursor = 0;
  for (int64_t s = 0; s < steps; ++s) {
    const double scale = 1.0 * std::pow(0.05, static_cast<double>(s) / static_cast<double>(steps));
    // Insert: envs transitions at the running maximum.
    std::vector<std::pair<int64_t, double>> changes;
    const double m = leaf_mass(mem.v, mem.max_priority);
    for (int64_t e = 0; e < envs; ++e) changes.emplace_back((cursor + e) % capacity, m);
    cursor = (cursor + envs) % capacity;
    int64_t r0 = mem.rescans, l0 = mem.rescanned_leaves;
    mem.apply(changes);
    c.insert_rescans += mem.rescans - r0;
    c.insert_leaves += mem.rescanned_leaves - l0;
    ++c.inserts;
    // Sample and update.
    const std::vector<int64_t> idx = mem.sample(rng);
    std::vector<float> p(kBatch);
    for (float& x : p) x = static_cast<float>(std::fabs(normal(rng)) * scale + 1e-6);
    r0 = mem.rescans;
    l0 = mem.rescanned_leaves;
    mem.update(idx, p);
    c.update_rescans += mem.rescans - r0;
    c.update_leaves += mem.rescanned_leaves - l0;
    ++c.updates;
  }
  return c;
}

void print(const char* pattern, int64_t capacity, const Counts& c) {
  const auto per_k = [](int64_t n, int64_t d) { return d > 0 ? 1000.0 * n / d : 0.0; };
  std::printf("| %-8s | %9lld | %8lld | %10.2f | %12.0f | %8lld | %10.2f | %12.0f |\n", pattern,
              static_cast<long long>(capacity), static_cast<long long>(c.updates),
              per_k(c.update_rescans, c.updates), per_k(c.update_leaves, c.updates),
              static_cast<long long>(c.inserts), per_k(c.insert_rescans, c.inserts),
              per_k(c.insert_leaves, c.inserts));
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int64_t> caps;
  for (int i = 1; i < argc; ++i) caps.push_back(static_cast<int64_t>(std::atof(argv[i])));
  if (caps.empty()) caps = {100'000, 1'000'000, 10'000'000};
  std::printf(
      "| pattern | capacity | updates | rescans per 1k updates | leaves read per 1k "
      "updates | inserts | rescans per 1k inserts | leaves read per 1k inserts |\n");
  std::printf("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
  for (int64_t cap : caps) {
    print("bench", cap, run_bench(cap));
    std::fflush(stdout);
    print("training", cap, run_training(cap, 64));
    std::fflush(stdout);
  }
  return 0;
}
