// One environment's transition as the CPU loop and the GPU kernel both run it: the agent's action
// index -> (minimal set) -> sticky action -> game step -> episode bookkeeping. Reset of a finished
// environment is left to the caller, which may first want the final observation.
#pragma once

#include <cstdint>
#include <type_traits>

#include "redline/core/hd.h"
#include "rl/env/asterix.h"
#include "rl/env/breakout.h"
#include "rl/env/cartpole.h"
#include "rl/env/freeway.h"
#include "rl/env/grid.h"
#include "rl/env/rng.h"
#include "rl/env/seaquest.h"
#include "rl/env/space_invaders.h"

namespace redline::rl {

// Everything a step needs besides the per-environment state (passed by value to kernels).
struct EnvParams {
  uint64_t seed = 0;
  double sticky_action_prob = 0.1;  // MinAtar only
  int32_t max_episode_steps = 0;    // 0: no time limit
  int32_t num_actions = 6;          // the agent's action count (minimal set size when minimal)
  uint8_t difficulty_ramping = 1;
  uint8_t minimal_action_set = 0;
};

template <typename G>
inline constexpr bool kIsMinAtar = !std::is_same_v<G, CartPole>;

// Per-environment state: the game's state plus the wrapper's (16-byte aligned so the GPU loads it
// with vector instructions).
template <typename G>
struct alignas(16) Slot {
  typename G::State game;
  uint64_t rng_offset;     // next Philox block of this environment's stream
  float episode_return;    // running return of the current episode
  int32_t episode_length;  // steps taken in the current episode
  uint8_t last_action;     // raw action executed last (survives resets, as in the original)
};

struct Transition {
  float reward;
  bool terminated;
  bool truncated;
  float episode_return;    // of the episode that ended now (0 when none did)
  int32_t episode_length;  // likewise
};

// A new episode: the game's reset and zeroed episode counters (last_action is kept).
template <typename G, typename Rng>
REDLINE_HD inline void env_reset(Slot<G>& slot, Rng& rng) {
  G::reset(slot.game, rng);
  slot.episode_return = 0.0f;
  slot.episode_length = 0;
}

// A fresh environment after VecEnv::reset(seed).
template <typename G, typename Rng>
REDLINE_HD inline void env_init(Slot<G>& slot, Rng& rng) {
  slot.last_action = 0;
  env_reset(slot, rng);
}

// One step. action is the agent's index, already known to be in [0, params.num_actions).
template <typename G, typename Rng>
REDLINE_HD inline Transition env_step(Slot<G>& slot, int action, const EnvParams& params,
                                      Rng& rng) {
  int executed = action;
  if constexpr (kIsMinAtar<G>) {
    if (params.minimal_action_set) executed = G::minimal_action(action);
    // Sticky actions (spec 2.2): one draw on every step, before the game's own draws.
    if (rng.uniform_double() < params.sticky_action_prob) executed = slot.last_action;
    slot.last_action = static_cast<uint8_t>(executed);
  }
  const StepOutcome out = G::step(slot.game, executed, params.difficulty_ramping != 0, rng);
  Transition t;
  t.reward = static_cast<float>(out.reward);
  t.terminated = out.terminal;
  slot.episode_return += t.reward;
  slot.episode_length += 1;
  t.truncated = params.max_episode_steps > 0 && slot.episode_length >= params.max_episode_steps;
  const bool done = t.terminated || t.truncated;
  t.episode_return = done ? slot.episode_return : 0.0f;
  t.episode_length = done ? slot.episode_length : 0;
  return t;
}

// Observation of a MinAtar game as one bitmap per channel.
template <typename G>
REDLINE_HD inline void env_observe(const Slot<G>& slot, Grid* grids) {
  G::observe(slot.game, grids);
}

// Expands a nibble (bit i = cell i) to four 0/1 bytes, little-endian.
REDLINE_HD inline uint32_t expand_nibble(uint32_t nibble) {
  return ((nibble * 0x00204081u) & 0x01010101u);
}

// Writes C bitmaps as (C, 10, 10) bytes. out must be 4-byte aligned.
REDLINE_HD inline void grids_to_bytes(const Grid* grids, int channels, uint8_t* out) {
  uint32_t* words = reinterpret_cast<uint32_t*>(out);
  for (int c = 0; c < channels; ++c) {
    for (int k = 0; k < kCells; k += 4) words[c * 25 + k / 4] = expand_nibble(grids[c].nibble(k));
  }
}

// Elements of one environment's observation: C * 100 bytes for MinAtar, 4 floats for CartPole.
template <typename G>
REDLINE_HD inline constexpr int64_t observation_elements() {
  if constexpr (kIsMinAtar<G>) {
    return int64_t{G::kChannels} * kCells;
  } else {
    return CartPole::kObsSize;
  }
}

// Writes environment i's observation into obs: (N, C, 10, 10) u8 or (N, 4) f32.
template <typename G>
REDLINE_HD inline void write_observation(const Slot<G>& slot, void* obs, int64_t i) {
  if constexpr (kIsMinAtar<G>) {
    Grid grids[G::kChannels];
    G::observe(slot.game, grids);
    grids_to_bytes(grids, G::kChannels, static_cast<uint8_t*>(obs) + i * observation_elements<G>());
  } else {
    CartPole::observe(slot.game, static_cast<float*>(obs) + i * CartPole::kObsSize);
  }
}

}  // namespace redline::rl
