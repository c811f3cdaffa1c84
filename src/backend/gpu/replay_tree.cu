// Replay memory tree kernels: insert's leaf updates, stratified sampling with importance weights,
// and priority updates. CPU twins: src/rl/replay/replay_cpu.cpp; shared arithmetic:
// src/rl/replay/replay_math.h. Each operation is one launch on the caller's stream with no host
// synchronization; counters (rows written, max priority, Philox offset) live on the device, so
// the launches can be captured in a graph and replayed.
//
// A batch of 128 is latency-bound (one dependent load per tree level, then a short scan), so the
// kernels are laid out for the shortest dependent chain with the fewest instructions per warp.
// Sample spreads its draws over blocks of kSampleThreads; 32 lanes serve one draw as two groups of
// 16, each lane holding one child of the current node (one 128-byte line per group) and, while two
// levels remain, one grandchild of every other child, so one dependent load serves two levels. The
// first step loads the whole top level (the tree stores no root: replay_math.h) and derives the
// total from it by shuffles. A group finds the child with four shuffle steps of tree_prefix_sums
// and two ballots: the CPU's tree_choose_child, bit for bit. Each draw's Philox number is made
// before the kernel ahead has finished (chained launch), and the last block to read the offset
// advances it before it lets later kernels start. Update runs one block, which adds each new
// leaf's change to its ancestors with one atomic add per level (masses lie on a grid on which every
// sum is exact, so the order of the adds does not change the bits: replay_math.h, leaf_mass) and
// keeps the min tree's top-level mins (tree_min_nodes).
#include <algorithm>
#include <atomic>
#include <cfloat>
#include <climits>
#include <type_traits>

#include "rl/replay/replay_kernels.h"
#include "vendor/gpu.h"

namespace redline::rl::replay::gpu {
namespace {

// Update stages batches up to this size: one thread per index holds it, its old and new leaf and
// its top node's words from phase 1 to the end. Larger batches are read from global memory again.
constexpr int64_t kStagedIndices = 512;
// Sample serves one draw with kDrawLanes lanes: kDrawGroups groups of kFanout lanes. Each step of
// its descent loads a node's children and, while two levels remain, all its grandchildren (lane j
// of group h holds grandchild j of children h, h + kDrawGroups, ...: kAheadRows rows), so one
// dependent load serves two levels. Update reads the tree from global memory only: a shared copy
// of the top levels measured 0.6 µs slower there.
constexpr int kDrawLanes = 32;
constexpr int kDrawGroups = kDrawLanes / kFanout;
constexpr int kAheadRows = kFanout / kDrawGroups;
static_assert(kDrawGroups >= 1 && kDrawGroups * kFanout == kDrawLanes, "whole groups per draw");
// A draw's first step loads the whole top level (at most kFanout rows of kFanout nodes) twice: as
// rows of grandchildren (lane j of group h: node j of rows h, h + kDrawGroups, ...), and as
// kTopPerLane consecutive nodes per lane, kTopLanesPerRow lanes per row, for the row sums.
constexpr int kTopPerLane = static_cast<int>(kTopNodes / kDrawLanes);
constexpr int kTopLanesPerRow = kFanout / kTopPerLane;
static_assert(kTopPerLane % 4 == 0 && kTopLanesPerRow * kTopPerLane == kFanout, "whole quarters");
// 4 draws per block: 8 and 2 measured slower in the sample-and-update pair (bench/RESULTS.md).
constexpr int kSampleThreads = 128;
constexpr int kUpdateLanes = 4;  // lanes per updated index, each adding kFanout / 4 children
constexpr int kMaxThreads = 1024;
// The bits of one group's lanes in a ballot shifted down to the group's first lane.
constexpr uint32_t kGroupMask = kFanout == 32 ? 0xFFFFFFFFu : (1u << kFanout) - 1u;

// One step of a descent for the group of kFanout lanes whose first lane is `base` in the warp: lane
// j holds child j's mass c (0 in inactive groups). Returns the chosen child and updates u (the same
// in every lane of the group). Every lane of the warp must call it. Mirrors tree_choose_child: the
// prefix sums in tree_prefix_sums' order, the first positive child whose prefix exceeds u, else the
// last positive child with u at its mass.
__device__ inline int group_choose_child(double c, int lane, int base, double* u) {
  double p = c;
#pragma unroll
  for (int d = 1; d < kFanout; d *= 2) {
    const double left = __shfl_up_sync(redline::gpu::kFullLaneMask, p, d, kFanout);
    if (lane >= d) p = left + p;
  }
  const bool positive = c > 0.0;
  const auto hits = static_cast<uint32_t>(
      (__ballot_sync(redline::gpu::kFullLaneMask, positive && *u < p) >> base) & kGroupMask);
  const auto masses = static_cast<uint32_t>(
      (__ballot_sync(redline::gpu::kFullLaneMask, positive) >> base) & kGroupMask);
  const int chosen = hits != 0 ? __ffs(static_cast<int>(hits)) - 1
                               : (masses != 0 ? 31 - __clz(static_cast<int>(masses)) : 0);
  // The new u, from the lane that holds it without a shuffle of the prefix before `chosen`: lane
  // chosen - 1 subtracts its own prefix (u - p_{chosen-1}), lane 0 gives u itself (u - 0), and
  // without a hit lane `chosen` gives its mass.
  const int from = hits != 0 ? (chosen > 0 ? chosen - 1 : 0) : chosen;
  const double next_u = hits != 0 ? (chosen > 0 ? *u - p : *u) : c;  // meaningful in lane `from`
  *u = __shfl_sync(redline::gpu::kFullLaneMask, next_u, from, kFanout);
  return chosen;
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
  tree_set_leaf(v.tree, v.sum, v.min, slot, value);
}

int threads_for(int64_t work, int most) {
  int t = redline::gpu::kWarpSize;
  while (t < most && t < work) t *= 2;
  return t;
}

// The sum of n consecutive children (n a power of two, at least 4) in tree_combine's order:
// quarters, then pairwise. A run that starts at a multiple of n is a subtree of that order.
template <int n>
__device__ inline double sum_run(const double* c) {
  constexpr int kQuarters = n / 4;
  double q[kQuarters];
#pragma unroll
  for (int k = 0; k < kQuarters; ++k) q[k] = tree_quarter_sum(c + 4 * k);
#pragma unroll
  for (int w = 1; w < kQuarters; w *= 2) {
#pragma unroll
    for (int k = 0; k < kQuarters; k += 2 * w) q[k] = q[k] + q[k + w];
  }
  return q[0];
}

// tree_combine of a node's kFanout children, for a group of kUpdateLanes lanes: this lane's share
// of them (kFanout / kUpdateLanes consecutive children) starts at src, each lane combines its
// quarters pairwise, and butterfly steps across the group's lanes give every lane the parent, in
// tree_combine's order (IEEE addition commutes exactly). Every lane of the warp must call these;
// inactive groups read a node's children too (src must be valid; their result is not used), so
// that no branch stands between a level's loads and its combine.
constexpr int kShareQuarters = kFanout / 4 / kUpdateLanes;  // per lane
static_assert(kShareQuarters >= 1 && (kShareQuarters & (kShareQuarters - 1)) == 0,
              "whole quarters per lane");

// The butterfly steps of the sum tree's parent.
__device__ inline double group_butterfly(double x) {
#pragma unroll
  for (int step = 1; step < kUpdateLanes; step *= 2) {
    x = x + __shfl_xor_sync(redline::gpu::kFullLaneMask, x, step, kUpdateLanes);
  }
  return x;
}

// The sum tree's parent.
__device__ inline double group_sum(const double* src) {
  const auto* c2 = reinterpret_cast<const double2*>(src);
  double share[kShareQuarters];
#pragma unroll
  for (int q = 0; q < kShareQuarters; ++q) {
    const double2 lo = c2[2 * q], hi = c2[2 * q + 1];
    const double quarter[4] = {lo.x, lo.y, hi.x, hi.y};
    share[q] = tree_quarter_sum(quarter);
  }
#pragma unroll
  for (int w = 1; w < kShareQuarters; w *= 2) {
#pragma unroll
    for (int q = 0; q < kShareQuarters; q += 2 * w) share[q] = share[q] + share[q + w];
  }
  return group_butterfly(share[0]);
}

// Chained launches (sm_90 programmatic dependent launch): a kernel launched by launch_chained may
// start while the previous kernel on its stream finishes, so the launch latency overlaps that
// kernel's tail; it must call wait_for_previous_grid() before it reads anything. Elsewhere (HIP,
// older GPUs) launch_chained is a plain launch and both calls do nothing.
__device__ inline void wait_for_previous_grid() {
#if !REDLINE_HIP && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
__device__ inline void allow_next_grid() {
#if !REDLINE_HIP && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// Reads one word of each 64-byte line of the view, for one thread of the block, before the wait
// for the kernel ahead. Each launch's parameters are new to every SM's constant cache, and the
// first reads after the wait (the tree's pointers, the top's size, the level offsets) would
// otherwise go to memory on the kernel's critical path. The words' sum is stored to shared memory
// (never read), which keeps the reads where they are.
__device__ inline void warm_parameters(const ReplayView& v) {
#if REDLINE_HIP
  (void)v;  // kernel arguments reach AMD GPUs through the scalar cache, not a per-launch bank
#else
  __shared__ int64_t warm_sink;
  const auto* words = reinterpret_cast<const int64_t*>(&v);
  int64_t x = 0;
#pragma unroll
  for (size_t k = 0; k < sizeof(ReplayView) / sizeof(int64_t); k += 8) x += words[k];
  const auto at = static_cast<unsigned>(__cvta_generic_to_shared(&warm_sink));
  asm volatile("st.volatile.shared.u64 [%0], %1;" ::"r"(at), "l"(x) : "memory");
#endif
}

#if !REDLINE_HIP
// Compiled with this file's kernels and for the same targets: its attributes say from which
// virtual architecture the code that runs on a device was built.
__global__ void chain_probe_kernel() {}
#endif

// Per launch, on the current device (a machine may mix GPU generations): the GPU must be sm_90 or
// later, and this file's code on it must come from sm_90 or later. A build whose newest target is
// older (CMAKE_CUDA_ARCHITECTURES=80, say) runs on an H100 from compute_80 PTX, in which the waits
// above are compiled out; a chained launch there would let a kernel read what the one before it
// is still writing. Each device's answer is kept after the first query.
bool chained_launch_supported() {
#if REDLINE_HIP
  return false;
#else
  constexpr int kDevices = 64;
  static std::atomic<signed char> known[kDevices] = {};  // 0: not asked yet, 1: yes, 2: no
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) return false;
  const bool cached = device >= 0 && device < kDevices;
  if (cached) {
    const signed char k = known[device].load(std::memory_order_relaxed);
    if (k != 0) return k == 1;
  }
  int major = 0;
  cudaFuncAttributes image{};
  const bool yes =
      cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) == cudaSuccess &&
      major >= 9 && cudaFuncGetAttributes(&image, chain_probe_kernel) == cudaSuccess &&
      image.ptxVersion >= 90;
  if (cached) known[device].store(yes ? 1 : 2, std::memory_order_relaxed);
  return yes;
#endif
}

// A launch with the chained-launch attribute on sm_90 and later; a plain launch elsewhere.
template <typename... Params, typename... Args>
void launch_chained(void (*kernel)(Params...), unsigned int blocks, unsigned int threads,
                    size_t shared_bytes, cudaStream_t stream, Args... args) {
#if !REDLINE_HIP
  cudaLaunchAttribute attributes[1]{};
  unsigned int count = 0;
  if (chained_launch_supported()) {
    attributes[count].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attributes[count++].val.programmaticStreamSerializationAllowed = 1;
  }
  if (count > 0) {
    cudaLaunchConfig_t config{};
    config.gridDim = dim3(blocks);
    config.blockDim = dim3(threads);
    config.dynamicSmemBytes = shared_bytes;
    config.stream = stream;
    config.attrs = attributes;
    config.numAttrs = count;
    GPU_CHECK(cudaLaunchKernelEx(&config, kernel, static_cast<Params>(args)...));
    return;
  }
#endif
  kernel<<<blocks, threads, shared_bytes, stream>>>(static_cast<Params>(args)...);
  GPU_CHECK_LAUNCH();
}

// Minimum (kMax false) or maximum over groups of 32 lanes (a whole warp on NVIDIA, half a
// wavefront on CDNA): one redux instruction on sm_80 and later, five shuffle steps elsewhere.
template <bool kMax, typename T>
__device__ inline T lanes32_extreme(T value) {
#if !REDLINE_HIP && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  if constexpr (kMax) {
    return __reduce_max_sync(redline::gpu::kFullLaneMask, value);
  } else {
    return __reduce_min_sync(redline::gpu::kFullLaneMask, value);
  }
#else
  for (int offset = 16; offset > 0; offset /= 2) {
    const T other = __shfl_xor_sync(redline::gpu::kFullLaneMask, value, offset, 32);
    value = kMax ? max(value, other) : min(value, other);
  }
  return value;
#endif
}

// Bitwise OR over groups of 32 lanes, as lanes32_extreme.
__device__ inline unsigned int lanes32_or(unsigned int value) {
#if !REDLINE_HIP && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  return __reduce_or_sync(redline::gpu::kFullLaneMask, value);
#else
  for (int offset = 16; offset > 0; offset /= 2) {
    value |= __shfl_xor_sync(redline::gpu::kFullLaneMask, value, offset, 32);
  }
  return value;
#endif
}

// ---- the min tree's top mins and counts ---------------------------------------------------------
// A block settles the top nodes its leaf changes touch (tree_top_touched) in three steps, one
// barrier apart, in shared memory: (1) each touched node's new min, the smallest of its min before
// and its changed leaves' new mins (atomic minimums), and its owner, the lowest thread with a
// change there; (2) the count's change: +1 for each new min equal to it, -1 for each old one; (3)
// the owner stores both, or marks the node for a rescan where its count falls to 0 under a finite
// min. Insert always takes these steps; update only where a change needs them (settle_top_mins).
// Shared state is set before the kernel reads anything.
constexpr int kRescanWords = static_cast<int>(kTopNodes / 32);

struct TopScratch {
  unsigned int min_bits[kTopNodes];  // step 1: non-negative floats and +inf order like their bits
  int owner[kTopNodes];
  int delta[kTopNodes];               // step 2
  unsigned int rescan[kRescanWords];  // step 3: one bit per node to rescan
};

__device__ inline void top_scratch_clear(TopScratch& t) {
  for (int k = static_cast<int>(threadIdx.x); k < kTopNodes; k += static_cast<int>(blockDim.x)) {
    t.min_bits[k] = 0xFFFFFFFFu;
    t.owner[k] = INT_MAX;
    t.delta[k] = 0;
    if (k < kRescanWords) t.rescan[k] = 0;
  }
}

// Step 1 for one change (old and new mass of a leaf below `top`, whose min was top_min).
__device__ inline void top_step_min(TopScratch& t, int64_t top, double new_mass, float top_min) {
  atomicMin(&t.min_bits[top], __float_as_uint(top_min));
  if (new_mass > 0.0) atomicMin(&t.min_bits[top], __float_as_uint(tree_leaf_min(new_mass)));
  atomicMin(&t.owner[top], static_cast<int>(threadIdx.x));
}

// Step 2 for one change.
__device__ inline void top_step_count(TopScratch& t, int64_t top, double old_mass,
                                      double new_mass) {
  const unsigned int m = t.min_bits[top];
  const int d = (new_mass > 0.0 && __float_as_uint(tree_leaf_min(new_mass)) == m ? 1 : 0) -
                (old_mass > 0.0 && __float_as_uint(tree_leaf_min(old_mass)) == m ? 1 : 0);
  if (d != 0) atomicAdd(&t.delta[top], d);
}

// Step 3 for one change: its node's owner stores the node, or marks it for a rescan, once.
// top_min and top_count: the node's, read before the store. `claim`: the thread may reach the node
// again (insert's threads hold several slots), so the owner gives the node up as it takes it, by
// a compare-and-swap that no other thread's read of the word can race with; update's threads hold
// one change each and only read the word.
__device__ inline void top_step_store(const ReplayView& v, TopScratch& t, int64_t top,
                                      float top_min, uint32_t top_count, bool claim) {
  const int self = static_cast<int>(threadIdx.x);
  if ((claim ? atomicCAS(&t.owner[top], self, -1) : t.owner[top]) != self) return;
  const unsigned int m = t.min_bits[top];
  const int64_t count = (m == __float_as_uint(top_min) ? int64_t{top_count} : 0) + t.delta[top];
  if (count == 0 && m != kFloatInfBits) {
    atomicOr(&t.rescan[top / 32], 1u << (top % 32));
  } else {
    v.min[top] = __uint_as_float(m);
    v.min_count[top] = static_cast<uint32_t>(count);
  }
}

// Leaves each thread of a rescan loads before it folds any of them.
constexpr int kRescanAhead = 8;

// Sets each marked node's min and count from its leaves (after the block's leaf writes and a
// barrier). Every thread of the block calls it. Rare: see tree_min_nodes.
__device__ void rescan_tops(const ReplayView& v, const unsigned int* rescan) {
  __shared__ unsigned int warp_min[kMaxThreads / 32];
  __shared__ unsigned int warp_count[kMaxThreads / 32];
  const int64_t leaf0 = v.tree.offset[v.tree.levels - 1];
  const int warps = static_cast<int>(blockDim.x) / 32;
  for (int w = 0; w < kRescanWords; ++w) {
    unsigned int bits = rescan[w];  // the same in every thread
    while (bits != 0) {
      const int64_t top = int64_t{w} * 32 + (__ffs(bits) - 1);
      bits &= bits - 1;
      int64_t first = 0, end = 0;
      tree_top_leaves(v.tree, top, &first, &end);
      unsigned int m = kFloatInfBits, c = 0;
      // kRescanAhead leaves per thread and round, loaded before any is folded: with one load in
      // flight per thread, each leaf a thread reads costs a round trip.
      const int64_t stride = blockDim.x;
      for (int64_t j0 = first + threadIdx.x; j0 < end; j0 += stride * kRescanAhead) {
        double mass[kRescanAhead];
#pragma unroll
        for (int k = 0; k < kRescanAhead; ++k) {
          const int64_t j = j0 + k * stride;
          mass[k] = j < end ? v.sum[leaf0 + j] : 0.0;
        }
#pragma unroll
        for (int k = 0; k < kRescanAhead; ++k) {
          const unsigned int x = __float_as_uint(tree_leaf_min(mass[k]));
          c = mass[k] > 0.0 ? (x < m ? 1u : c + (x == m ? 1u : 0u)) : c;
          m = mass[k] > 0.0 ? min(m, x) : m;
        }
      }
      // Over 32 lanes: the smallest min, then the counts of the lanes that hold it.
      const unsigned int lm = lanes32_extreme<false>(m);
      unsigned int lc = m == lm ? c : 0u;
      for (int offset = 16; offset > 0; offset /= 2) {
        lc += __shfl_xor_sync(redline::gpu::kFullLaneMask, lc, offset, 32);
      }
      if (threadIdx.x % 32 == 0) {
        warp_min[threadIdx.x / 32] = lm;
        warp_count[threadIdx.x / 32] = lc;
      }
      __syncthreads();
      if (threadIdx.x == 0) {
        unsigned int bm = warp_min[0], bc = warp_count[0];
        for (int k = 1; k < warps; ++k) {
          bc = warp_min[k] < bm ? warp_count[k] : bc + (warp_min[k] == bm ? warp_count[k] : 0u);
          bm = min(bm, warp_min[k]);
        }
        v.min[top] = __uint_as_float(bm);
        v.min_count[top] = bm == kFloatInfBits ? 0u : bc;
      }
      __syncthreads();
    }
  }
}

// What a leaf's change (old and new mass, both sampleable) does to its top node, whose min and
// count were top_min and top_count: 0 (nothing), one more holder of its min (kTopTies), one fewer
// where fewer than `batch` holders cannot empty it (kTopLeaves), or kTopSettle: it lowers the min,
// or takes a holder from a node that the batch might empty.
enum TopKind : unsigned int { kTopSettle = 1, kTopTies = 2, kTopLeaves = 4 };
__device__ inline unsigned int top_kind_of(double old_mass, double new_mass, float top_min,
                                           uint32_t top_count, int64_t batch) {
  const float was = tree_leaf_min(old_mass), now = tree_leaf_min(new_mass);
  if (now < top_min) return kTopSettle;
  if (was == now) return 0;
  if (now == top_min) return kTopTies;
  if (was != top_min) return 0;
  return int64_t{top_count} > batch ? kTopLeaves : kTopSettle;
}

// Update's top nodes after its leaves are written: `kinds`, the OR of every change's TopKind (the
// same in every thread), picks the way; `kind` is this thread's change's (0: none). Where no change
// needs settling (no min falls, no node can lose all its holders), each count moves by one atomic
// add with no barrier: ties and the leaving of one holder among many are what a batch does to a
// flat stretch of equal priorities (new transitions all enter at the running maximum), and three
// barriers there cost 0.10-0.17 µs per pair (bench/RESULTS.md, 2026-12-07, tenth session).
// Otherwise the three shared steps above, and the rescans. Every thread of the block calls it.
__device__ inline void settle_top_mins(const ReplayView& v, TopScratch& t, unsigned int kinds,
                                       unsigned int kind, int64_t slot, double old_mass,
                                       double new_mass, float top_min, uint32_t top_count) {
  const int64_t top = tree_top_of(v.tree, slot);
  if (!(kinds & kTopSettle)) {
    if (kind == kTopTies) atomicAdd(v.min_count + top, 1u);
    if (kind == kTopLeaves) atomicAdd(v.min_count + top, 0xFFFFFFFFu);  // minus 1
    return;
  }
  if (kind != 0) top_step_min(t, top, new_mass, top_min);
  __syncthreads();
  if (kind != 0) top_step_count(t, top, old_mass, new_mass);
  __syncthreads();
  if (kind != 0) top_step_store(v, t, top, top_min, top_count, false);
  __syncthreads();
  rescan_tops(v, t.rescan);
}

// ---- insert: leaves of the overwritten, history-less and completed rows, then ancestors -------
// Each thread's slots are visited three times: to settle the top nodes (steps 1 and 2, reading the
// old leaves), then to write the leaves and store the nodes (step 3).
__global__ void __launch_bounds__(kMaxThreads) insert_tree_kernel(ReplayView v) {
  __shared__ TopScratch scratch;
  top_scratch_clear(scratch);
  __syncthreads();
  const int64_t g = *v.rows_written;
  int64_t rows[kMaxStack + 1];
  int64_t completed = -1;
  const int m = insert_changed_rows(v, g, rows, &completed);
  const double entry = entry_leaf_value(v, *v.max_priority);
  const int leaf_level = v.tree.levels - 1;
  const int64_t leaf0 = v.tree.offset[leaf_level];
  const bool top_mins = leaf_level > 0;
  // The changed rows are distinct, so each slot is visited once per pass.
  const auto new_value = [&](int i, int64_t slot) {
    return rows[i] == completed && !(v.flags[slot] & kTruncated) ? entry : 0.0;
  };
  bool touched = false;
  if (top_mins) {
    for (int i = 0; i < m; ++i) {
      for (int64_t e = threadIdx.x; e < v.envs; e += blockDim.x) {
        const int64_t slot = rows[i] * v.envs + e;
        const int64_t top = tree_top_of(v.tree, slot);
        const double value = new_value(i, slot);
        if (tree_top_touched(v.sum[leaf0 + slot], value, v.min[top])) {
          top_step_min(scratch, top, value, v.min[top]);
          touched = true;
        }
      }
    }
  }
  if (__syncthreads_or(touched)) {
    for (int i = 0; i < m; ++i) {
      for (int64_t e = threadIdx.x; e < v.envs; e += blockDim.x) {
        const int64_t slot = rows[i] * v.envs + e;
        const int64_t top = tree_top_of(v.tree, slot);
        const double old_mass = v.sum[leaf0 + slot];
        const double value = new_value(i, slot);
        if (tree_top_touched(old_mass, value, v.min[top])) {
          top_step_count(scratch, top, old_mass, value);
        }
      }
    }
    __syncthreads();
    for (int i = 0; i < m; ++i) {
      for (int64_t e = threadIdx.x; e < v.envs; e += blockDim.x) {
        const int64_t slot = rows[i] * v.envs + e;
        const int64_t top = tree_top_of(v.tree, slot);
        const float top_min = v.min[top];
        if (tree_top_touched(v.sum[leaf0 + slot], new_value(i, slot), top_min)) {
          top_step_store(v, scratch, top, top_min, v.min_count[top], true);
        }
      }
    }
    __syncthreads();  // every owner has read its node before any stores it
  }
  for (int i = 0; i < m; ++i) {
    for (int64_t e = threadIdx.x; e < v.envs; e += blockDim.x) {
      const int64_t slot = rows[i] * v.envs + e;
      set_leaf(v, slot, new_value(i, slot));
    }
  }
  __syncthreads();
  rescan_tops(v, scratch.rescan);
  for (int d = leaf_level - 1; d >= 0; --d) {
    const int shift = kFanoutBits * (leaf_level - d);
    for (int i = 0; i < m; ++i) {
      const int64_t lo = (rows[i] * v.envs) >> shift;
      const int64_t hi = (rows[i] * v.envs + v.envs - 1) >> shift;
      for (int64_t n = lo + threadIdx.x; n <= hi; n += blockDim.x) {
        tree_recompute(v.tree, v.sum, d, n);
      }
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) *v.rows_written = g + 1;
}

// ---- sample -------------------------------------------------------------------------------------
// The loads of one descent step from `node` at level d (a draw's lanes: lane j of group h): the
// node's children, and with `two` its grandchildren, rows h, h + kDrawGroups, ... Grandchildren of
// padding children lie past their level's end and read as 0; such children have no mass, so they
// are never chosen.
__device__ inline void load_step(const ReplayView& v, int d, int64_t node, bool two, int j, int h,
                                 double* child, double* grand) {
  const int64_t first = node * kFanout;
  *child = v.sum[v.tree.offset[d + 1] + first + j];
  if (!two) return;
  // The level's rows of grandchildren: its node count (a multiple of kFanout, from the offsets: a
  // count[] read at a computed place put the layout on the stack) over kFanout. Child c has a row
  // there when c is below that number, checked once in 32 bits rather than per row in 64.
  const int64_t start = v.tree.offset[d + 2];
  const int64_t end = d + 3 < v.tree.levels ? v.tree.offset[d + 3] : v.tree.nodes;
  const int64_t room = (end - start) / kFanout - (first + h);  // rows h, h + kDrawGroups, ...
  const int rows = static_cast<int>(room < 0 ? 0 : (room < kFanout ? room : kFanout));
  const double* at = v.sum + start + (first + h) * kFanout + j;
#pragma unroll
  for (int r = 0; r < kAheadRows; ++r) {
    grand[r] = kDrawGroups * r < rows ? at[kDrawGroups * r * kFanout] : 0.0;
  }
}

// The first step of a draw (lane j of group h; draw_lane = h * kFanout + j): the top level's rows
// h, h + kDrawGroups, ... as grandchildren of the unstored level above it, and this lane's
// kTopPerLane consecutive nodes of the top, reduced to their part of a row's sum and min. Rows past
// the top's end read as 0 and +inf.
__device__ inline void load_top(const ReplayView& v, int j, int h, int draw_lane, double* grand,
                                double* part_sum, float* part_min) {
  const int top = static_cast<int>(v.tree.count[0]);  // at most kTopNodes, a multiple of kFanout
  const double* sum = v.sum + v.tree.offset[0];
#pragma unroll
  for (int r = 0; r < kAheadRows; ++r) {
    const int row = h + kDrawGroups * r;
    grand[r] = row * kFanout < top ? sum[row * kFanout + j] : 0.0;
  }
  const int first = draw_lane * kTopPerLane;  // the run lies wholly inside or past the top
  double s[kTopPerLane];
  float m[kTopPerLane];
  if (first < top) {
    // The min tree stores the top level's mins even where the top level is the leaves
    // (tree_min_nodes): deriving them here from the masses made sample 0.12-0.24 µs slower
    // (bench/RESULTS.md, 2026-12-07, fourth session).
    const auto* s2 = reinterpret_cast<const double2*>(sum + first);
    const auto* m4 = reinterpret_cast<const float4*>(v.min + v.tree.offset[0] + first);
#pragma unroll
    for (int k = 0; k < kTopPerLane / 2; ++k) {
      const double2 a = s2[k];
      s[2 * k] = a.x;
      s[2 * k + 1] = a.y;
    }
#pragma unroll
    for (int k = 0; k < kTopPerLane / 4; ++k) {
      const float4 b = m4[k];
      m[4 * k] = b.x;
      m[4 * k + 1] = b.y;
      m[4 * k + 2] = b.z;
      m[4 * k + 3] = b.w;
    }
  } else {
#pragma unroll
    for (int k = 0; k < kTopPerLane; ++k) {
      s[k] = 0.0;
      m[k] = tree_leaf_min(0.0);
    }
  }
  *part_sum = sum_run<kTopPerLane>(s);
  float lo = tree_quarter_min(m);
#pragma unroll
  for (int k = 4; k < kTopPerLane; k += 4) lo = tree_min(lo, tree_quarter_min(m + k));
  *part_min = lo;
}

// Draw b * draws + w of block b is served by the block's w-th kDrawLanes lanes, and lane 0 writes
// the result. Before the wait for the kernel ahead, each draw makes its Philox number from the
// offset; blocks_done counts the blocks that have read it, and the last one advances it, lets
// later kernels start only then, and at the end reports faults. After the wait, the first step
// loads the top level whole and derives the two unstored levels above it (the rows' sums, then the
// total and the smallest leaf) by shuffles in tree_combine's order, so a tree of L stored levels
// costs 1 + ceil((L - 1) / 2) dependent loads (three from 1e5 to 1e7).
__global__ void __launch_bounds__(kSampleThreads)
    sample_kernel(ReplayView v, int64_t batch, double beta, const float* beta_device,
                  int64_t* indices, float* weights) {  // indices, weights: (batch,)
  __shared__ uint64_t base_offset;
  const int levels = v.tree.levels;
  const int draw_lane = static_cast<int>(threadIdx.x) % kDrawLanes;
  const int lane = draw_lane % kFanout;
  const int group = draw_lane / kFanout;
  const int base = static_cast<int>(threadIdx.x) % redline::gpu::kWarpSize - lane;
  const int64_t i =
      blockIdx.x * static_cast<int64_t>(blockDim.x / kDrawLanes) + threadIdx.x / kDrawLanes;
  // Before the wait, while the kernel before finishes: the Philox offset and each draw's place in
  // its slice, which depend on nothing that kernel writes. The offset is final here, because a
  // sample lets later kernels start only after it has advanced the offset (below), and every kernel
  // after it starts later still. The read bypasses L1, which may hold the line from before.
  if (threadIdx.x == 0) {
    base_offset = static_cast<uint64_t>(*static_cast<volatile const int64_t*>(v.rng_offset));
    warm_parameters(v);
  }
  __syncthreads();
  const uint64_t first_draw = base_offset;
  const double position = i < batch ? stratified_position(v, first_draw, i) : 0.0;
  // The last block to read the offset advances it (the CPU's sample does the same, before its
  // checks: a sample that faults still uses its draws) and then lets later kernels start; the
  // others let them start at once.
  bool last_block = false;
  if (threadIdx.x == 0) {
    last_block = atomicAdd(v.blocks_done, 1u) == gridDim.x - 1;
    if (last_block) {
      *v.blocks_done = 0;  // ready for the next launch
      *v.rng_offset = static_cast<int64_t>(first_draw + static_cast<uint64_t>(batch));
      __threadfence();
    }
    allow_next_grid();  // the block's first trigger counts, so only this thread triggers
  }
  wait_for_previous_grid();
  // The top level: every draw reads it, so that every draw derives the same total.
  const double b = beta_device != nullptr ? static_cast<double>(*beta_device) : beta;
  double grand[kAheadRows], row_sum = 0.0;
  float row_min = 0.0f;
  load_top(v, lane, group, draw_lane, grand, &row_sum, &row_min);
  // The rows' sums and mins (row r in lanes r * kTopLanesPerRow ...), child j = row j's sum in lane
  // j of each group, then the total: butterflies across each group in tree_combine's order.
#pragma unroll
  for (int step = 1; step < kTopLanesPerRow; step *= 2) {
    row_sum = row_sum + __shfl_xor_sync(redline::gpu::kFullLaneMask, row_sum, step, kDrawLanes);
    row_min =
        tree_min(row_min, __shfl_xor_sync(redline::gpu::kFullLaneMask, row_min, step, kDrawLanes));
  }
  double child =
      __shfl_sync(redline::gpu::kFullLaneMask, row_sum, lane * kTopLanesPerRow, kDrawLanes);
  double total = child;
#pragma unroll
  for (int step = 1; step < kFanout; step *= 2) {
    total = total + __shfl_xor_sync(redline::gpu::kFullLaneMask, total, step, kFanout);
  }
  float min_leaf = row_min;  // needed only for the weight, at the end
#pragma unroll
  for (int step = kTopLanesPerRow; step < kDrawLanes; step *= 2) {
    min_leaf = tree_min(min_leaf,
                        __shfl_xor_sync(redline::gpu::kFullLaneMask, min_leaf, step, kDrawLanes));
  }
  // Without a branch, so that it overlaps the total's shuffles.
  const double min_leaf_inverse = reciprocal(static_cast<double>(min_leaf));
  const bool beta_ok = b >= 0.0 && b <= 1.0;
  const bool empty = !(total > 0.0);
  const bool active = i < batch && !empty && beta_ok;
  if (!active) {
    child = 0.0;
#pragma unroll
    for (int r = 0; r < kAheadRows; ++r) grand[r] = 0.0;
  }
  double u = active ? stratified_point(position, batch, total) : 0.0;
  int64_t node = 0;
  bool two = true;
  // d is the level of `node`: the first step starts at the unstored root (level -2). The loop stops
  // before the last choice, once this lane's mass among the leaves to choose from has arrived
  // (`leaf_mass`: the children after a single step, or the chosen child's row of grandchildren).
  double leaf_mass = 0.0;
#pragma unroll 1
  for (int d = -2;;) {
    if (!two) {
      leaf_mass = child;
      break;
    }
    const int k = group_choose_child(child, lane, base, &u);
    node = node * kFanout + k;
    // Child k's row of grandchildren: register k / kDrawGroups of group k % kDrawGroups.
    // A select tree on the bits of k / kDrawGroups (a chain of compares became an indexed
    // load from the stack).
    const int want = k / kDrawGroups;
#pragma unroll
    for (int w = 1; w < kAheadRows; w *= 2) {
#pragma unroll
      for (int r = 0; r < kAheadRows; r += 2 * w)
        grand[r] = (want & w) != 0 ? grand[r + w] : grand[r];
    }
    const double row = __shfl_sync(redline::gpu::kFullLaneMask, grand[0],
                                   (k % kDrawGroups) * kFanout + lane, kDrawLanes);
    if (d + 3 >= levels) {  // the row holds leaves
      leaf_mass = row;
      break;
    }
    node = node * kFanout + group_choose_child(row, lane, base, &u);
    d += 2;
    two = d + 2 < levels;
    if (active) load_step(v, d, node, two, lane, group, &child, grand);
  }
  // The last choice, in straight-line code with each lane's candidate weight: the weight's chain of
  // dependent operations (a multiplication, a log and an exp, with no branch or division) overlaps
  // the choice's scan, and the chosen lane's weight is then one shuffle away. Sample took 0.43-0.45
  // µs less than with the weight after the choice (bench/RESULTS.md, 2026-12-07, third session).
  // Any value where the draw is not active: its result is not used.
  const float candidate_weight = importance_weight(v, leaf_mass, min_leaf_inverse, b);
  const int last_chosen = group_choose_child(leaf_mass, lane, base, &u);
  node = node * kFanout + last_chosen;
  const float weight =
      __shfl_sync(redline::gpu::kFullLaneMask, candidate_weight, last_chosen, kFanout);
  if (i < batch && draw_lane == 0) {
    if (active) {
      indices[i] = node;
      weights[i] = weight;
    } else {
      indices[i] = 0;
      weights[i] = 0.0f;
    }
  }
  // The last block reports a fault, which every block sees alike (beta and the total are the
  // same for all).
  if (!last_block) return;
  if (!beta_ok) {
    report_fault(v.fault, kFaultBeta, 0, b);
  } else if (empty) {
    report_fault(v.fault, kFaultEmpty, 0, 0.0);
  }
}

// 1 when a position after i in scan (kUpdateLanes lanes, each every kUpdateLanes-th position)
// holds scan[i], in this lane's share; the group ORs the lanes. Used for batches larger than
// kStagedIndices, which update reads from global memory.
__device__ inline int later_occurrence(const int64_t* scan, int64_t i, int64_t batch, int lane) {
  const int64_t idx = scan[i];
  int later = 0;
#pragma unroll 8
  for (int64_t j = i + 1 + lane; j < batch; j += kUpdateLanes) later |= scan[j] == idx;
  return later;
}

// The last position of each index in an unsorted staged batch, found through a hash table in
// shared memory (open addressing, twice as many slots as staged indices, so every probe sequence
// ends): one compare-and-swap claims an index's slot, and atomicMax keeps its largest position.
constexpr int kLastSlotBits = 10;
constexpr int kLastSlots = 1 << kLastSlotBits;
static_assert(kLastSlots >= 2 * kStagedIndices, "the table stays at most half full");
constexpr unsigned long long kNoIndex = ~0ull;  // indices are checked to be >= 0 before insertion

__device__ inline int record_position(unsigned long long* slot_index, int* slot_last, int64_t idx,
                                      int position) {
  const auto key = static_cast<unsigned long long>(idx);
  // Fibonacci hashing: the top kLastSlotBits bits of key times 2^64 / golden ratio.
  auto slot = static_cast<int>((key * 0x9E3779B97F4A7C15ull) >> (64 - kLastSlotBits));
  for (;;) {
    const unsigned long long held = atomicCAS(&slot_index[slot], kNoIndex, key);
    if (held == kNoIndex || held == key) {
      atomicMax(&slot_last[slot], position);
      return slot;
    }
    slot = (slot + 1) & (kLastSlots - 1);
  }
}

// ---- update -------------------------------------------------------------------------------------
// The sum tree's ancestors of the updated leaves, recomputed level by level (the path of batches
// larger than kStagedIndices; staged batches add each leaf's change instead): each pass of groups
// recomputes its indices' paths bottom-up, a barrier between levels. A later pass recomputes the
// ancestors it shares with an earlier one after all leaves are written, so every node ends final.
// Every thread of the block must call it.
__device__ inline void update_ancestors(const ReplayView& v, int64_t batch,
                                        const int64_t* indices) {
  const int leaf_level = v.tree.levels - 1;
  const int64_t leaf0 = v.tree.offset[leaf_level];
  const int lane = static_cast<int>(threadIdx.x) % kUpdateLanes;
  const int64_t group = threadIdx.x / kUpdateLanes;
  const int64_t groups = blockDim.x / kUpdateLanes;
  for (int64_t first = 0; first < batch; first += groups) {
    const int64_t i = first + group;
    const bool active = i < batch;
    const int64_t idx = active ? indices[i] : 0;
    constexpr int kShare = kFanout / kUpdateLanes;
    int64_t node = idx >> kFanoutBits;
    int64_t child = leaf0 + node * kFanout + kShare * lane;
    for (int d = leaf_level - 1; d >= 0; --d) {
      const double x = group_sum(v.sum + child);
      const int64_t at = v.tree.offset[d] + node;
      node >>= kFanoutBits;
      if (d > 0) child = v.tree.offset[d] + node * kFanout + kShare * lane;
      if (active && lane == 0) v.sum[at] = x;  // groups sharing a parent write the same bits
      __syncthreads();
    }
  }
}

// Adds a leaf's change to each of its ancestors in the sum tree: one atomic add per level, with no
// barrier between levels. Masses and every sum of them are exact on the memory's grid (leaf_mass),
// so the adds give the bits of a recomputation in any order.
__device__ inline void add_to_ancestors(const ReplayView& v, int64_t slot, double change) {
  const int leaf_level = v.tree.levels - 1;
  int64_t node = slot;
#if !REDLINE_HIP
  // Unrolled over every possible level, so that each level's offset is a static parameter load.
#pragma unroll
  for (int d = kMaxLevels - 2; d >= 0; --d) {
    if (d >= leaf_level) continue;  // the same in every thread
    node >>= kFanoutBits;
    atomicAdd(v.sum + v.tree.offset[d] + node, change);
  }
#else
  // A loop: AMD GPUs without a double atomic add (gfx11) get a compare-and-swap loop per add, and
  // nine unrolled copies of it made the gfx1100 backend of clang 15 (Debian's ROCm) write to freed
  // memory in its Release VGPRs pass and crash one compile in several.
  for (int d = leaf_level - 1; d >= 0; --d) {
    node >>= kFanoutBits;
    atomicAdd(v.sum + v.tree.offset[d] + node, change);
  }
#endif
}

// One block. Phase 1: every index checked, with its new leaf value (leaf_mass, 0 marks a slot
// that is not sampleable) computed by the thread that loaded it, beside its old leaf and its top
// node's min and count, and what the change does to that node (top_kind_of). Phase 2: the last
// occurrence of each index writes its leaf, adds the change to the leaf's ancestors (one atomic add
// per level, no barrier), and settles its top node (settle_top_mins). Against walking the levels
// one barrier apart (as batches larger than kStagedIndices still do), the sample-and-update pair
// takes 0.5 / 0.5 / 1.0 µs less at 1e5 / 1e6 / 1e7 (bench/RESULTS.md, 2026-12-07, tenth session).
// One block reads each old leaf before any write: a second block writing the same leaves could
// overwrite one before the other read it.
//
// Phase 1 ends in one barrier whose OR says whether any index or priority is bad, or the batch is
// not sorted; only then are the first bad positions found (a second reduction and barrier), or the
// last occurrences through the hash table. A sorted batch, which is what sample returns, has its
// duplicates side by side, so a thread holds its index's last occurrence when the next index
// differs: the table's compare-and-swap and atomicMax stay off the common path (0.1-0.2 µs per
// pair, bench/RESULTS.md). The checks and the running maximum run in warps that phase 1 leaves idle
// otherwise. Every instruction before that barrier is paid once per update: three reductions and
// their shared atomics there cost 0.12-0.19 µs per pair, and one more load and reduction 0.29 µs
// per update.
__global__ void __launch_bounds__(kMaxThreads, 1)
    update_kernel(ReplayView v, int64_t batch, const int64_t* indices,
                  const float* priorities) {  // indices, priorities: (batch,)
  allow_next_grid();
  __shared__ int block_bad_index;  // first bad position in the batch, or INT_MAX
  __shared__ int block_bad_priority;
  __shared__ unsigned int block_max_bits;  // positive floats order like their bits
  __shared__ unsigned long long slot_index[kLastSlots];
  __shared__ int slot_last[kLastSlots];
  __shared__ TopScratch scratch;
  __shared__ unsigned int block_top_kinds;  // the TopKind bits of the batch's changes
  const bool use_staged = batch <= kStagedIndices;
  const int leaf_level = v.tree.levels - 1;
  const int64_t capacity = v.rows * v.envs;
  const int64_t leaf0 = v.tree.offset[leaf_level];
  // The block's own shared state is set up while the kernel before finishes (chained launch).
  if (threadIdx.x == 0) {
    block_bad_index = INT_MAX;
    block_bad_priority = INT_MAX;
    block_max_bits = 0;
    block_top_kinds = 0;
    warm_parameters(v);
  }
  top_scratch_clear(scratch);
  __syncthreads();
  wait_for_previous_grid();  // before any global read: the indices may come from the kernel before
  const double max_before = threadIdx.x == 0 ? *v.max_priority : 0.0;  // read early, used last
  int bad_index = INT_MAX, bad_priority = INT_MAX;  // this thread's first bad positions
  // Whether a checked index is followed by a smaller one.
  bool unsorted = false;
  unsigned int max_bits = 0;
  // Staged batches: thread i < batch loads index i, the next index, its priority and its old leaf,
  // and computes the new leaf value: the path to the first barrier. The checks and the running
  // maximum are not on it: whole warps after those threads, idle here otherwise, check index j and
  // fold the priorities into the maximum (where the block has too few threads, the first threads
  // check their own).
  constexpr int kWarp = redline::gpu::kWarpSize;
  const int first_checker = static_cast<int>((batch + kWarp - 1) / kWarp * kWarp);
  const bool checkers = use_staged && static_cast<int64_t>(blockDim.x) >= first_checker + batch;
  const auto check = [&](int64_t j, int64_t idx, float p, int64_t next) {
    if (!(idx >= 0 && idx < capacity)) bad_index = min(bad_index, static_cast<int>(j));
    if (next < idx) unsorted = true;
    if (!(isfinite(p) && p > 0.0f)) {
      bad_priority = min(bad_priority, static_cast<int>(j));
    } else {
      max_bits = max(max_bits, __float_as_uint(p));
    }
  };
  // Staged batches: the index after this thread's (LLONG_MAX past the end), for the sorted check
  // and, in a sorted batch, to tell whether this thread holds its index's last occurrence.
  int64_t my_index = 0, next_index = LLONG_MAX;
  double new_leaf = 0.0;  // this thread's new leaf value, 0 where nothing is written
  double old_leaf = 0.0;  // and the one it replaces
  float top_min = 0.0f;   // its top node's min and count, read beside the old leaf
  uint32_t top_count = 0;
  unsigned int top_kind = 0;  // what its change does to its top node (TopKind)
  const bool top_mins = leaf_level > 0;
  if (use_staged) {
    const int i = static_cast<int>(threadIdx.x);  // the block has at least `batch` threads
    if (i < batch) {
      const int64_t idx = indices[i];
      const float p = priorities[i];
      next_index = i + 1 < batch ? indices[i + 1] : LLONG_MAX;  // used after the barrier
      const bool idx_ok = idx >= 0 && idx < capacity;
      const bool p_ok = isfinite(p) && p > 0.0f;
      if (!checkers) check(i, idx, p, next_index);
      // The old leaf's load and the power are independent, so they overlap; the old leaf is
      // first needed after the barrier.
      const int64_t slot = idx_ok ? idx : 0;
      old_leaf = v.sum[leaf0 + slot];
      if (top_mins) {
        top_min = v.min[tree_top_of(v.tree, slot)];
        top_count = v.min_count[tree_top_of(v.tree, slot)];
      }
      const double mass = leaf_mass(v, p_ok ? static_cast<double>(p) : 1.0);
      my_index = idx;
      new_leaf = idx_ok && p_ok && old_leaf > 0.0 ? mass : 0.0;
      if (top_mins && new_leaf > 0.0) {  // every occurrence, so the batch's kinds are a superset
        top_kind = top_kind_of(old_leaf, new_leaf, top_min, top_count, batch);
      }

    } else if (checkers && i >= first_checker && i < first_checker + batch) {
      const int64_t j = i - first_checker;
      check(j, indices[j], priorities[j], j + 1 < batch ? indices[j + 1] : LLONG_MAX);
    }
  } else {
    for (int64_t j = threadIdx.x; j < batch; j += blockDim.x) {
      check(j, indices[j], priorities[j], LLONG_MAX);
    }
  }
  // The batch's kinds: one shared atomic per 32 lanes (most of a batch's changes have a kind in
  // the bench, and one atomic per thread on the same word serializes before the barrier).
  if (top_mins) {
    const unsigned int group_kinds = lanes32_or(top_kind);
    if (threadIdx.x % 32 == 0 && group_kinds != 0) atomicOr(&block_top_kinds, group_kinds);
  }
  // Whole warps: the index threads' warps skip this where checkers serve them.
  if (!checkers || static_cast<int>(threadIdx.x) >= first_checker) {
    max_bits = lanes32_extreme<true>(max_bits);
    if (threadIdx.x % 32 == 0 && max_bits != 0) atomicMax(&block_max_bits, max_bits);
  }
  // One barrier that also tells whether any thread found a bad index or priority, or an unsorted
  // batch (the rare cases). A bad value stops the update: the first bad index and priority are
  // found (per 32 lanes, then a shared atomic per group of 32) and reported.
  const bool bad = bad_index != INT_MAX || bad_priority != INT_MAX;
  bool last = false;  // staged: thread threadIdx.x holds the last occurrence of its index
  if (threadIdx.x < batch) last = next_index != my_index;  // a sorted batch's runs
  const bool flagged = __syncthreads_or(bad || unsorted);
  if (flagged && __syncthreads_or(bad)) {
    bad_index = lanes32_extreme<false>(bad_index);
    bad_priority = lanes32_extreme<false>(bad_priority);
    if (threadIdx.x % 32 == 0) {
      if (bad_index != INT_MAX) atomicMin(&block_bad_index, bad_index);
      if (bad_priority != INT_MAX) atomicMin(&block_bad_priority, bad_priority);
    }
    __syncthreads();
    bad_index = block_bad_index;
    bad_priority = block_bad_priority;
    if (threadIdx.x == 0) {  // nothing changes in either tree
      if (bad_index <= bad_priority) {
        report_fault(v.fault, kFaultIndex, bad_index, static_cast<double>(indices[bad_index]));
      } else {
        report_fault(v.fault, kFaultPriority, bad_priority, priorities[bad_priority]);
      }
    }
    return;
  }
  if (use_staged && flagged) {
    // An unsorted batch: each index's last position through the hash table (every index is valid
    // now).
    for (int s = static_cast<int>(threadIdx.x); s < kLastSlots; s += static_cast<int>(blockDim.x)) {
      slot_index[s] = kNoIndex;
      slot_last[s] = -1;
    }
    __syncthreads();
    int my_slot = -1;
    if (threadIdx.x < batch) {
      my_slot = record_position(slot_index, slot_last, my_index, static_cast<int>(threadIdx.x));
    }
    __syncthreads();
    if (threadIdx.x < batch) last = slot_last[my_slot] == static_cast<int>(threadIdx.x);
  }
  // Leaves: only the last occurrence of an index writes, and only while the slot is sampleable;
  // then its change goes to the sum tree's ancestors, and to its top node's min and count
  // (settle_top_mins).
  if (use_staged) {
    if (last && new_leaf > 0.0) {
      set_leaf(v, my_index, new_leaf);
      add_to_ancestors(v, my_index, new_leaf - old_leaf);
    }
    if (top_mins) {
      settle_top_mins(v, scratch, block_top_kinds, last ? top_kind : 0u, my_index, old_leaf,
                      new_leaf, top_min, top_count);
    }
  } else {
    // The group of index i scans the later positions, each lane every kUpdateLanes-th one. A
    // touched top node is rescanned (batches this large are rare).
    const int lane = static_cast<int>(threadIdx.x) % kUpdateLanes;
    const int64_t group = threadIdx.x / kUpdateLanes;
    const int64_t groups = blockDim.x / kUpdateLanes;
    for (int64_t first = 0; first < batch; first += groups) {  // the same trip count everywhere
      const int64_t i = first + group;
      int later = i < batch ? later_occurrence(indices, i, batch, lane) : 0;
      for (int offset = kUpdateLanes / 2; offset > 0; offset /= 2) {
        later |= __shfl_xor_sync(redline::gpu::kFullLaneMask, later, offset, kUpdateLanes);
      }
      if (i < batch && lane == 0 && !later) {
        const int64_t slot = indices[i];
        const int64_t top = tree_top_of(v.tree, slot);
        const double old_mass = v.sum[leaf0 + slot];
        if (old_mass > 0.0) {
          const double mass = leaf_mass(v, static_cast<double>(priorities[i]));
          if (top_mins && tree_top_touched(old_mass, mass, v.min[top])) {
            atomicOr(&scratch.rescan[top / 32], 1u << (top % 32));
          }
          set_leaf(v, slot, mass);
        }
      }
    }
    __syncthreads();
    if (top_mins) rescan_tops(v, scratch.rescan);
    update_ancestors(v, batch, indices);
  }
  if (threadIdx.x == 0) {
    const double p = static_cast<double>(__uint_as_float(block_max_bits));
    if (p > max_before) *v.max_priority = p;
  }
}

}  // namespace

void insert(const ReplayView& v, const InsertSource& src, void* stream) {
  const cudaStream_t s = static_cast<cudaStream_t>(stream);
  insert_copy(v, src, stream);
  const int64_t work = v.envs * (v.stack + 1);
  insert_tree_kernel<<<1, threads_for(work, kMaxThreads), 0, s>>>(v);
  GPU_CHECK_LAUNCH();
}

void sample(const ReplayView& v, int64_t batch, double beta, const float* beta_device,
            int64_t* indices, float* weights, void* stream) {
  const cudaStream_t s = static_cast<cudaStream_t>(stream);
  const int64_t per_block = kSampleThreads / kDrawLanes;
  const auto blocks = static_cast<unsigned int>((batch + per_block - 1) / per_block);
  launch_chained(sample_kernel, blocks, kSampleThreads, 0, s, v, batch, beta, beta_device, indices,
                 weights);
}

void update(const ReplayView& v, int64_t batch, const int64_t* indices, const float* priorities,
            void* stream) {
  const cudaStream_t s = static_cast<cudaStream_t>(stream);
  // Staged batches: a thread per index and, in the warps after them, a checker per index; larger
  // batches: kUpdateLanes threads per index for the level walk.
  const int64_t warps = (batch + redline::gpu::kWarpSize - 1) / redline::gpu::kWarpSize;
  const int64_t work =
      batch <= kStagedIndices ? warps * redline::gpu::kWarpSize + batch : batch * kUpdateLanes;
  launch_chained(update_kernel, 1, threads_for(work, kMaxThreads), 0, s, v, batch, indices,
                 priorities);
}

}  // namespace redline::rl::replay::gpu
