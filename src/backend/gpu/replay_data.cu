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

// One block per sampled transition: thread 0 walks the n-step window and the two stacks' source
// rows, then all threads copy 2k frames.
template <typename W>
__global__ void gather_kernel(ReplayView v, const int64_t* indices, GatherTarget out,
                              int64_t frame_words) {  // indices: (B,)
  __shared__ int64_t src_rows[2][kMaxStack];
  __shared__ int64_t env;
  const int64_t i = blockIdx.x;
  if (threadIdx.x == 0) {
    int64_t idx = indices[i];
    const int64_t capacity = v.rows * v.envs;
    if (idx < 0 || idx >= capacity) {
      report_fault(v.fault, kFaultIndex, static_cast<int32_t>(i), static_cast<double>(idx));
      idx = 0;
    }
    const int64_t t = idx / v.envs;
    const int64_t e = idx - t * v.envs;
    const NStepResult ns = n_step_window(v, t, e);
    out.reward[i] = static_cast<float>(ns.ret);
    out.discount[i] = static_cast<float>(ns.discount);
    if (v.action_elem == 4) {
      static_cast<int32_t*>(out.action)[i] = static_cast<const int32_t*>(v.actions)[idx];
    } else {
      static_cast<int64_t*>(out.action)[i] = static_cast<const int64_t*>(v.actions)[idx];
    }
    stack_source_rows(v, t, e, src_rows[0]);
    stack_source_rows(v, ns.next_row, e, src_rows[1]);
    env = e;
  }
  __syncthreads();
  const int64_t e = env;
  const W* frames = static_cast<const W*>(v.frames);  // (R*N, frame_words)
  const int64_t obs_words = v.stack * frame_words;
  W* dst[2] = {static_cast<W*>(out.obs) + i * obs_words,  // (B, k * frame_words)
               static_cast<W*>(out.next_obs) + i * obs_words};
  for (int64_t x = threadIdx.x; x < 2 * obs_words; x += blockDim.x) {
    const int which = x >= obs_words ? 1 : 0;
    const int64_t rem = x - which * obs_words;
    const int64_t f = rem / frame_words;
    const int64_t w = rem - f * frame_words;
    const int64_t row = src_rows[which][f];
    W value{};
    if (row >= 0) value = frames[(row * v.envs + e) * frame_words + w];
    dst[which][rem] = value;
  }
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
