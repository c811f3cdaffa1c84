// VecEnv: the CPU loop over environments, the GPU dispatch, and the C-ABI user environments.
#include "redline/rl/vec_env.h"

#include <atomic>
#include <cstring>
#include <string>
#include <vector>

#include "redline/core/philox.h"
#include "redline/core/stream.h"
#include "rl/env/games.h"
#include "rl/env/gpu_env.h"

namespace redline::rl {

class VecEnv::Impl {
 public:
  virtual ~Impl() = default;
  virtual const Tensor& reset(uint64_t seed) = 0;
  virtual const StepResult& step(const Tensor& actions) = 0;

  int64_t num_envs = 0;
  int num_actions = 0;
  Device device;
  Shape obs_shape;  // one environment's
  DType obs_dtype = DType::u8;
  std::string name;
  bool keep_final = false;
  StepResult result;
  bool was_reset = false;

 protected:
  void allocate_outputs() {
    Shape batch_obs{num_envs};
    batch_obs.insert(batch_obs.end(), obs_shape.begin(), obs_shape.end());
    result.observation = Tensor::zeros(batch_obs, obs_dtype, device);
    result.reward = Tensor::zeros({num_envs}, DType::f32, device);
    result.terminated = Tensor::zeros({num_envs}, DType::boolean, device);
    result.truncated = Tensor::zeros({num_envs}, DType::boolean, device);
    result.episode_return = Tensor::zeros({num_envs}, DType::f32, device);
    result.episode_length = Tensor::zeros({num_envs}, DType::i32, device);
    if (keep_final) result.final_observation = Tensor::zeros(batch_obs, obs_dtype, device);
  }

  void check_actions_tensor(const Tensor& actions) const {
    REDLINE_CHECK(was_reset, "step() was called on the {} VecEnv before reset(seed)", name);
    REDLINE_CHECK(actions.defined(), "actions is an undefined tensor but must be ({},) i32 or i64",
                  num_envs);
    REDLINE_CHECK(actions.dim() == 1 && actions.shape(0) == num_envs,
                  "actions has shape {} but must be ({},): one action per environment",
                  shape_str(actions.shape()), num_envs);
    REDLINE_CHECK(actions.dtype() == DType::i32 || actions.dtype() == DType::i64,
                  "actions has dtype {} but must be i32 or i64", dtype_name(actions.dtype()));
    REDLINE_CHECK(actions.device() == device, "actions is on {} but the {} VecEnv runs on {}",
                  actions.device(), name, device);
  }

  [[noreturn]] void fail_bad_action(int64_t index, int64_t value) const {
    REDLINE_FAIL("action {} for environment {} is out of range: {} takes actions 0..{}", value,
                 index, name, num_actions - 1);
  }

  // First out-of-range action of a host-readable tensor, or -1.
  int64_t first_bad_action_cpu(const Tensor& actions) const {
    const Tensor a = actions.contiguous();
    for (int64_t i = 0; i < num_envs; ++i) {
      const int64_t v = a.dtype() == DType::i64 ? a.data<int64_t>()[i] : a.data<int32_t>()[i];
      if (v < 0 || v >= num_actions) return i;
    }
    return -1;
  }
};

namespace {

// ---- the built-in games ------------------------------------------------------------------------

template <typename G, typename A>
void cpu_step(Slot<G>* slots, const A* actions, int64_t n, const EnvParams& params,
              const StepResult& out) {
  void* obs = out.observation.raw_data();
  void* final_obs = out.final_observation.defined() ? out.final_observation.raw_data() : nullptr;
  float* reward = out.reward.data<float>();
  bool* terminated = out.terminated.data<bool>();
  bool* truncated = out.truncated.data<bool>();
  float* episode_return = out.episode_return.data<float>();
  int32_t* episode_length = out.episode_length.data<int32_t>();
#pragma omp parallel for schedule(static) if (n >= 256)
  for (int64_t i = 0; i < n; ++i) {
    Slot<G>& slot = slots[i];
    PhiloxSource rng(params.seed, static_cast<uint64_t>(i), slot.rng_offset);
    const int64_t a = actions[i];
    const int action = (a >= 0 && a < params.num_actions) ? static_cast<int>(a) : 0;
    const Transition t = env_step(slot, action, params, rng);
    reward[i] = t.reward;
    terminated[i] = t.terminated;
    truncated[i] = t.truncated;
    episode_return[i] = t.episode_return;
    episode_length[i] = t.episode_length;
    if (t.terminated || t.truncated) {
      if (final_obs) write_observation(slot, final_obs, i);
      env_reset(slot, rng);
    }
    slot.rng_offset = rng.offset();
    write_observation(slot, obs, i);
  }
}

template <typename G>
void cpu_reset(Slot<G>* slots, int64_t n, const EnvParams& params, void* obs) {
#pragma omp parallel for schedule(static) if (n >= 256)
  for (int64_t i = 0; i < n; ++i) {
    Slot<G>& slot = slots[i];
    std::memset(static_cast<void*>(&slot), 0, sizeof(Slot<G>));
    PhiloxSource rng(params.seed, static_cast<uint64_t>(i), 0);
    env_init(slot, rng);
    slot.rng_offset = rng.offset();
    write_observation(slot, obs, i);
  }
}

#if REDLINE_HAS_GPU
gpu_env::Buffers gpu_buffers(const Tensor& slots, const Tensor* actions, const StepResult& out) {
  gpu_env::Buffers b{};
  b.slots = slots.raw_data();
  b.actions = actions ? actions->raw_data() : nullptr;
  b.actions_i64 = actions && actions->dtype() == DType::i64;
  b.observation = out.observation.raw_data();
  b.final_observation =
      out.final_observation.defined() ? out.final_observation.raw_data() : nullptr;
  b.reward = out.reward.data<float>();
  b.terminated = out.terminated.data<bool>();
  b.truncated = out.truncated.data<bool>();
  b.episode_return = out.episode_return.data<float>();
  b.episode_length = out.episode_length.data<int32_t>();
  return b;
}
#endif

template <typename G>
class BuiltinEnv final : public VecEnv::Impl {
 public:
  BuiltinEnv(const VecEnvOptions& options) : game_(options.game), check_(options.check_actions) {
    num_envs = options.num_envs;
    device = options.device;
    name = std::string(game_name(options.game));
    keep_final = options.keep_final_observation;
    if constexpr (kIsMinAtar<G>) {
      REDLINE_CHECK(options.sticky_action_prob >= 0.0 && options.sticky_action_prob <= 1.0,
                    "sticky_action_prob is {} but must be in [0, 1]", options.sticky_action_prob);
      num_actions = options.minimal_action_set ? G::kNumMinimalActions : kNumRawActions;
      obs_shape = {G::kChannels, kGridSize, kGridSize};
      obs_dtype = DType::u8;
    } else {
      num_actions = CartPole::kNumActions;
      obs_shape = {CartPole::kObsSize};
      obs_dtype = DType::f32;
    }
    int64_t limit = options.max_episode_steps;
    if (limit < 0) limit = kIsMinAtar<G> ? 0 : CartPole::kDefaultMaxEpisodeSteps;
    REDLINE_CHECK(limit <= INT32_MAX, "max_episode_steps is {} but must be at most {}", limit,
                  INT32_MAX);
    params_.sticky_action_prob = options.sticky_action_prob;
    params_.max_episode_steps = static_cast<int32_t>(limit);
    params_.num_actions = num_actions;
    params_.difficulty_ramping = options.difficulty_ramping ? 1 : 0;
    params_.minimal_action_set = options.minimal_action_set ? 1 : 0;
    slots_ = Tensor::empty({num_envs * static_cast<int64_t>(sizeof(Slot<G>))}, DType::u8, device);
    allocate_outputs();
    if (device.is_gpu()) bad_action_ = Tensor::zeros({1}, DType::i64, device);
  }

  const Tensor& reset(uint64_t seed) override {
    params_.seed = seed;
    if (device.is_cpu()) {
      cpu_reset(slots(), num_envs, params_, result.observation.raw_data());
    } else {
#if REDLINE_HAS_GPU
      gpu_env::reset(game_, num_envs, params_, gpu_buffers(slots_, nullptr, result),
                     Stream::current(device).handle());
#endif
    }
    result.reward.fill_(0.0);
    result.terminated.fill_(0.0);
    result.truncated.fill_(0.0);
    result.episode_return.fill_(0.0);
    result.episode_length.fill_(0.0);
    was_reset = true;
    return result.observation;
  }

  const StepResult& step(const Tensor& actions_in) override {
    check_actions_tensor(actions_in);
    if (device.is_cpu()) {
      const Tensor actions = actions_in.contiguous();
      if (check_) {
        const int64_t bad = first_bad_action_cpu(actions);
        if (bad >= 0) fail_bad_action(bad, static_cast<int64_t>(actions.at({bad})));
      }
      if (actions.dtype() == DType::i64) {
        cpu_step(slots(), actions.data<int64_t>(), num_envs, params_, result);
      } else {
        cpu_step(slots(), actions.data<int32_t>(), num_envs, params_, result);
      }
      return result;
    }
#if REDLINE_HAS_GPU
    const Tensor actions = actions_in.contiguous();
    void* stream = Stream::current(device).handle();
    if (check_) {
      bad_action_.fill_(static_cast<double>(num_envs));
      gpu_env::find_bad_action(actions.raw_data(), actions.dtype() == DType::i64, num_envs,
                               num_actions, bad_action_.data<int64_t>(), stream);
      const int64_t bad = static_cast<int64_t>(bad_action_.item());
      if (bad < num_envs) fail_bad_action(bad, static_cast<int64_t>(actions.at({bad})));
    }
    gpu_env::step(game_, num_envs, params_, gpu_buffers(slots_, &actions, result), stream);
#endif
    return result;
  }

 private:
  Slot<G>* slots() { return reinterpret_cast<Slot<G>*>(slots_.raw_data()); }

  Game game_;
  bool check_;
  EnvParams params_;
  Tensor slots_;       // (N * sizeof(Slot<G>),) u8 on the device
  Tensor bad_action_;  // (1,) i64 on a GPU: first out-of-range action index
};

// ---- user environments through the C ABI
// ---------------------------------------------------------

class UserEnv final : public VecEnv::Impl {
 public:
  UserEnv(const redline_env_api& api, int64_t n, int64_t max_episode_steps, bool keep_final_obs)
      : api_(api) {
    REDLINE_CHECK(api.abi_version == REDLINE_ENV_ABI_VERSION,
                  "the user environment was built for env ABI version {} but redline implements "
                  "version {}",
                  api.abi_version, REDLINE_ENV_ABI_VERSION);
    REDLINE_CHECK(api.shape && api.reset && api.step,
                  "the user environment must provide the shape, reset and step functions");
    REDLINE_CHECK(n >= 1, "num_envs is {} but must be at least 1", n);
    REDLINE_CHECK(max_episode_steps >= 0, "max_episode_steps is {} but must be >= 0 (0: none)",
                  max_episode_steps);
    redline_env_shape shape{};
    call(api.shape(api.user, &shape), "shape");
    REDLINE_CHECK(shape.obs_ndim >= 1 && shape.obs_ndim <= 4,
                  "the user environment declares {} observation dimensions but 1..4 are allowed",
                  shape.obs_ndim);
    REDLINE_CHECK(shape.obs_dtype == REDLINE_ENV_U8 || shape.obs_dtype == REDLINE_ENV_F32,
                  "the user environment declares observation dtype {} but must use "
                  "REDLINE_ENV_U8 (0) or REDLINE_ENV_F32 (1)",
                  shape.obs_dtype);
    REDLINE_CHECK(shape.num_actions >= 1,
                  "the user environment declares {} actions but needs at least 1",
                  shape.num_actions);
    for (int d = 0; d < shape.obs_ndim; ++d) {
      REDLINE_CHECK(shape.obs_shape[d] >= 1,
                    "the user environment's observation dimension {} is {} but must be >= 1", d,
                    shape.obs_shape[d]);
      obs_shape.push_back(shape.obs_shape[d]);
    }
    num_envs = n;
    num_actions = shape.num_actions;
    device = Device::cpu();
    obs_dtype = shape.obs_dtype == REDLINE_ENV_U8 ? DType::u8 : DType::f32;
    name = "user";
    keep_final = keep_final_obs;
    max_steps_ = max_episode_steps;
    obs_bytes_ = static_cast<size_t>(shape_numel(obs_shape)) * dtype_size(obs_dtype);
    allocate_outputs();
    returns_.assign(static_cast<size_t>(n), 0.0f);
    lengths_.assign(static_cast<size_t>(n), 0);
    episodes_.assign(static_cast<size_t>(n), 0);
    status_.assign(static_cast<size_t>(n), 0);
  }

  const Tensor& reset(uint64_t seed) override {
    seed_ = seed;
    uint8_t* obs = static_cast<uint8_t*>(result.observation.raw_data());
    for_each_env(
        [&](int64_t i) {
          episodes_[i] = 0;
          returns_[i] = 0.0f;
          lengths_[i] = 0;
          return api_.reset(api_.user, i, episode_seed(i), obs + i * obs_bytes_);
        },
        "reset");
    result.reward.fill_(0.0);
    result.terminated.fill_(0.0);
    result.truncated.fill_(0.0);
    result.episode_return.fill_(0.0);
    result.episode_length.fill_(0.0);
    was_reset = true;
    return result.observation;
  }

  const StepResult& step(const Tensor& actions_in) override {
    check_actions_tensor(actions_in);
    const Tensor actions = actions_in.contiguous();
    const int64_t bad = first_bad_action_cpu(actions);
    if (bad >= 0) fail_bad_action(bad, static_cast<int64_t>(actions.at({bad})));
    const bool i64 = actions.dtype() == DType::i64;
    uint8_t* obs = static_cast<uint8_t*>(result.observation.raw_data());
    uint8_t* final_obs =
        keep_final ? static_cast<uint8_t*>(result.final_observation.raw_data()) : nullptr;
    float* reward = result.reward.data<float>();
    bool* terminated = result.terminated.data<bool>();
    bool* truncated = result.truncated.data<bool>();
    float* ep_return = result.episode_return.data<float>();
    int32_t* ep_length = result.episode_length.data<int32_t>();
    for_each_env(
        [&](int64_t i) {
          const int32_t a =
              static_cast<int32_t>(i64 ? actions.data<int64_t>()[i] : actions.data<int32_t>()[i]);
          uint8_t term = 0, trunc = 0;
          float r = 0.0f;
          int status = api_.step(api_.user, i, a, obs + i * obs_bytes_, &r, &term, &trunc);
          if (status != 0) return status;
          returns_[i] += r;
          lengths_[i] += 1;
          const bool limit = max_steps_ > 0 && lengths_[i] >= max_steps_;
          reward[i] = r;
          terminated[i] = term != 0;
          truncated[i] = trunc != 0 || limit;
          const bool done = terminated[i] || truncated[i];
          ep_return[i] = done ? returns_[i] : 0.0f;
          ep_length[i] = done ? static_cast<int32_t>(lengths_[i]) : 0;
          if (done) {
            if (final_obs)
              std::memcpy(final_obs + i * obs_bytes_, obs + i * obs_bytes_, obs_bytes_);
            episodes_[i] += 1;
            returns_[i] = 0.0f;
            lengths_[i] = 0;
            status = api_.reset(api_.user, i, episode_seed(i), obs + i * obs_bytes_);
          }
          return status;
        },
        "step");
    return result;
  }

 private:
  // A 64-bit seed from (VecEnv seed, environment index, episode number).
  uint64_t episode_seed(int64_t i) const {
    Philox gen(seed_, static_cast<uint64_t>(i), static_cast<uint64_t>(episodes_[i]));
    const uint64_t hi = gen.next_u32();
    return (hi << 32) | gen.next_u32();
  }

  void call(int status, const char* what) const {
    if (status == 0) return;
    const char* message = api_.error_message ? api_.error_message(api_.user) : nullptr;
    REDLINE_FAIL("the user environment's {} returned status {}{}{}", what, status,
                 message ? ": " : "", message ? message : "");
  }

  // Runs fn(i) for every environment (in parallel when the simulator says it is thread-safe)
  // and throws for the first environment whose call failed.
  template <typename F>
  void for_each_env(F&& fn, const char* what) {
    const int64_t n = num_envs;
#pragma omp parallel for schedule(static) if (api_.thread_safe && n >= 2)
    for (int64_t i = 0; i < n; ++i) status_[i] = fn(i);
    for (int64_t i = 0; i < n; ++i) {
      if (status_[i] != 0) {
        const char* message = api_.error_message ? api_.error_message(api_.user) : nullptr;
        REDLINE_FAIL("the user environment's {} failed for environment {} with status {}{}{}", what,
                     i, status_[i], message ? ": " : "", message ? message : "");
      }
    }
  }

  redline_env_api api_;
  uint64_t seed_ = 0;
  int64_t max_steps_ = 0;
  size_t obs_bytes_ = 0;
  std::vector<float> returns_;
  std::vector<int64_t> lengths_;
  std::vector<int64_t> episodes_;
  std::vector<int> status_;
};

}  // namespace

// ---- VecEnv
// ---------------------------------------------------------------------------------------

VecEnv::VecEnv(const VecEnvOptions& options) {
  REDLINE_CHECK(options.num_envs >= 1, "num_envs is {} but must be at least 1", options.num_envs);
  if (options.device.is_gpu()) {
#if REDLINE_HAS_GPU
    check_device(options.device);
#else
    REDLINE_FAIL(
        "the {} VecEnv was asked to run on {} but this build has no GPU backend; "
        "rebuild with `cmake --preset cuda` or `cmake --preset hip`",
        game_name(options.game), options.device);
#endif
  }
  impl_ = with_game(options.game, [&](auto g) -> std::unique_ptr<Impl> {
    return std::make_unique<BuiltinEnv<decltype(g)>>(options);
  });
}

VecEnv VecEnv::from_user(const redline_env_api& api, int64_t num_envs, int64_t max_episode_steps,
                         bool keep_final_observation) {
  return VecEnv(
      std::make_unique<UserEnv>(api, num_envs, max_episode_steps, keep_final_observation));
}

VecEnv::VecEnv(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
VecEnv::~VecEnv() = default;
VecEnv::VecEnv(VecEnv&&) noexcept = default;
VecEnv& VecEnv::operator=(VecEnv&&) noexcept = default;

const Tensor& VecEnv::reset(uint64_t seed) { return impl_->reset(seed); }
const StepResult& VecEnv::step(const Tensor& actions) { return impl_->step(actions); }
int64_t VecEnv::num_envs() const { return impl_->num_envs; }
int VecEnv::num_actions() const { return impl_->num_actions; }
Device VecEnv::device() const { return impl_->device; }
Shape VecEnv::observation_shape() const { return impl_->obs_shape; }
DType VecEnv::observation_dtype() const { return impl_->obs_dtype; }
std::string VecEnv::name() const { return impl_->name; }

}  // namespace redline::rl
