// CPU twins of the fused multi-tensor optimizer kernels (src/backend/gpu/optim.cu).
#include <cmath>

#include "backend/cpu/ops_kernels.h"

namespace redline::cpu {

using optim::OptimSlot;

void sgd_step(const OptimSlot* slots, int count, const float* lr, const int64_t* step,
              const optim::SgdConfig& c) {
  const float rate = *lr;
  const int64_t t = *step;
  for (int s = 0; s < count; ++s) {
    const OptimSlot& slot = slots[s];
    float unused = 0.0f;
#pragma omp parallel for if (slot.n > (1 << 16)) firstprivate(unused)
    for (int64_t i = 0; i < slot.n; ++i) {
      optim::sgd_update(slot.param[i], slot.grad[i],
                        slot.state0 != nullptr ? slot.state0[i] : unused, rate, t, c);
    }
  }
}

void adam_step(const OptimSlot* slots, int count, const float* lr, const int64_t* step,
               const optim::AdamConfig& c) {
  const float t = static_cast<float>(*step);
  const float bias1 = 1.0f - std::pow(c.beta1, t);
  const float bias2_sqrt = std::sqrt(1.0f - std::pow(c.beta2, t));
  const float rate = *lr;
  for (int s = 0; s < count; ++s) {
    const OptimSlot& slot = slots[s];
#pragma omp parallel for if (slot.n > (1 << 16))
    for (int64_t i = 0; i < slot.n; ++i) {
      optim::adam_update(slot.param[i], slot.grad[i], slot.state0[i], slot.state1[i], rate, bias1,
                         bias2_sqrt, c);
    }
  }
}

void rmsprop_step(const OptimSlot* slots, int count, const float* lr,
                  const optim::RmspropConfig& c) {
  const float rate = *lr;
  for (int s = 0; s < count; ++s) {
    const OptimSlot& slot = slots[s];
    float unused_avg = 0.0f, unused_buf = 0.0f;
#pragma omp parallel for if (slot.n > (1 << 16)) firstprivate(unused_avg, unused_buf)
    for (int64_t i = 0; i < slot.n; ++i) {
      optim::rmsprop_update(slot.param[i], slot.grad[i], slot.state0[i],
                            slot.state1 != nullptr ? slot.state1[i] : unused_avg,
                            slot.state2 != nullptr ? slot.state2[i] : unused_buf, rate, c);
    }
  }
}

}  // namespace redline::cpu
