// Replay memory for off-policy RL: uniform and proportional prioritized (Schaul et al., 2016),
// resident on one device (CPU or GPU) with the same results on both for the same seed.
//
// Layout: transitions arrive N at a time (one VecEnv step) and are kept in R = capacity / N rows
// of N slots; slot = row * N + env, and a circular cursor advances one row per insert. Each
// environment's history is therefore one column, which is what n-step returns and frame stacks
// walk along. With frame_stack = k, observations are (k*c, ...) with the oldest frame first and
// only the newest frame (c, ...) of each step is stored; the stack and the next observation are
// rebuilt at sampling time. See docs/replay.md for the rules (sampleability, duplicate indices in
// an update, memory formula).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "redline/core/device.h"
#include "redline/core/dtype.h"
#include "redline/core/random.h"
#include "redline/core/tensor.h"

namespace redline::rl {

// What fills the frames of a stack that lie before the start of its episode.
enum class FramePadding : uint8_t {
  repeat_first,  // copies of the episode's first frame (gym's FrameStack / AtariPreprocessing)
  zeros,         // zeros (Dopamine, SB3's VecFrameStack)
};

struct ReplayConfig {
  int64_t capacity = 0;         // transitions; a multiple of num_envs
  int64_t num_envs = 1;         // N: transitions per insert (one VecEnv step)
  Shape obs_shape;              // one environment's observation, e.g. (4, 84, 84)
  DType obs_dtype = DType::u8;  // u8 or f32
  int64_t frame_stack = 1;      // k: obs_shape[0] holds k frames, oldest first; each stored once
  FramePadding padding = FramePadding::repeat_first;
  DType action_dtype = DType::i64;  // i32 or i64
  int64_t n_step = 1;               // n >= 1: returns over n steps, cut at episode ends
  double gamma = 0.99;              // discount in [0, 1]
  bool prioritized = false;         // proportional prioritization with a sum tree
  double alpha = 0.6;  // prioritized: P(i) = p_i^alpha / sum_k p_k^alpha, alpha in [0, 1]
  // prioritized: priorities above this count as it (in [1, 1e30]). It sets the grid that masses
  // p^alpha are rounded to (docs/replay.md: the unit is 2^-23 at 1e7 transitions for alpha 0.6 and
  // 1e3): a larger limit gives a coarser grid.
  double priority_limit = 1e3;
  uint64_t seed = 0;    // Philox key for sampling
  uint64_t stream = 0;  // Philox stream for sampling
  Device device = Device::cpu();
};

// The indices and importance weights of one sample. indices address slots (for
// update_priorities and gather); weights are w_i = (S * P(i))^-beta / max_j w_j, where S is the
// number of sampleable transitions and the maximum runs over all of them (the min tree), so every
// weight is in (0, 1]. Uniform memories give weights of 1.
struct ReplaySample {
  Tensor indices;  // (B,) i64
  Tensor weights;  // (B,) f32
};

// A sampled batch of transitions with n-step returns:
//   target = reward + discount * max_a Q(next_obs, a)
struct ReplayBatch {
  Tensor indices;   // (B,) i64
  Tensor weights;   // (B,) f32
  Tensor obs;       // (B, *obs_shape) obs_dtype
  Tensor action;    // (B,) action_dtype
  Tensor reward;    // (B,) f32: sum_{j<m} gamma^j r_{t+j}, m <= n steps, cut at the episode end
  Tensor discount;  // (B,) f32: gamma^m, or 0 when the episode terminated within the m steps
  Tensor next_obs;  // (B, *obs_shape) obs_dtype: the observation m steps later
};

// Figures about a memory (host-side counters; no device synchronization).
struct ReplayStats {
  int64_t inserts = 0;     // insert() calls (rows written) since construction or load
  int64_t stored = 0;      // transitions held (at most capacity)
  int64_t sampleable = 0;  // transitions that sample() may return, truncated steps included
  size_t bytes = 0;        // device bytes held by the memory
};

struct ReplayState;  // device buffers (internal)

class ReplayMemory {
 public:
  // Validates the configuration and refuses, before allocating, a capacity that does not fit in
  // the device's free memory (one sentence with what it needs and what there is).
  explicit ReplayMemory(const ReplayConfig& config);
  ~ReplayMemory();
  ReplayMemory(const ReplayMemory&) = delete;
  ReplayMemory& operator=(const ReplayMemory&) = delete;
  ReplayMemory(ReplayMemory&&) noexcept;
  ReplayMemory& operator=(ReplayMemory&&) noexcept;

  // Bytes that a memory with this configuration allocates (the figure the constructor checks).
  static size_t bytes_needed(const ReplayConfig& config);

  // Stores one VecEnv step of N transitions. obs is the observation each action was taken in:
  // (N, *obs_shape), or with frame stacking just the newest frame (N, c, ...). action (N,) i32 or
  // i64, reward (N,) f32, terminated and truncated (N,) bool or u8, all on the memory's device.
  // The next observation is the one passed to the following insert (the VecEnv's auto-reset
  // observation after an episode end), so nothing is stored twice.
  void insert(const Tensor& obs, const Tensor& action, const Tensor& reward,
              const Tensor& terminated, const Tensor& truncated);

  // Stratified sample of `batch` slots: slice j of the total mass is [j, j+1) * total / batch,
  // one Philox draw per slice. beta in [0, 1] as a number or as a (1,) f32 tensor on the device
  // (read by the kernel, so a captured step can anneal it). No host synchronization on a GPU.
  ReplaySample sample(int64_t batch, double beta = 0.4);
  ReplaySample sample(int64_t batch, const Tensor& beta);
  // Same, writing into `out` (reused when its tensors already have the right shape and device).
  void sample_into(int64_t batch, double beta, ReplaySample& out);
  void sample_into(int64_t batch, const Tensor& beta, ReplaySample& out);

  // The transitions at `indices` (from sample): stacks, n-step returns and next observations.
  ReplayBatch gather(const ReplaySample& sample) const;
  void gather_into(const ReplaySample& sample, ReplayBatch& out) const;
  // sample + gather.
  ReplayBatch sample_batch(int64_t batch, double beta = 0.4);

  // Sets the priorities of sampled slots: priorities (B,) f32, finite and > 0, indices (B,) i64.
  // When an index appears more than once in the batch the last occurrence wins. Slots that are
  // not sampleable any more (overwritten since they were sampled) keep their state. The running
  // maximum priority, at which new transitions enter, grows with every priority given here.
  void update_priorities(const Tensor& indices, const Tensor& priorities);

  // Raises, as a redline::Error, a fault that a GPU kernel found (a non-finite priority, an empty
  // memory, an index out of range, beta out of range). Kernels report through pinned host memory,
  // so every call also raises a fault already visible without synchronizing; this one waits for
  // the device first.
  void check_errors();

  // Writes the whole memory atomically (temporary file, fsync, rename); load refuses a file
  // written with another configuration, and a truncated or corrupt file, with one sentence.
  // A memory can take tens of gigabytes: `progress`, when given, is called on the caller's thread
  // after each chunk (64 MiB) with the bytes done and the bytes to do. Save does the file's bytes
  // once; load does them twice (the checksum, then the copy into the memory). The last call has
  // done == total.
  using IoProgress = std::function<void(uint64_t done, uint64_t total)>;
  void save(const std::string& path, const IoProgress& progress = {}) const;
  void load(const std::string& path, const IoProgress& progress = {});

  const ReplayConfig& config() const { return config_; }
  Device device() const { return config_.device; }
  int64_t num_rows() const { return rows_; }
  // Transitions that sample() may return (host count of insert calls; see docs/replay.md).
  int64_t size() const;
  size_t bytes() const;
  ReplayStats stats() const;

  // Test and tool access: the trees on the host as doubles: the sum tree whole (nodes,), its
  // leaves the masses p^alpha on the memory's grid (0 when not sampleable); the min tree's one
  // level, floats widened exactly: for each top-level node of the sum tree, the smallest of its
  // leaves' masses rounded to floats (+inf where none is sampleable).
  std::vector<double> sum_tree_host() const;
  std::vector<double> min_tree_host() const;
  // How many leaves below each top-level node hold its min (0 where none is sampleable; 0 in a
  // one-level tree, whose min tree is its leaves).
  std::vector<int64_t> min_tree_counts_host() const;
  std::vector<int64_t> tree_level_offsets() const;
  double max_priority() const;  // synchronizes

 private:
  void raise_device_fault();
  void check_sample_args(int64_t batch) const;
  void sample_impl(int64_t batch, double beta, const Tensor* beta_tensor, ReplaySample& out);

  ReplayConfig config_;
  int64_t rows_ = 0;         // R = capacity / num_envs
  int64_t frame_numel_ = 0;  // elements of one stored frame
  int64_t inserts_ = 0;      // host mirror of the device row counter
  std::unique_ptr<ReplayState> state_;
  Generator rng_;
};

}  // namespace redline::rl
