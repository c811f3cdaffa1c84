// The original MinAtar wrapper on the CPU, for bit-exact reproduction (spec section 2.4): one
// environment, one MT19937 stream shared by the sticky-action test and the game, numpy's double
// and integer recipes, and the original's episode semantics (act() on a finished game returns
// (0, true) and still draws the sticky number; reset() keeps the last action and the stream).
// The rules are the same code the VecEnv runs on the CPU and the GPU.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "redline/rl/vec_env.h"

namespace redline::rl {

class ReferenceMinAtar {
 public:
  // The original's Environment(game, sticky_action_prob, difficulty_ramping) followed by
  // seed(seed) and reset(). game must be a MinAtar game.
  ReferenceMinAtar(Game game, uint32_t seed, double sticky_action_prob = 0.1,
                   bool difficulty_ramping = true);
  ~ReferenceMinAtar();
  ReferenceMinAtar(ReferenceMinAtar&&) noexcept;
  ReferenceMinAtar& operator=(ReferenceMinAtar&&) noexcept;

  struct ActResult {
    int executed_action;  // after the sticky-action test
    int reward;
    bool terminal;
  };

  void reset();
  // action: a raw action 0..5.
  ActResult act(int action);
  // (C, 10, 10) bytes, 0 or 1.
  std::vector<uint8_t> observation() const;
  int channels() const;
  Game game() const;

  class Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

// The reference random policy: numpy RandomState(seed).randint(num_actions) on MT19937.
class ReferencePolicy {
 public:
  explicit ReferencePolicy(uint32_t seed);
  ~ReferencePolicy();
  int next(int num_actions);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace redline::rl
