// CPU twins of the replay kernels (src/backend/gpu/replay_tree.cu, replay_data.cu): the same
// arithmetic from rl/replay/replay_math.h, run as plain loops. They are the reference the GPU
// parity tests compare against.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "redline/core/error.h"
#include "rl/replay/replay_faults.h"
#include "rl/replay/replay_kernels.h"

namespace redline::rl::replay::cpu {
namespace {

// Recomputes every ancestor of `leaves` (leaf indices) in the sum tree, level by level from the
// bottom.
void recompute_ancestors(const ReplayView& v, std::vector<int64_t> nodes) {
  const TreeLayout& t = v.tree;
  for (int d = t.levels - 2; d >= 0; --d) {
    for (int64_t& n : nodes) n /= kFanout;
    std::sort(nodes.begin(), nodes.end());
    nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
    for (int64_t n : nodes) tree_recompute(t, v.sum, d, n);
  }
}

// One leaf's change, for the min tree.
struct LeafChange {
  int64_t slot;
  double old_mass;
};

// Brings the min tree's top mins and counts up to date after `changes` (each slot once, its old
// mass from before the batch, its new mass written already): each change in turn
// (tree_top_change), then a rescan of every node whose count fell to 0 under a finite min. The GPU
// reaches the same exact values another way.
void update_top_mins(const ReplayView& v, const std::vector<LeafChange>& changes) {
  const TreeLayout& t = v.tree;
  if (t.levels == 1) return;  // tree_set_leaf wrote the leaves' mins
  const int64_t leaf0 = t.offset[t.levels - 1];
  std::vector<int64_t> touched;
  for (const LeafChange& c : changes) {
    const int64_t top = tree_top_of(t, c.slot);
    tree_top_change(&v.min[top], &v.min_count[top], c.old_mass, v.sum[leaf0 + c.slot]);
    touched.push_back(top);
  }
  std::sort(touched.begin(), touched.end());
  touched.erase(std::unique(touched.begin(), touched.end()), touched.end());
  for (int64_t top : touched) {
    if (v.min_count[top] != 0 || !std::isfinite(v.min[top])) continue;
    int64_t first = 0, end = 0;
    tree_top_leaves(t, top, &first, &end);
    float m = bits_to_float(kFloatInfBits);
    uint32_t count = 0;
    for (int64_t j = first; j < end; ++j) {
      const double mass = v.sum[leaf0 + j];
      if (mass > 0.0) tree_top_change(&m, &count, 0.0, mass);
    }
    v.min[top] = m;
    v.min_count[top] = count;
  }
}

void set_leaf(const ReplayView& v, int64_t slot, double value) {
  tree_set_leaf(v.tree, v.sum, v.min, slot, value);
}

[[noreturn]] void fail(int32_t code, int32_t position, double value, int64_t capacity) {
  REDLINE_FAIL("{}", fault_message(DeviceFault{code, position, value}, capacity));
}

}  // namespace

void insert(const ReplayView& v, const InsertSource& src) {
  const int64_t g = *v.rows_written;
  const int64_t r = wrap_row(g, v.rows);
  const int64_t frame_bytes = v.frame_numel * v.obs_elem;
  const auto* obs = static_cast<const uint8_t*>(src.obs);
  auto* frames = static_cast<uint8_t*>(v.frames);
#pragma omp parallel for if (v.envs * frame_bytes > (1 << 20))
  for (int64_t e = 0; e < v.envs; ++e) {
    const int64_t slot = r * v.envs + e;
    std::memcpy(frames + slot * frame_bytes,
                obs + (e * src.env_stride + src.frame_offset) * v.obs_elem, frame_bytes);
  }
  for (int64_t e = 0; e < v.envs; ++e) {
    const int64_t slot = r * v.envs + e;
    int64_t a;
    if (src.action_elem == 4) {
      a = static_cast<const int32_t*>(src.action)[e];
    } else {
      a = static_cast<const int64_t*>(src.action)[e];
    }
    if (v.action_elem == 4) {
      static_cast<int32_t*>(v.actions)[slot] = static_cast<int32_t>(a);
    } else {
      static_cast<int64_t*>(v.actions)[slot] = a;
    }
    v.rewards[slot] = src.reward[e];
    const uint8_t term = src.terminated[e] != 0;
    const uint8_t trunc = src.truncated[e] != 0;
    v.flags[slot] = static_cast<uint8_t>((term ? kTerminated : 0) | (trunc ? kTruncated : 0) |
                                         (v.prev_done[e] ? kEpisodeStart : 0));
    v.prev_done[e] = term | trunc;
  }
  // Leaves, then their ancestors.
  int64_t rows[kMaxStack + 1];
  int64_t completed = -1;
  const int m = insert_changed_rows(v, g, rows, &completed);
  const double entry = entry_leaf_value(v, *v.max_priority);
  const int64_t leaf0 = v.tree.offset[v.tree.levels - 1];
  std::vector<int64_t> leaves;
  std::vector<LeafChange> changes;
  leaves.reserve(static_cast<size_t>(m * v.envs));
  for (int i = 0; i < m; ++i) {  // the changed rows are distinct
    for (int64_t e = 0; e < v.envs; ++e) {
      const int64_t slot = rows[i] * v.envs + e;
      double value = 0.0;
      if (rows[i] == completed && !(v.flags[slot] & kTruncated)) value = entry;
      changes.push_back({slot, v.sum[leaf0 + slot]});
      set_leaf(v, slot, value);
      leaves.push_back(slot);
    }
  }
  update_top_mins(v, changes);
  recompute_ancestors(v, std::move(leaves));
  *v.rows_written = g + 1;
}

void sample(const ReplayView& v, int64_t batch, double beta, int64_t* indices, float* weights) {
  // The draws are used before the checks, as on the GPU, whose sample advances the offset before
  // it has read the tree or beta.
  const uint64_t base = static_cast<uint64_t>(*v.rng_offset);
  *v.rng_offset = static_cast<int64_t>(base + static_cast<uint64_t>(batch));
  double total = 0.0;
  float min_leaf = 0.0f;
  tree_top(v.tree, v.sum, v.min, &total, &min_leaf);
  if (!(beta >= 0.0 && beta <= 1.0)) fail(kFaultBeta, 0, beta, v.rows * v.envs);
  if (!(total > 0.0)) fail(kFaultEmpty, 0, 0.0, v.rows * v.envs);
  const int64_t leaf0 = v.tree.offset[v.tree.levels - 1];
  const double min_leaf_inverse = reciprocal(static_cast<double>(min_leaf));
  for (int64_t i = 0; i < batch; ++i) {
    const double u = stratified_point(stratified_position(v, base, i), batch, total);
    const int64_t leaf = tree_descend(v.tree, v.sum, u);
    indices[i] = leaf;
    weights[i] = importance_weight(v, v.sum[leaf0 + leaf], min_leaf_inverse, beta);
  }
}

void update(const ReplayView& v, int64_t batch, const int64_t* indices, const float* priorities) {
  const int64_t capacity = v.rows * v.envs;
  for (int64_t i = 0; i < batch; ++i) {  // the whole batch is checked before anything changes
    if (indices[i] < 0 || indices[i] >= capacity) {
      fail(kFaultIndex, static_cast<int32_t>(i), static_cast<double>(indices[i]), capacity);
    }
    if (!(std::isfinite(priorities[i]) && priorities[i] > 0.0f)) {
      fail(kFaultPriority, static_cast<int32_t>(i), priorities[i], capacity);
    }
  }
  const int64_t leaf0 = v.tree.offset[v.tree.levels - 1];
  double max_p = *v.max_priority;
  std::vector<int64_t> leaves;
  std::vector<LeafChange> changes;
  leaves.reserve(static_cast<size_t>(batch));
  for (int64_t i = 0; i < batch; ++i) {  // in order: the last occurrence of an index wins
    const double p = priorities[i];
    max_p = std::max(max_p, p);
    const double old_mass = v.sum[leaf0 + indices[i]];
    if (old_mass > 0.0) {
      set_leaf(v, indices[i], leaf_mass(v, p));
      leaves.push_back(indices[i]);
      changes.push_back({indices[i], old_mass});
    }
  }
  *v.max_priority = max_p;
  // Each slot once, with its mass from before the batch (its first occurrence's old mass).
  std::stable_sort(changes.begin(), changes.end(),
                   [](const LeafChange& a, const LeafChange& b) { return a.slot < b.slot; });
  changes.erase(
      std::unique(changes.begin(), changes.end(),
                  [](const LeafChange& a, const LeafChange& b) { return a.slot == b.slot; }),
      changes.end());
  update_top_mins(v, changes);
  recompute_ancestors(v, std::move(leaves));
}

void gather(const ReplayView& v, int64_t batch, const int64_t* indices, const GatherTarget& out) {
  const int64_t capacity = v.rows * v.envs;
  for (int64_t i = 0; i < batch; ++i) {
    if (indices[i] < 0 || indices[i] >= capacity) {
      fail(kFaultIndex, static_cast<int32_t>(i), static_cast<double>(indices[i]), capacity);
    }
  }
  const int64_t frame_bytes = v.frame_numel * v.obs_elem;
  const int64_t obs_bytes = frame_bytes * v.stack;
  const auto* frames = static_cast<const uint8_t*>(v.frames);
#pragma omp parallel for if (batch * obs_bytes > (1 << 20))
  for (int64_t i = 0; i < batch; ++i) {
    const int64_t t = indices[i] / v.envs;
    const int64_t e = indices[i] % v.envs;
    const NStepResult ns = n_step_window(v, t, e);
    out.reward[i] = static_cast<float>(ns.ret);
    out.discount[i] = static_cast<float>(ns.discount);
    std::memcpy(static_cast<uint8_t*>(out.action) + i * v.action_elem,
                static_cast<const uint8_t*>(v.actions) + indices[i] * v.action_elem, v.action_elem);
    int64_t src_rows[kMaxStack];
    for (int which = 0; which < 2; ++which) {
      stack_source_rows(v, which == 0 ? t : ns.next_row, e, src_rows);
      uint8_t* dst = static_cast<uint8_t*>(which == 0 ? out.obs : out.next_obs) + i * obs_bytes;
      for (int64_t f = 0; f < v.stack; ++f) {
        if (src_rows[f] < 0) {
          std::memset(dst + f * frame_bytes, 0, frame_bytes);
        } else {
          std::memcpy(dst + f * frame_bytes, frames + (src_rows[f] * v.envs + e) * frame_bytes,
                      frame_bytes);
        }
      }
    }
  }
}

}  // namespace redline::rl::replay::cpu
