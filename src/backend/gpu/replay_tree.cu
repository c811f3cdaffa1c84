// Replay memory tree kernels: insert's leaf updates, stratified sampling with importance weights,
// and priority updates. CPU twins: src/rl/replay/replay_cpu.cpp; shared arithmetic:
// src/rl/replay/replay_math.h. Each operation is one launch on the caller's stream with no host
// synchronization; counters (rows written, max priority, Philox offset) live on the device, so
// the launches can be captured in a graph and replayed.
//
// Sample and update run as a single block: a batch of 128 is latency-bound (one dependent load per
// tree level), and one block lets the level-by-level ancestor recomputation synchronize with
// __syncthreads instead of one launch per level. Each sample or updated index is served by a group
// of kGroupLanes lanes that load a node's 16 children together (two doubles per lane, one 128-byte
// line per group) and share them with shuffles; the arithmetic on the 16 values is then the CPU's
// own (tree_choose_child, tree_combine), so both devices give the same bits. One thread walking a
// node alone issued 16 separate loads per level, each touching 32 different lines per warp, and
// the single SM's load unit, not memory latency, set the pace.
#include <cfloat>
#include <climits>

#include "rl/replay/replay_kernels.h"
#include "vendor/gpu.h"

namespace redline::rl::replay::gpu {
namespace {

constexpr int64_t kStagedIndices = 1024;  // 8 KiB of shared memory for update's duplicate scan
// The top of the tree (the root's levels down to the last that fits) is copied into shared memory
// at the start of sample and update with one parallel load, so the walk through those levels costs
// no dependent global reads: sample keeps up to 4096 sum nodes (32 KiB: 4 levels at 1e7
// leaves), update up to 2048 nodes of each tree (32 KiB).
constexpr int kSampleCachedNodes = 4096;
constexpr int kUpdateCachedNodes = 2048;

// Levels 0 .. result-1 of the tree hold at most `most` nodes together.
__device__ inline int cached_levels(const TreeLayout& t, int most) {
  int levels = 0;
  while (levels < t.levels && t.offset[levels] + t.count[levels] <= most) ++levels;
  return levels;
}
constexpr int kGroupLanes = 8;  // lanes per sample or index: 2 of a node's 16 children each
constexpr int kMaxThreads = 1024;

// The 16 values at src (16-byte aligned: tree levels start on multiples of 16 nodes), loaded by the
// kGroupLanes lanes of a group (two each) and gathered into every lane's c. Every lane of the warp
// must call it; inactive groups pass src == nullptr and get zeros.
__device__ inline void group_load16(const double* src, int lane, double* c) {
  double2 mine = make_double2(0.0, 0.0);
  if (src != nullptr) mine = reinterpret_cast<const double2*>(src)[lane];
#pragma unroll
  for (int k = 0; k < kGroupLanes; ++k) {
    c[2 * k] = __shfl_sync(redline::gpu::kFullLaneMask, mine.x, k, kGroupLanes);
    c[2 * k + 1] = __shfl_sync(redline::gpu::kFullLaneMask, mine.y, k, kGroupLanes);
  }
}

__device__ void report_fault(DeviceFault* fault, int32_t code, int32_t position, double value) {
  if (fault == nullptr) return;
  volatile DeviceFault* f = fault;
  if (f->code != kFaultNone) return;  // the host has not raised the previous one yet
  f->position = position;
  f->value = value;
  __threadfence_system();
  f->code = code;
  __threadfence_system();
}

__device__ void set_leaf(const ReplayView& v, int64_t slot, double value) {
  const int64_t at = v.tree.offset[v.tree.levels - 1] + slot;
  v.sum[at] = value;
  v.min[at] = value > 0.0 ? value : __longlong_as_double(0x7FF0000000000000ll);
}

int threads_for(int64_t work, int most) {
  int t = redline::gpu::kWarpSize;
  while (t < most && t < work) t *= 2;
  return t;
}

// tree_combine of the 16 children at sum_src / min_src, loaded by the lanes of a group (two each)
// and folded in the same left-to-right order while they are shuffled in, so no lane holds all 32
// values. Every lane of the warp must call it; inactive groups pass nullptr.
__device__ inline void group_combine16(const double* sum_src, const double* min_src, int lane,
                                       double* sum_out, double* min_out) {
  double2 s2 = make_double2(0.0, 0.0), m2 = make_double2(0.0, 0.0);
  if (sum_src != nullptr) {
    s2 = reinterpret_cast<const double2*>(sum_src)[lane];
    m2 = reinterpret_cast<const double2*>(min_src)[lane];
  }
  double s = __shfl_sync(redline::gpu::kFullLaneMask, s2.x, 0, kGroupLanes);
  double m = __shfl_sync(redline::gpu::kFullLaneMask, m2.x, 0, kGroupLanes);
  s = s + __shfl_sync(redline::gpu::kFullLaneMask, s2.y, 0, kGroupLanes);
  m = tree_min(m, __shfl_sync(redline::gpu::kFullLaneMask, m2.y, 0, kGroupLanes));
#pragma unroll
  for (int k = 1; k < kGroupLanes; ++k) {
    s = s + __shfl_sync(redline::gpu::kFullLaneMask, s2.x, k, kGroupLanes);
    m = tree_min(m, __shfl_sync(redline::gpu::kFullLaneMask, m2.x, k, kGroupLanes));
    s = s + __shfl_sync(redline::gpu::kFullLaneMask, s2.y, k, kGroupLanes);
    m = tree_min(m, __shfl_sync(redline::gpu::kFullLaneMask, m2.y, k, kGroupLanes));
  }
  *sum_out = s;
  *min_out = m;
}

// ---- insert: leaves of the overwritten, history-less and completed rows, then ancestors -------
__global__ void insert_tree_kernel(ReplayView v) {
  const int64_t g = *v.rows_written;
  int64_t rows[kMaxStack + 1];
  int64_t completed = -1;
  const int m = insert_changed_rows(v, g, rows, &completed);
  const double entry = entry_leaf_value(v, *v.max_priority);
  for (int i = 0; i < m; ++i) {
    for (int64_t e = threadIdx.x; e < v.envs; e += blockDim.x) {
      const int64_t slot = rows[i] * v.envs + e;
      double value = 0.0;
      if (rows[i] == completed && !(v.flags[slot] & kTruncated)) value = entry;
      set_leaf(v, slot, value);
    }
  }
  __syncthreads();
  const int leaf_level = v.tree.levels - 1;
  for (int d = leaf_level - 1; d >= 0; --d) {
    const int shift = 4 * (leaf_level - d);  // kFanout = 16 = 2^4
    for (int i = 0; i < m; ++i) {
      const int64_t lo = (rows[i] * v.envs) >> shift;
      const int64_t hi = (rows[i] * v.envs + v.envs - 1) >> shift;
      for (int64_t n = lo + threadIdx.x; n <= hi; n += blockDim.x) {
        tree_recompute(v.tree, v.sum, v.min, d, n);
      }
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) *v.rows_written = g + 1;
}

// ---- sample -------------------------------------------------------------------------------------
// Group g of the block draws samples g, g + groups, ...; every lane of a group runs the same
// descent on the same gathered values, and lane 0 writes the result.
__global__ void __launch_bounds__(kMaxThreads)
    sample_kernel(ReplayView v, int64_t batch, double beta, const float* beta_device,
                  int64_t* indices, float* weights) {  // indices, weights: (batch,)
  __shared__ double top[kSampleCachedNodes];
  const int cached = cached_levels(v.tree, kSampleCachedNodes);
  const int64_t cached_nodes =
      cached > 0 ? v.tree.offset[cached - 1] + v.tree.count[cached - 1] : 0;
  for (int64_t n = threadIdx.x; n < cached_nodes; n += blockDim.x) top[n] = v.sum[n];
  const uint64_t base = static_cast<uint64_t>(*v.rng_offset);
  const double min_leaf = v.min[0];
  const double b = beta_device != nullptr ? static_cast<double>(*beta_device) : beta;
  __syncthreads();
  const double total = cached > 0 ? top[0] : v.sum[0];
  const bool beta_ok = b >= 0.0 && b <= 1.0;
  const bool empty = !(total > 0.0);
  const int64_t leaf0 = v.tree.offset[v.tree.levels - 1];
  const int lane = static_cast<int>(threadIdx.x) % kGroupLanes;
  const int64_t group = threadIdx.x / kGroupLanes;
  const int64_t groups = blockDim.x / kGroupLanes;
  for (int64_t first = 0; first < batch; first += groups) {  // the same trip count in every thread
    const int64_t i = first + group;
    const bool active = i < batch && !empty && beta_ok;
    double u = active ? stratified_point(v, base, i, batch, total) : 0.0;
    int64_t node = 0;
    double leaf = 0.0;  // the chosen leaf's value: the last level's chosen child
    for (int d = 0; d + 1 < v.tree.levels; ++d) {
      const int64_t at = v.tree.offset[d + 1] + node * kFanout;
      double c[kFanout];
      group_load16(active ? (d + 1 < cached ? top : v.sum) + at : nullptr, lane, c);
      const int chosen = tree_choose_child(c, &u);
      node = node * kFanout + chosen;
#pragma unroll
      for (int j = 0; j < kFanout; ++j) leaf = j == chosen ? c[j] : leaf;  // no local-memory index
    }
    if (i < batch && lane == 0) {
      if (active) {
        if (v.tree.levels == 1) leaf = v.sum[leaf0];
        indices[i] = node;
        weights[i] = importance_weight(v, leaf, min_leaf, b);
      } else {
        indices[i] = 0;
        weights[i] = 0.0f;
      }
    }
  }
  __syncthreads();  // every thread has read the offset
  if (threadIdx.x == 0) {
    if (!beta_ok) {
      report_fault(v.fault, kFaultBeta, 0, b);
    } else if (empty) {
      report_fault(v.fault, kFaultEmpty, 0, 0.0);
    } else {
      *v.rng_offset = static_cast<int64_t>(base + static_cast<uint64_t>(batch));
    }
  }
}

// ---- update -------------------------------------------------------------------------------------
__global__ void __launch_bounds__(kMaxThreads)
    update_kernel(ReplayView v, int64_t batch, const int64_t* indices,
                  const float* priorities) {  // indices, priorities: (batch,)
  __shared__ int bad_index_at;
  __shared__ int bad_priority_at;
  __shared__ unsigned int max_bits;  // positive floats order like their bit patterns
  __shared__ double top_sum[kUpdateCachedNodes];
  __shared__ double top_min[kUpdateCachedNodes];
  // Never the leaf level: leaves are written to global memory only, before the recomputation.
  const int cached = min(cached_levels(v.tree, kUpdateCachedNodes), v.tree.levels - 1);
  const int64_t cached_nodes =
      cached > 0 ? v.tree.offset[cached - 1] + v.tree.count[cached - 1] : 0;
  for (int64_t n = threadIdx.x; n < cached_nodes; n += blockDim.x) {
    top_sum[n] = v.sum[n];
    top_min[n] = v.min[n];
  }
  if (threadIdx.x == 0) {
    bad_index_at = INT_MAX;
    bad_priority_at = INT_MAX;
    max_bits = 0;
  }
  __syncthreads();
  const int64_t capacity = v.rows * v.envs;
  for (int64_t i = threadIdx.x; i < batch; i += blockDim.x) {
    const int64_t idx = indices[i];
    const float p = priorities[i];
    if (idx < 0 || idx >= capacity) atomicMin(&bad_index_at, static_cast<int>(i));
    if (!(isfinite(p) && p > 0.0f)) {
      atomicMin(&bad_priority_at, static_cast<int>(i));
    } else {
      atomicMax(&max_bits, __float_as_uint(p));
    }
  }
  __syncthreads();
  if (bad_index_at != INT_MAX || bad_priority_at != INT_MAX) {  // nothing changes
    if (threadIdx.x == 0) {
      if (bad_index_at <= bad_priority_at) {
        report_fault(v.fault, kFaultIndex, bad_index_at,
                     static_cast<double>(indices[bad_index_at]));
      } else {
        report_fault(v.fault, kFaultPriority, bad_priority_at, priorities[bad_priority_at]);
      }
    }
    return;
  }
  // Leaves: only the last occurrence of an index writes, and only while the slot is sampleable.
  // The group of index i scans the later indices (each lane every kGroupLanes-th one) from shared
  // memory when the batch fits there.
  extern __shared__ int64_t staged[];  // (min(batch, kStagedIndices),)
  const bool use_staged = batch <= kStagedIndices;
  if (use_staged) {
    for (int64_t i = threadIdx.x; i < batch; i += blockDim.x) staged[i] = indices[i];
    __syncthreads();
  }
  const int64_t* scan = use_staged ? staged : indices;
  const int64_t leaf0 = v.tree.offset[v.tree.levels - 1];
  const int lane = static_cast<int>(threadIdx.x) % kGroupLanes;
  const int64_t group = threadIdx.x / kGroupLanes;
  const int64_t groups = blockDim.x / kGroupLanes;
  for (int64_t first = 0; first < batch; first += groups) {  // the same trip count in every thread
    const int64_t i = first + group;
    int later = 0;  // 1 when a later position holds the same index
    if (i < batch) {
      const int64_t idx = scan[i];
      for (int64_t j = i + 1 + lane; j < batch; j += kGroupLanes) later |= scan[j] == idx;
    }
    for (int offset = kGroupLanes / 2; offset > 0; offset /= 2) {
      later |= __shfl_xor_sync(redline::gpu::kFullLaneMask, later, offset, kGroupLanes);
    }
    if (i < batch && lane == 0 && !later) {
      const int64_t idx = scan[i];
      if (v.sum[leaf0 + idx] > 0.0) {
        set_leaf(v, idx, portable_pow(static_cast<double>(priorities[i]), v.alpha));
      }
    }
  }
  __syncthreads();
  const int leaf_level = v.tree.levels - 1;
  for (int d = leaf_level - 1; d >= 0; --d) {
    const int shift = 4 * (leaf_level - d);
    for (int64_t first = 0; first < batch; first += groups) {
      const int64_t i = first + group;
      const int64_t node = i < batch ? scan[i] >> shift : 0;
      const int64_t child = v.tree.offset[d + 1] + node * kFanout;
      const bool shared_children = d + 1 < cached;
      double s = 0.0, m = 0.0;
      group_combine16(i < batch ? (shared_children ? top_sum : v.sum) + child : nullptr,
                      i < batch ? (shared_children ? top_min : v.min) + child : nullptr, lane, &s,
                      &m);
      if (i < batch && lane == 0) {
        const int64_t at = v.tree.offset[d] + node;
        v.sum[at] = s;
        v.min[at] = m;
        if (d < cached) {
          top_sum[at] = s;
          top_min[at] = m;
        }
      }
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    const double p = static_cast<double>(__uint_as_float(max_bits));
    if (p > *v.max_priority) *v.max_priority = p;
  }
}

}  // namespace

void insert(const ReplayView& v, const InsertSource& src, void* stream) {
  const cudaStream_t s = static_cast<cudaStream_t>(stream);
  insert_copy(v, src, stream);
  const int64_t work = v.envs * (v.stack + 1);
  insert_tree_kernel<<<1, threads_for(work, 1024), 0, s>>>(v);
  GPU_CHECK_LAUNCH();
}

void sample(const ReplayView& v, int64_t batch, double beta, const float* beta_device,
            int64_t* indices, float* weights, void* stream) {
  const cudaStream_t s = static_cast<cudaStream_t>(stream);
  sample_kernel<<<1, threads_for(batch * kGroupLanes, kMaxThreads), 0, s>>>(
      v, batch, beta, beta_device, indices, weights);
  GPU_CHECK_LAUNCH();
}

void update(const ReplayView& v, int64_t batch, const int64_t* indices, const float* priorities,
            void* stream) {
  const cudaStream_t s = static_cast<cudaStream_t>(stream);
  const size_t staged = static_cast<size_t>(batch <= kStagedIndices ? batch : 0) * sizeof(int64_t);
  update_kernel<<<1, threads_for(batch * kGroupLanes, kMaxThreads), staged, s>>>(v, batch, indices,
                                                                                 priorities);
  GPU_CHECK_LAUNCH();
}

}  // namespace redline::rl::replay::gpu
