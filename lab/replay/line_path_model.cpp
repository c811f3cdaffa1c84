// A sequential model of variant 03's update line path (lab/replay/03-update-every-level-from-lines
// .patch), written lane by lane from the kernel's code and checked against the CPU's update on
// sorted batches: sparse and dense, with duplicates and with slots that cannot be sampled, at
// capacities from 16 to 17 million slots (one to six stored levels). It runs on the mainline's
// tree layout. Phases that the kernel separates by barriers run here one after another over all
// groups. Exit status 0 when every batch matches bit for bit.
//   g++ -std=c++20 -O2 -ffp-contract=off -Iinclude -Isrc lab/replay/line_path_model.cpp -o model
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <utility>
#include <vector>

#include "rl/replay/replay_math.h"

using namespace redline::rl::replay;

namespace {

constexpr int kUpdateLanes = 4;
constexpr int kShare = kFanout / kUpdateLanes;
constexpr int kLineLevels = 5;

struct Tree {
  TreeLayout t;
  std::vector<double> sum, mn;
};

void set_leaf(Tree& tree, int64_t slot, double value) {
  const int64_t at = tree.t.offset[tree.t.levels - 1] + slot;
  tree.sum[at] = value;
  tree.mn[at] = tree_leaf_min(value);
}

void recompute_all(Tree& tree) {
  for (int d = tree.t.levels - 2; d >= 0; --d) {
    for (int64_t j = 0; j < tree.t.count[d] && j * kFanout < tree.t.count[d + 1]; ++j) {
      tree_recompute(tree.t, tree.sum.data(), tree.mn.data(), d, j);
    }
  }
}

// The CPU's update: in order, the last write wins, slots that cannot be sampled stay as they are.
void reference(Tree& tree, const std::vector<int64_t>& idx, const std::vector<double>& value) {
  const int64_t leaf0 = tree.t.offset[tree.t.levels - 1];
  for (size_t i = 0; i < idx.size(); ++i) {
    if (tree.sum[leaf0 + idx[i]] > 0.0) set_leaf(tree, idx[i], value[i]);
  }
  recompute_all(tree);
}

// One block of the kernel (mins: block 1, else block 0) on a sorted batch; the leaves it writes go
// to leaf_writes (both blocks write the same ones).
void line_path(Tree& tree, bool mins, const std::vector<int64_t>& staged_index,
               const std::vector<double>& staged_value,
               std::vector<std::pair<int64_t, double>>& leaf_writes) {
  const auto batch = static_cast<int64_t>(staged_index.size());
  const int leaf_level = tree.t.levels - 1;
  const int64_t leaf0 = tree.t.offset[leaf_level];
  std::vector<double>& nodes = mins ? tree.mn : tree.sum;
  // Before the first barrier: every group's lines, lane by lane.
  using Lines = std::vector<std::vector<double>>;
  std::vector<Lines> line(batch * kUpdateLanes, Lines(kLineLevels, std::vector<double>(kShare)));
  for (int64_t g = 0; g < batch; ++g) {
    for (int lane = 0; lane < kUpdateLanes; ++lane) {
      const int64_t g_index = staged_index[g];
      Lines& own = line[g * kUpdateLanes + lane];
      const int64_t leaves = leaf0 + (g_index >> kFanoutBits << kFanoutBits) + kShare * lane;
      for (int q = 0; q < kShare; ++q) own[0][q] = tree.sum[leaves + q];
      for (int k = 1; k < kLineLevels; ++k) {
        const int d = leaf_level - k;
        const int64_t first = g_index >> (kFanoutBits * (k + 1)) << kFanoutBits;
        for (int q = 0; q < kShare; ++q) {
          own[k][q] = d >= 1 ? nodes[tree.t.offset[d] + first + kShare * lane + q] : 0.0;
        }
      }
    }
  }
  std::vector<std::vector<double>> node_value(2, std::vector<double>(batch, 0.0));
  std::vector<std::pair<int64_t, double>> stores;
  // The leaves' parents.
  for (int64_t g = 0; g < batch; ++g) {
    const int64_t g_index = staged_index[g];
    const int64_t parent = g_index >> kFanoutBits;
    double child[kFanout];
    for (int lane = 0; lane < kUpdateLanes; ++lane) {
      std::vector<double>& share = line[g * kUpdateLanes + lane][0];
      const int my_first = kShare * lane;
      bool write_own = false;
      const auto patch = [&](int64_t j) {
        const int64_t idx_j = staged_index[j];
        if ((idx_j >> kFanoutBits) != parent) return false;
        const bool last_j = j + 1 == batch || staged_index[j + 1] != idx_j;
        const int c = static_cast<int>(idx_j & (kFanout - 1)) - my_first;
        if (last_j && c >= 0 && c < kShare && share[c] > 0.0) {
          share[c] = staged_value[j];
          write_own = write_own || j == g;
        }
        return true;
      };
      for (int64_t j = g; j >= 0 && patch(j); --j) {
      }
      for (int64_t j = g + 1; j < batch && patch(j); ++j) {
      }
      if (write_own) leaf_writes.emplace_back(g_index, staged_value[g]);
      for (int q = 0; q < kShare; ++q) child[my_first + q] = share[q];
    }
    if (leaf_level >= 1) {
      double child_min[kFanout], s = 0.0, m = 0.0;
      for (int q = 0; q < kFanout; ++q) child_min[q] = tree_leaf_min(child[q]);
      tree_combine(child, child_min, &s, &m);
      stores.emplace_back(tree.t.offset[leaf_level - 1] + parent, mins ? m : s);
      node_value[0][g] = mins ? m : s;
    }
  }
  // The levels above, each from its line and the nodes the level below recomputed.
  for (int k = 1; k < kLineLevels; ++k) {
    const int d = leaf_level - 1 - k;
    if (d < 0) break;
    for (int64_t g = 0; g < batch; ++g) {
      const int64_t node = staged_index[g] >> (kFanoutBits * (k + 1));
      const std::vector<double>& below = node_value[(k - 1) % 2];
      double child[kFanout];
      for (int lane = 0; lane < kUpdateLanes; ++lane) {
        std::vector<double>& share = line[g * kUpdateLanes + lane][k];
        const int my_first = kShare * lane;
        const auto patch = [&](int64_t j) {
          const int64_t idx_j = staged_index[j];
          if ((idx_j >> (kFanoutBits * (k + 1))) != node) return false;
          const int c = static_cast<int>((idx_j >> (kFanoutBits * k)) & (kFanout - 1)) - my_first;
          if (c >= 0 && c < kShare) share[c] = below[j];
          return true;
        };
        for (int64_t j = g; j >= 0 && patch(j); --j) {
        }
        for (int64_t j = g + 1; j < batch && patch(j); ++j) {
        }
        for (int q = 0; q < kShare; ++q) child[my_first + q] = share[q];
      }
      double s = 0.0, m = 0.0;
      tree_combine(child, child, &s, &m);
      stores.emplace_back(tree.t.offset[d] + node, mins ? m : s);
      node_value[k % 2][g] = mins ? m : s;
    }
  }
  for (const auto& [at, x] : stores) nodes[at] = x;
  // Levels above kLineLevels: the mainline's store and reload (none up to 17 million slots).
  for (int d = leaf_level - 1 - kLineLevels; d >= 0; --d) {
    for (int64_t g = 0; g < batch; ++g) {
      const int64_t node = staged_index[g] >> (kFanoutBits * (leaf_level - d));
      tree_recompute(tree.t, tree.sum.data(), tree.mn.data(), d, node);
    }
  }
}

}  // namespace

int main() {
  std::mt19937_64 rng(7);
  int64_t mismatched = 0, batches = 0;
  for (const int64_t capacity : {16, 100, 256, 257, 1000, 4107, 70000, 1100000, 17000000}) {
    Tree start;
    start.t = make_tree_layout(capacity);
    start.sum.assign(static_cast<size_t>(start.t.nodes), 0.0);
    start.mn.assign(static_cast<size_t>(start.t.nodes), INFINITY);
    for (int64_t s = 0; s < capacity; ++s) {
      if (rng() % 3 != 0) set_leaf(start, s, 0.5 + static_cast<double>(rng() % 1000) / 7.0);
    }
    recompute_all(start);
    for (int round = 0; round < 40; ++round) {
      const auto batch = static_cast<int64_t>(1 + rng() % 128);
      // Sorted indices over all slots, or over 40, 300 or 5,000 consecutive ones.
      const int64_t spans[] = {capacity, 40, 300, 5000};
      const int64_t span = std::min(capacity, spans[round % 4]);
      const auto from = static_cast<int64_t>(rng() % static_cast<uint64_t>(capacity - span + 1));
      std::vector<int64_t> idx(static_cast<size_t>(batch));
      for (auto& i : idx) i = from + static_cast<int64_t>(rng() % static_cast<uint64_t>(span));
      std::sort(idx.begin(), idx.end());
      std::vector<double> value(idx.size());
      for (auto& x : value) x = 0.25 + static_cast<double>(rng() % 10000) / 13.0;
      Tree want = start;
      reference(want, idx, value);
      Tree sums = start, mins = start;
      std::vector<std::pair<int64_t, double>> writes;
      line_path(sums, false, idx, value, writes);
      line_path(mins, true, idx, value, writes);
      Tree got = start;
      got.sum = sums.sum;
      got.mn = mins.mn;
      for (const auto& [slot, x] : writes) set_leaf(got, slot, x);
      ++batches;
      if (std::memcmp(got.sum.data(), want.sum.data(), want.sum.size() * sizeof(double)) != 0 ||
          got.mn != want.mn) {
        if (++mismatched <= 5) {
          std::printf("mismatch: capacity %lld, batch %lld (round %d)\n",
                      static_cast<long long>(capacity), static_cast<long long>(batch), round);
        }
      }
      start = want;
    }
  }
  std::printf("%lld sorted batches, %lld mismatched\n", static_cast<long long>(batches),
              static_cast<long long>(mismatched));
  return mismatched == 0 ? 0 : 1;
}
