// Optimizers: SGD (momentum, Nesterov), Adam, AdamW, RMSprop (incl. centered), and gradient
// clipping by global norm. Updates follow torch.optim's formulas. The learning rate and the step
// count live in one-element tensors on the parameters' device, and step() reads them there, so
// a captured graph replays an optimizer step with whatever values they hold at replay time.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "redline/autograd/variable.h"

namespace redline::optim {

using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  // Updates every parameter that has a gradient, then advances the step count.
  void step();
  void zero_grad(bool set_to_none = false);

  double lr() const;  // reads the device value (synchronizes)
  void set_lr(double lr);
  const Tensor& lr_tensor() const { return lr_; }      // (1,) f32
  const Tensor& step_tensor() const { return step_; }  // (1,) i64: steps taken
  int64_t step_count() const;                          // reads the device value
  const std::vector<Variable>& params() const { return params_; }
  Device device() const { return lr_.device(); }

  // "step", "lr" and per-parameter buffers ("exp_avg.0", ...), for checkpoints.
  NamedTensors state() const;
  // Copies values into the existing state tensors; names, shapes and dtypes must match.
  void load_state(const NamedTensors& state);

 protected:
  // buffers: names of per-parameter state tensors (zeros shaped like each parameter).
  Optimizer(std::vector<Variable> params, double lr, std::vector<std::string> buffers,
            const char* kind);
  // Updates the parameters listed (those with a gradient) in one fused pass; buffer(i, k) is
  // state buffer k of parameter i.
  virtual void update(const std::vector<size_t>& with_grad) = 0;
  Tensor& buffer(size_t param, size_t k) { return buffers_[param][k]; }
  // The step being taken (step count + 1) lives here during update().
  const Tensor& next_step() const { return next_step_; }
  const char* kind_;

 private:
  std::vector<Variable> params_;
  std::vector<std::string> buffer_names_;
  std::vector<std::vector<Tensor>> buffers_;
  Tensor lr_, step_, next_step_, one_;
};

struct SgdOptions {
  double lr = 1e-2;
  double momentum = 0.0;
  double dampening = 0.0;
  double weight_decay = 0.0;
  bool nesterov = false;
};
class SGD : public Optimizer {
 public:
  SGD(std::vector<Variable> params, const SgdOptions& options);

 private:
  void update(const std::vector<size_t>& with_grad) override;
  SgdOptions options_;
};

struct AdamOptions {
  double lr = 1e-3;
  double beta1 = 0.9, beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.0;  // L2 (Adam) or decoupled (AdamW)
};
class Adam : public Optimizer {
 public:
  Adam(std::vector<Variable> params, const AdamOptions& options, bool decoupled = false);

 private:
  void update(const std::vector<size_t>& with_grad) override;
  AdamOptions options_;
  bool decoupled_;
};
// AdamW: Adam with decoupled weight decay (default 1e-2, as torch.optim.AdamW).
class AdamW : public Adam {
 public:
  AdamW(std::vector<Variable> params, AdamOptions options);
};

// MinAtar's DQN: lr 2.5e-4, alpha 0.95, eps 0.01, centered.
struct RmspropOptions {
  double lr = 1e-2;
  double alpha = 0.99;
  double eps = 1e-8;
  double weight_decay = 0.0;
  double momentum = 0.0;
  bool centered = false;
};
class RMSprop : public Optimizer {
 public:
  RMSprop(std::vector<Variable> params, const RmspropOptions& options);

 private:
  void update(const std::vector<size_t>& with_grad) override;
  RmspropOptions options_;
};

// Scales every gradient by min(1, max_norm / (norm + 1e-6)) where norm is the L2 norm of all
// gradients together; returns that norm as a 0-d f32 tensor on the device (no host sync).
Tensor clip_grad_norm(const std::vector<Variable>& params, double max_norm);

}  // namespace redline::optim
