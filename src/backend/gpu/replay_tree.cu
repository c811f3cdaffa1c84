// Replay memory tree kernels: insert's leaf updates, stratified sampling with importance weights,
// and priority updates. CPU twins: src/rl/replay/replay_cpu.cpp; shared arithmetic:
// src/rl/replay/replay_math.h. Each operation is one launch on the caller's stream with no host
// synchronization; counters (rows written, max priority, Philox offset) live on the device, so
// the launches can be captured in a graph and replayed.
//
// Sample and update run as a single block: a batch of 128 is latency-bound (six dependent 128-byte
// loads per descent), and one block lets the level-by-level ancestor recomputation synchronize
// with __syncthreads instead of one launch per level.
#include <cfloat>
#include <climits>

#include "rl/replay/replay_kernels.h"
#include "vendor/gpu.h"

namespace redline::rl::replay::gpu {
namespace {

constexpr int64_t kStagedIndices = 4096;  // 32 KiB of shared memory for update's duplicate scan

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
__global__ void sample_kernel(ReplayView v, int64_t batch, double beta, const float* beta_device,
                              int64_t* indices, float* weights) {  // indices, weights: (batch,)
  const uint64_t base = static_cast<uint64_t>(*v.rng_offset);
  const double total = v.sum[0];
  const double min_leaf = v.min[0];
  const double b = beta_device != nullptr ? static_cast<double>(*beta_device) : beta;
  const bool beta_ok = b >= 0.0 && b <= 1.0;
  const bool empty = !(total > 0.0);
  const int64_t leaf0 = v.tree.offset[v.tree.levels - 1];
  for (int64_t i = threadIdx.x; i < batch; i += blockDim.x) {
    if (empty || !beta_ok) {
      indices[i] = 0;
      weights[i] = 0.0f;
      continue;
    }
    const double u = stratified_point(v, base, i, batch, total);
    const int64_t leaf = tree_descend(v.tree, v.sum, u);
    indices[i] = leaf;
    weights[i] = importance_weight(v, v.sum[leaf0 + leaf], min_leaf, b);
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
__global__ void update_kernel(ReplayView v, int64_t batch, const int64_t* indices,
                              const float* priorities) {  // indices, priorities: (batch,)
  __shared__ int bad_index_at;
  __shared__ int bad_priority_at;
  __shared__ unsigned int max_bits;  // positive floats order like their bit patterns
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
  // The duplicate scan reads the batch's indices from shared memory when they fit.
  extern __shared__ int64_t staged[];  // (min(batch, kStagedIndices),)
  const bool use_staged = batch <= kStagedIndices;
  if (use_staged) {
    for (int64_t i = threadIdx.x; i < batch; i += blockDim.x) staged[i] = indices[i];
    __syncthreads();
  }
  const int64_t* scan = use_staged ? staged : indices;
  const int64_t leaf0 = v.tree.offset[v.tree.levels - 1];
  for (int64_t i = threadIdx.x; i < batch; i += blockDim.x) {
    const int64_t idx = scan[i];
    bool last = true;
#pragma unroll 8
    for (int64_t j = i + 1; j < batch; ++j) last = last & (scan[j] != idx);
    if (last && v.sum[leaf0 + idx] > 0.0) {
      set_leaf(v, idx, portable_pow(static_cast<double>(priorities[i]), v.alpha));
    }
  }
  __syncthreads();
  const int leaf_level = v.tree.levels - 1;
  for (int d = leaf_level - 1; d >= 0; --d) {
    const int shift = 4 * (leaf_level - d);
    for (int64_t i = threadIdx.x; i < batch; i += blockDim.x) {
      tree_recompute(v.tree, v.sum, v.min, d, indices[i] >> shift);
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
  sample_kernel<<<1, threads_for(batch, 256), 0, s>>>(v, batch, beta, beta_device, indices,
                                                      weights);
  GPU_CHECK_LAUNCH();
}

void update(const ReplayView& v, int64_t batch, const int64_t* indices, const float* priorities,
            void* stream) {
  const cudaStream_t s = static_cast<cudaStream_t>(stream);
  const size_t staged = static_cast<size_t>(batch <= kStagedIndices ? batch : 0) * sizeof(int64_t);
  update_kernel<<<1, threads_for(batch, 1024), staged, s>>>(v, batch, indices, priorities);
  GPU_CHECK_LAUNCH();
}

}  // namespace redline::rl::replay::gpu
