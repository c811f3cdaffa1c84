// The GPU side of the built-in environments (src/backend/gpu/env_step.cu): one thread per
// environment runs the same rule code as the CPU loop in vec_env.cpp. Only declared here; call
// only under #if REDLINE_HAS_GPU.
#pragma once

#include <cstdint>

#include "redline/rl/vec_env.h"
#include "rl/env/driver.h"

namespace redline::rl::gpu_env {

// Device pointers of one VecEnv (n environments).
struct Buffers {
  void* slots;          // (n,) Slot<G>
  const void* actions;  // (n,) i32 or i64
  bool actions_i64;
  void* observation;        // (n, C, 10, 10) u8 or (n, 4) f32
  void* final_observation;  // like observation, or nullptr
  float* reward;            // (n,)
  bool* terminated;         // (n,)
  bool* truncated;          // (n,)
  float* episode_return;    // (n,)
  int32_t* episode_length;  // (n,)
};

// Starts every environment from params.seed and writes the first observation.
void reset(Game game, int64_t n, const EnvParams& params, const Buffers& buffers, void* stream);
// One step of every environment (actions outside [0, num_actions) act as action 0).
void step(Game game, int64_t n, const EnvParams& params, const Buffers& buffers, void* stream);
// *first_bad (device i64, preset to n by the caller) becomes the smallest index whose action is
// outside [0, num_actions).
void find_bad_action(const void* actions, bool actions_i64, int64_t n, int num_actions,
                     int64_t* first_bad, void* stream);

}  // namespace redline::rl::gpu_env
