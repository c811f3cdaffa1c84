/* A plain C interface through which a user's own simulator runs inside redline's VecEnv on the
 * CPU, without redline knowing it. Fill a redline_env_api and pass it to
 * redline::rl::VecEnv::from_user(). All functions return 0 on success; a non-zero status makes
 * the VecEnv throw redline::Error with error_message(user) when that is provided.
 *
 * redline does the batching, automatic resets, the optional time limit and the episode
 * statistics; the simulator only implements one environment at a time, addressed by index. */
#ifndef REDLINE_RL_ENV_ABI_H
#define REDLINE_RL_ENV_ABI_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define REDLINE_ENV_ABI_VERSION 1

/* Element type of the observation. */
enum redline_env_dtype { REDLINE_ENV_U8 = 0, REDLINE_ENV_F32 = 1 };

/* The shapes the simulator declares once. */
typedef struct redline_env_shape {
  int32_t obs_ndim;     /* 1..4: dimensions of ONE environment's observation */
  int64_t obs_shape[4]; /* the first obs_ndim entries are used, each >= 1 */
  int32_t obs_dtype;    /* a redline_env_dtype */
  int32_t num_actions;  /* discrete actions 0 .. num_actions - 1, >= 1 */
} redline_env_shape;

typedef struct redline_env_api {
  uint32_t abi_version; /* REDLINE_ENV_ABI_VERSION */
  void* user;           /* handed back to every call */
  /* Non-zero when reset/step may be called concurrently for different env_index values. */
  int32_t thread_safe;

  /* Fills *out with the observation shape, dtype and number of actions. */
  int (*shape)(void* user, redline_env_shape* out);
  /* Starts a new episode of environment env_index and writes its first observation to obs.
   * seed is derived from the VecEnv's seed, env_index and the episode number. */
  int (*reset)(void* user, int64_t env_index, uint64_t seed, void* obs);
  /* Takes action in environment env_index; writes the next observation, the reward and whether
   * the episode ended (*terminated: the MDP ended; *truncated: the simulator's own time limit). */
  int (*step)(void* user, int64_t env_index, int32_t action, void* obs, float* reward,
              uint8_t* terminated, uint8_t* truncated);
  /* Optional (may be NULL): a sentence describing the last failure. */
  const char* (*error_message)(void* user);
} redline_env_api;

#ifdef __cplusplus
}
#endif

#endif /* REDLINE_RL_ENV_ABI_H */
