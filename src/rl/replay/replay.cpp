// ReplayMemory: argument checks, allocation (refused before it starts when it cannot fit), and
// dispatch to the CPU twins or the GPU kernels. Rules: docs/replay.md.
#include "redline/rl/replay/replay.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include "backend/cpu/cpu_kernels.h"
#include "backend/gpu_api.h"
#include "redline/core/stream.h"
#include "rl/replay/replay_faults.h"
#include "rl/replay/replay_kernels.h"
#include "rl/replay/replay_state.h"

namespace redline::rl {
namespace {

using replay::DeviceFault;
using replay::TreeLayout;

std::string human_bytes(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (bytes >= 1024.0 && u < 4) {
    bytes /= 1024.0;
    ++u;
  }
  char text[32];
  std::snprintf(text, sizeof(text), u == 0 ? "%.0f %s" : "%.1f %s", bytes, units[u]);
  return text;
}

// Bytes the operating system can give this process without swapping (MemAvailable).
size_t host_available_bytes() {
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  size_t kib = 0;
  std::string unit;
  while (meminfo >> key >> kib >> unit) {
    if (key == "MemAvailable:") return kib * 1024;
  }
  return SIZE_MAX;  // unknown: let the allocation itself decide
}

void check_config(const ReplayConfig& c) {
  REDLINE_CHECK(c.num_envs > 0, "replay num_envs is {}; it must be >= 1", c.num_envs);
  REDLINE_CHECK(c.capacity > 0 && c.capacity % c.num_envs == 0,
                "replay capacity is {}; it must be a positive multiple of num_envs ({})",
                c.capacity, c.num_envs);
  REDLINE_CHECK(!c.obs_shape.empty(), "replay obs_shape is empty; give one observation's shape");
  for (int64_t s : c.obs_shape) {
    REDLINE_CHECK(s > 0, "replay obs_shape {} has a size < 1", shape_str(c.obs_shape));
  }
  REDLINE_CHECK(c.obs_dtype == DType::u8 || c.obs_dtype == DType::f32,
                "replay obs_dtype is {}; observations are stored as u8 or f32",
                dtype_name(c.obs_dtype));
  REDLINE_CHECK(c.frame_stack >= 1 && c.frame_stack <= replay::kMaxStack,
                "replay frame_stack is {}; it must be in [1, {}]", c.frame_stack,
                replay::kMaxStack);
  REDLINE_CHECK(c.obs_shape[0] % c.frame_stack == 0,
                "replay obs_shape {} cannot hold frame_stack = {} frames: its first size must be a "
                "multiple of the stack",
                shape_str(c.obs_shape), c.frame_stack);
  REDLINE_CHECK(c.action_dtype == DType::i32 || c.action_dtype == DType::i64,
                "replay action_dtype is {}; actions are stored as i32 or i64",
                dtype_name(c.action_dtype));
  REDLINE_CHECK(c.n_step >= 1, "replay n_step is {}; it must be >= 1", c.n_step);
  REDLINE_CHECK(c.gamma >= 0.0 && c.gamma <= 1.0, "replay gamma is {}; it must be in [0, 1]",
                c.gamma);
  REDLINE_CHECK(c.alpha >= 0.0 && c.alpha <= 1.0, "replay alpha is {}; it must be in [0, 1]",
                c.alpha);
  REDLINE_CHECK(c.priority_limit >= 1.0 && c.priority_limit <= 1e30,
                "replay priority_limit is {}; it must be in [1, 1e30]", c.priority_limit);
  const int64_t rows = c.capacity / c.num_envs;
  REDLINE_CHECK(rows > c.n_step + c.frame_stack,
                "replay capacity {} gives {} rows of {} environments; it needs more than n_step + "
                "frame_stack = {} rows",
                c.capacity, rows, c.num_envs, c.n_step + c.frame_stack);
  check_device(c.device);
}

template <typename T>
T* data_as(const Tensor& t) {
  return static_cast<T*>(t.raw_data());
}

void* stream_of(Device device) { return Stream::current(device).handle(); }

#if !REDLINE_HAS_GPU
[[noreturn]] void no_gpu_backend() {
  REDLINE_FAIL(
      "the replay memory is on a GPU but this redline was built without a GPU backend; rebuild "
      "with 'cmake --preset cuda' or 'cmake --preset hip'");
}
#endif

void check_vector(const Tensor& t, const char* what, int64_t n, Device device,
                  std::initializer_list<DType> dtypes) {
  REDLINE_CHECK(t.defined(), "{} is undefined; expected a ({},) tensor", what, n);
  REDLINE_CHECK(t.dim() == 1 && t.shape(0) == n, "{} has shape {}; expected ({},)", what,
                shape_str(t.shape()), n);
  REDLINE_CHECK(t.device() == device, "{} is on {} but the replay memory is on {}", what,
                t.device(), device);
  bool ok = false;
  std::string names;
  for (DType d : dtypes) {
    ok = ok || t.dtype() == d;
    names += (names.empty() ? "" : " or ") + std::string(dtype_name(d));
  }
  REDLINE_CHECK(ok, "{} is {}; expected {}", what, dtype_name(t.dtype()), names);
}

}  // namespace

ReplayState::~ReplayState() {
  if (fault != nullptr) gpu::host_free_pinned(fault);
}

size_t ReplayMemory::bytes_needed(const ReplayConfig& c) {
  check_config(c);
  const size_t slots = static_cast<size_t>(c.capacity);
  const size_t frame = static_cast<size_t>(shape_numel(c.obs_shape) / c.frame_stack);
  const TreeLayout tree = replay::make_tree_layout(c.capacity);
  return slots * frame * dtype_size(c.obs_dtype) + slots * dtype_size(c.action_dtype) +
         slots * (sizeof(float) + 1) + static_cast<size_t>(c.num_envs) +
         static_cast<size_t>(tree.nodes) * sizeof(double) +
         static_cast<size_t>(replay::tree_min_nodes(tree)) * (sizeof(float) + sizeof(uint32_t)) +
         3 * sizeof(int64_t) + sizeof(uint32_t);
}

namespace {

// Validates the configuration and refuses a capacity that does not fit, before any allocation
// (the generator's offset tensor included).
const ReplayConfig& check_fits(const ReplayConfig& config) {
  const size_t needed = ReplayMemory::bytes_needed(config);
  size_t available = 0;
  std::string where;
  if (config.device.is_gpu()) {
    size_t total = 0;
    gpu::mem_info(config.device.index, &available, &total);
    where =
        format("{} has {} free of {}", config.device, human_bytes(static_cast<double>(available)),
               human_bytes(static_cast<double>(total)));
  } else {
    available = host_available_bytes();
    where = format("the host has {} available", human_bytes(static_cast<double>(available)));
  }
  REDLINE_CHECK(needed <= available,
                "a replay memory of {} transitions of {} {} observations needs {} but {}; lower "
                "the capacity",
                config.capacity, shape_str(config.obs_shape), dtype_name(config.obs_dtype),
                human_bytes(static_cast<double>(needed)), where);
  return config;
}

}  // namespace

ReplayMemory::ReplayMemory(const ReplayConfig& config)
    : config_(check_fits(config)), rng_(config.seed, config.stream, config.device) {
  rows_ = config.capacity / config.num_envs;
  frame_numel_ = shape_numel(config.obs_shape) / config.frame_stack;
  const Device dev = config.device;
  auto s = std::make_unique<ReplayState>();
  const TreeLayout tree = replay::make_tree_layout(config.capacity);
  s->frames = Tensor::empty({config.capacity, frame_numel_}, config.obs_dtype, dev);
  s->actions = Tensor::zeros({config.capacity}, config.action_dtype, dev);
  s->rewards = Tensor::zeros({config.capacity}, DType::f32, dev);
  s->flags = Tensor::zeros({config.capacity}, DType::u8, dev);
  s->prev_done = Tensor::ones({config.num_envs}, DType::u8, dev);
  s->sum = Tensor::zeros({tree.nodes}, DType::i64, dev);
  // The top level's mins (float bits, see replay::tree_leaf_min), then their counts.
  const int64_t min_nodes = replay::tree_min_nodes(tree);
  s->min = Tensor::zeros({2 * min_nodes}, DType::i32, dev);
  const double one = 1.0;
  int64_t one_bits;
  std::memcpy(&one_bits, &one, 8);
  s->counters = Tensor::from_host<int64_t>({0, one_bits}, {2}, dev);
  s->blocks_done = Tensor::zeros({1}, DType::i32, dev);
  if (dev.is_gpu()) {
    gpu::fill(s->min.raw_data(), min_nodes, 4, replay::kFloatInfBits, stream_of(dev));
    s->fault = static_cast<DeviceFault*>(gpu::host_alloc_pinned(sizeof(DeviceFault)));
    *s->fault = DeviceFault{replay::kFaultNone, 0, 0.0};
  } else {
    cpu::fill(s->min.raw_data(), min_nodes, 4, replay::kFloatInfBits);
  }

  replay::ReplayView& v = s->view;
  v.rows = rows_;
  v.envs = config.num_envs;
  v.frame_numel = frame_numel_;
  v.stack = config.frame_stack;
  v.n_step = config.n_step;
  v.gamma = config.gamma;
  v.alpha = config.alpha;
  v.priority_limit = config.priority_limit;
  replay::set_mass_grid(v, config.capacity);
  v.prioritized = config.prioritized;
  v.pad_zeros = config.padding == FramePadding::zeros;
  v.obs_elem = static_cast<int>(dtype_size(config.obs_dtype));
  v.action_elem = static_cast<int>(dtype_size(config.action_dtype));
  v.seed = config.seed;
  v.stream = config.stream;
  v.tree = tree;
  v.frames = s->frames.raw_data();
  v.actions = s->actions.raw_data();
  v.rewards = data_as<float>(s->rewards);
  v.flags = data_as<uint8_t>(s->flags);
  v.prev_done = data_as<uint8_t>(s->prev_done);
  v.sum = data_as<double>(s->sum);
  v.min = data_as<float>(s->min);
  v.min_count = data_as<uint32_t>(s->min) + min_nodes;
  v.rows_written = data_as<int64_t>(s->counters);
  v.max_priority = data_as<double>(s->counters) + 1;
  v.rng_offset = data_as<int64_t>(rng_.offset_tensor());
  v.fault = s->fault;
  v.blocks_done = data_as<uint32_t>(s->blocks_done);
  state_ = std::move(s);
}

ReplayMemory::~ReplayMemory() = default;
ReplayMemory::ReplayMemory(ReplayMemory&&) noexcept = default;
ReplayMemory& ReplayMemory::operator=(ReplayMemory&&) noexcept = default;

void ReplayMemory::raise_device_fault() {
  if (state_->fault == nullptr) return;
  volatile DeviceFault* f = state_->fault;
  if (f->code == replay::kFaultNone) return;
  const DeviceFault copy{f->code, f->position, f->value};
  f->code = replay::kFaultNone;
  REDLINE_FAIL("{}", replay::fault_message(copy, config_.capacity));
}

void ReplayMemory::check_errors() {
  Stream::current(config_.device).synchronize();
  raise_device_fault();
}

void ReplayMemory::insert(const Tensor& obs, const Tensor& action, const Tensor& reward,
                          const Tensor& terminated, const Tensor& truncated) {
  raise_device_fault();
  const int64_t n = config_.num_envs;
  const Device dev = config_.device;
  REDLINE_CHECK(obs.defined(), "insert got an undefined obs; expected (N, *obs_shape)");
  Shape full{n};
  full.insert(full.end(), config_.obs_shape.begin(), config_.obs_shape.end());
  Shape newest = full;
  newest[1] = config_.obs_shape[0] / config_.frame_stack;
  const bool is_full = obs.shape() == full;
  REDLINE_CHECK(is_full || obs.shape() == newest,
                "insert got obs of shape {}; expected {} (num_envs, *obs_shape){}",
                shape_str(obs.shape()), shape_str(full),
                config_.frame_stack > 1 ? format(" or the newest frame {}", shape_str(newest))
                                        : std::string());
  REDLINE_CHECK(obs.dtype() == config_.obs_dtype, "insert got obs of dtype {}; expected {}",
                dtype_name(obs.dtype()), dtype_name(config_.obs_dtype));
  REDLINE_CHECK(obs.device() == dev, "insert got obs on {} but the replay memory is on {}",
                obs.device(), dev);
  check_vector(action, "insert's action", n, dev, {DType::i32, DType::i64});
  check_vector(reward, "insert's reward", n, dev, {DType::f32});
  check_vector(terminated, "insert's terminated", n, dev, {DType::boolean, DType::u8});
  check_vector(truncated, "insert's truncated", n, dev, {DType::boolean, DType::u8});
  const Tensor o = obs.contiguous(), a = action.contiguous(), r = reward.contiguous();
  const Tensor te = terminated.contiguous(), tr = truncated.contiguous();
  replay::InsertSource src;
  src.obs = o.raw_data();
  src.env_stride = o.numel() / n;
  src.frame_offset = is_full ? src.env_stride - frame_numel_ : 0;
  src.action = a.raw_data();
  src.action_elem = static_cast<int>(dtype_size(a.dtype()));
  src.reward = data_as<float>(r);
  src.terminated = static_cast<const uint8_t*>(te.raw_data());
  src.truncated = static_cast<const uint8_t*>(tr.raw_data());
  if (dev.is_cpu()) {
    replay::cpu::insert(state_->view, src);
  } else {
#if REDLINE_HAS_GPU
    gpu::set_device(dev.index);
    replay::gpu::insert(state_->view, src, stream_of(dev));
#else
    no_gpu_backend();
#endif
  }
  ++inserts_;
}

int64_t ReplayMemory::size() const {
  const int64_t g = inserts_;
  const int64_t n = config_.n_step, k = config_.frame_stack;
  int64_t rows = g <= rows_ ? g - n : rows_ - n - k + 1;
  if (rows < 0) rows = 0;
  return rows * config_.num_envs;
}

size_t ReplayMemory::bytes() const {
  const ReplayState& s = *state_;
  return s.frames.nbytes() + s.actions.nbytes() + s.rewards.nbytes() + s.flags.nbytes() +
         s.prev_done.nbytes() + s.sum.nbytes() + s.min.nbytes() + s.counters.nbytes() +
         rng_.offset_tensor().nbytes() + s.blocks_done.nbytes();
}

ReplayStats ReplayMemory::stats() const {
  ReplayStats st;
  st.inserts = inserts_;
  st.stored = std::min(inserts_, rows_) * config_.num_envs;
  st.sampleable = size();
  st.bytes = bytes();
  return st;
}

void ReplayMemory::check_sample_args(int64_t batch) const {
  REDLINE_CHECK(batch >= 1, "sample batch is {}; it must be >= 1", batch);
  REDLINE_CHECK(batch <= size(),
                "sample batch {} is larger than the {} sampleable transitions stored (a step "
                "becomes sampleable n_step = {} inserts after it was inserted)",
                batch, size(), config_.n_step);
}

void ReplayMemory::sample_impl(int64_t batch, double beta, const Tensor* beta_tensor,
                               ReplaySample& out) {
  raise_device_fault();
  check_sample_args(batch);
  const Device dev = config_.device;
  if (beta_tensor != nullptr) {
    check_vector(*beta_tensor, "sample's beta", 1, dev, {DType::f32});
  } else {
    REDLINE_CHECK(beta >= 0.0 && beta <= 1.0, "sample got beta = {}; beta must be in [0, 1]", beta);
  }
  if (!out.indices.defined() || out.indices.shape() != Shape{batch} ||
      out.indices.device() != dev || out.indices.dtype() != DType::i64) {
    out.indices = Tensor::empty({batch}, DType::i64, dev);
  }
  if (!out.weights.defined() || out.weights.shape() != Shape{batch} ||
      out.weights.device() != dev || out.weights.dtype() != DType::f32) {
    out.weights = Tensor::empty({batch}, DType::f32, dev);
  }
  if (dev.is_cpu()) {
    const double b = beta_tensor != nullptr ? beta_tensor->contiguous().item() : beta;
    replay::cpu::sample(state_->view, batch, b, data_as<int64_t>(out.indices),
                        data_as<float>(out.weights));
  } else {
#if REDLINE_HAS_GPU
    gpu::set_device(dev.index);
    replay::gpu::sample(state_->view, batch, beta,
                        beta_tensor != nullptr ? data_as<float>(*beta_tensor) : nullptr,
                        data_as<int64_t>(out.indices), data_as<float>(out.weights), stream_of(dev));
#else
    no_gpu_backend();
#endif
  }
}

ReplaySample ReplayMemory::sample(int64_t batch, double beta) {
  ReplaySample out;
  sample_impl(batch, beta, nullptr, out);
  return out;
}

ReplaySample ReplayMemory::sample(int64_t batch, const Tensor& beta) {
  ReplaySample out;
  sample_impl(batch, 0.0, &beta, out);
  return out;
}

void ReplayMemory::sample_into(int64_t batch, double beta, ReplaySample& out) {
  sample_impl(batch, beta, nullptr, out);
}

void ReplayMemory::sample_into(int64_t batch, const Tensor& beta, ReplaySample& out) {
  sample_impl(batch, 0.0, &beta, out);
}

void ReplayMemory::gather_into(const ReplaySample& sample, ReplayBatch& out) const {
  const_cast<ReplayMemory*>(this)->raise_device_fault();
  const Device dev = config_.device;
  REDLINE_CHECK(sample.indices.defined() && sample.indices.dim() == 1,
                "gather needs the (B,) i64 indices of a sample");
  const int64_t batch = sample.indices.shape(0);
  check_vector(sample.indices, "gather's indices", batch, dev, {DType::i64});
  Shape obs_shape{batch};
  obs_shape.insert(obs_shape.end(), config_.obs_shape.begin(), config_.obs_shape.end());
  const auto ensure = [&](Tensor& t, const Shape& shape, DType dtype) {
    if (!t.defined() || t.shape() != shape || t.dtype() != dtype || t.device() != dev ||
        !t.is_contiguous()) {
      t = Tensor::empty(shape, dtype, dev);
    }
  };
  ensure(out.obs, obs_shape, config_.obs_dtype);
  ensure(out.next_obs, obs_shape, config_.obs_dtype);
  ensure(out.action, {batch}, config_.action_dtype);
  ensure(out.reward, {batch}, DType::f32);
  ensure(out.discount, {batch}, DType::f32);
  out.indices = sample.indices;
  out.weights = sample.weights;
  const Tensor idx = sample.indices.contiguous();
  replay::GatherTarget target;
  target.obs = out.obs.raw_data();
  target.next_obs = out.next_obs.raw_data();
  target.action = out.action.raw_data();
  target.reward = data_as<float>(out.reward);
  target.discount = data_as<float>(out.discount);
  if (dev.is_cpu()) {
    replay::cpu::gather(state_->view, batch, data_as<int64_t>(idx), target);
  } else {
#if REDLINE_HAS_GPU
    gpu::set_device(dev.index);
    replay::gpu::gather(state_->view, batch, data_as<int64_t>(idx), target, stream_of(dev));
#else
    no_gpu_backend();
#endif
  }
}

ReplayBatch ReplayMemory::gather(const ReplaySample& sample) const {
  ReplayBatch out;
  gather_into(sample, out);
  return out;
}

ReplayBatch ReplayMemory::sample_batch(int64_t batch, double beta) {
  return gather(sample(batch, beta));
}

void ReplayMemory::update_priorities(const Tensor& indices, const Tensor& priorities) {
  raise_device_fault();
  REDLINE_CHECK(config_.prioritized,
                "update_priorities needs a prioritized memory; this one samples uniformly "
                "(set prioritized = true in its config)");
  REDLINE_CHECK(indices.defined() && indices.dim() == 1,
                "update_priorities needs (B,) i64 indices, got {}",
                indices.defined() ? indices.describe() : std::string("an undefined tensor"));
  const int64_t batch = indices.shape(0);
  const Device dev = config_.device;
  check_vector(indices, "update_priorities' indices", batch, dev, {DType::i64});
  check_vector(priorities, "update_priorities' priorities", batch, dev, {DType::f32});
  if (batch == 0) return;
  const Tensor idx = indices.contiguous(), pri = priorities.contiguous();
  if (dev.is_cpu()) {
    replay::cpu::update(state_->view, batch, data_as<int64_t>(idx), data_as<float>(pri));
  } else {
#if REDLINE_HAS_GPU
    gpu::set_device(dev.index);
    replay::gpu::update(state_->view, batch, data_as<int64_t>(idx), data_as<float>(pri),
                        stream_of(dev));
#else
    no_gpu_backend();
#endif
  }
}

std::vector<double> ReplayMemory::sum_tree_host() const {
  const std::vector<int64_t> bits = state_->sum.to_vector<int64_t>();
  std::vector<double> out(bits.size());
  std::memcpy(out.data(), bits.data(), bits.size() * 8);
  return out;
}

std::vector<double> ReplayMemory::min_tree_host() const {
  const std::vector<int32_t> bits = state_->min.to_vector<int32_t>();
  std::vector<double> out(bits.size() / 2);  // the mins; their counts follow
  for (size_t k = 0; k < out.size(); ++k) {
    out[k] = replay::bits_to_float(static_cast<uint32_t>(bits[k]));  // exact
  }
  return out;
}

std::vector<int64_t> ReplayMemory::min_tree_counts_host() const {
  const std::vector<int32_t> words = state_->min.to_vector<int32_t>();
  return std::vector<int64_t>(words.begin() + static_cast<std::ptrdiff_t>(words.size() / 2),
                              words.end());
}

std::vector<int64_t> ReplayMemory::tree_level_offsets() const {
  const TreeLayout& t = state_->view.tree;
  std::vector<int64_t> out(t.offset, t.offset + t.levels);
  out.push_back(t.nodes);
  return out;
}

double ReplayMemory::max_priority() const {
  const std::vector<int64_t> c = state_->counters.to_vector<int64_t>();
  double p;
  std::memcpy(&p, &c[1], 8);
  return p;
}

namespace replay {

std::string fault_message(const DeviceFault& fault, int64_t capacity) {
  switch (fault.code) {
    case kFaultPriority:
      return format(
          "update_priorities got priority {} at position {} of the batch; priorities must be "
          "finite and > 0 (add a small epsilon to |TD error|), so the batch was not applied",
          fault.value, fault.position);
    case kFaultEmpty:
      return "sample found nothing sampleable in the replay memory (every stored step is "
             "truncated or younger than n_step inserts)";
    case kFaultBeta:
      return format("sample got beta = {}; beta must be in [0, 1]", fault.value);
    case kFaultIndex:
      return format("got index {} at position {} of the batch; indices must be in [0, {})",
                    static_cast<int64_t>(fault.value), fault.position, capacity);
    default:
      return format("the replay kernels reported an unknown fault code {}", fault.code);
  }
}

}  // namespace replay
}  // namespace redline::rl
