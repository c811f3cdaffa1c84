// GPU driver of the built-in environments: one thread per environment runs the same rule code as
// the CPU loop (src/rl/env/vec_env.cpp), so trajectories match it bit for bit.
//
// Speed: the per-environment state of the small games is loaded into registers with 16-byte
// vector loads and stored back once; Seaquest (about 650 bytes of object lists) is updated in
// place, one 32-bit word per list item. The random stream (rl/env/rng.h) and the observation
// bitmaps are never indexed at run time, so they stay in registers rather than local memory.
// The u8 observation (N, C, 10, 10) is written cooperatively: each thread leaves its C bitmaps in
// shared memory, then the block writes its contiguous slice of the output as 32-bit words (4 cells
// each) with consecutive threads on consecutive words, i.e. fully coalesced.
#include <cstring>
#include <type_traits>

#include "rl/env/games.h"
#include "rl/env/gpu_env.h"
#include "vendor/gpu.h"  // first: the HIP runtime header must precede the shared rule code

namespace redline::rl::gpu_env {
namespace {

constexpr int kThreads = 128;

template <typename T>
__device__ inline constexpr bool kInRegisters = sizeof(T) <= 128;

template <typename T>
__device__ inline T load_vectorized(const T* src) {
  static_assert(sizeof(T) % 16 == 0, "slots are padded to 16 bytes");
  uint4 words[sizeof(T) / 16];
  const uint4* from = reinterpret_cast<const uint4*>(src);
#pragma unroll
  for (int k = 0; k < static_cast<int>(sizeof(T) / 16); ++k) words[k] = from[k];
  T value;
  memcpy(&value, words, sizeof(T));
  return value;
}

template <typename T>
__device__ inline void store_vectorized(T* dst, const T& value) {
  uint4 words[sizeof(T) / 16];
  memcpy(words, &value, sizeof(T));
  uint4* to = reinterpret_cast<uint4*>(dst);
#pragma unroll
  for (int k = 0; k < static_cast<int>(sizeof(T) / 16); ++k) to[k] = words[k];
}

// Writes the block's observations from the bitmaps in `tile` (C, 2, kThreads) as u32 words.
template <int C>
__device__ inline void write_tile(const uint64_t (*tile)[2][kThreads], uint8_t* obs, int64_t base,
                                  int count) {
  constexpr int kWordsPerEnv = C * kCells / 4;
  uint32_t* out = reinterpret_cast<uint32_t*>(obs + base * int64_t{C} * kCells);
  const int words = count * kWordsPerEnv;
  for (int w = threadIdx.x; w < words; w += kThreads) {
    const int e = w / kWordsPerEnv;
    const int r = w - e * kWordsPerEnv;
    const int c = r / 25;
    const int k = (r - c * 25) * 4;
    const uint64_t bits = k < 64 ? (tile[c][0][e] >> k) : (tile[c][1][e] >> (k - 64));
    out[w] = expand_nibble(static_cast<uint32_t>(bits) & 0xFu);
  }
}

// Writes environment i's observation straight from the thread (the rare final observation of an
// episode that just ended): obs (N, C, 10, 10) u8. The channel loop is unrolled so that the C
// bitmaps stay in registers (write_observation's runtime channel count puts them in local memory).
template <typename G>
__device__ inline void write_observation_unrolled(const Slot<G>& slot, uint8_t* obs, int64_t i) {
  constexpr int C = G::kChannels;
  Grid grids[C];
  G::observe(slot.game, grids);
  uint32_t* out = reinterpret_cast<uint32_t*>(obs + i * int64_t{C} * kCells);
#pragma unroll
  for (int c = 0; c < C; ++c) {
#pragma unroll
    for (int k = 0; k < kCells; k += 4) out[c * 25 + k / 4] = expand_nibble(grids[c].nibble(k));
  }
}

// The same, as a call: Seaquest's step is long enough that inlining this rare path into it as
// well makes ptxas spill (sm_90: 16-byte stack frame, 20 bytes of spills); called, it costs no
// stack. The other games inline it without spilling.
template <typename G>
__device__ __noinline__ void write_observation_called(const Slot<G>& slot, uint8_t* obs,
                                                      int64_t i) {
  write_observation_unrolled(slot, obs, i);
}

// Bitmap channels kept in shared memory (CartPole writes its floats directly; 1 keeps the array
// well-formed).
template <typename G>
constexpr int tile_channels() {
  if constexpr (kIsMinAtar<G>) {
    return G::kChannels;
  } else {
    return 1;
  }
}

// One step (kReset = false) or a fresh start (kReset = true) of every environment.
template <typename G, typename A, bool kReset>
__global__ void __launch_bounds__(kThreads)
    env_kernel(Slot<G>* slots, const A* actions, int64_t n, EnvParams params, Buffers b) {
  const int64_t base = int64_t{blockIdx.x} * kThreads;
  const int64_t i = base + threadIdx.x;
  constexpr int C = tile_channels<G>();
  __shared__ uint64_t tile[C][2][kThreads];  // (C, lo/hi, env in block) observation bitmaps

  if (i < n) {
    Slot<G> local;
    Slot<G>* slot_ptr = &slots[i];
    if constexpr (kInRegisters<Slot<G>>) {
      if (!kReset) local = load_vectorized(slot_ptr);
      slot_ptr = &local;
    }
    Slot<G>& slot = *slot_ptr;
    if constexpr (kReset) {
      PhiloxSource rng(params.seed, static_cast<uint64_t>(i), 0);
      slot.rng_offset = 0;
      slot.episode_return = 0.0f;
      slot.episode_length = 0;
      env_init(slot, rng);
      slot.rng_offset = rng.offset();
    } else {
      PhiloxSource rng(params.seed, static_cast<uint64_t>(i), slot.rng_offset);
      const int64_t a = actions[i];
      const int action = (a >= 0 && a < params.num_actions) ? static_cast<int>(a) : 0;
      const Transition t = env_step(slot, action, params, rng);
      b.reward[i] = t.reward;
      b.terminated[i] = t.terminated;
      b.truncated[i] = t.truncated;
      b.episode_return[i] = t.episode_return;
      b.episode_length[i] = t.episode_length;
      if (t.terminated || t.truncated) {
        if (b.final_observation) {
          uint8_t* final_obs = static_cast<uint8_t*>(b.final_observation);
          if constexpr (std::is_same_v<G, Seaquest>) {
            write_observation_called(slot, final_obs, i);
          } else if constexpr (kIsMinAtar<G>) {
            write_observation_unrolled(slot, final_obs, i);
          } else {
            write_observation(slot, b.final_observation, i);
          }
        }
        env_reset(slot, rng);
      }
      slot.rng_offset = rng.offset();
    }
    if constexpr (kInRegisters<Slot<G>>) store_vectorized(&slots[i], local);

    if constexpr (kIsMinAtar<G>) {
      Grid grids[C];
      G::observe(slot.game, grids);
#pragma unroll
      for (int c = 0; c < C; ++c) {
        tile[c][0][threadIdx.x] = grids[c].lo;
        tile[c][1][threadIdx.x] = grids[c].hi;
      }
    } else {
      write_observation(slot, b.observation, i);
    }
  }
  if constexpr (kIsMinAtar<G>) {
    __syncthreads();
    const int64_t left = n - base;
    write_tile<C>(tile, static_cast<uint8_t*>(b.observation), base,
                  static_cast<int>(left < kThreads ? left : kThreads));
  }
}

template <typename A>
__global__ void find_bad_action_kernel(const A* actions, int64_t n, int num_actions,
                                       unsigned long long* first_bad) {  // actions: (n,)
  const int64_t i = int64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  if (i < n && (actions[i] < 0 || actions[i] >= num_actions)) {
    atomicMin(first_bad, static_cast<unsigned long long>(i));
  }
}

unsigned int blocks_for(int64_t n) {
  return static_cast<unsigned int>((n + kThreads - 1) / kThreads);
}

template <typename G, bool kReset>
void launch(int64_t n, const EnvParams& params, const Buffers& b, void* stream) {
  if (n == 0) return;
  const cudaStream_t s = static_cast<cudaStream_t>(stream);
  Slot<G>* slots = static_cast<Slot<G>*>(b.slots);
  if (b.actions_i64) {
    env_kernel<G, int64_t, kReset><<<blocks_for(n), kThreads, 0, s>>>(
        slots, static_cast<const int64_t*>(b.actions), n, params, b);
  } else {
    env_kernel<G, int32_t, kReset><<<blocks_for(n), kThreads, 0, s>>>(
        slots, static_cast<const int32_t*>(b.actions), n, params, b);
  }
  GPU_CHECK_LAUNCH();
}

}  // namespace

void reset(Game game, int64_t n, const EnvParams& params, const Buffers& buffers, void* stream) {
  with_game(game, [&](auto g) { launch<decltype(g), true>(n, params, buffers, stream); });
}

void step(Game game, int64_t n, const EnvParams& params, const Buffers& buffers, void* stream) {
  with_game(game, [&](auto g) { launch<decltype(g), false>(n, params, buffers, stream); });
}

void find_bad_action(const void* actions, bool actions_i64, int64_t n, int num_actions,
                     int64_t* first_bad, void* stream) {
  if (n == 0) return;
  const cudaStream_t s = static_cast<cudaStream_t>(stream);
  unsigned long long* out = reinterpret_cast<unsigned long long*>(first_bad);
  if (actions_i64) {
    find_bad_action_kernel<<<blocks_for(n), kThreads, 0, s>>>(static_cast<const int64_t*>(actions),
                                                              n, num_actions, out);
  } else {
    find_bad_action_kernel<<<blocks_for(n), kThreads, 0, s>>>(static_cast<const int32_t*>(actions),
                                                              n, num_actions, out);
  }
  GPU_CHECK_LAUNCH();
}

}  // namespace redline::rl::gpu_env
