// Per-element optimizer updates shared by the CPU loops (src/backend/cpu/ops_optim.cpp) and the
// fused GPU kernels: the parity contract. lr and the step count are read from memory (device
// tensors on a GPU), so a captured graph replays an optimizer step with the current values.
#pragma once

#include <cmath>
#include <cstdint>

#include "redline/core/hd.h"

namespace redline::optim {

// One parameter tensor of n f32 elements, its gradient and up to three state buffers (null when
// the optimizer does not use them). SGD: state0 = momentum buffer. Adam: state0 = exp_avg,
// state1 = exp_avg_sq. RMSprop: state0 = square_avg, state1 = grad_avg, state2 = momentum buffer.
struct OptimSlot {
  float* param = nullptr;
  const float* grad = nullptr;
  float* state0 = nullptr;
  float* state1 = nullptr;
  float* state2 = nullptr;
  int64_t n = 0;
};

struct SgdConfig {
  float momentum = 0.0f;
  float dampening = 0.0f;
  float weight_decay = 0.0f;
  bool nesterov = false;
};

struct AdamConfig {
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float eps = 1e-8f;
  float weight_decay = 0.0f;
  bool decoupled = false;  // AdamW
};

struct RmspropConfig {
  float alpha = 0.99f;
  float eps = 1e-8f;
  float weight_decay = 0.0f;
  float momentum = 0.0f;
  bool centered = false;
};

// step: the step number being taken (1 on the first call). buf: (n,) momentum buffer.
REDLINE_HD inline void sgd_update(float& p, float g, float& buf, float lr, int64_t step,
                                  const SgdConfig& c) {
  if (c.weight_decay != 0.0f) g += c.weight_decay * p;
  if (c.momentum != 0.0f) {
    buf = step == 1 ? g : c.momentum * buf + (1.0f - c.dampening) * g;
    g = c.nesterov ? g + c.momentum * buf : buf;
  }
  p -= lr * g;
}

// bias1 = 1 - beta1^step, bias2_sqrt = sqrt(1 - beta2^step) (computed once per step).
REDLINE_HD inline void adam_update(float& p, float g, float& m, float& v, float lr, float bias1,
                                   float bias2_sqrt, const AdamConfig& c) {
  if (c.weight_decay != 0.0f) {
    if (c.decoupled) {
      p *= 1.0f - lr * c.weight_decay;
    } else {
      g += c.weight_decay * p;
    }
  }
  m = c.beta1 * m + (1.0f - c.beta1) * g;
  v = c.beta2 * v + (1.0f - c.beta2) * g * g;
  const float denom = sqrtf(v) / bias2_sqrt + c.eps;
  p -= (lr / bias1) * m / denom;
}

// As torch.optim.RMSprop: square_avg, grad_avg (centered) and buf (momentum) per element.
REDLINE_HD inline void rmsprop_update(float& p, float g, float& square_avg, float& grad_avg,
                                      float& buf, float lr, const RmspropConfig& c) {
  if (c.weight_decay != 0.0f) g += c.weight_decay * p;
  square_avg = c.alpha * square_avg + (1.0f - c.alpha) * g * g;
  float avg;
  if (c.centered) {
    grad_avg = c.alpha * grad_avg + (1.0f - c.alpha) * g;
    avg = sqrtf(square_avg - grad_avg * grad_avg) + c.eps;
  } else {
    avg = sqrtf(square_avg) + c.eps;
  }
  if (c.momentum > 0.0f) {
    buf = c.momentum * buf + g / avg;
    p -= lr * buf;
  } else {
    p -= lr * g / avg;
  }
}

}  // namespace redline::optim
