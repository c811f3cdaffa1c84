#include <cmath>

#include "backend/cpu/ops_kernels.h"
#include "ops/ops_common.h"
#include "redline/ops/ops.h"
#include "redline/optim/optim.h"

namespace redline::optim {
namespace {

// The parameter and gradient pointers of parameter i (state pointers filled by the caller).
OptimSlot slot_of(const Variable& p) {
  OptimSlot slot;
  slot.param = p.data().data<float>();
  slot.grad = p.grad().data<float>();
  slot.n = p.numel();
  return slot;
}

}  // namespace

Optimizer::Optimizer(std::vector<Variable> params, double lr, std::vector<std::string> buffers,
                     const char* kind)
    : kind_(kind), params_(std::move(params)), buffer_names_(std::move(buffers)) {
  REDLINE_CHECK(!params_.empty(), "{}: needs at least one parameter", kind);
  REDLINE_CHECK(lr >= 0.0 && std::isfinite(lr), "{}: learning rate {} must be finite and >= 0",
                kind, lr);
  const Device device = params_[0].device();
  for (size_t i = 0; i < params_.size(); ++i) {
    const Variable& p = params_[i];
    REDLINE_CHECK(p.defined() && p.is_leaf() && p.requires_grad(),
                  "{}: parameter {} must be a leaf that requires grad", kind, i);
    REDLINE_CHECK(p.dtype() == DType::f32,
                  "{}: parameter {} is {}; optimizers keep f32 master weights", kind, i,
                  p.describe());
    REDLINE_CHECK(p.device() == device, "{}: parameter {} is on {} but parameter 0 is on {}", kind,
                  i, p.device(), device);
    std::vector<Tensor> state;
    for (size_t k = 0; k < buffer_names_.size(); ++k) {
      state.push_back(Tensor::zeros(p.shape(), DType::f32, device));
    }
    buffers_.push_back(std::move(state));
  }
  lr_ = Tensor::full({1}, lr, DType::f32, device);
  step_ = Tensor::zeros({1}, DType::i64, device);
  next_step_ = Tensor::zeros({1}, DType::i64, device);
  one_ = Tensor::ones({1}, DType::i64, device);
}

void Optimizer::step() {
  NoGradGuard no_grad;
  // next_step = step + 1 (on the device), used by the updates; then step = next_step.
  next_step_.copy_from(step_);
  ops::add_(next_step_, one_);
  std::vector<size_t> with_grad;
  for (size_t i = 0; i < params_.size(); ++i) {
    const Variable& p = params_[i];
    REDLINE_CHECK(p.device() == device(),
                  "{}: parameter {} moved to {} after the optimizer was made on {}; make the "
                  "optimizer after moving the module",
                  kind_, i, p.device(), device());
    const Tensor& g = p.grad();
    if (!g.defined()) continue;
    REDLINE_CHECK(g.is_contiguous() && p.data().is_contiguous() && g.dtype() == DType::f32,
                  "{}: parameter {} and its gradient must be contiguous f32", kind_, i);
    with_grad.push_back(i);
  }
  if (!with_grad.empty()) update(with_grad);
  step_.copy_from(next_step_);
}

void Optimizer::zero_grad(bool set_to_none) {
  for (Variable p : params_) p.zero_grad(set_to_none);
}

double Optimizer::lr() const { return lr_.item(); }

void Optimizer::set_lr(double lr) {
  REDLINE_CHECK(lr >= 0.0 && std::isfinite(lr), "{}: learning rate {} must be finite and >= 0",
                kind_, lr);
  lr_.fill_(lr);
}

int64_t Optimizer::step_count() const { return static_cast<int64_t>(step_.item()); }

NamedTensors Optimizer::state() const {
  NamedTensors out = {{"step", step_}, {"lr", lr_}};
  for (size_t k = 0; k < buffer_names_.size(); ++k) {
    for (size_t i = 0; i < params_.size(); ++i) {
      out.emplace_back(format("{}.{}", buffer_names_[k], i), buffers_[i][k]);
    }
  }
  return out;
}

void Optimizer::load_state(const NamedTensors& state) {
  NamedTensors mine = this->state();
  REDLINE_CHECK(state.size() == mine.size(), "{}: state has {} tensors but this optimizer holds {}",
                kind_, state.size(), mine.size());
  for (size_t i = 0; i < mine.size(); ++i) {
    REDLINE_CHECK(
        state[i].first == mine[i].first && state[i].second.shape() == mine[i].second.shape() &&
            state[i].second.dtype() == mine[i].second.dtype(),
        "{}: state tensor {} is '{}' {} but this optimizer expects '{}' {}", kind_, i,
        state[i].first, state[i].second.describe(), mine[i].first, mine[i].second.describe());
    mine[i].second.copy_from(state[i].second);
  }
}

// ---- SGD ----------------------------------------------------------------------------------------

SGD::SGD(std::vector<Variable> params, const SgdOptions& o)
    : Optimizer(std::move(params), o.lr,
                o.momentum != 0.0 ? std::vector<std::string>{"momentum_buffer"}
                                  : std::vector<std::string>{},
                "SGD"),
      options_(o) {
  REDLINE_CHECK(o.momentum >= 0.0 && o.weight_decay >= 0.0,
                "SGD: momentum {} and weight_decay {} must be >= 0", o.momentum, o.weight_decay);
  REDLINE_CHECK(!o.nesterov || (o.momentum > 0.0 && o.dampening == 0.0),
                "SGD: Nesterov momentum needs momentum > 0 and dampening 0");
}

void SGD::update(const std::vector<size_t>& with_grad) {
  const SgdConfig c{static_cast<float>(options_.momentum), static_cast<float>(options_.dampening),
                    static_cast<float>(options_.weight_decay), options_.nesterov};
  std::vector<OptimSlot> slots;
  for (size_t i : with_grad) {
    OptimSlot slot = slot_of(params()[i]);
    if (options_.momentum != 0.0) slot.state0 = buffer(i, 0).data<float>();
    slots.push_back(slot);
  }
  REDLINE_KERNEL(device(), sgd_step, slots.data(), static_cast<int>(slots.size()),
                 lr_tensor().data<float>(), next_step().data<int64_t>(), c);
}

// ---- Adam / AdamW -------------------------------------------------------------------------------

Adam::Adam(std::vector<Variable> params, const AdamOptions& o, bool decoupled)
    : Optimizer(std::move(params), o.lr, {"exp_avg", "exp_avg_sq"}, decoupled ? "AdamW" : "Adam"),
      options_(o),
      decoupled_(decoupled) {
  REDLINE_CHECK(o.beta1 >= 0.0 && o.beta1 < 1.0 && o.beta2 >= 0.0 && o.beta2 < 1.0,
                "{}: betas ({}, {}) must be in [0, 1)", kind_, o.beta1, o.beta2);
  REDLINE_CHECK(o.eps >= 0.0 && o.weight_decay >= 0.0,
                "{}: eps {} and weight_decay {} must be >= 0", kind_, o.eps, o.weight_decay);
}

void Adam::update(const std::vector<size_t>& with_grad) {
  const AdamConfig c{static_cast<float>(options_.beta1), static_cast<float>(options_.beta2),
                     static_cast<float>(options_.eps), static_cast<float>(options_.weight_decay),
                     decoupled_};
  std::vector<OptimSlot> slots;
  for (size_t i : with_grad) {
    OptimSlot slot = slot_of(params()[i]);
    slot.state0 = buffer(i, 0).data<float>();
    slot.state1 = buffer(i, 1).data<float>();
    slots.push_back(slot);
  }
  REDLINE_KERNEL(device(), adam_step, slots.data(), static_cast<int>(slots.size()),
                 lr_tensor().data<float>(), next_step().data<int64_t>(), c);
}

AdamW::AdamW(std::vector<Variable> params, AdamOptions options)
    : Adam(std::move(params), options, true) {}

// ---- RMSprop ------------------------------------------------------------------------------------

namespace {

std::vector<std::string> rmsprop_buffers(const RmspropOptions& o) {
  std::vector<std::string> names = {"square_avg"};
  if (o.centered) names.push_back("grad_avg");
  if (o.momentum > 0.0) names.push_back("momentum_buffer");
  return names;
}

}  // namespace

RMSprop::RMSprop(std::vector<Variable> params, const RmspropOptions& o)
    : Optimizer(std::move(params), o.lr, rmsprop_buffers(o), "RMSprop"), options_(o) {
  REDLINE_CHECK(o.alpha >= 0.0 && o.alpha < 1.0, "RMSprop: alpha {} must be in [0, 1)", o.alpha);
  REDLINE_CHECK(o.eps >= 0.0 && o.momentum >= 0.0 && o.weight_decay >= 0.0,
                "RMSprop: eps {}, momentum {} and weight_decay {} must be >= 0", o.eps, o.momentum,
                o.weight_decay);
}

void RMSprop::update(const std::vector<size_t>& with_grad) {
  const RmspropConfig c{static_cast<float>(options_.alpha), static_cast<float>(options_.eps),
                        static_cast<float>(options_.weight_decay),
                        static_cast<float>(options_.momentum), options_.centered};
  std::vector<OptimSlot> slots;
  for (size_t i : with_grad) {
    OptimSlot slot = slot_of(params()[i]);
    size_t k = 0;
    slot.state0 = buffer(i, k++).data<float>();
    if (options_.centered) slot.state1 = buffer(i, k++).data<float>();
    if (options_.momentum > 0.0) slot.state2 = buffer(i, k++).data<float>();
    slots.push_back(slot);
  }
  REDLINE_KERNEL(device(), rmsprop_step, slots.data(), static_cast<int>(slots.size()),
                 lr_tensor().data<float>(), c);
}

// ---- clipping -----------------------------------------------------------------------------------

Tensor clip_grad_norm(const std::vector<Variable>& params, double max_norm) {
  REDLINE_CHECK(max_norm > 0.0, "clip_grad_norm: max_norm is {}; it must be positive", max_norm);
  NoGradGuard no_grad;
  Tensor total;
  for (const Variable& p : params) {
    if (!p.defined() || !p.grad().defined()) continue;
    const Tensor sq = ops::sum(ops::square(ops::detail::to_compute(p.grad())));
    total = total.defined() ? ops::add(total, sq) : sq;
  }
  if (!total.defined()) return Tensor::zeros({}, DType::f32);
  const Tensor norm = ops::sqrt(total);
  // coef = min(1, max_norm / (norm + 1e-6))
  const Tensor coef = ops::clamp(
      ops::mul_scalar(ops::reciprocal(ops::add_scalar(norm, 1e-6)), max_norm), std::nullopt, 1.0);
  for (const Variable& p : params) {
    if (!p.defined() || !p.grad().defined()) continue;
    Tensor g = p.grad();
    g.copy_from(ops::mul(g, ops::cast(coef, g.dtype())));
  }
  return norm;
}

}  // namespace redline::optim
