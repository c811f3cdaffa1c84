// The replay memory's kernels: CPU twins in src/rl/replay/replay_cpu.cpp and GPU kernels in
// src/backend/gpu/replay_tree.cu and replay_data.cu, with the same signatures (plain pointers on
// the memory's device; the GPU ones also take the stream and never synchronize with the host).
#pragma once

#include <cstdint>

#include "rl/replay/replay_math.h"

namespace redline::rl::replay {

// Where one environment's newest frame sits in the insert's observation tensor.
struct InsertSource {
  const void* obs = nullptr;            // (N, ...) obs dtype, contiguous
  int64_t env_stride = 0;               // elements per environment in obs
  int64_t frame_offset = 0;             // elements to skip to the newest frame
  const void* action = nullptr;         // (N,) i32 or i64
  int action_elem = 8;                  // bytes per input action
  const float* reward = nullptr;        // (N,)
  const uint8_t* terminated = nullptr;  // (N,) 0 or 1
  const uint8_t* truncated = nullptr;   // (N,) 0 or 1
};

// Outputs of gather (B rows each).
struct GatherTarget {
  void* obs = nullptr;        // (B, k * frame_numel) obs dtype
  void* action = nullptr;     // (B,) action dtype
  float* reward = nullptr;    // (B,)
  float* discount = nullptr;  // (B,)
  void* next_obs = nullptr;   // (B, k * frame_numel) obs dtype
};

namespace cpu {
// Each throws redline::Error on bad values (the GPU kernels report through ReplayView::fault).
void insert(const ReplayView& v, const InsertSource& src);
void sample(const ReplayView& v, int64_t batch, double beta, int64_t* indices, float* weights);
void update(const ReplayView& v, int64_t batch, const int64_t* indices, const float* priorities);
void gather(const ReplayView& v, int64_t batch, const int64_t* indices, const GatherTarget& out);
}  // namespace cpu

namespace gpu {
// beta_device: a (1,) f32 on the device, or nullptr to use beta.
void insert(const ReplayView& v, const InsertSource& src, void* stream);
void sample(const ReplayView& v, int64_t batch, double beta, const float* beta_device,
            int64_t* indices, float* weights, void* stream);
void update(const ReplayView& v, int64_t batch, const int64_t* indices, const float* priorities,
            void* stream);
void gather(const ReplayView& v, int64_t batch, const int64_t* indices, const GatherTarget& out,
            void* stream);
// The data half of insert (frames, actions, rewards, flags), launched by insert.
void insert_copy(const ReplayView& v, const InsertSource& src, void* stream);
}  // namespace gpu

}  // namespace redline::rl::replay
