// Replay memory data kernels: the copy half of insert (newest frame, action, reward, flags) and
// gather (frame stacks, n-step returns, next observations). CPU twins:
// src/rl/replay/replay_cpu.cpp; shared arithmetic: src/rl/replay/replay_math.h. Frames move in the
// widest word (16, 4 or 1 bytes) that their size and alignment allow.
#include <cstdint>

#include "rl/replay/replay_kernels.h"
#include "vendor/gpu.h"

namespace redline::rl::replay::gpu {
namespace {

constexpr int kThreads = 256;

__device__ void report_fault(DeviceFault* fault, int32_t code, int32_t position, double value) {
  if (fault == nullptr) return;
  volatile DeviceFault* f = fault;
  if (f->code != kFaultNone) return;
  f->position = position;
  f->value = value;
  __threadfence_system();
  f->code = code;
  __threadfence_system();
}

// frames[(r*N + e), :] = obs[e, frame_offset : frame_offset + frame]; per-env fields alongside.
template <typename W>
__global__ void insert_copy_kernel(ReplayView v, InsertSource src, int64_t frame_words,
                                   int64_t env_stride_words, int64_t frame_offset_words) {
  const int64_t r = wrap_row(*v.rows_written, v.rows);
  const W* obs = static_cast<const W*>(src.obs);  // (N, env_stride_words)
  W* frames = static_cast<W*>(v.frames);          // (R*N, frame_words)
  const int64_t total = v.envs * frame_words;
  const int64_t stride = int64_t{gridDim.x} * blockDim.x;
  const int64_t first = blockIdx.x * int64_t{blockDim.x} + threadIdx.x;
  for (int64_t x = first; x < total; x += stride) {
    const int64_t e = x / frame_words;
    const int64_t w = x - e * frame_words;
    frames[(r * v.envs + e) * frame_words + w] = obs[e * env_stride_words + frame_offset_words + w];
  }
  for (int64_t e = first; e < v.envs; e += stride) {
    const int64_t slot = r * v.envs + e;
    const int64_t a = src.action_elem == 4 ? static_cast<const int32_t*>(src.action)[e]
                                           : static_cast<const int64_t*>(src.action)[e];
    if (v.action_elem == 4) {
      static_cast<int32_t*>(v.actions)[slot] = static_cast<int32_t>(a);
    } else {
      static_cast<int64_t*>(v.actions)[slot] = a;
    }
    v.rewards[slot] = src.reward[e];
    const bool term = src.terminated[e] != 0;
    const bool trunc = src.truncated[e] != 0;
    v.flags[slot] = static_cast<uint8_t>((term ? kTerminated : 0) | (trunc ? kTruncated : 0) |
                                         (v.prev_done[e] ? kEpisodeStart : 0));
    v.prev_done[e] = (term || trunc) ? 1 : 0;
  }
}

// The rows that gather's walks read, t - (k - 1) .. t + n of one column (k: frame_stack, n:
// n_step), as one block loads them into shared memory: one thread per row, all at once, where the
// walks from memory took one dependent load per step. Longer windows walk the memory instead.
constexpr int kGatherWindow = 64;

struct WindowRows {
  const uint8_t* flags;  // (kGatherWindow,) rows first, first + 1, ... (wrapped)
  const float* rewards;
  int64_t first;
  int64_t rows;  // the memory's rows
  __device__ int64_t at(int64_t row) const {
    return row >= first ? row - first : row + rows - first;
  }
  __device__ uint8_t flag(int64_t row) const { return flags[at(row)]; }
  __device__ float reward(int64_t row) const { return rewards[at(row)]; }
};

// Copies `count` words spread over the block: locate(x, &from, &to) gives word x's source
// (nullptr: zeros) and destination. Each thread issues kCopyBatch loads before its stores: the
// compiler cannot know that the stores do not alias the frames, so a plain loop waits for one
// load's round trip per word.
constexpr int kCopyBatch = 8;

template <typename W, typename Locate>
__device__ inline void copy_words(uint32_t count, Locate locate) {
  const uint32_t stride = blockDim.x;
  for (uint32_t base = threadIdx.x; base < count; base += kCopyBatch * stride) {
    W value[kCopyBatch];
    W* to[kCopyBatch];
#pragma unroll
    for (int u = 0; u < kCopyBatch; ++u) {
      const uint32_t x = base + u * stride;
      value[u] = W{};
      to[u] = nullptr;
      if (x < count) {
        const W* from = nullptr;
        locate(x, &from, &to[u]);
        if (from != nullptr) value[u] = *from;
      }
    }
#pragma unroll
    for (int u = 0; u < kCopyBatch; ++u) {
      if (to[u] != nullptr) *to[u] = value[u];
    }
  }
}

// One block per sampled transition. Every thread reads the index; the window's rows, the action
// and the observation's newest frame (always row t) are loaded together; then thread 0 runs the
// n-step and stack walks on the window, and all threads copy the remaining frames.
template <typename W>
__global__ void gather_kernel(ReplayView v, const int64_t* indices, GatherTarget out,
                              int64_t frame_words) {  // indices: (B,)
  __shared__ int64_t src_rows[2][kMaxStack];
  __shared__ uint8_t window_flags[kGatherWindow];
  __shared__ float window_rewards[kGatherWindow];
  const int64_t i = blockIdx.x;
  const int64_t given = indices[i];
  const int64_t capacity = v.rows * v.envs;
  const bool index_ok = given >= 0 && given < capacity;
  const int64_t idx = index_ok ? given : 0;
  const int64_t t = idx / v.envs;
  const int64_t e = idx - t * v.envs;
  const int64_t span = v.stack + v.n_step;
  const bool windowed = span <= kGatherWindow;
  const int64_t first = wrap_row(t - (v.stack - 1), v.rows);
  if (windowed && threadIdx.x < span) {
    const int64_t row = wrap_row(first + threadIdx.x, v.rows);
    window_flags[threadIdx.x] = v.flags[row * v.envs + e];
    window_rewards[threadIdx.x] = v.rewards[row * v.envs + e];
  }
  if (threadIdx.x == blockDim.x - 1) {
    if (v.action_elem == 4) {
      static_cast<int32_t*>(out.action)[i] = static_cast<const int32_t*>(v.actions)[idx];
    } else {
      static_cast<int64_t*>(out.action)[i] = static_cast<const int64_t*>(v.actions)[idx];
    }
  }
  const W* frames = static_cast<const W*>(v.frames);  // (R*N, frame_words)
  const int64_t obs_words = v.stack * frame_words;
  // (B, k * frame_words) each; two pointers, not an array: an array indexed at run time would
  // live in local memory.
  W* const obs_dst = static_cast<W*>(out.obs) + i * obs_words;
  W* const next_dst = static_cast<W*>(out.next_obs) + i * obs_words;
  // The observation's newest frame is row t's whatever the flags say.
  const int64_t newest = (v.stack - 1) * frame_words;
  const W* newest_src = frames + idx * frame_words;
  copy_words<W>(static_cast<uint32_t>(frame_words), [&](uint32_t w, const W** from, W** to) {
    *from = newest_src + w;
    *to = obs_dst + newest + w;
  });
  __syncthreads();
  if (threadIdx.x == 0) {
    if (!index_ok) {
      report_fault(v.fault, kFaultIndex, static_cast<int32_t>(i), static_cast<double>(given));
    }
    const auto walk = [&](const auto& column) {
      const NStepResult ns = n_step_window(v, t, column);
      stack_source_rows(v, t, column, src_rows[0]);
      stack_source_rows(v, ns.next_row, column, src_rows[1]);
      out.reward[i] = static_cast<float>(ns.ret);
      out.discount[i] = static_cast<float>(ns.discount);
    };
    if (windowed) {
      walk(WindowRows{window_flags, window_rewards, first, v.rows});
    } else {
      walk(ColumnRows{&v, e});
    }
  }
  __syncthreads();
  // Everything but the observation's newest frame: word x lies in frame x / frame_words of the
  // sequence obs frames 0 .. k - 2, then next_obs frames 0 .. k - 1. 32-bit: a sample's frames
  // are far below 2^32 words.
  const auto fw = static_cast<uint32_t>(frame_words);
  const auto k = static_cast<uint32_t>(v.stack);
  copy_words<W>((2 * k - 1) * fw, [&](uint32_t x, const W** from, W** to) {
    uint32_t f = x / fw;
    const uint32_t w = x - f * fw;
    if (f >= k - 1) ++f;  // past obs's newest frame: f is now 0 .. 2k - 1 over both stacks
    const bool next = f >= k;
    const uint32_t frame = next ? f - k : f;
    const int64_t row = src_rows[next ? 1 : 0][frame];
    *from = row >= 0 ? frames + (row * v.envs + e) * frame_words + w : nullptr;
    *to = (next ? next_dst : obs_dst) + static_cast<int64_t>(frame) * frame_words + w;
  });
}

bool aligned(const void* p, size_t bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }

int grid_for(int64_t work) {
  const int64_t blocks = (work + kThreads - 1) / kThreads;
  return static_cast<int>(blocks < 4096 ? (blocks > 0 ? blocks : 1) : 4096);
}

template <typename W>
void launch_insert_copy(const ReplayView& v, const InsertSource& src, cudaStream_t s) {
  const int64_t w = static_cast<int64_t>(sizeof(W));
  const int64_t frame_words = v.frame_numel * v.obs_elem / w;
  insert_copy_kernel<W><<<grid_for(v.envs * frame_words), kThreads, 0, s>>>(
      v, src, frame_words, src.env_stride * v.obs_elem / w, src.frame_offset * v.obs_elem / w);
  GPU_CHECK_LAUNCH();
}

template <typename W>
void launch_gather(const ReplayView& v, int64_t batch, const int64_t* indices,
                   const GatherTarget& out, cudaStream_t s) {
  const int64_t frame_words = v.frame_numel * v.obs_elem / static_cast<int64_t>(sizeof(W));
  gather_kernel<W><<<static_cast<unsigned>(batch), kThreads, 0, s>>>(v, indices, out, frame_words);
  GPU_CHECK_LAUNCH();
}

}  // namespace

void insert_copy(const ReplayView& v, const InsertSource& src, void* stream) {
  const cudaStream_t s = static_cast<cudaStream_t>(stream);
  const int64_t frame_bytes = v.frame_numel * v.obs_elem;
  const int64_t stride_bytes = src.env_stride * v.obs_elem;
  const int64_t offset_bytes = src.frame_offset * v.obs_elem;
  const auto fits = [&](int64_t w) {
    return frame_bytes % w == 0 && stride_bytes % w == 0 && offset_bytes % w == 0 &&
           aligned(src.obs, static_cast<size_t>(w));
  };
  if (fits(16)) {
    launch_insert_copy<uint4>(v, src, s);
  } else if (fits(4)) {
    launch_insert_copy<uint32_t>(v, src, s);
  } else {
    launch_insert_copy<uint8_t>(v, src, s);
  }
}

void gather(const ReplayView& v, int64_t batch, const int64_t* indices, const GatherTarget& out,
            void* stream) {
  if (batch == 0) return;
  const cudaStream_t s = static_cast<cudaStream_t>(stream);
  const int64_t frame_bytes = v.frame_numel * v.obs_elem;
  const bool out_aligned16 = aligned(out.obs, 16) && aligned(out.next_obs, 16);
  if (frame_bytes % 16 == 0 && out_aligned16) {
    launch_gather<uint4>(v, batch, indices, out, s);
  } else if (frame_bytes % 4 == 0 && aligned(out.obs, 4) && aligned(out.next_obs, 4)) {
    launch_gather<uint32_t>(v, batch, indices, out, s);
  } else {
    launch_gather<uint8_t>(v, batch, indices, out, s);
  }
}

}  // namespace redline::rl::replay::gpu
