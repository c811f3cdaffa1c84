// VecEnv: N environments of one kind stepped together on one device (CPU or GPU).
//
// Built in: CartPole-v1 and the five MinAtar games (spec: specs/minatar.md). The rules of each
// game are written once and run by a CPU loop (OpenMP over environments) or a GPU kernel (one
// thread per environment); random numbers come from Philox keyed by (seed, environment index), so
// the same seed and actions give the same trajectory on every device, bit for bit.
//
// Outputs live on the environment's device and are reused by every step (fixed addresses, so a
// step can be captured in a graph): copy what you keep. Finished environments reset themselves in
// the same step; the returned observation is then the first one of the new episode, and the last
// one of the old episode is in final_observation when keep_final_observation is set.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "redline/core/device.h"
#include "redline/core/tensor.h"
#include "redline/rl/env_abi.h"

namespace redline::rl {

enum class Game : uint8_t { cartpole, breakout, space_invaders, freeway, asterix, seaquest };

inline constexpr Game kAllGames[] = {Game::cartpole, Game::breakout, Game::space_invaders,
                                     Game::freeway,  Game::asterix,  Game::seaquest};
inline constexpr Game kMinAtarGames[] = {Game::breakout, Game::space_invaders, Game::freeway,
                                         Game::asterix, Game::seaquest};

// "cartpole", "breakout", "space_invaders", "freeway", "asterix", "seaquest" (also accepted:
// "space-invaders", "spaceinvaders", any letter case). Throws redline::Error otherwise.
Game parse_game(std::string_view name);
std::string_view game_name(Game game);
bool is_minatar(Game game);
// MinAtar observation channels (4, 6, 7, 4, 10); 0 for CartPole.
int game_channels(Game game);
// The raw actions of the game's minimal action set (spec 1.3), e.g. {0, 1, 3} for Breakout.
std::vector<int> minimal_action_set(Game game);

struct VecEnvOptions {
  Game game = Game::breakout;
  int64_t num_envs = 1;
  Device device = Device::cpu();
  double sticky_action_prob = 0.1;  // MinAtar: repeat the previous action with this probability
  bool difficulty_ramping = true;   // MinAtar: Space Invaders, Asterix and Seaquest speed up
  bool minimal_action_set = false;  // MinAtar: agent actions index the game's minimal set
  // Episodes longer than this end with truncated = true. -1: the game's default (500 for
  // CartPole as in CartPole-v1, none for MinAtar as in the original); 0: none.
  int64_t max_episode_steps = -1;
  bool keep_final_observation = false;  // fill StepResult::final_observation
  // Check every action is in range before stepping. On a GPU this reads one flag back (a
  // synchronization); turn it off for speed or graph capture (out-of-range actions then act as 0).
  bool check_actions = true;
};

struct StepResult {
  Tensor observation;        // (N, C, 10, 10) u8 for MinAtar, (N, 4) f32 for CartPole
  Tensor reward;             // (N,) f32
  Tensor terminated;         // (N,) bool: the episode ended by the game's rules
  Tensor truncated;          // (N,) bool: the episode hit max_episode_steps
  Tensor episode_return;     // (N,) f32: return of the episode that ended at this step, else 0
  Tensor episode_length;     // (N,) i32: its length in steps, else 0
  Tensor final_observation;  // like observation: the ended episode's last observation (rows of
                             // unfinished environments are left as they were); undefined unless
                             // keep_final_observation
};

class VecEnv {
 public:
  explicit VecEnv(const VecEnvOptions& options);
  // A user simulator through the C ABI; runs on the CPU.
  static VecEnv from_user(const redline_env_api& api, int64_t num_envs,
                          int64_t max_episode_steps = 0, bool keep_final_observation = false);
  ~VecEnv();
  VecEnv(VecEnv&&) noexcept;
  VecEnv& operator=(VecEnv&&) noexcept;

  // Starts every environment afresh from seed; returns the first observation (same tensor as
  // StepResult::observation).
  const Tensor& reset(uint64_t seed);
  // actions: (N,) i32 or i64 on the environment's device, each in [0, num_actions()).
  const StepResult& step(const Tensor& actions);

  int64_t num_envs() const;
  int num_actions() const;
  Device device() const;
  Shape observation_shape() const;  // one environment's: (C, 10, 10) or (4,)
  DType observation_dtype() const;
  std::string name() const;  // the game's name, or "user"

  class Impl;

 private:
  explicit VecEnv(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace redline::rl
