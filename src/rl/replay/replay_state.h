// The buffers behind a ReplayMemory (internal; shared by replay.cpp and replay_io.cpp).
#pragma once

#include "redline/core/tensor.h"
#include "redline/rl/replay/replay.h"
#include "rl/replay/replay_math.h"

namespace redline::rl {

struct ReplayState {
  Tensor frames;                         // (R*N, frame_numel) obs dtype
  Tensor actions;                        // (R*N,) action dtype
  Tensor rewards;                        // (R*N,) f32
  Tensor flags;                          // (R*N,) u8
  Tensor prev_done;                      // (N,) u8
  Tensor sum;                            // (nodes,) i64 holding f64 bits
  Tensor min;                            // (top-level nodes,) i32 holding f32 bits
  Tensor counters;                       // (2,) i64: rows written, max priority (f64 bits)
  Tensor blocks_done;                    // (1,) i32: the GPU sample's finished blocks (not saved)
  replay::DeviceFault* fault = nullptr;  // pinned host memory written by GPU kernels
  replay::ReplayView view;               // pointers into the tensors above

  ReplayState() = default;
  ~ReplayState();
  ReplayState(const ReplayState&) = delete;
  ReplayState& operator=(const ReplayState&) = delete;
};

}  // namespace redline::rl
